// Golden tests for synchronization dependencies (stages/link/sync_dependencies.h) on real traces.
//  - ../shared/data/kineto/hta_sync_small: HTA's three sync test traces (Kineto with cuda_sync
//    records). The expectations are derived by hand from the traces' timestamps; each test says
//    how.
//  - ../shared/data/pairs, each pair with both its device traces (modern: rf_id; legacy:
//    sequence matching): every cudaStreamSynchronize / cudaDeviceSynchronize in the linked
//    window yields its dependencies in the ET+, no dependency points forward in time, and the
//    graph the converter builds from the ET+ (Chakra's data-dependency encoding, emulated here,
//    plus sync_dep) stays acyclic. Chakra mode writes none.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "pipeline/rank_graph.h"
#include "stages/link/device_trace_loader.h"
#include "stages/link/et_plus_writer.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/link.h"
#include "stages/link/sync_dependencies.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

using testing::shared_data_dir;

// ---------- device traces alone: hta_sync_small ----------

struct DeviceRun {
  DeviceTrace trace;
  LauncherLinks launchers;
  SyncDependencies sync;
  DataProblems stats;

  const SyncCall& call(int64_t correlation) const {
    for (const SyncCall& c : sync.calls) {
      if (trace[c.call].correlation == correlation) return c;
    }
    ADD_FAILURE() << "no sync call with correlation " << correlation;
    static const SyncCall none;
    return none;
  }
  // Correlations of the call's targets, ascending.
  std::vector<int64_t> targets(const SyncCall& c) const {
    std::vector<int64_t> out;
    for (uint32_t k = c.targets_begin; k < c.targets_end; ++k)
      out.push_back(trace[sync.targets[k]].correlation);
    std::sort(out.begin(), out.end());
    return out;
  }
  size_t count(SyncKind kind, SyncProblem problem) const {
    return static_cast<size_t>(std::count_if(sync.calls.begin(), sync.calls.end(), [&](auto& c) {
      return c.kind == kind && c.problem == problem;
    }));
  }
};

std::string small_trace(const std::string& file) {
  return testing::read_text((shared_data_dir() / "kineto/hta_sync_small" / file).string());
}

DeviceRun run_device(std::string text) {
  DeviceRun r;
  auto t = parse_device_trace("trace", std::move(text));
  EXPECT_TRUE(t.ok()) << t.status().message();
  r.trace = std::move(t).value();
  DataProblems launch_stats;
  r.launchers = correlate_launchers(r.trace, Compat::kDefault, launch_stats);
  r.sync = compute_sync_dependencies(r.trace, r.launchers, Compat::kDefault, r.stats);
  return r;
}

// The same trace as Kineto versions without cuda_sync records write it.
std::string without_sync_records(std::string text) {
  const std::string key = "\"cuda_sync_kind\"";
  for (size_t p = text.find(key); p != std::string::npos; p = text.find(key, p + 1))
    text.replace(p, key.size(), "\"cuda_sync_hide\"");
  return text;
}

// Targets of CPU waits end before the call returns and before the waiter starts; GPU waiters
// start after their targets end.
void expect_never_forward(const DeviceRun& r) {
  for (const SyncCall& c : r.sync.calls) {
    const DeviceEvent& call = r.trace[c.call];
    for (uint32_t k = c.targets_begin; k < c.targets_end; ++k) {
      const DeviceEvent& t = r.trace[r.sync.targets[k]];
      if (c.kind != SyncKind::kStreamWait) {
        EXPECT_LE(t.end(), call.end()) << call.correlation;
      }
      if (c.waiter.valid()) {
        EXPECT_LE(t.end(), r.trace[c.waiter].ts) << call.correlation;
      }
    }
  }
}

