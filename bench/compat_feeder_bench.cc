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
// files live in a temporary folder removed at exit; CHAKRAFLOW_BENCH_ET=FILE walks FILE instead.
// Targets: docs/performance.md.
//
// *_AstraPattern: the same APIs walked in simulated time, as an ASTRA-sim run walks them: one CPU
// op and one GPU op at a time (a node whose resource is busy waits), communication unbounded,
// each node done `runtime` after its issue, looked up at issue and at completion. The CPU ops run
// ahead of the GPU ops they launch, so several regions of the file are in use at once. Reported:
// the bytes the process read (/proc/self/io rchar, the index's scan included) per byte of the
// file (read_per_file_byte), its system CPU seconds per walk (sys_s), and the heap in use at the
// walk's peak per node (bytes_per_node).
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <sys/resource.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fstream>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

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
    // A trace of the user's instead of a generated one (it is read, never removed).
    if (const char* et = std::getenv("CHAKRAFLOW_BENCH_ET"); et != nullptr && *et != '\0') {
      g.et = et;
      if (!std::filesystem::is_regular_file(g.et)) g.error = "CHAKRAFLOW_BENCH_ET: no file " + g.et;
      return g;
    }
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

// Malloc'd bytes in use, the large blocks malloc maps on their own included (a gzip'd trace's
// records kept in one string, the record blocks).
size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
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

// Bytes read by the process so far (rchar: every read and pread, from the page cache or not).
uint64_t bytes_read_so_far() {
  std::ifstream io("/proc/self/io");
  std::string key;
  uint64_t value = 0;
  while (io >> key >> value) {
    if (key == "rchar:") return value;
  }
  return 0;
}

double system_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_stime.tv_sec) + static_cast<double>(u.ru_stime.tv_usec) / 1e6;
}

// The simulated machine of the *_AstraPattern walks: which resource a node holds, and the
// completions to come as (time, id).
enum Resource { kCpu, kGpu, kNone };
using Completions = std::priority_queue<std::pair<uint64_t, uint64_t>,
                                        std::vector<std::pair<uint64_t, uint64_t>>, std::greater<>>;
struct Machine {
  bool busy[2] = {false, false};
  Completions done;
  uint64_t now = 0;
  template <typename Node>
  static Resource resource_of(const Node& n) {
    if (n.type() == ChakraProtoMsg::COMP_NODE) return n.is_cpu_op() ? kCpu : kGpu;
    return n.type() == ChakraProtoMsg::COMM_COLL_NODE ? kNone : kCpu;
  }
};

uint64_t walk_v3_astra(const std::string& path, size_t* peak_heap) {
  const size_t before = peak_heap != nullptr ? heap_in_use() : 0;
  Chakra::FeederV3::ETFeeder feeder(path, true, false);
  size_t peak = peak_heap != nullptr ? heap_in_use() : 0;
  auto& resolver = feeder.getDependancyResolver();
  Machine m;
  std::unordered_map<uint64_t, uint8_t> held;  // node -> the resource it holds
  std::set<uint64_t> ready;
  uint64_t issued = 0, sum = 0;
  while (true) {
    ready.clear();
    ready.insert(resolver.get_dependancy_free_nodes().begin(),
                 resolver.get_dependancy_free_nodes().end());
    for (uint64_t id : ready) {
      std::shared_ptr<Chakra::FeederV3::ETFeederNode> node = feeder.lookupNode(id);
      const Resource r = Machine::resource_of(*node);
      if (r != kNone && m.busy[r]) continue;  // stays free; issued when its resource is
      if (r != kNone) m.busy[r] = true;
      held[id] = static_cast<uint8_t>(r);
      resolver.take_node(id);
      m.done.emplace(m.now + node->runtime(), id);
      if ((++issued & 0xFFFF) == 0 && peak_heap != nullptr) peak = std::max(peak, heap_in_use());
    }
    if (m.done.empty()) break;
    const auto [t, id] = m.done.top();
    m.done.pop();
    m.now = t;
    std::shared_ptr<Chakra::FeederV3::ETFeederNode> node = feeder.lookupNode(id);
    sum += node->runtime() + node->type();
    auto h = held.find(id);
    if (h->second != kNone) m.busy[h->second] = false;
    held.erase(h);
    resolver.finish_node(id);
  }
  benchmark::DoNotOptimize(sum);
  if (peak_heap != nullptr) *peak_heap = peak - before;
  return issued;
}

