// `chakraflow run CONFIG.yaml`: every rank of a training run through link (and convert) in one
// oneTBB flow graph, with a memory-bounded number of ranks in flight, per-rank failure isolation,
// progress, a summary table and summary.json.
#include <oneapi/tbb/global_control.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "pipeline/cli_args.h"
#include "pipeline/comm_group_file.h"
#include "pipeline/commands.h"
#include "pipeline/link_graph.h"
#include "pipeline/mpi_world.h"
#include "pipeline/run_config.h"
#include "stages/convert/et_plus_nodes.h"
#include "stages/common/file_io.h"
#include "stages/common/json_util.h"
#include "stages/convert/pytorch_converter.h"
#include "stages/simulate/sim_config.h"
#include "stages/simulate/simulator.h"
#include "stages/simulate/simulator_report.h"

namespace chakraflow {
namespace {

namespace fs = std::filesystem;

// Decompressed size of a file: the gzip ISIZE trailer (mod 4 GiB, so at least the compressed size
// times the usual ratio when it looks wrapped) or the plain size. 0 when unreadable.
uint64_t estimated_text_bytes(const std::string& path) {
  std::error_code ec;
  uint64_t size = fs::file_size(path, ec);
  if (ec) return 0;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return size;
  unsigned char magic[2] = {0, 0};
  bool gz = std::fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  uint64_t text = size;
  if (gz && size >= 18 && std::fseek(f, -4, SEEK_END) == 0) {
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
    auto t = fs::last_write_time(in, ec);
    if (ec || t > out_time) return false;
  }
  return true;
}

struct RankRecord {
  size_t index = 0;  // into RunConfig::ranks
  int rank = 0;
  bool skipped = false;  // --resume: outputs newer than inputs
  LinkJobResult link;
  ConvertReport convert;
  uint64_t input_file_bytes = 0;
  uint64_t output_bytes = 0;
  std::string error;  // empty when ok
};

// What process 0 needs of a rank for the summary, rendered where the rank ran (so that MPI moves
// only text): its summary.json object and its line of the summary table.
struct RankRow {
  size_t index = 0;
  bool failed = false;
  bool skipped = false;
  uint64_t text_bytes = 0;
  std::string json;
  std::string table;
};

RankRow render_row(const RankRecord& r) {
  RankRow row;
  row.index = r.index;
  row.failed = !r.error.empty();
  row.skipped = r.skipped;
  row.text_bytes = r.link.input_bytes;
  const LinkSummary& s = r.link.summary;
  std::string& out = row.json;
  out += fmt::format("{{\"rank\": {}, \"status\": \"{}\"", r.rank,
                     r.skipped         ? "skipped"
                     : r.error.empty() ? "ok"
                                       : "failed");
  if (!r.error.empty()) {
    out += ", \"error\": ";
    json::append_escaped(out, r.error);
  }
  if (!r.skipped) {
    out += fmt::format(
        ", \"input_file_bytes\": {}, \"input_text_bytes\": {}, \"output_bytes\": {}, \"mode\": "
        "\"{}\", "
        "\"host_nodes\": {}, \"host_ops\": {}, \"host_ops_linked\": {}, \"gpu_ops\": {}, "
        "\"gpu_ops_linked\": {}, "
        "\"et_plus_nodes\": {}, \"et_nodes\": {}, \"sync_deps\": {}, \"link_seconds\": {:.3f}, "
        "\"convert_seconds\": {:.3f}, \"warnings\": {{",
        r.input_file_bytes, r.link.input_bytes, r.output_bytes, s.mode, s.host_nodes,
        s.host_op_candidates, s.host_ops_linked, s.gpu_ops, s.gpu_ops_linked, s.et_plus_nodes,
        r.convert.output_nodes, s.sync.host_deps + s.sync.gpu_deps, r.link.seconds,
        r.link.after_seconds);
    bool first = true;
    LinkStats all = r.link.stats;
    all.merge(r.convert.stats);
    for (const auto& [kind, entry] : all.entries()) {
      if (!first) out += ", ";
      first = false;
      json::append_escaped(out, stat_key(kind));
      out += fmt::format(": {}", entry.count);
    }
    out += "}";
  }
  out += "}";
  if (r.skipped) {
    row.table = fmt::format("{:>6}  {:<8}", r.rank, "skipped");
  } else {
    uint64_t warnings = 0;
    for (const auto& [k, e] : r.link.stats.entries()) warnings += e.count;
    for (const auto& [k, e] : r.convert.stats.entries()) warnings += e.count;
    row.table = fmt::format("{:>6}  {:<8}  {:>9.1f}  {:>14}  {:>14}  {:>9.2f}  {}", r.rank,
                            r.error.empty() ? "ok" : "FAILED", r.link.input_bytes / 1e6,
                            fmt::format("{}/{}", s.host_ops_linked, s.host_op_candidates),
                            fmt::format("{}/{}", s.gpu_ops_linked, s.gpu_ops),
                            r.link.seconds + r.link.after_seconds, warnings);
  }
  return row;
}

// Rows travel between MPI processes as "index failed skipped text_bytes json_len table_len\n"
// followed by the two texts.
void serialize_row(const RankRow& row, std::string& out) {
  out += fmt::format("{} {} {} {} {} {}\n", row.index, row.failed ? 1 : 0, row.skipped ? 1 : 0,
                     row.text_bytes, row.json.size(), row.table.size());
  out += row.json;
  out += row.table;
}

StatusOr<std::vector<RankRow>> parse_rows(std::string_view blob) {
  std::vector<RankRow> rows;
  while (!blob.empty()) {
    size_t eol = blob.find('\n');
    if (eol == std::string_view::npos) return Status::error("summary rows: truncated header");
    std::string header(blob.substr(0, eol));
    blob.remove_prefix(eol + 1);
    RankRow row;
    unsigned long long index = 0, text = 0, json_len = 0, table_len = 0;
    int failed = 0, skipped = 0;
    if (std::sscanf(header.c_str(), "%llu %d %d %llu %llu %llu", &index, &failed, &skipped, &text,
                    &json_len, &table_len) != 6 ||
        json_len + table_len > blob.size()) {
      return Status::errorf("summary rows: bad header '{}'", header);
    }
    row.index = index;
    row.failed = failed != 0;
    row.skipped = skipped != 0;
    row.text_bytes = text;
    row.json = std::string(blob.substr(0, json_len));
    row.table = std::string(blob.substr(json_len, table_len));
    blob.remove_prefix(json_len + table_len);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

bool malloc_huge_pages() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr && (std::strstr(tunables, "glibc.malloc.hugetlb=1") != nullptr ||
                                 std::strstr(tunables, "glibc.malloc.hugetlb=2") != nullptr);
}

namespace {

std::string summary_json(const RunConfig& cfg, const std::vector<RankRow>& rows, double seconds,
                         uint64_t in_flight, int processes) {
  std::string out = "{\n";
  out += fmt::format("  \"config\": ");
  json::append_escaped(out, cfg.path);
  out += fmt::format(
      ",\n  \"ranks_total\": {},\n  \"ranks_failed\": {},\n  \"ranks_skipped\": {},\n", rows.size(),
      std::count_if(rows.begin(), rows.end(), [](const RankRow& r) { return r.failed; }),
      std::count_if(rows.begin(), rows.end(), [](const RankRow& r) { return r.skipped; }));
  out += fmt::format(
      "  \"seconds\": {:.3f},\n  \"processes\": {},\n  \"ranks_in_flight\": {},\n"
      "  \"malloc_huge_pages\": {},\n  \"ranks\": [\n",
      seconds, processes, in_flight, malloc_huge_pages());
  for (size_t i = 0; i < rows.size(); ++i) {
    out += "    ";
    out += rows[i].json;
    out += i + 1 < rows.size() ? ",\n" : "\n";
  }
  out += "  ]\n}\n";
  return out;
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

// The simulate stage over every rank's .et; returns the exit code.
int simulate_all(const RunConfig& cfg, const SimConfig& sim_config, bool quiet) {
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
  if (!ran.ok()) {
    std::fprintf(stderr, "chakraflow run: simulation: %s\n", ran.message().c_str());
    return 1;
  }
  const SimResult& result = (*sim)->result();
  if (!quiet) std::fputs(report_text(result, sim_options.config).c_str(), stderr);
  std::string report_path =
      cfg.simulation_path();
  Status report = write_file_atomically(report_path, report_json(result, sim_options.config));
  if (!report.ok()) {
    std::fprintf(stderr, "chakraflow run: %s\n", report.message().c_str());
    return 1;
  }
  if (!result.completed) {
    for (const std::string& line : result.stall) {
      std::fprintf(stderr, "chakraflow run: stalled: %s\n", line.c_str());
    }
    return 1;
  }
  return 0;
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

}  // namespace

int run_run_command(int argc, char** argv, int first) {
  static const std::vector<cli::FlagSpec> specs = {
      {"resume", false, "skip ranks whose outputs are newer than their inputs", {}},
      {"quiet", false, "print only errors and the final summary", {"q"}},
      {"help", false, "show this help", {"h"}},
  };
  const char* synopsis =
      "run CONFIG.yaml [--resume] [--quiet]   (configs/README.md documents CONFIG)";
  cli::Verb verb("run", synopsis, specs);
  if (auto exit = verb.parse(argc, argv, first)) return *exit;
  const cli::Args* parsed = &verb.args();
  if (parsed->positionals().size() != 1) return verb.usage_error("expected one CONFIG.yaml");
  const std::string& config_path = parsed->positionals().front();
  std::optional<RunConfig> preloaded = take_loaded_run_config(config_path);
  StatusOr<RunConfig> cfg =
      preloaded ? StatusOr<RunConfig>(std::move(*preloaded)) : load_run_config(config_path);
  if (!cfg.ok()) {
    std::fprintf(stderr, "chakraflow run: %s\n", cfg.status().message().c_str());
    return 2;
  }
  if (Status s = discover_ranks(*cfg); !s.ok()) {
    std::fprintf(stderr, "chakraflow run: %s\n", s.message().c_str());
    return 2;
  }
  // The whole configuration is checked before any work: the simulator's configuration too.
  SimConfig sim_config;
  if (!cfg->simulate_config.empty()) {
    auto loaded = load_sim_config(cfg->simulate_config);
    if (!loaded.ok()) {
      std::fprintf(stderr, "chakraflow run: %s: simulate.config: %s\n", cfg->path.c_str(),
                   loaded.status().message().c_str());
      return 2;
    }
    sim_config = *loaded;
  }
  if (Status s = check_outputs(*cfg); !s.ok()) {
    std::fprintf(stderr, "chakraflow run: %s\n", s.message().c_str());
    return 2;
  }
  if (cfg->has(RunStage::kSimulate)) {
    for (size_t i = 0; i < cfg->ranks.size(); ++i) {
      if (cfg->ranks[i] != static_cast<int>(i)) {
        std::fprintf(
            stderr,
            "chakraflow run: %s: the simulate stage needs ranks 0..N-1 (rank %zu is missing)\n",
            cfg->path.c_str(), i);
        return 2;
      }
    }
  }
  // Under mpirun, this process runs its share of the ranks; process 0 gathers the summary and
  // runs the simulation.
  auto joined = MpiWorld::join();
  if (!joined.ok()) {
    std::fprintf(stderr, "chakraflow run: %s\n", joined.status().message().c_str());
    return 2;
  }
  const MpiWorld& world = *joined;
  const std::string who = world.distributed()
                              ? fmt::format("[process {}/{}] ", world.process(), world.processes())
                              : std::string();
  const bool quiet = parsed->has("quiet");
  const bool tty = ::isatty(2) != 0 && !world.distributed();
  std::unique_ptr<oneapi::tbb::global_control> limit;
  if (cfg->threads > 0) {
    limit = std::make_unique<oneapi::tbb::global_control>(
        oneapi::tbb::global_control::max_allowed_parallelism, static_cast<size_t>(cfg->threads));
  }
  std::error_code ec;
  const bool convert = cfg->has(RunStage::kConvert);
  const bool keep_et_plus = cfg->writes_et_plus();
  const bool in_memory = convert && cfg->link.format == OutputFormat::kChakra;
  {
    std::vector<std::string> dirs = {fs::path(cfg->summary_path()).parent_path().string()};
    if (convert) dirs.push_back(fs::path(cfg->et_path(0)).parent_path().string());
    if (keep_et_plus) dirs.push_back(fs::path(cfg->et_plus_path(0)).parent_path().string());
    for (const std::string& dir : dirs) {
      if (dir.empty()) continue;
      fs::create_directories(dir, ec);
      if (ec) {
        std::fprintf(stderr, "chakraflow run: %s: cannot create the output directory: %s\n",
                     dir.c_str(), ec.message().c_str());
        return 2;
      }
    }
  }

  // The memory each rank will need: loaded texts, their parse, the ET+ and the converter's
  // model, about 4x the JSON text. Every process computes the same costs and the same split.
  std::vector<uint64_t> costs(cfg->ranks.size());
  uint64_t max_cost = 1;
  for (size_t i = 0; i < cfg->ranks.size(); ++i) {
    int rank = cfg->ranks[i];
    costs[i] = 4 * (estimated_text_bytes(cfg->host_path(rank)) +
                    estimated_text_bytes(cfg->device_path(rank)));
    max_cost = std::max(max_cost, costs[i]);
  }
  const std::vector<int> owner = assign_processes(costs, world.processes());

  // This process's ranks to run (and ranks --resume skips).
  std::vector<RankRecord> records;
  std::vector<LinkJob> jobs;
  std::vector<RemoveOnSignal> intermediate_guards;  // the legacy layout's ET+ between the stages
  std::vector<size_t> record_of_job;
  for (size_t i = 0; i < cfg->ranks.size(); ++i) {
    if (owner[i] != world.process()) continue;
    int rank = cfg->ranks[i];
    // What a killed earlier run left beside this rank's outputs (a skipped rank's too). Only this
    // process's ranks: another host's live temporary files look like a dead process's here.
    if (convert) remove_stale_temps(cfg->et_path(rank));
    if (keep_et_plus) remove_stale_temps(cfg->et_plus_path(rank));
    RankRecord& rec = records.emplace_back();
    rec.index = i;
    rec.rank = rank;
    std::string host = cfg->host_path(rank), device = cfg->device_path(rank);
    std::string final_output = convert ? cfg->et_path(rank) : cfg->et_plus_path(rank);
    if (parsed->has("resume") && newer_than(final_output, {host, device, cfg->path})) {
      rec.skipped = true;
      continue;
    }
    rec.input_file_bytes = fs::file_size(host, ec) + (ec ? 0 : fs::file_size(device, ec));
    LinkJob job;
    job.host_path = host;
    job.device_path = device;
    // The chakra layout is converted in memory (no ET+ written unless kept); the legacy layout
    // through a temporary ET+ file.
    job.output_path = keep_et_plus ? cfg->et_plus_path(rank)
                      : in_memory ? std::string()
                                  : make_temp_path(cfg->et_path(rank));
    if (!keep_et_plus && !in_memory) intermediate_guards.emplace_back(job.output_path);
    job.options = cfg->link;
    job.options.rank = rank;
    jobs.push_back(job);
    record_of_job.push_back(records.size() - 1);
  }
  uint64_t in_flight = cfg->max_ranks_in_flight > 0
                           ? static_cast<uint64_t>(cfg->max_ranks_in_flight)
                           : std::clamp<uint64_t>(cfg->memory_budget_bytes / max_cost, 1,
                                                  std::max<size_t>(cfg->ranks.size(), 1));
  if (!quiet) {
    std::fprintf(stderr,
                 "%srun: %zu ranks (%zu to do here, %zu up to date), stages: link%s%s; %llu ranks "
                 "in flight (budget %llu MB)\n",
                 who.c_str(), cfg->ranks.size(), jobs.size(), records.size() - jobs.size(),
                 convert ? ", convert" : "", cfg->has(RunStage::kSimulate) ? ", simulate" : "",
                 static_cast<unsigned long long>(in_flight),
                 static_cast<unsigned long long>(cfg->memory_budget_bytes >> 20));
  }

  // Progress.
  std::mutex progress_mutex;
  size_t done = 0;
  uint64_t bytes_done = 0;  // input files, for the ETA
  uint64_t text_done = 0;   // decompressed JSON, for the throughput
  uint64_t total_bytes = 0;
  for (size_t j = 0; j < jobs.size(); ++j)
    total_bytes += records[record_of_job[j]].input_file_bytes;
  auto t0 = std::chrono::steady_clock::now();
  LinkGraphHooks hooks;
  ConvertOptions convert_options;
  convert_options.compat = cfg->convert_chakra_compat ? Compat::kChakra : Compat::kDefault;
  convert_options.metadata_as_compute = cfg->metadata_as_compute;
  convert_options.pg_name_offset = cfg->renumber_groups ? 1 : 0;
  // In memory, the converter reads each host node in the loader's pass (one pass over the text);
  // what it read waits here until the rank is linked.
  std::vector<std::optional<HostNodeFields>> host_fields(jobs.size());
  if (in_memory) {
    hooks.load_host = [&](size_t seq) -> StatusOr<HostTrace> {
      HostNodeFields fields(jobs[seq].host_path);
      CF_ASSIGN_OR_RETURN(HostTrace host, load_host_trace(jobs[seq].host_path, &fields));
      host_fields[seq].emplace(std::move(fields));
      return host;
    };
    hooks.convert_linked = [&](size_t seq, const LinkedRank& linked) -> Status {
      RankRecord& rec = records[record_of_job[seq]];
      // The device trace is freed before the nodes are built: the converter's nodes hold copies
      // of what they take from it.
      LinkedDeviceFacts device = linked_device_facts(linked.device, linked.linked);
      linked.release_device();
      if (!host_fields[seq]) return Status::error("internal error: host nodes not read");
      HostNodeFields fields = std::move(*host_fields[seq]);
      host_fields[seq].reset();
      CF_ASSIGN_OR_RETURN(EtPlusTrace trace,
                          read_linked_nodes(linked.host, std::move(fields), std::move(device),
                                            linked.linked, linked.options, convert_options));
      return convert_trace(trace, cfg->et_path(rec.rank), convert_options, &rec.convert);
    };
  } else if (convert) {
    hooks.after_link = [&](size_t seq) {
      RankRecord& rec = records[record_of_job[seq]];
      Status s = convert_file(jobs[seq].output_path, cfg->et_path(rec.rank), convert_options,
                              &rec.convert);
      if (!keep_et_plus) std::remove(jobs[seq].output_path.c_str());
      return s;
    };
  }
  hooks.on_done = [&](size_t seq, const LinkJobResult& r) {
    host_fields[seq].reset();  // a rank that failed before conversion
    std::lock_guard<std::mutex> lock(progress_mutex);
    RankRecord& rec = records[record_of_job[seq]];
    ++done;
    bytes_done += rec.input_file_bytes;
    text_done += r.input_bytes;
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double mbps = elapsed > 0 ? text_done / 1e6 / elapsed : 0;
    double eta = bytes_done > 0 ? elapsed * static_cast<double>(total_bytes - bytes_done) /
                                      static_cast<double>(bytes_done)
                                : 0;
    const Status& failure = !r.status.ok() ? r.status : r.after_status;
    if (!failure.ok()) {
      if (tty) std::fputs("\r\033[K", stderr);
      std::fprintf(stderr, "%srank %d: FAILED: %s\n", who.c_str(), rec.rank,
                   failure.message().c_str());
    } else if (!quiet && !tty) {
      std::fprintf(stderr, "%srank %d: ok (%.1f MB of JSON, link %.2f s%s) [%zu/%zu]\n",
                   who.c_str(), rec.rank, r.input_bytes / 1e6, r.seconds,
                   convert ? fmt::format(", convert {:.2f} s", r.after_seconds).c_str() : "", done,
                   jobs.size());
    }
    if (!quiet && tty) {
      std::fprintf(stderr, "\r\033[K[%zu/%zu ranks] %.1f MB/s, ETA %.0f s", done, jobs.size(), mbps,
                   eta);
      if (done == jobs.size()) std::fputc('\n', stderr);
    }
  };
  auto results = run_link_graph(jobs, static_cast<size_t>(in_flight), hooks);

  std::string blob;
  for (size_t j = 0; j < results.size(); ++j) {
    RankRecord& rec = records[record_of_job[j]];
    rec.link = results[j];
    const Status& failure = !results[j].status.ok() ? results[j].status : results[j].after_status;
    if (!failure.ok()) rec.error = failure.message();
    std::string out = convert ? cfg->et_path(rec.rank) : cfg->et_plus_path(rec.rank);
    rec.output_bytes = rec.error.empty() ? fs::file_size(out, ec) : 0;
  }
  for (const RankRecord& rec : records) serialize_row(render_row(rec), blob);
  // Every process's rows to process 0 (which also waits for the last process to finish here).
  std::vector<std::string> blobs = world.gather(blob);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Process 0: the summary, then the simulation; every process exits with its code.
  auto finish = [&]() -> int {
    std::vector<RankRow> rows;
    for (const std::string& b : blobs) {
      auto parsed_rows = parse_rows(b);
      if (!parsed_rows.ok()) {
        std::fprintf(stderr, "chakraflow run: %s\n", parsed_rows.status().message().c_str());
        return 1;
      }
      for (RankRow& r : *parsed_rows) rows.push_back(std::move(r));
    }
    std::sort(rows.begin(), rows.end(),
              [](const RankRow& a, const RankRow& b) { return a.index < b.index; });
    size_t failed = 0, skipped = 0;
    uint64_t text_total = 0;
    for (const RankRow& r : rows) {
      failed += r.failed;
      skipped += r.skipped;
      text_total += r.text_bytes;
    }
    if (!quiet || failed > 0) {
      std::fprintf(stderr, "\n%6s  %-8s  %9s  %14s  %14s  %9s  %s\n", "rank", "status", "JSON MB",
                   "host linked", "GPU linked", "seconds", "warnings");
      for (const RankRow& r : rows) std::fprintf(stderr, "%s\n", r.table.c_str());
      std::fprintf(
          stderr, "%zu ranks, %zu failed, %zu skipped, %.2f s, %.1f MB/s of JSON%s\n", rows.size(),
          failed, skipped, seconds, seconds > 0 ? text_total / 1e6 / seconds : 0.0,
          world.distributed() ? fmt::format(", {} processes", world.processes()).c_str() : "");
    }
    Status written = write_file_atomically(
        cfg->summary_path(), summary_json(*cfg, rows, seconds, in_flight, world.processes()));
    if (!written.ok()) {
      std::fprintf(stderr, "chakraflow run: %s\n", written.message().c_str());
      return 1;
    }
    if (cfg->has(RunStage::kConvert) && cfg->comm_groups && failed == 0) {
      // ASTRA-sim's --comm-group-configuration, from every rank's trace.
      std::vector<std::pair<int, std::string>> traces;
      for (int r : cfg->ranks) traces.emplace_back(r, cfg->et_path(r));
      CommGroupFileReport groups;
      Status grouped = write_comm_group_file(traces, cfg->ranks, convert_options.pg_name_offset,
                                             cfg->comm_group_path(), &groups);
      if (!grouped.ok()) {
        std::fprintf(stderr, "chakraflow run: %s\n", grouped.message().c_str());
        return 1;
      }
      if (!quiet) std::fprintf(stderr, "%s\n", describe(groups, cfg->comm_group_path()).c_str());
    }
    if (!cfg->has(RunStage::kSimulate)) return failed > 0 ? 1 : 0;
    if (failed > 0) {
      std::fprintf(stderr, "chakraflow run: simulation skipped: %zu rank(s) failed\n", failed);
      return 1;
    }
    // All ranks at once, after the last one is converted.
    return simulate_all(*cfg, sim_config, quiet);
  };
  int code = world.process() == 0 ? finish() : 0;
  return world.broadcast(code);
}

}  // namespace chakraflow