// Times below are microseconds from the trace's ProfilerStep#100 start (1707417525509335).
//   2917 cudaMemcpyAsync (corr 1511) -> Memcpy DtoH on stream 7 at 2935..2937
//   2947..2953 cudaStreamSynchronize (corr 1512), its Stream Sync record names stream 7
//   3017 cudaEventRecord (1522); 3027 launch of spin_kernel (1526), stream 7 at 3037..3073;
//   3041 cudaEventRecord (1533)
//   3047..3081 cudaEventSynchronize (1536), Event Sync record: event recorded by 1533 on stream 7
//   3084 cudaEventQuery (1537), with an Event Sync record: a query does not block, not a sync
//   3139..3147 cudaDeviceSynchronize (1549), Context Sync record, device 0
// So: the stream sync waits on the memcpy (the last stream-7 op launched before it, done at
// 2937 <= 2953); the event sync on spin_kernel (launched before the record at 3041; done at
// 3073 <= 3081); the device sync on spin_kernel (the last op of the only stream). The last CPU op
// of the thread (aten::_local_scalar_dense) starts at 2914, before all three: no CPU op waits.
TEST(SyncGoldenSmall, EventSyncTrace) {
  CF_REQUIRE_SHARED_DATA("kineto/hta_sync_small/event_sync_trace.json.gz");
  DeviceRun r = run_device(small_trace("event_sync_trace.json.gz"));
  EXPECT_EQ(r.sync.calls.size(), 3u);
  const SyncCall& stream = r.call(1512);
  EXPECT_EQ(stream.kind, SyncKind::kStream);
  EXPECT_TRUE(stream.record.valid());
  EXPECT_FALSE(stream.inferred);
  EXPECT_EQ(r.targets(stream), (std::vector<int64_t>{1511}));
  const SyncCall& event = r.call(1536);
  EXPECT_EQ(event.kind, SyncKind::kEvent);
  EXPECT_EQ(r.targets(event), (std::vector<int64_t>{1526}));
  const SyncCall& device = r.call(1549);
  EXPECT_EQ(device.kind, SyncKind::kDevice);
  EXPECT_EQ(r.targets(device), (std::vector<int64_t>{1526}));
  for (const SyncCall& c : r.sync.calls) EXPECT_EQ(c.problem, SyncProblem::kNoWaiter);
  EXPECT_TRUE(r.sync.cpu_waits.empty());
  EXPECT_TRUE(r.sync.gpu_waits.empty());
  EXPECT_TRUE(r.stats.entries().empty());  // nothing is missing in this trace
  expect_never_forward(r);
}

// Times below are microseconds from the first aten::matmul (1712867402348256).
//   411 memset (corr 25) and 444..567 sgemm (corr 27, launched at 414) on stream 20
//   825 memset (55) and 841..964 sgemm (57) on stream 28
//   19410 cudaEventRecord (1385); 19426..19429 cudaStreamWaitEvent (1389), record: stream 24
//   waits on the event recorded by 1385 on stream 20
//   19778 memset (1411, launched at 19764) and 19794..19917 sgemm (1413) on stream 24
//   19910..19930 cudaDeviceSynchronize (1424), Context Sync record, device 0
//   The three Event Sync records belong to cudaEventQuery calls: not syncs.
// So: the stream wait makes the first op launched on stream 24 after it (memset 1411) wait on
// the last op of stream 20 launched before the record (sgemm 27, done at 567 <= 19778): a
// GPU-to-GPU dependency across streams. The device sync waits on the last op of each stream
// (27, 1413 done at 19917 <= 19930, 57); no CPU op follows it.
TEST(SyncGoldenSmall, EventSyncMultiStreamTrace) {
  CF_REQUIRE_SHARED_DATA("kineto/hta_sync_small/event_sync_multi_stream_trace.json.gz");
  DeviceRun r = run_device(small_trace("event_sync_multi_stream_trace.json.gz"));
  EXPECT_EQ(r.sync.calls.size(), 2u);
  const SyncCall& wait = r.call(1389);
  EXPECT_EQ(wait.kind, SyncKind::kStreamWait);
  EXPECT_EQ(wait.problem, SyncProblem::kNone);
  EXPECT_EQ(r.targets(wait), (std::vector<int64_t>{27}));
  ASSERT_TRUE(wait.waiter.valid());
  EXPECT_EQ(r.trace[wait.waiter].correlation, 1411);
  EXPECT_EQ(r.trace[wait.waiter].stream, 24);
  ASSERT_EQ(r.sync.gpu_waits.size(), 1u);
  EXPECT_EQ(r.trace[r.sync.gpu_waits[0].waiter].correlation, 1411);
  EXPECT_EQ(r.trace[r.sync.gpu_waits[0].target].correlation, 27);
  const SyncCall& device = r.call(1424);
  EXPECT_EQ(r.targets(device), (std::vector<int64_t>{27, 57, 1413}));
  EXPECT_EQ(device.problem, SyncProblem::kNoWaiter);
  EXPECT_TRUE(r.sync.cpu_waits.empty());
  expect_never_forward(r);
}