uint64_t walk_v1_astra(const std::string& path, size_t* peak_heap) {
  const size_t before = peak_heap != nullptr ? heap_in_use() : 0;
  Chakra::ETFeeder feeder(path);
  size_t peak = peak_heap != nullptr ? heap_in_use() : 0;
  Machine m;
  std::unordered_map<uint64_t, uint8_t> held;
  uint64_t issued = 0, sum = 0;
  while (feeder.hasNodesToIssue() || !m.done.empty()) {
    // Issue in id order until a node's resource is busy: it goes back, as the Workload does.
    while (std::shared_ptr<Chakra::ETFeederNode> node = feeder.getNextIssuableNode()) {
      const Resource r = Machine::resource_of(*node);
      if (r != kNone && m.busy[r]) {
        feeder.pushBackIssuableNode(node->id());
        break;
      }
      if (r != kNone) m.busy[r] = true;
      held[node->id()] = static_cast<uint8_t>(r);
      m.done.emplace(m.now + node->runtime(), node->id());
      if ((++issued & 0xFFFF) == 0 && peak_heap != nullptr) peak = std::max(peak, heap_in_use());
    }
    if (m.done.empty()) break;
    const auto [t, id] = m.done.top();
    m.done.pop();
    m.now = t;
    std::shared_ptr<Chakra::ETFeederNode> node = feeder.lookupNode(id);
    sum += node->runtime() + node->type();
    auto h = held.find(id);
    if (h->second != kNone) m.busy[h->second] = false;
    held.erase(h);
    feeder.freeChildrenNodes(id);
    feeder.removeNode(id);
  }
  benchmark::DoNotOptimize(sum);
  if (peak_heap != nullptr) *peak_heap = peak - before;
  return issued;
}

// A walk in the pattern of an ASTRA-sim run: nodes per second, bytes read per byte of the file,
// system seconds per walk; and the heap at the peak of one more walk, untimed (sampling it takes
// milliseconds per sample on a large heap). A walk given no `peak_heap` does not sample it.
template <typename Walk>
void run_astra(benchmark::State& state, const std::string& path, const Walk& walk) {
  const double file_bytes = static_cast<double>(std::filesystem::file_size(path));
  uint64_t nodes = 0, last = 0, read = 0;
  double sys = 0;
  int walks = 0;
  for (auto _ : state) {
    const uint64_t read0 = bytes_read_so_far();
    const double sys0 = system_seconds();
    last = walk(path, nullptr);
    read += bytes_read_so_far() - read0;
    sys += system_seconds() - sys0;
    ++walks;
    if (last == 0) return state.SkipWithError("no node issued");
    nodes += last;
  }
  state.SetItemsProcessed(static_cast<int64_t>(nodes));
  state.counters["nodes"] = static_cast<double>(last);
  state.counters["read_per_file_byte"] = static_cast<double>(read) / walks / file_bytes;
  state.counters["sys_s"] = sys / walks;
  size_t heap = 0;
  walk(path, &heap);
  state.counters["bytes_per_node"] = static_cast<double>(heap) / static_cast<double>(last);
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

void BM_CompatV1_AstraPattern(benchmark::State& state) {
  const Generated& g = generated();
  if (!g.error.empty()) return state.SkipWithError(g.error.c_str());
  run_astra(state, g.et, walk_v1_astra);
}
BENCHMARK(BM_CompatV1_AstraPattern)->Unit(benchmark::kMillisecond);

void BM_FeederV3_AstraPattern(benchmark::State& state) {
  const Generated& g = generated();
  if (!g.error.empty()) return state.SkipWithError(g.error.c_str());
  run_astra(state, g.et, walk_v3_astra);
}
BENCHMARK(BM_FeederV3_AstraPattern)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
