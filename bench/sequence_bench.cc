// Google Benchmarks for sequence matching (stages/link/sequence_matching.h) and the legacy ET+
// writer on resnet_1gpu's legacy device trace (no "Record function id": 1,310 host ops of one
// iteration against 39,506 device CPU ops of 30 iterations), from ../shared/data. Results are
// checked before they are timed. Reports bytes/s of JSON input and items/s.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "bench/pair_fixture.h"
#include "pipeline/rank_graph.h"
#include "stages/common/file_io.h"
#include "stages/link/device_trace_loader.h"
#include "stages/link/et_plus_legacy_writer.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/link.h"
#include "stages/link/sequence_matching.h"

namespace chakraflow {
namespace {

using bench::pair_dir;
using Fixture = bench::PairFixture;

Fixture& resnet() {
  static Fixture f("resnet_1gpu", "kineto.legacy.json.gz");
  return f;
}

LinkOptions sequence_options() {
  LinkOptions o;
  o.mode = MatchMode::kSequence;
  return o;
}

#define REQUIRE_DATA(f)                                                \
  if (!(f).ok) {                                                       \
    state.SkipWithError("../shared/data/pairs/resnet_1gpu is absent"); \
    return;                                                            \
  }

// The stage alone: thread pairing, window search over 30 iterations, alignment.
void BM_SequenceMatching(benchmark::State& state) {
  auto& f = resnet();
  REQUIRE_DATA(f);
  for (auto _ : state) {
    DataProblems stats;
    auto map = map_by_sequence(f.host, f.device, sequence_options(), stats);
    if (!map.ok() || map->matched != 1310) state.SkipWithError("resnet not fully matched");
    benchmark::DoNotOptimize(map);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(f.device.cpu_ops.size()));
}
BENCHMARK(BM_SequenceMatching)->Unit(benchmark::kMillisecond);

// The same with --annotation DataLoader: every thread aligned once per iteration.
void BM_SequenceMatchingByIteration(benchmark::State& state) {
  auto& f = resnet();
  REQUIRE_DATA(f);
  LinkOptions o = sequence_options();
  o.annotation = "DataLoader";
  for (auto _ : state) {
    DataProblems stats;
    auto map = map_by_sequence(f.host, f.device, o, stats);
    if (!map.ok() || map->matched != 1310) state.SkipWithError("resnet not fully matched");
    benchmark::DoNotOptimize(map);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(f.device.cpu_ops.size()));
}
BENCHMARK(BM_SequenceMatchingByIteration)->Unit(benchmark::kMillisecond);

// Alignment of a long, repetitive sequence with scattered edits (anchors, then exact DP).
void BM_AlignSequences(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::mt19937 rng(3);
  std::vector<uint32_t> layer(200);
  for (auto& x : layer) x = std::uniform_int_distribution<uint32_t>(0, 300)(rng);
  std::vector<uint32_t> a;
  for (uint32_t k = 0; a.size() < n; ++k) {
    a.push_back(100000 + k);
    a.insert(a.end(), layer.begin(), layer.end());
  }
  std::vector<uint32_t> b = a;
  for (size_t pos = 17; pos < b.size(); pos += 997) b[pos] = 200000 + static_cast<uint32_t>(pos);
  for (auto _ : state) {
    auto pairs = align_sequences(a, b);
    if (pairs.size() + a.size() / 997 + 1 < a.size()) state.SkipWithError("alignment lost ops");
    benchmark::DoNotOptimize(pairs);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(a.size()));
}
BENCHMARK(BM_AlignSequences)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_WriteEtPlusLegacy(benchmark::State& state) {
  auto& f = resnet();
  REQUIRE_DATA(f);
  LinkOptions o = sequence_options();
  o.format = OutputFormat::kLegacy;
  auto linked = link_traces(f.host, f.device, o);
  if (!linked.ok()) {
    state.SkipWithError("link failed");
    return;
  }
  size_t bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    Status s = write_et_plus_legacy(f.host, f.device, *linked, o,
                                    [&bytes](std::string_view b) { bytes += b.size(); });
    if (!s.ok() || bytes == 0) state.SkipWithError("write failed");
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(linked->node_count));
}
BENCHMARK(BM_WriteEtPlusLegacy)->Unit(benchmark::kMillisecond);

// End to end through the flow graph in sequence mode: read .json.gz, parse, link, write.
void BM_SequenceLinkEndToEnd(benchmark::State& state) {
  std::string dir = pair_dir("resnet_1gpu");
  if (dir.empty()) {
    state.SkipWithError("../shared/data/pairs/resnet_1gpu is absent");
    return;
  }
  std::string out = std::filesystem::temp_directory_path() / "chakraflow_bench_seq_et_plus.json";
  uint64_t input = 0;
  for (auto _ : state) {
    RankJob job{
        dir + "/host_et.json.gz", dir + "/kineto.legacy.json.gz", out, {}, sequence_options()};
    const RankJobResult r = run_link_job(job);
    if (!r.status.ok()) state.SkipWithError(r.status.message().c_str());
    if (r.summary.host_ops_linked != 1310) state.SkipWithError("resnet not fully matched");
    input = r.input_bytes;
  }
  std::remove(out.c_str());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(input));
}
BENCHMARK(BM_SequenceLinkEndToEnd)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace chakraflow