// AlexNet training: 16 cudaStreamSynchronize, 5 cudaDeviceSynchronize, 34 cudaStreamWaitEvent;
// one device (0).
//  - Each stream sync follows the cudaMemcpyAsync of an aten::copy_ (correlation one less), and
//    its record names stream 7: it waits on that Memcpy HtoD, which ends before the sync returns
//    (e.g. corr 41: the memcpy runs until 30472024, the sync returns at 30472030, µs from
//    1695835542481129). The next CPU op is aten::_has_compatible_shallow_copy_type each time.
//  - Device sync 225: only stream 7 has work yet; its last kernel (218) ends 17 ms before.
//    5503 and 5511: streams 7 and 20 have work; the last ops launched before are 5498 (stream 7)
//    and 5190 (stream 20). 5894 and 5909 are the thread's last CPU-side activity: no waiter.
//  - 20 stream waits have records: 14 wait on events recorded on streams 21-27, which run no GPU
//    op (nothing to wait for); 6 yield a GPU-to-GPU dependency, e.g. 5194: stream 7 waits on the
//    event recorded by 5193 on stream 20, after the launch of fft2d_c2r (5190, done at 43275516);
//    the next op launched on stream 7 is elementwise_kernel (5213, starts at 43275856).
//    The other 14 have no record (CUPTI wrote none): counted, no dependency.
TEST(SyncGoldenSmall, AlexnetTrace) {
  CF_REQUIRE_SHARED_DATA("kineto/hta_sync_small/alexnet_trace.json.gz");
  DeviceRun r = run_device(small_trace("alexnet_trace.json.gz"));
  EXPECT_EQ(r.sync.calls_by_kind, (std::array<uint64_t, kSyncKindCount>{5, 16, 0, 34}));
  size_t stream_syncs = 0;
  for (const SyncCall& c : r.sync.calls) {
    if (c.kind != SyncKind::kStream) continue;
    ++stream_syncs;
    const DeviceEvent& call = r.trace[c.call];
    EXPECT_EQ(c.problem, SyncProblem::kNone) << call.correlation;
    EXPECT_TRUE(c.record.valid());
    ASSERT_EQ(c.target_count(), 1u) << call.correlation;
    const DeviceEvent& memcpy = r.trace[r.sync.targets[c.targets_begin]];
    EXPECT_EQ(memcpy.correlation, call.correlation - 1);
    EXPECT_EQ(memcpy.stream, 7);
    EXPECT_EQ(r.trace.name(memcpy).substr(0, 11), "Memcpy HtoD");
    ASSERT_TRUE(c.waiter.valid());
    EXPECT_EQ(r.trace.name(c.waiter), "aten::_has_compatible_shallow_copy_type");
  }
  EXPECT_EQ(stream_syncs, 16u);
  EXPECT_EQ(r.targets(r.call(225)), (std::vector<int64_t>{218}));
  EXPECT_EQ(r.trace.name(r.call(225).waiter), "aten::conv2d");
  EXPECT_EQ(r.targets(r.call(5503)), (std::vector<int64_t>{5190, 5498}));
  EXPECT_EQ(r.trace.name(r.call(5503).waiter),
            "[param|pytorch.model.alex_net|0|0|0|measure|forward]");
  EXPECT_EQ(r.targets(r.call(5511)), (std::vector<int64_t>{5190, 5498}));
  EXPECT_EQ(r.call(5894).problem, SyncProblem::kNoWaiter);
  EXPECT_EQ(r.call(5909).problem, SyncProblem::kNoWaiter);

  EXPECT_EQ(r.count(SyncKind::kStreamWait, SyncProblem::kNone), 6u);
  EXPECT_EQ(r.count(SyncKind::kStreamWait, SyncProblem::kNothingToWaitFor), 14u);
  EXPECT_EQ(r.count(SyncKind::kStreamWait, SyncProblem::kNoSyncRecord), 14u);
  EXPECT_EQ(r.stats.count(StatKind::kSyncStreamWaitUnknownEvent), 14u);
  const SyncCall& wait = r.call(5194);
  EXPECT_EQ(r.targets(wait), (std::vector<int64_t>{5190}));
  EXPECT_EQ(r.trace[wait.waiter].correlation, 5213);
  EXPECT_EQ(r.trace[wait.waiter].stream, 7);
  // 16 stream syncs + device syncs 225 (1), 5503 (2), 5511 (2).
  EXPECT_EQ(r.sync.cpu_waits.size(), 21u);
  EXPECT_EQ(r.sync.gpu_waits.size(), 6u);
  expect_never_forward(r);
}

