// `chakraflow run CONFIG.yaml`: every rank of a training run through link (and convert) in one
// oneTBB flow graph (pipeline/rank_graph.h), with a memory-bounded number of ranks in flight,
// per-rank failure isolation, progress, a summary table and summary.json, then the simulation.
// run_run_command reads as its five steps: config -> jobs -> graph -> summary -> simulate.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "pipeline/cli_args.h"
#include "pipeline/comm_group_file.h"
#include "pipeline/commands.h"
#include "pipeline/mpi_world.h"
#include "pipeline/parallel_batches.h"
#include "pipeline/rank_graph.h"
#include "pipeline/run_command.h"
#include "pipeline/run_config.h"
#include "pipeline/run_report.h"
#include "stages/common/file_io.h"
#include "stages/common/profile.h"
#include "stages/simulate/sim_config.h"
#include "stages/simulate/simulator.h"
#include "stages/simulate/simulator_report.h"

namespace chakraflow {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Decompressed size of a file: what a .gz output of ours records, else the gzip ISIZE trailer (mod
// 4 GiB, so at least the compressed size times the usual ratio when it looks wrapped), or the
// plain size. 0 when unreadable.
uint64_t estimated_text_bytes(const std::string& path) {
  std::error_code ec;
  uint64_t size = fs::file_size(path, ec);
  if (ec) return 0;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return size;
  char magic[2] = {0, 0};
  const bool gz = has_gzip_magic(std::string_view(magic, std::fread(magic, 1, 2, f)));
  uint64_t text = size;
  // A .gz output of ours records its text's size (its block index; its last member is empty).
  const std::optional<uint64_t> indexed =
      gz ? indexed_gzip_text_size(fileno(f), size) : std::nullopt;
  if (indexed) {
    text = *indexed;
  } else if (gz && size >= 18 && std::fseek(f, -4, SEEK_END) == 0) {
    unsigned char t[4];
    if (std::fread(t, 1, 4, f) == 4) {
      uint64_t isize = t[0] | (t[1] << 8) | (t[2] << 16) | (uint64_t{t[3]} << 24);
      text = std::max<uint64_t>(isize, size * 8);
      if (isize > size) text = isize + (size * 12 > (uint64_t{1} << 32) ? size * 12 : 0);
    }
  }
  std::fclose(f);
  return text;
}

bool newer_than(const std::string& output, const std::vector<std::string>& inputs) {
  std::error_code ec;
  auto out_time = fs::last_write_time(output, ec);
  if (ec) return false;
  for (const auto& in : inputs) {
    if (in.empty()) continue;  // an optional input that is not there
    auto t = fs::last_write_time(in, ec);
    if (ec || t > out_time) return false;
  }
  return true;
}

// Ranks to processes, largest first to the least loaded process (ties: lowest index, lowest
// process): the same answer on every process, and balanced by bytes rather than by count.
std::vector<int> assign_processes(const std::vector<uint64_t>& costs, int processes) {
  std::vector<size_t> order(costs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  std::vector<uint64_t> load(static_cast<size_t>(processes), 0);
  std::vector<int> owner(costs.size(), 0);
  for (size_t i : order) {
    size_t p = std::min_element(load.begin(), load.end()) - load.begin();
    owner[i] = static_cast<int>(p);
    load[p] += std::max<uint64_t>(costs[i], 1);
  }
  return owner;
}

// The simulate stage's feeder window (nodes held per rank) within the memory budget. Measured
// per rank: about 0.4 MB of readers and queues, the simulator's record of every node (104 bytes,
// about a third of the node's .et bytes), and per node held in the window up to about 2 KB.
uint64_t simulation_window(uint64_t budget, uint64_t et_bytes, size_t ranks, uint64_t* needed) {
  constexpr uint64_t kPerRank = 512 << 10, kPerHeldNode = 2 << 10, kMinWindow = 256;
  const uint64_t fixed = ranks * kPerRank + et_bytes / 2;
  *needed = fixed + ranks * kMinWindow * kPerHeldNode;
  if (budget <= *needed) return kMinWindow;
  return std::clamp<uint64_t>((budget - fixed) / ranks / kPerHeldNode, kMinWindow,
                              uint64_t{1} << 20);
}

// The simulate stage over every rank's .et.
Status simulate_all(const RunConfig& cfg, const SimConfig& sim_config, bool quiet) {
  SimOptions sim_options;
  uint64_t et_bytes = 0;
  for (int rank : cfg.ranks) {
    std::error_code ec;
    et_bytes += fs::file_size(cfg.et_path(rank), ec);
  }
  uint64_t needed = 0;
  sim_options.feeder.window =
      simulation_window(cfg.memory_budget_bytes, et_bytes, cfg.ranks.size(), &needed);
  if (needed > cfg.memory_budget_bytes) {
    std::fprintf(stderr,
                 "chakraflow run: warning: simulating %zu ranks (%.0f MB of .et) needs about %llu "
                 "MB, over the memory budget of %llu MB\n",
                 cfg.ranks.size(), et_bytes / 1e6, static_cast<unsigned long long>(needed >> 20),
                 static_cast<unsigned long long>(cfg.memory_budget_bytes >> 20));
  } else if (!quiet) {
    std::fprintf(stderr, "simulate: %zu ranks, feeder window %llu nodes per rank\n",
                 cfg.ranks.size(), static_cast<unsigned long long>(sim_options.feeder.window));
  }
  sim_options.config = sim_config;
  std::vector<std::string> et_paths;
  for (int rank : cfg.ranks) et_paths.push_back(cfg.et_path(rank));
  auto sim = Simulation::open(et_paths, sim_options);
  Status ran = sim.ok() ? (*sim)->run() : sim.status();
  if (!ran.ok()) return ran.with_context("simulation");
  const SimResult& result = (*sim)->result();
  if (!quiet) std::fputs(report_text(result, sim_options.config).c_str(), stderr);
  CF_RETURN_IF_ERROR(
      write_file_atomically(cfg.simulation_path(), report_json(result, sim_options.config)));
  if (!result.completed) {
    return Status::errorf("simulation stalled: {}", fmt::join(result.stall, "; "));
  }
  return Status();
}

// No output of the run may replace one of its inputs (a template that points the ET+ at the host
// traces, a summary written over the configuration).
Status check_outputs(const RunConfig& cfg) {
  const bool convert = cfg.has(RunStage::kConvert);
  const bool keep_et_plus = cfg.writes_et_plus();
  std::vector<std::string> every_input = {cfg.path};
  if (!cfg.simulate_config.empty()) every_input.push_back(cfg.simulate_config);
  for (int rank : cfg.ranks) {
    const std::vector<std::string> inputs = {cfg.host_path(rank), cfg.device_path(rank), cfg.path};
    for (const std::string& output : {convert ? cfg.et_path(rank) : std::string(),
                                      keep_et_plus ? cfg.et_plus_path(rank) : std::string()}) {
      if (Status s = check_output_is_not_input(output, inputs); !s.ok()) {
        return s.with_context(fmt::format("rank {}", rank));
      }
    }
    every_input.push_back(inputs[0]);
    every_input.push_back(inputs[1]);
  }
  const std::string summary = cfg.summary_path();
  const std::string simulation = cfg.simulation_path();
  const std::string groups = convert && cfg.comm_groups ? cfg.comm_group_path() : std::string();
  for (const std::string& output : {summary, simulation, groups}) {
    CF_RETURN_IF_ERROR(check_output_is_not_input(output, every_input));
  }
  return Status();
}

// ---------------------------------------------------------------------------------------------
// Step 1: the configuration, checked whole before any work.

struct RunSetup {
  RunConfig cfg;
  SimConfig sim_config;
};

// A usage problem (exit status 2) as its message.
StatusOr<RunSetup> load_setup(const std::string& config_path) {
  std::optional<RunConfig> preloaded = take_loaded_run_config(config_path);
  RunSetup setup;
  if (preloaded) {
    setup.cfg = std::move(*preloaded);
  } else {
    CF_ASSIGN_OR_RETURN(setup.cfg, load_run_config(config_path));
  }
  RunConfig& cfg = setup.cfg;
  CF_RETURN_IF_ERROR(discover_ranks(cfg));
  if (!cfg.simulate_config.empty()) {
    auto loaded = load_sim_config(cfg.simulate_config);
    if (!loaded.ok()) {
      return Status::errorf("{}: simulate.config: {}", cfg.path, loaded.status().message());
    }
    setup.sim_config = *loaded;
  }
  CF_RETURN_IF_ERROR(check_outputs(cfg));
  if (cfg.has(RunStage::kSimulate)) {
    for (size_t i = 0; i < cfg.ranks.size(); ++i) {
      if (cfg.ranks[i] != static_cast<int>(i)) {
        return Status::errorf("{}: the simulate stage needs ranks 0..N-1 (rank {} is missing)",
                              cfg.path, i);
      }
    }
  }
  return setup;
}

Status create_output_dirs(const RunConfig& cfg) {
  std::vector<std::string> dirs = {fs::path(cfg.summary_path()).parent_path().string()};
  if (cfg.has(RunStage::kConvert)) dirs.push_back(fs::path(cfg.et_path(0)).parent_path().string());
  if (cfg.writes_et_plus()) dirs.push_back(fs::path(cfg.et_plus_path(0)).parent_path().string());
  for (const std::string& dir : dirs) {
    if (dir.empty()) continue;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      return Status::errorf("{}: cannot create the output directory: {}", dir, ec.message());
    }
  }
  return Status();
}

// ---------------------------------------------------------------------------------------------
// Step 2: the jobs this process runs.

// A rank of the configuration as this process handles it.
struct RankRecord {
  size_t index = 0;  // into RunConfig::ranks
  int rank = 0;
  bool skipped = false;  // --resume: outputs newer than their inputs
  uint64_t input_file_bytes = 0;
  size_t job = 0;  // into RunJobs::jobs, unless skipped
};

struct RunJobs {
  RankPlan plan;
  std::vector<RankJob> jobs;
  std::vector<RankRecord> records;  // this process's ranks, skipped ones too
  uint64_t in_flight = 1;           // ranks in memory at once
  uint64_t input_file_bytes = 0;    // of the jobs
};

RankPlan plan_of(const RunConfig& cfg) {
  RankPlan plan;
  plan.write_et_plus = cfg.writes_et_plus();
  plan.convert = cfg.has(RunStage::kConvert);
  plan.format = cfg.link.format;
  return plan;
}

RankJob job_of(const RunConfig& cfg, int rank) {
  RankJob job;
  job.host_path = cfg.host_path(rank);
  job.device_path = cfg.device_path(rank);
  job.et_plus_path = cfg.et_plus_path(rank);
  job.et_path = cfg.et_path(rank);
  job.step_time_path = cfg.step_time_path(rank);
  job.link = cfg.link;
  job.link.rank = rank;
  job.convert = cfg.convert;
  return job;
}

// The ranks are split between processes by their estimated memory: the loaded texts, their
// parse, the ET+ and the converter's model, about 4x the JSON text. Every process computes the
// same costs and the same split; the largest rank sets how many fit in the budget at once.
RunJobs plan_jobs(const RunConfig& cfg, const MpiWorld& world, bool resume) {
  RunJobs work;
  work.plan = plan_of(cfg);
  std::vector<uint64_t> costs(cfg.ranks.size());
  uint64_t max_cost = 1;
  for (size_t i = 0; i < cfg.ranks.size(); ++i) {
    int rank = cfg.ranks[i];
    costs[i] = 4 * (estimated_text_bytes(cfg.host_path(rank)) +
                    estimated_text_bytes(cfg.device_path(rank)));
    max_cost = std::max(max_cost, costs[i]);
  }
  const std::vector<int> owner = assign_processes(costs, world.processes());
  for (size_t i = 0; i < cfg.ranks.size(); ++i) {
    if (owner[i] != world.process()) continue;
    RankRecord& rec = work.records.emplace_back();
    rec.index = i;
    rec.rank = cfg.ranks[i];
    RankJob job = job_of(cfg, rec.rank);
    // What a killed earlier run left beside this rank's outputs (a skipped rank's too). Only this
    // process's ranks: another host's live temporary files look like a dead process's here.
    if (work.plan.convert) remove_stale_temps(job.et_path);
    if (work.plan.write_et_plus) remove_stale_temps(job.et_plus_path);
    const std::string& final_output = work.plan.convert ? job.et_path : job.et_plus_path;
    if (resume &&
        newer_than(final_output, {job.host_path, job.device_path, job.step_time_path, cfg.path})) {
      rec.skipped = true;
      continue;
    }
    std::error_code ec;
    rec.input_file_bytes =
        fs::file_size(job.host_path, ec) + (ec ? 0 : fs::file_size(job.device_path, ec));
    work.input_file_bytes += rec.input_file_bytes;
    rec.job = work.jobs.size();
    work.jobs.push_back(std::move(job));
  }
  work.in_flight = cfg.max_ranks_in_flight > 0
                       ? static_cast<uint64_t>(cfg.max_ranks_in_flight)
                       : std::clamp<uint64_t>(cfg.memory_budget_bytes / max_cost, 1,
                                              std::max<size_t>(cfg.ranks.size(), 1));
  return work;
}

// ---------------------------------------------------------------------------------------------
// Step 3: the graph, with progress on stderr.

class Progress {
 public:
  Progress(const RunJobs& work, std::string who, bool quiet, bool tty, bool convert)
      : work_(work), who_(std::move(who)), quiet_(quiet), tty_(tty), convert_(convert) {
    for (const RankRecord& rec : work.records) {
      if (rec.skipped) continue;
      rank_of_job_.push_back(rec.rank);
      file_bytes_of_job_.push_back(rec.input_file_bytes);
    }
  }

  // A job finished (any thread).
  void done(size_t job, const RankJobResult& r) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++done_;
    bytes_done_ += file_bytes_of_job_[job];
    text_done_ += r.input_bytes;
    const int rank = rank_of_job_[job];
    if (!r.status.ok()) {
      if (tty_) std::fputs("\r\033[K", stderr);
      std::fprintf(stderr, "%srank %d: FAILED: %s\n", who_.c_str(), rank,
                   r.status.message().c_str());
    } else if (!quiet_ && !tty_) {
      std::string convert =
          convert_ ? fmt::format(", convert {:.2f} s", r.times.convert) : std::string();
      std::fprintf(stderr, "%srank %d: ok (%.1f MB of JSON, link %.2f s%s) [%zu/%zu]\n",
                   who_.c_str(), rank, r.input_bytes / 1e6, r.seconds - r.times.convert,
                   convert.c_str(), done_, work_.jobs.size());
    }
    if (!quiet_ && tty_) {
      const double elapsed = seconds_since(t0_);
      const double eta = bytes_done_ > 0
                             ? elapsed * static_cast<double>(work_.input_file_bytes - bytes_done_) /
                                   static_cast<double>(bytes_done_)
                             : 0;
      std::fprintf(stderr, "\r\033[K[%zu/%zu ranks] %.1f MB/s, ETA %.0f s", done_,
                   work_.jobs.size(), elapsed > 0 ? text_done_ / 1e6 / elapsed : 0, eta);
      if (done_ == work_.jobs.size()) std::fputc('\n', stderr);
    }
  }

 private:
  const RunJobs& work_;
  const std::string who_;
  const bool quiet_, tty_, convert_;
  std::vector<int> rank_of_job_;
  std::vector<uint64_t> file_bytes_of_job_;
  const Clock::time_point t0_ = Clock::now();
  std::mutex mutex_;
  size_t done_ = 0;
  uint64_t bytes_done_ = 0;  // input files, for the ETA
  uint64_t text_done_ = 0;   // decompressed JSON, for the throughput
};

// ---------------------------------------------------------------------------------------------
// Step 4: the summary. Each process describes its ranks as RankRows (pipeline/run_report.h);
// process 0 gathers them (as the JSON objects summary.json lists, decoded back into RankRows),
// prints the table and writes summary.json.

// This process's rows, in its records' order.
std::vector<RankRow> rows_of(const RunJobs& work, const std::vector<RankJobResult>& results) {
  std::vector<RankRow> rows;
  for (const RankRecord& rec : work.records) {
    if (rec.skipped) {
      rows.push_back(skipped_row(rec.rank));
      continue;
    }
    const RankJob& job = work.jobs[rec.job];
    rows.push_back(rank_row(rec.rank, rec.input_file_bytes, results[rec.job],
                            work.plan.convert ? job.et_path : job.et_plus_path));
  }
  return rows;
}

// Every rank's communicator groups: what each rank's conversion reported; the .et of a rank
// --resume skipped is read.
StatusOr<std::vector<RankCommGroups>> rank_groups(const RunConfig& cfg,
                                                  const std::vector<RankRow>& rows) {
  std::vector<RankCommGroups> known;
  std::vector<std::pair<int, std::string>> to_scan;
  for (const RankRow& row : rows) {
    if (row.comm_groups) {
      known.push_back(*row.comm_groups);
    } else {
      to_scan.emplace_back(row.rank, cfg.et_path(row.rank));
    }
  }
  return collect_rank_groups(std::move(known), to_scan, cfg.convert.pg_name_offset);
}

// The gloo collectives of ranks in several process groups, placed on their groups across ranks
// (their .et rewritten where the group changes); the rows' guess counts drop by what was placed.
Status place_cpu_collectives(const RunConfig& cfg, std::vector<RankCommGroups>& groups,
                             std::vector<RankRow>& rows, bool quiet) {
  CF_ASSIGN_OR_RETURN(CpuCollectivePlacement done,
                      place_and_rewrite_cpu_collectives(
                          groups, cfg.ranks, [&cfg](int rank) { return cfg.et_path(rank); }));
  const CollectivePlacement& p = done.placement;
  if (p.considered == 0) return Status();
  const std::string guessed(stat_key(StatKind::kCommCpuCollectiveGroupGuessed));
  for (RankRow& row : rows) {
    auto placed = p.placed_by_rank.find(row.rank);
    auto it = row.warnings.find(guessed);
    if (placed == p.placed_by_rank.end() || it == row.warnings.end()) continue;
    it->second -= std::min(it->second, placed->second);
    if (it->second == 0) row.warnings.erase(it);
  }
  if (!quiet || p.unplaced > 0) {
    std::fprintf(
        stderr, "%s\n",
        fmt::format("gloo collectives of ranks in several process groups: {} of {} "
                    "placed on their group by order, size and timing across ranks ({} "
                    "trace(s) rewritten){}",
                    p.placed, p.considered, done.traces_rewritten,
                    p.unplaced > 0 ? fmt::format("; {} left on the default group", p.unplaced)
                                   : std::string())
            .c_str());
  }
  return Status();
}

// ASTRA-sim's --comm-group-configuration.
Status write_groups(const RunConfig& cfg, const std::vector<RankCommGroups>& groups, bool quiet) {
  CommGroupFileReport report;
  CF_RETURN_IF_ERROR(write_comm_group_file(groups, cfg.ranks, cfg.convert.pg_name_offset,
                                           cfg.comm_group_path(), &report));
  if (!quiet) std::fprintf(stderr, "%s\n", describe(report, cfg.comm_group_path()).c_str());
  return Status();
}

// Process 0: the gloo collectives' groups, the table, summary.json and the group file. Returns
// the run's failed rank count, or an error.
StatusOr<size_t> summarize_run(const RunConfig& cfg, const std::vector<std::string>& blobs,
                               RunTotals totals, bool quiet) {
  CF_ASSIGN_OR_RETURN(std::vector<RankRow> rows, decode_rows(blobs, cfg.ranks));
  count_rows(rows, totals);
  const bool converted = cfg.has(RunStage::kConvert) && totals.failed == 0;
  std::vector<RankCommGroups> groups;
  if (converted) {
    CF_ASSIGN_OR_RETURN(groups, rank_groups(cfg, rows));
    CF_RETURN_IF_ERROR(place_cpu_collectives(cfg, groups, rows, quiet));
  }
  if (!quiet || totals.failed > 0) std::fputs(report_table(rows, totals).c_str(), stderr);
  CF_RETURN_IF_ERROR(
      write_file_atomically(cfg.summary_path(), summary_json(cfg.path, rows, totals)));
  if (converted && cfg.comm_groups) CF_RETURN_IF_ERROR(write_groups(cfg, groups, quiet));
  return totals.failed;
}

void announce(const RunConfig& cfg, const RunJobs& work, const std::string& who) {
  std::fprintf(stderr,
               "%srun: %zu ranks (%zu to do here, %zu up to date), stages: link%s%s; %llu ranks "
               "in flight (budget %llu MB)\n",
               who.c_str(), cfg.ranks.size(), work.jobs.size(),
               work.records.size() - work.jobs.size(), work.plan.convert ? ", convert" : "",
               cfg.has(RunStage::kSimulate) ? ", simulate" : "",
               static_cast<unsigned long long>(work.in_flight),
               static_cast<unsigned long long>(cfg.memory_budget_bytes >> 20));
}

// Process 0, after the graph: steps 4 (summary) and 5 (simulation).
RunOutcome summarize_and_simulate(const RunSetup& setup, const std::vector<std::string>& blobs,
                                  const RunTotals& totals, bool quiet) {
  const RunConfig& cfg = setup.cfg;
  RunOutcome out;
  auto failed = summarize_run(cfg, blobs, totals, quiet);
  if (!failed.ok()) {
    out.exit_code = 1;
    out.error = failed.status();
    return out;
  }
  out.summary_path = cfg.summary_path();
  out.ranks_failed = *failed;
  out.exit_code = *failed > 0 ? 1 : 0;
  if (!cfg.has(RunStage::kSimulate)) return out;
  if (*failed > 0) {
    out.error = Status::errorf("simulation skipped: {} rank(s) failed", *failed);
    return out;
  }
  // All ranks at once, after the last one is converted.
  out.error = simulate_all(cfg, setup.sim_config, quiet);
  out.exit_code = out.error.ok() ? 0 : 1;
  return out;
}

}  // namespace

