#include "stages/link/sync_dependencies.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>
#include <set>

#include "stages/link/device_trace_loader.h"
#include "stages/link/et_plus_writer.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/link.h"
#include "tests/testing/trace_builder.h"

namespace chakraflow {
namespace {

using testing::HostBuilder;
using testing::KinetoBuilder;

struct SyncRun {
  DeviceTrace trace;
  LauncherLinks launchers;
  SyncDependencies sync;
  DataProblems stats;

  // The sync call starting at `ts_us`.
  const SyncCall& call_at(double ts_us) const {
    for (const SyncCall& c : sync.calls) {
      if (trace[c.call].ts == static_cast<TimeNs>(ts_us * 1000)) return c;
    }
    ADD_FAILURE() << "no sync call at " << ts_us;
    static const SyncCall none;
    return none;
  }
  std::set<std::string> targets(const SyncCall& c) const {
    std::set<std::string> out;
    for (uint32_t k = c.targets_begin; k < c.targets_end; ++k)
      out.emplace(trace.name(sync.targets[k]));
    return out;
  }
  std::string name(DeviceEventIdx e) const {
    return e.valid() ? std::string(trace.name(e)) : std::string("<none>");
  }
  // Edges as "waiter <- target" by name.
  std::set<std::string> edges(const std::vector<SyncEdge>& e) const {
    std::set<std::string> out;
    for (const SyncEdge& x : e) out.insert(name(x.waiter) + " <- " + name(x.target));
    return out;
  }
};

SyncRun run(const std::string& json, Compat compat = Compat::kDefault) {
  SyncRun r;
  auto t = parse_device_trace("d.json", json);
  EXPECT_TRUE(t.ok()) << t.status().message();
  r.trace = std::move(t).value();
  DataProblems launch_stats;
  r.launchers = correlate_launchers(r.trace, compat, launch_stats);
  r.sync = compute_sync_dependencies(r.trace, r.launchers, compat, r.stats);
  return r;
}

// Thread 1: aten::outer launches k1, k2 (stream 7) and m1 (stream 9), then syncs the device at
// 20..65; k3 is launched after the sync. aten::next and its child start together at 110.
std::string device_sync_trace() {
  return KinetoBuilder()
      .cpu_op("aten::outer", 1, 0, 100)
      .runtime("cudaLaunchKernel", 1, 10, 2, 1)
      .gpu("k1", 20, 10, 1, 7)
      .runtime("cudaLaunchKernel", 1, 13, 2, 2)
      .gpu("k2", 30, 30, 2, 7)
      .runtime("cudaMemcpyAsync", 1, 16, 2, 3)
      .gpu("m1", 25, 15, 3, 9, "gpu_memcpy")
      .runtime("cudaDeviceSynchronize", 1, 20, 45, 4)
      .runtime("cudaLaunchKernel", 1, 70, 2, 5)
      .gpu("k3", 75, 5, 5, 7)
      .cpu_op("aten::child", 1, 110, 10)
      .cpu_op("aten::next", 1, 110, 20)
      .json();
}

TEST(SyncDependencies, DeviceSyncWaitsOnTheLastOpOfEveryStream) {
  SyncRun r = run(device_sync_trace());
  ASSERT_EQ(r.sync.calls.size(), 1u);
  const SyncCall& c = r.sync.calls[0];
  EXPECT_EQ(c.kind, SyncKind::kDevice);
  EXPECT_EQ(c.problem, SyncProblem::kNone);
  EXPECT_FALSE(c.inferred);  // one device: no record needed
  // k1 is implied by k2 (same stream); k3 was launched after the sync.
  EXPECT_EQ(r.targets(c), (std::set<std::string>{"k2", "m1"}));
  // The waiter is the first op starting after the sync returned (the longest of the two at 110),
  // not aten::outer, which encloses the sync and launched the ops it waits on.
  EXPECT_EQ(r.name(c.waiter), "aten::next");
  EXPECT_EQ(r.edges(r.sync.cpu_waits),
            (std::set<std::string>{"aten::next <- k2", "aten::next <- m1"}));
  EXPECT_TRUE(r.sync.gpu_waits.empty());
  EXPECT_EQ(r.sync.calls_by_kind[static_cast<size_t>(SyncKind::kDevice)], 1u);
  EXPECT_TRUE(r.stats.entries().empty());
}

TEST(SyncDependencies, ChakraModeComputesNothing) {
  SyncRun r = run(device_sync_trace(), Compat::kChakra);
  EXPECT_TRUE(r.sync.calls.empty());
  EXPECT_TRUE(r.sync.cpu_waits.empty());
  EXPECT_TRUE(r.stats.entries().empty());
}

// Stream 7 runs k1 until 30; stream 9 runs m1 until 20; the thread syncs at 11..21.
KinetoBuilder stream_sync_trace(bool with_record) {
  KinetoBuilder b;
  b.cpu_op("aten::copy_", 1, 0, 50)
      .runtime("cudaLaunchKernel", 1, 5, 1, 1)
      .gpu("k1", 10, 20, 1, 7)
      .runtime("cudaMemcpyAsync", 1, 8, 1, 2)
      .gpu("m1", 12, 8, 2, 9, "gpu_memcpy")
      .runtime("cudaStreamSynchronize", 1, 11, 10, 3)
      .cpu_op("aten::next", 1, 60, 5);
  if (with_record) b.cuda_sync("Stream Sync", 12, 8, 3, /*stream=*/9);
  return b;
}

TEST(SyncDependencies, StreamSyncWaitsOnTheLastOpOfItsStream) {
  SyncRun r = run(stream_sync_trace(true).json());
  const SyncCall& c = r.call_at(11);
  EXPECT_EQ(c.kind, SyncKind::kStream);
  EXPECT_EQ(c.problem, SyncProblem::kNone);
  EXPECT_TRUE(c.record.valid());
  EXPECT_FALSE(c.inferred);
  EXPECT_EQ(r.targets(c), (std::set<std::string>{"m1"}));  // not k1: another stream
  EXPECT_EQ(r.edges(r.sync.cpu_waits), (std::set<std::string>{"aten::next <- m1"}));
  EXPECT_TRUE(r.stats.entries().empty());
}

TEST(SyncDependencies, StreamSyncWithoutRecordTakesTheStreamOfTheThreadsLastLaunch) {
  SyncRun r = run(stream_sync_trace(false).json());
  const SyncCall& c = r.call_at(11);
  EXPECT_FALSE(c.record.valid());
  EXPECT_TRUE(c.inferred);  // m1 (stream 9) was the thread's last launch
  EXPECT_EQ(r.targets(c), (std::set<std::string>{"m1"}));
  EXPECT_EQ(r.sync.inferred, 1u);
  EXPECT_EQ(r.stats.count(StatKind::kSyncStreamInferred), 1u);
}

TEST(SyncDependencies, StreamSyncWithoutRecordOrEarlierLaunchIsCountedNotGuessed) {
  std::string json =
      KinetoBuilder()
          .runtime("cudaLaunchKernel", 1, 5, 1, 1)
          .gpu("k1", 10, 5, 1, 7)
          .runtime("cudaStreamSynchronize", 2, 20, 5, 2)  // thread 2 launched nothing
          .cpu_op("aten::next", 2, 30, 5)
          .json();
  SyncRun r = run(json);
  const SyncCall& c = r.call_at(20);
  EXPECT_EQ(c.problem, SyncProblem::kUnknownStream);
  EXPECT_EQ(c.target_count(), 0u);
  EXPECT_TRUE(r.sync.cpu_waits.empty());
  EXPECT_EQ(r.stats.count(StatKind::kSyncStreamUnknown), 1u);
}

// k1 (stream 7) is launched, the event recorded, k2 launched on stream 7 after the record; the
// thread then waits for the event.
TEST(SyncDependencies, EventSyncWaitsOnTheOpRecordedIntoTheEvent) {
  std::string json = KinetoBuilder()
                         .cpu_op("aten::step", 1, 0, 100)
                         .runtime("cudaLaunchKernel", 1, 5, 1, 1)
                         .gpu("k1", 10, 30, 1, 7)
                         .runtime("cudaEventRecord", 1, 8, 1, 2)
                         .runtime("cudaLaunchKernel", 1, 10, 1, 3)
                         .gpu("k2", 40, 50, 3, 7)
                         .runtime("cudaEventSynchronize", 1, 12, 30, 4)
                         .cuda_sync("Event Sync", 13, 28, 4, -1, /*wait_on_stream=*/7, /*record=*/2)
                         .cpu_op("aten::after", 1, 45, 5)
                         // A query has a record too, but does not block: not a sync call.
                         .runtime("cudaEventQuery", 1, 50, 1, 8)
                         .cuda_sync("Event Sync", 50, 1, 8, -1, 7, 2)
                         // No record: the event is unknown.
                         .runtime("cudaEventSynchronize", 1, 60, 1, 5)
                         // A record naming an event record that is not in the trace.
                         .runtime("cudaEventSynchronize", 1, 70, 1, 6)
                         .cuda_sync("Event Sync", 70, 1, 6, -1, 7, 99)
                         // An event never recorded.
                         .runtime("cudaEventSynchronize", 1, 80, 1, 7)
                         .cuda_sync("Event Sync", 80, 1, 7, -1, -1, -1)
                         .cpu_op("aten::end", 1, 95, 1)
                         .json();
  SyncRun r = run(json);
  ASSERT_EQ(r.sync.calls.size(), 4u);
  const SyncCall& c = r.call_at(12);
  EXPECT_EQ(c.kind, SyncKind::kEvent);
  EXPECT_EQ(c.problem, SyncProblem::kNone);
  // k1, not k2: k2 is the last op of stream 7 before the sync, but it was launched after the
  // record (and ends at 90, after the sync returned at 42).
  EXPECT_EQ(r.targets(c), (std::set<std::string>{"k1"}));
  EXPECT_EQ(r.name(c.waiter), "aten::after");  // nested in aten::step, starts after the sync
  EXPECT_EQ(r.call_at(60).problem, SyncProblem::kNoSyncRecord);
  EXPECT_EQ(r.call_at(70).problem, SyncProblem::kRecordNotInTrace);
  EXPECT_EQ(r.call_at(80).problem, SyncProblem::kNothingToWaitFor);
  EXPECT_EQ(r.edges(r.sync.cpu_waits), (std::set<std::string>{"aten::after <- k1"}));
  EXPECT_EQ(r.stats.count(StatKind::kSyncEventUnknownEvent), 1u);
  EXPECT_EQ(r.stats.count(StatKind::kSyncEventRecordNotInTrace), 1u);
}

// Stream 9 waits for the event recorded on stream 7 after k1: the next op launched on stream 9
// waits on k1 (GPU to GPU); k0, launched on stream 9 before the wait, does not.
TEST(SyncDependencies, StreamWaitMakesTheNextOpOfTheWaitingStreamWait) {
  std::string json =
      KinetoBuilder()
          .cpu_op("aten::fwd", 1, 0, 100)
          .runtime("cudaLaunchKernel", 1, 5, 1, 1)
          .gpu("k1", 10, 40, 1, 7)
          .runtime("cudaEventRecord", 1, 7, 1, 2)
          .runtime("cudaLaunchKernel", 1, 8, 1, 3)
          .gpu("k0", 12, 8, 3, 9)
          .runtime("cudaStreamWaitEvent", 1, 10, 1, 4)
          .cuda_sync("Stream Wait Event", 11, 1, 4, /*stream=*/9, /*wait_on=*/7, /*record=*/2)
          .runtime("cudaLaunchKernel", 1, 15, 1, 5)
          .gpu("k2", 50, 10, 5, 9)
          .runtime("cudaLaunchKernel", 1, 18, 1, 6)
          .gpu("k3", 60, 10, 6, 9)
          // Waiting on an event of the waiting stream itself: stream order already says it.
          .runtime("cudaStreamWaitEvent", 1, 20, 1, 7)
          .cuda_sync("Stream Wait Event", 20, 1, 7, 7, 7, 2)
          .json();
  SyncRun r = run(json);
  const SyncCall& c = r.call_at(10);
  EXPECT_EQ(c.kind, SyncKind::kStreamWait);
  EXPECT_EQ(c.problem, SyncProblem::kNone);
  EXPECT_EQ(r.targets(c), (std::set<std::string>{"k1"}));
  EXPECT_EQ(r.name(c.waiter), "k2");  // k3 waits too, through stream order
  EXPECT_EQ(r.edges(r.sync.gpu_waits), (std::set<std::string>{"k2 <- k1"}));
  EXPECT_TRUE(r.sync.cpu_waits.empty());
  EXPECT_EQ(r.call_at(20).problem, SyncProblem::kSameStream);
  EXPECT_TRUE(r.stats.entries().empty());
}

TEST(SyncDependencies, TargetsTheTimestampsContradictAreDropped) {
  // The sync returns at 30 while k1 runs until 100: a dependency on k1 would point forward.
  std::string json = KinetoBuilder()
                         .cpu_op("a", 1, 0, 10)
                         .runtime("cudaLaunchKernel", 1, 2, 1, 1)
                         .gpu("k1", 5, 95, 1, 7)
                         .runtime("cudaDeviceSynchronize", 1, 20, 10, 2)
                         .cpu_op("b", 1, 40, 10)
                         .json();
  SyncRun r = run(json);
  EXPECT_EQ(r.call_at(20).problem, SyncProblem::kContradicted);
  EXPECT_EQ(r.call_at(20).target_count(), 0u);
  EXPECT_TRUE(r.sync.cpu_waits.empty());
  EXPECT_EQ(r.stats.count(StatKind::kSyncTargetAfterReturnDropped), 1u);
  EXPECT_EQ(r.stats.count(StatKind::kSyncDeviceTargetsAfterReturn), 1u);
}

TEST(SyncDependencies, LaunchOnAnotherThreadOverlappingTheSyncIsNotBeforeIt) {
  std::string json = KinetoBuilder()
                         .runtime("cudaLaunchKernel", 2, 0, 2, 1)
                         .gpu("kA", 5, 5, 1, 7)
                         .runtime("cudaLaunchKernel", 2, 18, 5, 2)  // 18..23, the sync starts at 20
                         .gpu("kB", 25, 3, 2, 7)
                         .runtime("cudaDeviceSynchronize", 1, 20, 15, 3)
                         .cpu_op("next", 1, 40, 5)
                         .json();
  SyncRun r = run(json);
  EXPECT_EQ(r.targets(r.call_at(20)), (std::set<std::string>{"kA"}));
}

TEST(SyncDependencies, WaitsOfOneWaiterMergeToTheLastOpPerStream) {
  std::string json = KinetoBuilder()
                         .cpu_op("x", 1, 0, 50)
                         .runtime("cudaLaunchKernel", 1, 2, 1, 1)
                         .gpu("k1", 5, 5, 1, 7)
                         .runtime("cudaStreamSynchronize", 1, 12, 2, 2)
                         .cuda_sync("Stream Sync", 12, 2, 2, 7)
                         .runtime("cudaLaunchKernel", 1, 16, 1, 3)
                         .gpu("k2", 18, 7, 3, 7)
                         .runtime("cudaStreamSynchronize", 1, 26, 3, 4)
                         .cuda_sync("Stream Sync", 26, 3, 4, 7)
                         .cpu_op("y", 1, 60, 10)
                         .json();
  SyncRun r = run(json);
  EXPECT_EQ(r.targets(r.call_at(12)), (std::set<std::string>{"k1"}));
  EXPECT_EQ(r.targets(r.call_at(26)), (std::set<std::string>{"k2"}));
  EXPECT_EQ(r.call_at(12).waiter, r.call_at(26).waiter);
  // y waits on both calls; k2 follows k1 on stream 7, so only k2 is kept.
  EXPECT_EQ(r.edges(r.sync.cpu_waits), (std::set<std::string>{"y <- k2"}));
}

TEST(SyncDependencies, DeviceSyncOnSeveralGpus) {
  std::string json = KinetoBuilder()
                         .runtime("cudaLaunchKernel", 1, 1, 1, 1)
                         .gpu_on_device(0, "k0", 5, 5, 1, 7)
                         .runtime("cudaLaunchKernel", 1, 3, 1, 2)
                         .gpu_on_device(1, "k1", 6, 5, 2, 7)
                         // No record: the device of the thread's last launch (k1, device 1).
                         .runtime("cudaDeviceSynchronize", 1, 20, 2, 3)
                         // The record names device 0.
                         .runtime("cudaDeviceSynchronize", 1, 30, 2, 4)
                         .cuda_sync("Context Sync", 30, 2, 4, -1, -1, -1, /*device=*/0)
                         .cpu_op("next", 1, 40, 1)
                         // Thread 2 launched nothing: its device is unknown.
                         .runtime("cudaDeviceSynchronize", 2, 50, 2, 5)
                         .cpu_op("other", 2, 60, 1)
                         .json();
  SyncRun r = run(json);
  EXPECT_EQ(r.targets(r.call_at(20)), (std::set<std::string>{"k1"}));
  EXPECT_TRUE(r.call_at(20).inferred);
  EXPECT_EQ(r.targets(r.call_at(30)), (std::set<std::string>{"k0"}));
  EXPECT_FALSE(r.call_at(30).inferred);
  EXPECT_EQ(r.call_at(50).problem, SyncProblem::kUnknownStream);
  EXPECT_EQ(r.stats.count(StatKind::kSyncDeviceInferred), 1u);
  EXPECT_EQ(r.stats.count(StatKind::kSyncDeviceUnknown), 1u);
}

TEST(SyncDependencies, KeepLastPerStream) {
  std::string json = KinetoBuilder()
                         .gpu("a", 10, 5, 1, 7)
                         .gpu("b", 20, 5, 2, 7)
                         .gpu("c", 12, 5, 3, 9)
                         .gpu_on_device(1, "d", 30, 5, 4, 7)
                         .json();
  auto t = parse_device_trace("d.json", json);
  ASSERT_TRUE(t.ok());
  std::vector<DeviceEventIdx> ops = {{1}, {0}, {2}, {3}, {1}};
  keep_last_per_stream(*t, ops);
  EXPECT_EQ(ops, (std::vector<DeviceEventIdx>{{1}, {2}, {3}}));  // b (not a), c, d (device 1)
}

// End to end: host ET + device trace -> ET+ with sync_dep on host and GPU nodes.
//  - aten::copy_ copies (memcpy, stream 7) then syncs the stream (no record: inferred). The next
//    CPU op, `unrecorded`, is not in the host ET: aten::add takes over the wait.
//  - aten::add launches add_kernel (stream 7), records an event; stream 9 waits on it, so
//    side_kernel (stream 9) waits on add_kernel.
//  - not_in_host launches orphan_kernel (its launcher has no host op: no GPU node) and syncs the
//    device; aten::mul waits on side_kernel, and the wait on orphan_kernel is dropped and counted.
std::string e2e_device() {
  return KinetoBuilder()
      .cpu_op("aten::copy_", 1, 10, 40, 3, 1)
      .runtime("cudaMemcpyAsync", 1, 12, 2, 500)
      .gpu("Memcpy DtoH", 15, 5, 500, 7, "gpu_memcpy")
      .runtime("cudaStreamSynchronize", 1, 16, 10, 501)
      .cpu_op("unrecorded", 1, 55, 2)
      .cpu_op("aten::add", 1, 60, 20, 4, 2)
      .runtime("cudaLaunchKernel", 1, 62, 2, 502)
      .gpu("add_kernel", 65, 10, 502, 7)
      .runtime("cudaEventRecord", 1, 66, 1, 503)
      .runtime("cudaStreamWaitEvent", 1, 68, 1, 504)
      .cuda_sync("Stream Wait Event", 68, 1, 504, 9, 7, 503)
      .runtime("cudaLaunchKernel", 1, 70, 2, 505)
      .gpu("side_kernel", 76, 4, 505, 9)
      .cpu_op("not_in_host", 1, 90, 10)
      .runtime("cudaLaunchKernel", 1, 91, 1, 506)
      .gpu("orphan_kernel", 95, 3, 506, 7)
      .runtime("cudaDeviceSynchronize", 1, 93, 10, 507)
      .cpu_op("aten::mul", 1, 110, 5, 5, 3)
      .json();
}
std::string e2e_host() {
  return HostBuilder()
      .roots({{2, 1}})
      .node(3, "aten::copy_", 2, 3, 1)
      .node(4, "aten::add", 2, 4, 1)
      .node(5, "aten::mul", 2, 5, 1)
      .json();
}

struct EtPlusNode {
  uint64_t id = 0;
  double ts = -1, dur = -1;
  std::vector<uint64_t> sync_dep;
  bool has_sync_dep = false;
};

std::map<std::string, EtPlusNode> link_and_read(const HostTrace& host, const DeviceTrace& device,
                                                LinkOptions opt, LinkedTrace* linked_out) {
  auto linked = link_traces(host, device, opt);
  EXPECT_TRUE(linked.ok()) << linked.status().message();
  std::string text;
  EXPECT_TRUE(write_et_plus(host, device, *linked, opt, [&text](std::string_view b) {
                text.append(b);
              }).ok());
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  EXPECT_EQ(p.parse(text).get(doc), simdjson::SUCCESS) << text;
  std::map<std::string, EtPlusNode> out;
  for (auto n : doc["nodes"].get_array()) {
    EtPlusNode x;
    x.id = uint64_t(n["id"]);
    double d;
    if (n["ts"].get(d) == simdjson::SUCCESS) x.ts = d;
    if (n["inclusive_dur"].get(d) == simdjson::SUCCESS) x.dur = d;
    simdjson::dom::array deps;
    if (n["sync_dep"].get(deps) == simdjson::SUCCESS) {
      x.has_sync_dep = true;
      for (auto v : deps) x.sync_dep.push_back(uint64_t(v));
    }
    out[std::string(std::string_view(n["name"]))] = x;
  }
  if (linked_out) *linked_out = std::move(linked).value();
  return out;
}

TEST(SyncDependencies, LinkWritesSyncDepsOnHostAndGpuNodes) {
  auto host = parse_host_trace("h.json", e2e_host());
  auto device = parse_device_trace("d.json", e2e_device());
  ASSERT_TRUE(host.ok() && device.ok());
  LinkedTrace linked;
  auto nodes = link_and_read(*host, *device, {}, &linked);
  const auto& memcpy = nodes.at("Memcpy DtoH");
  const auto& add_kernel = nodes.at("add_kernel");
  const auto& side = nodes.at("side_kernel");
  EXPECT_EQ(nodes.count("orphan_kernel"), 0u);  // not a node
  EXPECT_EQ(nodes.at("aten::add").sync_dep, (std::vector<uint64_t>{memcpy.id}));
  EXPECT_EQ(side.sync_dep, (std::vector<uint64_t>{add_kernel.id}));
  EXPECT_EQ(nodes.at("aten::mul").sync_dep, (std::vector<uint64_t>{side.id}));
  for (const char* name : {"aten::copy_", "Memcpy DtoH", "add_kernel"})
    EXPECT_FALSE(nodes.at(name).has_sync_dep) << name;
  // Every dependency ended before its waiter started.
  for (const auto& [name, n] : nodes) {
    for (uint64_t dep : n.sync_dep) {
      auto it = std::find_if(nodes.begin(), nodes.end(),
                             [dep](const auto& kv) { return kv.second.id == dep; });
      ASSERT_NE(it, nodes.end()) << name;
      EXPECT_LE(it->second.ts + it->second.dur, n.ts) << name << " <- " << it->first;
    }
  }
  const SyncSummary& s = linked.sync;
  EXPECT_EQ(s.calls, 3u);
  EXPECT_EQ(s.calls_resolved, 3u);
  EXPECT_EQ(s.calls_emitted, 3u);
  EXPECT_EQ(s.inferred, 1u);
  EXPECT_EQ(s.host_deps, 2u);
  EXPECT_EQ(s.gpu_deps, 1u);
  EXPECT_EQ(s.dropped_orphan_target, 1u);
  EXPECT_EQ(s.dropped_unlinked_waiter, 0u);
  EXPECT_EQ(linked.stats.count(StatKind::kSyncDepTargetNotWritten), 1u);
}

TEST(SyncDependencies, ChakraModeWritesNoSyncDep) {
  auto host = parse_host_trace("h.json", e2e_host());
  auto device = parse_device_trace("d.json", e2e_device());
  ASSERT_TRUE(host.ok() && device.ok());
  LinkOptions opt;
  opt.compat = Compat::kChakra;
  LinkedTrace linked;
  auto nodes = link_and_read(*host, *device, opt, &linked);
  for (const auto& [name, n] : nodes) EXPECT_FALSE(n.has_sync_dep) << name;
  EXPECT_EQ(linked.sync.calls, 0u);
  EXPECT_TRUE(linked.gpu_sync_deps.empty());
}

TEST(SyncDependencies, LinkReportCountsThem) {
  auto host = parse_host_trace("h.json", e2e_host());
  auto device = parse_device_trace("d.json", e2e_device());
  ASSERT_TRUE(host.ok() && device.ok());
  DataProblems stats;
  LauncherLinks launchers = correlate_launchers(*device, Compat::kDefault, stats);
  auto mapping = map_host_to_device(*host, *device, {}, stats);
  ASSERT_TRUE(mapping.ok());
  auto linked = link_traces(*host, *device, {});
  ASSERT_TRUE(linked.ok());
  LinkSummary summary =
      summarize(*host, *device, launchers, *mapping, compute_gap_dependencies(*device, 1000000),
                *linked, MatchMode::kRfId);
  std::string report = format_link_report(summary, linked->stats);
  EXPECT_NE(report.find("sync deps:         2 on host nodes, 1 on GPU nodes, from 3 sync calls "
                        "(3 resolved, 3 in the trace, 1 with inferred stream)"),
            std::string::npos)
      << report;
}

}  // namespace
}  // namespace chakraflow