// Without cuda_sync records the stream of a cudaStreamSynchronize is inferred from the thread's
// last launch; on the traces that have the records, the inference finds the recorded stream for
// all 17 stream syncs. Event syncs and stream waits cannot be resolved: counted.
TEST(SyncGoldenSmall, InferredStreamsMatchTheRecords) {
  CF_REQUIRE_SHARED_DATA("kineto/hta_sync_small");
  size_t compared = 0;
  for (const char* file : {"alexnet_trace.json.gz", "event_sync_trace.json.gz"}) {
    std::string text = small_trace(file);
    DeviceRun with = run_device(text);
    DeviceRun without = run_device(without_sync_records(text));
    ASSERT_EQ(with.sync.calls.size(), without.sync.calls.size());
    for (size_t i = 0; i < with.sync.calls.size(); ++i) {
      const SyncCall& a = with.sync.calls[i];
      const SyncCall& b = without.sync.calls[i];
      EXPECT_FALSE(b.record.valid());
      if (a.kind == SyncKind::kStream) {
        ++compared;
        EXPECT_TRUE(b.inferred);
        EXPECT_EQ(with.targets(a), without.targets(b)) << file << " " << i;
        EXPECT_EQ(a.waiter, b.waiter);
      } else if (a.kind == SyncKind::kDevice) {
        EXPECT_EQ(with.targets(a), without.targets(b));  // one device: no record needed
      } else {
        EXPECT_EQ(b.problem, SyncProblem::kNoSyncRecord);
      }
    }
    expect_never_forward(without);
  }
  EXPECT_EQ(compared, 17u);
}

// ---------- host ET + device trace pairs ----------

// "<pair>/<modern|legacy>": each pair with each of its device traces (the legacy one, without
// Record function ids, is linked by sequence matching).
std::vector<std::string> pair_cases() {
  std::vector<std::string> pairs = {"simple_add", "resnet_1gpu"};
  for (int r = 0; r < 8; ++r) pairs.push_back("dlrm_8rank/rank" + std::to_string(r));
  std::vector<std::string> c;
  for (const char* kind : {"modern", "legacy"}) {
    for (const auto& p : pairs) c.push_back(p + "/" + kind);
  }
  return c;
}

TimeNs micros_to_ns(double us) {
  return static_cast<TimeNs>(std::llround(us * 1000.0));
}

struct EtNode {
  uint64_t id = 0;
  std::string name;
  bool gpu = false;
  int64_t parent = -1;
  int64_t inter_thread_dep = 0;
  int64_t stream = -1;
  TimeNs ts = -1, dur = -1;
  std::vector<uint64_t> sync_dep;
};

std::map<uint64_t, EtNode> read_et_plus(const std::string& text) {
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  EXPECT_EQ(p.parse(text).get(doc), simdjson::SUCCESS);
  std::map<uint64_t, EtNode> out;
  for (auto n : doc["nodes"].get_array()) {
    EtNode x;
    x.id = uint64_t(n["id"]);
    x.name = std::string(std::string_view(n["name"]));
    std::string_view cat;
    x.gpu = n["cat"].get(cat) == simdjson::SUCCESS;
    int64_t i;
    if (n["ctrl_deps"].get(i) == simdjson::SUCCESS || n["parent"].get(i) == simdjson::SUCCESS)
      x.parent = i;
    if (n["inter_thread_dep"].get(i) == simdjson::SUCCESS) x.inter_thread_dep = i;
    if (n["stream"].get(i) == simdjson::SUCCESS) x.stream = i;
    double d;
    if (n["ts"].get(d) == simdjson::SUCCESS) x.ts = micros_to_ns(d);
    if (n["inclusive_dur"].get(d) == simdjson::SUCCESS) x.dur = micros_to_ns(d);
    simdjson::dom::array deps;
    if (n["sync_dep"].get(deps) == simdjson::SUCCESS) {
      for (auto v : deps) x.sync_dep.push_back(uint64_t(v));
    }
    out[x.id] = x;
  }
  return out;
}

