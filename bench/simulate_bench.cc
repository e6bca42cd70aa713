// Google Benchmarks of `chakraflow simulate`: simulated nodes per second (items_per_second) on the
// real 8-rank DLRM step (../shared/data/pairs/dlrm_8rank: legacy device traces linked by operator
// order, converted; 15,508 nodes, 8 collectives), tiled to 8, 64 and 512 ranks (rank r replays
// DLRM rank r % 8; every collective spans all ranks). Each iteration opens the traces and runs the
// whole simulation (reading the .et files included). Results are checked before they are timed:
// the run completes, every node runs, every collective matches.
//
// The arguments are (ranks, mode: 0 replay / 1 model, threads: 0 = all cores).
#include <benchmark/benchmark.h>
#include <oneapi/tbb/global_control.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "bench/pair_fixture.h"
#include "stages/common/file_io.h"
#include "stages/convert/pytorch_converter.h"
#include "stages/link/et_plus_writer.h"
#include "stages/link/link.h"
#include "stages/simulate/simulator.h"

namespace chakraflow {
namespace {

constexpr uint32_t kDlrmRanks = 8;

// Links (sequence matching of the legacy device traces) and converts the 8 DLRM ranks once.
struct DlrmTraces {
  std::filesystem::path dir;
  std::vector<std::string> et;  // dlrm.{rank}.et
  uint64_t nodes = 0;           // in the 8 traces
  std::string error;

  DlrmTraces() {
    const std::string pairs = bench::pair_dir("dlrm_8rank");
    if (pairs.empty()) {
      error = "../shared/data/pairs/dlrm_8rank is absent";
      return;
    }
    dir = std::filesystem::temp_directory_path() /
          ("chakraflow_simulate_bench_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    for (uint32_t r = 0; r < kDlrmRanks; ++r) {
      Status s = prepare(pairs + fmt::format("/rank{}", r), r);
      if (!s.ok()) {
        error = s.message();
        return;
      }
    }
  }
  ~DlrmTraces() {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }

  Status prepare(const std::string& pair, uint32_t rank) {
    CF_ASSIGN_OR_RETURN(HostTrace host, load_host_trace(pair + "/host_et.json.gz"));
    CF_ASSIGN_OR_RETURN(DeviceTrace device, load_device_trace(pair + "/kineto.legacy.json.gz"));
    LinkOptions options;
    options.rank = static_cast<int>(rank);
    options.mode = resolve_mode(device, MatchMode::kAuto);
    CF_ASSIGN_OR_RETURN(LinkedTrace linked, link_traces(host, device, options));
    const std::string et_plus = (dir / fmt::format("et_plus.{}.json", rank)).string();
    CF_ASSIGN_OR_RETURN(OutputFile out, OutputFile::open(et_plus));
    CF_RETURN_IF_ERROR(write_et_plus(host, device, linked, options,
                                     [&out](std::string_view bytes) { out.write(bytes); }));
    CF_RETURN_IF_ERROR(out.commit());
    et.push_back((dir / fmt::format("dlrm.{}.et", rank)).string());
    ConvertReport report;
    CF_RETURN_IF_ERROR(convert_file(et_plus, et.back(), ConvertOptions(), &report));
    nodes += report.output_nodes;
    return Status();
  }

  std::vector<std::string> tiled(uint32_t ranks) const {
    std::vector<std::string> paths;
    for (uint32_t r = 0; r < ranks; ++r) paths.push_back(et[r % kDlrmRanks]);
    return paths;
  }
};

const DlrmTraces& dlrm() {
  static const DlrmTraces traces;
  return traces;
}

void BM_SimulateDlrmTiled(benchmark::State& state) {
  const DlrmTraces& d = dlrm();
  if (!d.error.empty()) {
    state.SkipWithError(d.error.c_str());
    return;
  }
  const auto ranks = static_cast<uint32_t>(state.range(0));
  SimOptions options;
  options.config.mode = state.range(1) == 0 ? SimMode::kReplay : SimMode::kModel;
  std::unique_ptr<oneapi::tbb::global_control> limit;
  if (state.range(2) > 0) {
    limit = std::make_unique<oneapi::tbb::global_control>(
        oneapi::tbb::global_control::max_allowed_parallelism, static_cast<size_t>(state.range(2)));
  }
  const std::vector<std::string> paths = d.tiled(ranks);
  const uint64_t expected_nodes = d.nodes * (ranks / kDlrmRanks);

  auto run_once = [&](SimResult* out) -> Status {
    CF_ASSIGN_OR_RETURN(std::unique_ptr<Simulation> sim, Simulation::open(paths, options));
    CF_RETURN_IF_ERROR(sim->run());
    *out = sim->result();
    return Status();
  };
  // Checked before timing.
  SimResult check;
  Status s = run_once(&check);
  if (!s.ok() || !check.completed || check.nodes != expected_nodes || check.collectives != 8) {
    state.SkipWithError(
        fmt::format("check failed: {} (completed {}, {} of {} nodes, {} collectives)", s.message(),
                    check.completed, check.nodes, expected_nodes, check.collectives)
            .c_str());
    return;
  }
  uint64_t rounds = check.rounds;
  for (auto _ : state) {
    SimResult result;
    s = run_once(&result);
    if (!s.ok() || result.nodes != expected_nodes) state.SkipWithError("simulation failed");
    rounds = result.rounds;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(expected_nodes));
  state.counters["ranks"] = ranks;
  state.counters["rounds"] = static_cast<double>(rounds);
  state.counters["nodes"] = static_cast<double>(expected_nodes);
}
BENCHMARK(BM_SimulateDlrmTiled)
    ->ArgNames({"ranks", "model", "threads"})
    ->Args({8, 0, 0})
    ->Args({64, 0, 0})
    ->Args({512, 0, 0})
    ->Args({512, 1, 0})
    ->Args({512, 0, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The same, timing run() only: the traces are opened (and their first window read and decoded)
// outside the timed region. The difference with BM_SimulateDlrmTiled is the cost of reading.
void BM_SimulateDlrmTiledRunOnly(benchmark::State& state) {
  const DlrmTraces& d = dlrm();
  if (!d.error.empty()) {
    state.SkipWithError(d.error.c_str());
    return;
  }
  const auto ranks = static_cast<uint32_t>(state.range(0));
  const std::vector<std::string> paths = d.tiled(ranks);
  const uint64_t expected_nodes = d.nodes * (ranks / kDlrmRanks);
  for (auto _ : state) {
    state.PauseTiming();
    auto sim = Simulation::open(paths, SimOptions{});
    if (!sim.ok()) {
      state.SkipWithError(sim.status().message().c_str());
      return;
    }
    state.ResumeTiming();
    Status s = (*sim)->run();
    state.PauseTiming();
    if (!s.ok() || !(*sim)->result().completed || (*sim)->result().nodes != expected_nodes) {
      state.SkipWithError("simulation failed");
    }
    sim->reset();  // freeing is not timed either
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(expected_nodes));
  state.counters["ranks"] = ranks;
}
BENCHMARK(BM_SimulateDlrmTiledRunOnly)
    ->ArgNames({"ranks"})
    ->Arg(8)
    ->Arg(64)
    ->Arg(512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace chakraflow