RunOutcome run_batch(const RunRequest& request) {
  RunOutcome out;
  auto unusable = [&out](Status why) {
    out.exit_code = 2;
    out.error = std::move(why);
    return out;
  };
  // 1. The configuration, checked whole (the simulator's too) before any work.
  auto setup = load_setup(request.config_path);
  if (!setup.ok()) return unusable(setup.status());
  const RunConfig& cfg = setup->cfg;
  // Under mpirun, this process runs its share of the ranks; process 0 gathers the summary and
  // runs the simulation.
  auto joined = MpiWorld::join();
  if (!joined.ok()) return unusable(joined.status());
  if (Status s = create_output_dirs(cfg); !s.ok()) return unusable(s);
  const MpiWorld& world = *joined;
  const std::shared_ptr<void> limit = limit_threads(static_cast<size_t>(cfg.threads));

  // 2. The jobs: this process's ranks, less those --resume finds up to date.
  const RunJobs work = plan_jobs(cfg, world, request.resume);
  const std::string who = world.distributed()
                              ? fmt::format("[process {}/{}] ", world.process(), world.processes())
                              : std::string();
  if (!request.quiet) announce(cfg, work, who);

  // 3. The graph.
  const auto t0 = Clock::now();
  Progress progress(work, who, request.quiet, ::isatty(2) != 0 && !world.distributed(),
                    work.plan.convert);
  const std::vector<RankJobResult> results =
      run_rank_graph(work.plan, work.jobs, static_cast<size_t>(work.in_flight),
                     [&progress](size_t job, const RankJobResult& r) { progress.done(job, r); });

  // 4. The summary: every process's rows to process 0 (which also waits here for the last
  // process to finish). 5. The simulation, on process 0 after the summary.
  const std::vector<std::string> blobs = world.gather(encode_rows(rows_of(work, results)));
  RunTotals totals;
  totals.seconds = seconds_since(t0);
  totals.in_flight = work.in_flight;
  totals.processes = world.processes();
  totals.malloc_huge_pages = malloc_huge_pages();
  totals.malloc_one_arena = malloc_one_arena();
  if (world.process() == 0) out = summarize_and_simulate(*setup, blobs, totals, request.quiet);
  out.exit_code = world.broadcast(out.exit_code);
  out.process = world.process();
  out.processes = world.processes();
  out.threads = ParallelBatches::workers();
  return out;
}