// The data dependencies Chakra's converter derives from ET+ (chakra_spec.md §2.8: a pre-order
// walk per thread root, children by ascending id; a CPU node depends on its inter_thread_dep and
// the previous CPU node, a GPU node on the last CPU node), plus every sync_dep. Returns whether
// the graph has a cycle.
bool converted_graph_has_cycle(const std::map<uint64_t, EtNode>& nodes) {
  std::map<uint64_t, std::vector<uint64_t>> children;
  for (const auto& [id, n] : nodes) {
    if (n.parent >= 0 && static_cast<uint64_t>(n.parent) != id)
      children[static_cast<uint64_t>(n.parent)].push_back(id);
  }
  for (auto& [id, c] : children) std::sort(c.begin(), c.end());
  std::map<uint64_t, std::set<uint64_t>> deps;
  for (const auto& [id, n] : nodes) {
    if (n.name != "[pytorch|profiler|execution_trace|thread]" &&
        n.name != "[pytorch|profiler|execution_graph|thread]") {
      continue;
    }
    std::set<uint64_t> visited;
    std::vector<uint64_t> stack = {id};
    std::optional<uint64_t> last_cpu, last_any;
    while (!stack.empty()) {
      uint64_t cur = stack.back();
      stack.pop_back();
      if (!visited.insert(cur).second) continue;
      const EtNode& node = nodes.at(cur);
      if (node.gpu) {
        if (last_any) deps[cur].insert(*last_any);
        last_any = last_cpu;
      } else {
        if (node.inter_thread_dep > 0)
          deps[cur].insert(static_cast<uint64_t>(node.inter_thread_dep));
        if (last_cpu) deps[cur].insert(*last_cpu);
        last_cpu = last_any = cur;
      }
      auto it = children.find(cur);
      if (it == children.end()) continue;
      for (auto c = it->second.rbegin(); c != it->second.rend(); ++c) {
        if (!visited.count(*c)) stack.push_back(*c);
      }
    }
  }
  for (const auto& [id, n] : nodes) deps[id].insert(n.sync_dep.begin(), n.sync_dep.end());
  // Iterative three-colour DFS.
  std::map<uint64_t, int> colour;  // 0 new, 1 on the stack, 2 done
  for (const auto& [start, unused] : deps) {
    if (colour[start] != 0) continue;
    std::vector<std::pair<uint64_t, std::vector<uint64_t>>> stack;
    auto edges_of = [&deps](uint64_t v) {
      auto it = deps.find(v);
      return it == deps.end() ? std::vector<uint64_t>{}
                              : std::vector<uint64_t>(it->second.begin(), it->second.end());
    };
    colour[start] = 1;
    stack.emplace_back(start, edges_of(start));
    while (!stack.empty()) {
      auto& [v, out] = stack.back();
      if (out.empty()) {
        colour[v] = 2;
        stack.pop_back();
        continue;
      }
      uint64_t w = out.back();
      out.pop_back();
      if (colour[w] == 1) return true;
      if (colour[w] == 0) {
        colour[w] = 1;
        stack.emplace_back(w, edges_of(w));
      }
    }
  }
  return false;
}

// The cycle check itself: a CPU op waiting on the GPU op it launched is a cycle.
TEST(SyncGoldenPairsCheck, ConvertedGraphCycleCheckFindsCycles) {
  std::map<uint64_t, EtNode> nodes;
  auto add = [&nodes](uint64_t id, std::string name, int64_t parent, bool gpu, TimeNs ts) {
    EtNode n;
    n.id = id;
    n.name = std::move(name);
    n.parent = parent;
    n.gpu = gpu;
    n.ts = ts;
    nodes[id] = n;
  };
  add(0, "[pytorch|profiler|execution_trace|thread]", 0, false, 0);
  add(1, "aten::copy_", 0, false, 10);
  add(2, "Memcpy DtoH", 1, true, 15);
  add(3, "aten::add", 0, false, 30);
  nodes[3].sync_dep = {2};  // the next op waits on the memcpy
  EXPECT_FALSE(converted_graph_has_cycle(nodes));
  nodes[1].sync_dep = {2};  // the launcher waits on its own memcpy
  EXPECT_TRUE(converted_graph_has_cycle(nodes));
}

class SyncGoldenPairs : public ::testing::TestWithParam<std::string> {};

