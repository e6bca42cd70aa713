// The compatibility feeders as simulators drive them: nodes per second (items_per_second) and the
// heap the feeder holds (bytes_per_node: malloc'd bytes in use after the trace is opened and
// after the walk's peak, divided by the node count), for
// - Chakra's old API (Chakra::ETFeeder), in the loop ASTRA-sim's Aug 2025 Workload runs:
//   getNextIssuableNode, read the node's fields, freeChildrenNodes, removeNode;
// - FeederV3 (Chakra::FeederV3::ETFeeder), in ASTRA-sim master's loop: the free set in ascending
//   id order, lookupNode, the node's fields, take_node; then finish_node for the round.
// on chakra.0.et (3,664 nodes; FeederV3 with data_deps only: its ctrl_deps close cycles) and on a
// generated rank: `chakraflow synth --scale S` linked and converted (S = CHAKRAFLOW_BENCH_SCALE,
// default 10: 118,855 nodes; 100 gives the 1.19M-node rank of docs/performance.md). The generated
// files live in a temporary folder removed at exit. Targets: docs/performance.md.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "stages/feed/compat/et_feeder.h"
#include "stages/feed/compat/feeder_v3/et_feeder.h"

namespace {

const std::string kChakra0 =
    std::string(CHAKRAFLOW_SHARED_DATA) + "/chakra_et/resnet_ddp_rank0/chakra.0.et";

struct Generated {
  std::filesystem::path dir;
  std::string et;
  std::string error;
  ~Generated() {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

const Generated& generated() {
  static Generated g = [] {
    Generated g;
    const char* scale_env = std::getenv("CHAKRAFLOW_BENCH_SCALE");
    const std::string scale = scale_env ? scale_env : "10";
    g.dir = std::filesystem::temp_directory_path() /
            ("chakraflow_compat_bench_" + std::to_string(::getpid()));
    std::filesystem::create_directories(g.dir);
    const std::string d = g.dir.string();
    const std::string bin = CHAKRAFLOW_BINARY;
    const std::string cmd = bin + " synth --out " + d + "/synth --ranks 1 --iterations 2 --scale " +
                            scale + " && " + bin + " link --host " + d +
                            "/synth/rank0/host_et.json --device " + d +
                            "/synth/rank0/kineto.json --output-file " + d + "/et_plus.json && " +
                            bin + " convert --input " + d + "/et_plus.json --output " + d +
                            "/rank0.et && rm -r " + d + "/synth " + d + "/et_plus.json";
    if (std::system(("(" + cmd + ") > /dev/null 2>&1").c_str()) != 0) {
      g.error = "could not generate the trace: " + cmd;
    }
    g.et = d + "/rank0.et";
    return g;
  }();
  return g;
}

size_t heap_in_use() {
  return mallinfo2().uordblks;
}

uint64_t walk_v1(const std::string& path, size_t* peak_heap) {
  const size_t before = heap_in_use();
  Chakra::ETFeeder feeder(path);
  size_t peak = heap_in_use();
  uint64_t issued = 0;
  uint64_t sum = 0;
  while (feeder.hasNodesToIssue()) {
    std::shared_ptr<Chakra::ETFeederNode> node = feeder.getNextIssuableNode();
    if (!node) break;
    sum += node->runtime() + node->is_cpu_op() + node->type();
    if (node->type() == ChakraProtoMsg::COMM_COLL_NODE) sum += node->comm_size();
    feeder.freeChildrenNodes(node->id());
    feeder.removeNode(node->id());
    ++issued;
    if ((issued & 0xFFFF) == 0) peak = std::max(peak, heap_in_use());
  }
  benchmark::DoNotOptimize(sum);
  *peak_heap = peak - before;
  return issued;
}

uint64_t walk_v3(const std::string& path, bool ctrl_deps, size_t* peak_heap) {
  const size_t before = heap_in_use();
  Chakra::FeederV3::ETFeeder feeder(path, true, ctrl_deps);
  size_t peak = heap_in_use();
  auto& resolver = feeder.getDependancyResolver();
  uint64_t issued = 0;
  uint64_t sum = 0;
  std::set<uint64_t> round;
  while (!resolver.get_dependancy_free_nodes().empty()) {
    round.clear();
    round.insert(resolver.get_dependancy_free_nodes().begin(),
                 resolver.get_dependancy_free_nodes().end());
    for (uint64_t id : round) {
      std::shared_ptr<Chakra::FeederV3::ETFeederNode> node = feeder.lookupNode(id);
      sum += node->runtime() + node->is_cpu_op<bool>(false) + node->type();
      if (node->type() == ChakraProtoMsg::COMM_COLL_NODE) {
        sum += node->comm_size<uint64_t>(0);
      }
      resolver.take_node(id);
      ++issued;
    }
    for (uint64_t id : round) resolver.finish_node(id);
    if ((issued & 0xFFFF) < round.size()) peak = std::max(peak, heap_in_use());
  }
  benchmark::DoNotOptimize(sum);
  *peak_heap = peak - before;
  return issued;
}

template <typename Walk>
void run(benchmark::State& state, const std::string& path, const Walk& walk) {
  uint64_t nodes = 0;
  uint64_t last = 0;
  size_t heap = 0;
  for (auto _ : state) {
    last = walk(path, &heap);
    if (last == 0) {
      state.SkipWithError("no node issued");
      return;
    }
    nodes += last;
  }
  state.SetItemsProcessed(static_cast<int64_t>(nodes));
  state.counters["nodes"] = static_cast<double>(last);
  state.counters["bytes_per_node"] = static_cast<double>(heap) / static_cast<double>(last);
}

void BM_CompatV1_Chakra0(benchmark::State& state) {
  run(state, kChakra0, [](const std::string& p, size_t* h) { return walk_v1(p, h); });
}
BENCHMARK(BM_CompatV1_Chakra0)->Unit(benchmark::kMillisecond);

void BM_FeederV3_Chakra0(benchmark::State& state) {
  run(state, kChakra0, [](const std::string& p, size_t* h) { return walk_v3(p, false, h); });
}
BENCHMARK(BM_FeederV3_Chakra0)->Unit(benchmark::kMillisecond);

void BM_CompatV1_Generated(benchmark::State& state) {
  const Generated& g = generated();
  if (!g.error.empty()) return state.SkipWithError(g.error.c_str());
  run(state, g.et, [](const std::string& p, size_t* h) { return walk_v1(p, h); });
}
BENCHMARK(BM_CompatV1_Generated)->Unit(benchmark::kMillisecond);

void BM_FeederV3_Generated(benchmark::State& state) {
  const Generated& g = generated();
  if (!g.error.empty()) return state.SkipWithError(g.error.c_str());
  run(state, g.et, [](const std::string& p, size_t* h) { return walk_v3(p, true, h); });
}
BENCHMARK(BM_FeederV3_Generated)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