StatusOr<std::string> run_graph_dot(const std::string& config_path) {
  CF_ASSIGN_OR_RETURN(RunConfig cfg, load_run_config(config_path));
  return rank_graph_dot(plan_of(cfg));
}

namespace {

const std::vector<cli::FlagSpec>& run_flags() {
  static const std::vector<cli::FlagSpec> specs = {
      {"resume", false, "skip ranks whose outputs are newer than their inputs", {}},
      {"quiet", false, "print only errors and the final summary", {"q"}},
      {"profile",
       true,
       "also write a Chrome trace of where the run's time went to FILE (FILE.K for process K > 0 "
       "under mpirun; docs/performance.md)",
       {}},
      {"print-graph", false, "print the configuration's flow graph (Graphviz dot) and exit", {}},
      {"help", false, "show this help", {"h"}},
  };
  return specs;
}

}  // namespace

std::optional<std::string> run_config_argument(int argc, char** argv, int first) {
  auto args = cli::Args::parse(argc, argv, first, run_flags());
  if (!args.ok() || args->positionals().empty() || args->positionals().front() == "-") {
    return std::nullopt;
  }
  return args->positionals().front();
}

int run_run_command(int argc, char** argv, int first) {
  const char* synopsis =
      "run CONFIG.yaml [--resume] [--quiet] [--profile FILE] [--print-graph]   "
      "(configs/README.md documents "
      "CONFIG)";
  cli::Verb verb("run", synopsis, run_flags());
  if (auto exit = verb.parse(argc, argv, first)) return *exit;
  const cli::Args& args = verb.args();
  if (args.positionals().size() != 1) return verb.usage_error("expected one CONFIG.yaml");
  if (auto exit = verb.print_graph([&args] { return run_graph_dot(args.positionals().front()); })) {
    return *exit;
  }
  RunRequest request;
  request.config_path = args.positionals().front();
  request.resume = args.has("resume");
  request.quiet = args.has("quiet");
  if (auto exit = verb.start_profile({request.config_path})) return *exit;
  const RunOutcome outcome = [&] {
    const profile::Span span("run");
    return run_batch(request);
  }();
  if (!outcome.error.ok()) verb.message(outcome.error.message());
  return verb.finish_profile(
      outcome.exit_code, outcome.process > 0 ? fmt::format(".{}", outcome.process) : std::string(),
      outcome.threads);
}

}  // namespace chakraflow