TEST_P(SyncGoldenPairs, SyncsInTheLinkedWindowYieldDependenciesPointingBackInTime) {
  const std::string pair = GetParam().substr(0, GetParam().rfind('/'));
  const std::string device_file = "kineto." + GetParam().substr(pair.size() + 1) + ".json.gz";
  CF_REQUIRE_SHARED_DATA("pairs/" + pair + "/" + device_file);
  std::string dir = (shared_data_dir() / "pairs" / pair).string();
  auto host = load_host_trace(dir + "/host_et.json.gz");
  auto device = load_device_trace(dir + "/" + device_file);
  ASSERT_TRUE(host.ok() && device.ok());
  const DeviceTrace& dev = *device;
  DataProblems stats;
  LauncherLinks launchers = correlate_launchers(dev, Compat::kDefault, stats);
  SyncDependencies sync = compute_sync_dependencies(dev, launchers, Compat::kDefault, stats);
  auto mapping = map_host_to_device(*host, dev, {}, stats);
  ASSERT_TRUE(mapping.ok());
  auto linked = link_traces(*host, dev, {});
  ASSERT_TRUE(linked.ok()) << linked.status().message();
  std::string et_plus;
  ASSERT_TRUE(
      write_et_plus(*host, dev, *linked, {}, [&](std::string_view b) { et_plus.append(b); }).ok());

  auto nodes = read_et_plus(et_plus);

  // The flow graph writes the same sync dependencies as the sequential composition.
  testing::TempDir tmp;
  RankJob job{dir + "/host_et.json.gz", dir + "/" + device_file, tmp.file("out.json"), {}};
  const RankJobResult results = run_link_job(job);
  ASSERT_TRUE(results.status.ok()) << results.status.message();
  auto graph_nodes = read_et_plus(testing::read_text(tmp.file("out.json")));
  ASSERT_EQ(graph_nodes.size(), nodes.size());
  for (const auto& [id, n] : nodes) EXPECT_EQ(graph_nodes.at(id).sync_dep, n.sync_dep) << id;
  EXPECT_EQ(results.summary.sync.host_deps, linked->sync.host_deps);
  // (The graph numbers the ids beside the sync stage and adds its dependencies after.)
  EXPECT_EQ(results.summary.sync.gpu_deps, linked->sync.gpu_deps);
  EXPECT_EQ(results.summary.sync.calls_emitted, linked->sync.calls_emitted);
  ASSERT_EQ(results.stats.entries().size(), linked->stats.entries().size());
  for (const auto& [kind, entry] : linked->stats.entries()) {
    EXPECT_EQ(results.stats.count(kind), entry.count) << stat_key(kind);
  }

  std::map<uint32_t, uint64_t> gpu_id;  // device event -> GPU node id
  for (const LinkedHostOp& op : linked->ops) {
    for (uint32_t k = op.gpu_begin; k < op.gpu_end; ++k)
      gpu_id[linked->gpu_events[k].value] = linked->gpu_new_id(op, k - op.gpu_begin);
  }

  // 1. Every stream / device sync in the linked window yields its dependencies. In the window:
  //    something waits for it (a CPU op follows it on its thread) and that op, or the op the
  //    call runs in, is linked to a host op.
  size_t in_window = 0, yielded = 0, stream_or_device = 0;
  for (const SyncCall& c : sync.calls) {
    if (c.kind != SyncKind::kStream && c.kind != SyncKind::kDevice) continue;
    ++stream_or_device;
    const DeviceEvent& call = dev[c.call];
    bool enclosed_by_linked = false;
    DeviceEventIdx next;  // the first CPU op of the thread starting after the call returned
    for (DeviceEventIdx e : dev.cpu_ops) {
      const DeviceEvent& op = dev[e];
      if (op.tid != call.tid) continue;
      if (op.ts <= call.ts && op.end() >= call.end() && mapping->host_of[e.value].valid())
        enclosed_by_linked = true;
      if (!next.valid() && op.ts >= call.end()) next = e;
    }
    if (!next.valid()) {  // the end of the thread: nothing waits
      EXPECT_FALSE(c.waiter.valid());
      continue;
    }
    if (!enclosed_by_linked && !mapping->host_of[next.value].valid()) continue;
    ++in_window;
    EXPECT_EQ(c.problem, SyncProblem::kNone) << call.correlation;
    ASSERT_TRUE(c.waiter.valid()) << call.correlation;
    EXPECT_EQ(dev[c.waiter].ts, dev[next].ts);
    // The host op that waits: the waiter's, else the next linked CPU op of the thread.
    HostNodeIdx waiting;
    auto pos = std::find(dev.cpu_ops.begin(), dev.cpu_ops.end(), c.waiter);
    for (; pos != dev.cpu_ops.end() && !waiting.valid(); ++pos) {
      if (dev[*pos].tid == call.tid) waiting = mapping->host_of[pos->value];
    }
    ASSERT_TRUE(waiting.valid()) << call.correlation;
    const EtNode& node = nodes.at(linked->ops[waiting.value].new_id);
    bool all = c.target_count() > 0;
    for (uint32_t k = c.targets_begin; k < c.targets_end; ++k) {
      DeviceEventIdx t = sync.targets[k];
      auto id = gpu_id.find(t.value);
      ASSERT_NE(id, gpu_id.end()) << "target of sync " << call.correlation << " not written";
      // That node, or a later op of its stream (which implies it).
      bool found = false;
      for (uint64_t dep : node.sync_dep) {
        auto d = nodes.find(dep);
        found |= dep == id->second || (d != nodes.end() && d->second.stream == dev[t].stream &&
                                       d->second.ts >= nodes.at(id->second).ts);
      }
      EXPECT_TRUE(found) << "sync " << call.correlation << ": " << node.name << " lacks "
                         << dev.name(t);
      all &= found;
    }
    yielded += all;
  }
  EXPECT_GT(in_window, 0u);
  EXPECT_EQ(yielded, in_window);

  // 2. No dependency points forward in time: each sync_dep is a GPU node of this output that
  //    ended before its waiter started.
  size_t host_deps = 0, gpu_deps = 0;
  for (const auto& [id, n] : nodes) {
    (n.gpu ? gpu_deps : host_deps) += n.sync_dep.size();
    for (uint64_t dep : n.sync_dep) {
      auto it = nodes.find(dep);
      ASSERT_NE(it, nodes.end()) << n.name << ": dangling sync_dep " << dep;
      const EtNode& d = it->second;
      EXPECT_TRUE(d.gpu) << n.name << " <- " << d.name;
      ASSERT_GE(n.ts, 0) << n.name;
      EXPECT_LT(d.ts, n.ts) << n.name << " <- " << d.name;
      EXPECT_LE(d.ts + d.dur, n.ts) << n.name << " <- " << d.name;
    }
  }
  EXPECT_EQ(host_deps, linked->sync.host_deps);
  EXPECT_EQ(gpu_deps, linked->sync.gpu_deps);
  EXPECT_GT(host_deps, 0u);

  // 3. The converted graph stays acyclic (sequential composition and flow graph).
  EXPECT_FALSE(converted_graph_has_cycle(nodes));
  EXPECT_FALSE(converted_graph_has_cycle(graph_nodes));

  // 4. Chakra mode: none (its HTA step found none on these pairs). Chakra links by rf_id only.
  RankJob chakra = job;
  chakra.device_path = dir + "/kineto.modern.json.gz";
  chakra.et_plus_path = tmp.file("chakra.json");
  chakra.link.compat = Compat::kChakra;
  ASSERT_TRUE(run_link_job(chakra).status.ok());
  EXPECT_EQ(testing::read_text(chakra.et_plus_path).find("sync_dep"), std::string::npos);

  uint64_t missing = 0;
  for (StatKind kind : {StatKind::kSyncEventUnknownEvent, StatKind::kSyncStreamWaitUnknownEvent,
                        StatKind::kSyncStreamUnknown, StatKind::kSyncDeviceUnknown}) {
    missing += linked->stats.count(kind);
  }
  std::printf(
      "[ %s ] sync calls %zu (device %lu, stream %lu, event %lu, stream wait %lu); stream/device "
      "%zu, in the linked window %zu, yielding %zu; deps: %zu on host nodes, %zu on GPU nodes; "
      "stream inferred %lu; unresolvable for missing fields %lu; dropped outside the window %lu\n",
      GetParam().c_str(), sync.calls.size(), sync.calls_by_kind[0], sync.calls_by_kind[1],
      sync.calls_by_kind[2], sync.calls_by_kind[3], stream_or_device, in_window, yielded, host_deps,
      gpu_deps, sync.inferred, missing,
      linked->sync.dropped_orphan_target + linked->sync.dropped_unlinked_waiter);
}

INSTANTIATE_TEST_SUITE_P(Pairs, SyncGoldenPairs, ::testing::ValuesIn(pair_cases()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n)
                             if (c == '/') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace chakraflow
