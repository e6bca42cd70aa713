#include "stages/link/link.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <map>
#include <optional>

#include "stages/link/device_trace_loader.h"
#include "stages/link/et_plus_writer.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/launcher_correlation.h"
#include "tests/testing/device_findings.h"
#include "tests/testing/generated_ranks.h"
#include "tests/testing/threaded_batches.h"
#include "tests/testing/trace_builder.h"

namespace chakraflow {
namespace {

using testing::HostBuilder;
using testing::KinetoBuilder;

struct Linked {
  HostTrace host;
  DeviceTrace device;
  std::string et_plus;
  LinkedTrace linked;
};

Linked run(const std::string& host_json, const std::string& device_json, LinkOptions opt = {}) {
  Linked out;
  auto h = parse_host_trace("h.json", host_json);
  EXPECT_TRUE(h.ok()) << h.status().message();
  auto d = parse_device_trace("d.json", device_json);
  EXPECT_TRUE(d.ok()) << d.status().message();
  out.host = std::move(h).value();
  out.device = std::move(d).value();
  auto linked = link_traces(out.host, out.device, opt);
  EXPECT_TRUE(linked.ok()) << linked.status().message();
  out.linked = std::move(linked).value();
  Status s = write_et_plus(out.host, out.device, out.linked, opt,
                           [&out](std::string_view b) { out.et_plus.append(b); });
  EXPECT_TRUE(s.ok());
  return out;
}

// A small trace: thread 1 runs mm (launching a kernel and a memset) then add; thread 2 (autograd)
// runs bwd after a gap.
std::string device_json() {
  return KinetoBuilder()
      .cpu_op("aten::mm", 100, 10, 40, 3, 1)
      .cpu_op("aten::empty", 100, 12, 2, 4, 2)
      .runtime("cudaLaunchKernel", 100, 20, 2, 500)
      .runtime("cudaMemsetAsync", 100, 25, 1, 501)
      .cpu_op("aten::add", 100, 60, 5, 5, 3)
      .cpu_op("bwd", 200, 3000, 10, 6, 4)
      .gpu("gemm_kernel", 30, 4.5, 500, 7)
      .gpu("Memset (Device)", 36, 0.5, 501, 7, "gpu_memset")
      .json();
}
std::string host_json(bool flat) {
  return HostBuilder(flat)
      .roots({{2, 1}, {3, 2}})
      .node(4, "aten::mm", 2, 3, 1)
      .node(5, "aten::empty", 4, 4, 1)
      .node(6, "aten::add", 2, 5, 1)
      .node(7, "bwd", 3, 6, 2)
      .node(8, "orphan", 99, 0, 1)
      .json();
}

simdjson::dom::array nodes_of(simdjson::dom::parser& p, const std::string& text) {
  simdjson::dom::element doc;
  EXPECT_EQ(p.parse(text).get(doc), simdjson::SUCCESS) << text;
  return doc["nodes"].get_array();
}

TEST(Link, AssignsIdsAndWritesGpuNodesAfterTheirLauncher) {
  Linked l = run(host_json(false), device_json());
  simdjson::dom::parser p;
  auto nodes = nodes_of(p, l.et_plus);
  std::vector<std::string> names;
  for (auto n : nodes) names.emplace_back(std::string_view(n["name"]));
  // Host nodes by original id, each followed by its GPU ops in ts order.
  std::vector<std::string> expected = {"[pytorch|profiler|execution_trace|process]",
                                       "[pytorch|profiler|execution_trace|thread]",
                                       "[pytorch|profiler|execution_trace|thread]",
                                       "aten::mm",
                                       "gemm_kernel",
                                       "Memset (Device)",
                                       "aten::empty",
                                       "aten::add",
                                       "bwd",
                                       "orphan"};
  EXPECT_EQ(names, expected);
  int64_t id = 0;
  for (auto n : nodes) EXPECT_EQ(int64_t(n["id"]), id++);
  auto mm = nodes.at(3);
  EXPECT_EQ(int64_t(mm["ctrl_deps"]), 1);  // thread root, renumbered
  EXPECT_EQ(double(mm["inclusive_dur"]), 40);
  EXPECT_EQ(double(mm["exclusive_dur"]), 38);  // minus aten::empty
  EXPECT_EQ(int64_t(mm["ts"]), 10);
  auto gemm = nodes.at(4);
  EXPECT_EQ(int64_t(gemm["ctrl_deps"]), 3);
  EXPECT_EQ(std::string_view(gemm["cat"]), "kernel");
  EXPECT_EQ(std::string_view(gemm["ph"]), "X");
  EXPECT_EQ(int64_t(gemm["stream"]), 7);
  EXPECT_EQ(double(gemm["inclusive_dur"]), 4.5);
  EXPECT_EQ(double(gemm["exclusive_dur"]), 4.5);
  EXPECT_EQ(int64_t(gemm["ts"]), 30);
  EXPECT_EQ(std::string_view(nodes.at(5)["cat"]), "gpu_memset");
  // bwd starts a group on thread 200 after a gap: depends on the latest op of thread 100 (add).
  auto bwd = nodes.at(8);
  EXPECT_EQ(int64_t(bwd["inter_thread_dep"]), 7);
  // The orphan (parent 99 missing) is kept and reattached to its thread's root.
  auto orphan = nodes.at(9);
  EXPECT_EQ(int64_t(orphan["ctrl_deps"]), 1);
  EXPECT_EQ(orphan["inclusive_dur"].error(), simdjson::NO_SUCH_FIELD);  // rf_id 0: unmatched
  EXPECT_EQ(l.linked.stats.count(StatKind::kHostParentMissingReattached), 1u);
  // Every other host field passes through.
  EXPECT_EQ(mm["attrs"].get_array().size(), 7u);
}

// The generated rank of `scale` (testing::generated_rank_text), parsed.
void parse_generated_rank(double scale, std::optional<HostTrace>& host,
                          std::optional<DeviceTrace>& device) {
  const SynthRankText text = testing::generated_rank_text(scale);
  auto h = parse_host_trace("host.json", text.host);
  ASSERT_TRUE(h.ok()) << h.status().message();
  auto d = parse_device_trace("kineto.json", text.device);
  ASSERT_TRUE(d.ok()) << d.status().message();
  host = std::move(h).value();
  device = std::move(d).value();
}

// A rank of more host ops than one numbering range: ids dense in host order, each host op's GPU
// ops right after it (contiguous groups in gpu_events, in (ts, file order)), each launched from
// the host op's own CPU event, every attached GPU op once.
TEST(Link, IdsAndGpuGroupsOverSeveralRanges) {
  std::optional<HostTrace> host;
  std::optional<DeviceTrace> device;
  ASSERT_NO_FATAL_FAILURE(parse_generated_rank(5.0, host, device));
  ASSERT_GT(host->nodes.size(), 32768u);
  auto linked = link_traces(*host, *device, LinkOptions{});
  ASSERT_TRUE(linked.ok()) << linked.status().message();
  DataProblems ignored;
  const LauncherLinks launchers = correlate_launchers(*device, Compat::kDefault, ignored);
  ASSERT_EQ(linked->ops.size(), host->nodes.size());
  uint64_t next_id = 0;
  uint32_t next_gpu = 0;
  size_t grouped = 0;
  for (size_t i = 0; i < linked->ops.size(); ++i) {
    const LinkedHostOp& op = linked->ops[i];
    ASSERT_EQ(op.new_id, next_id) << "host op " << i;
    ASSERT_EQ(op.gpu_begin, next_gpu) << "host op " << i;
    ASSERT_LE(op.gpu_begin, op.gpu_end);
    for (uint32_t k = op.gpu_begin; k < op.gpu_end; ++k) {
      const DeviceEventIdx g = linked->gpu_events[k];
      ASSERT_EQ(launchers.cpu_op_of[g.value], op.device_event) << "GPU op " << k;
      if (k > op.gpu_begin) {
        const DeviceEventIdx before = linked->gpu_events[k - 1];
        ASSERT_LT(std::pair((*device)[before].ts, before.value),
                  std::pair((*device)[g].ts, g.value));
      }
    }
    grouped += op.gpu_end - op.gpu_begin;
    next_gpu = op.gpu_end;
    next_id += 1 + (op.gpu_end - op.gpu_begin);
  }
  EXPECT_EQ(next_gpu, linked->gpu_events.size());
  EXPECT_GT(grouped, 10000u);
  std::vector<DeviceEventIdx> sorted = linked->gpu_events;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
}

// Parents looked up in ranges on workers (three threads, each range's ops from last to first):
// the same parents, states, fresh dangling ids (Chakra mode) and messages, in the same order, as
// one pass in order, with missing parents in both numbering ranges (32,768 host ops each).
TEST(Link, ParentsOnWorkersEqualOnePassOverTwoRanges) {
  std::optional<HostTrace> host;
  std::optional<DeviceTrace> device;
  ASSERT_NO_FATAL_FAILURE(parse_generated_rank(5.0, host, device));
  ASSERT_GT(host->nodes.size(), 32768u);
  size_t orphaned = 0;
  for (size_t i = 5; i < host->nodes.size(); i += 3001) {
    if (host->nodes[i].parent_key == ParentKey::kNone) continue;
    host->nodes[i].parent = uint64_t{1} << 40 | (i % 3);  // three missing parents, repeated
    ++orphaned;
  }
  ASSERT_GT(orphaned, 8u);
  const testing::ThreadedBatches workers(3);
  for (Compat compat : {Compat::kDefault, Compat::kChakra}) {
    LinkOptions options;
    options.compat = compat;
    DataProblems stats;
    const testing::Findings found = testing::device_findings(*device, options, stats);
    auto mapping = map_host_to_device(*host, *device, options, stats);
    ASSERT_TRUE(mapping.ok()) << mapping.status().message();
    const LinkedRank one =
        assign_linked_ids(*host, *device, found.view(), *mapping, options, stats);
    const LinkedRank many =
        assign_linked_ids(*host, *device, found.view(), *mapping, options, stats, &workers);
    ASSERT_EQ(one.trace.ops.size(), many.trace.ops.size());
    size_t missing = 0;
    std::vector<uint64_t> fresh;  // Chakra mode: the dangling parents' ids, in op order
    for (size_t i = 0; i < one.trace.ops.size(); ++i) {
      const LinkedHostOp& a = one.trace.ops[i];
      const LinkedHostOp& b = many.trace.ops[i];
      ASSERT_EQ(a.new_parent, b.new_parent) << "host op " << i;
      ASSERT_EQ(a.parent_state, b.parent_state) << "host op " << i;
      missing +=
          a.parent_state == ParentState::kDangling || a.parent_state == ParentState::kReattached;
      if (a.parent_state == ParentState::kDangling) fresh.push_back(a.new_parent);
    }
    EXPECT_EQ(missing, orphaned);
    EXPECT_EQ(format_link_report(one.summary, one.trace.stats),
              format_link_report(many.summary, many.trace.stats));
    if (compat == Compat::kChakra) {
      // One fresh id per missing parent past the numbered nodes, given in the order the ops come.
      ASSERT_EQ(fresh.size(), orphaned);
      const uint64_t first = one.trace.node_count;
      for (size_t k = 0; k < fresh.size(); ++k) {
        EXPECT_EQ(fresh[k], k < 3 ? first + k : fresh[k - 3]) << "orphan " << k;
      }
    } else {
      EXPECT_EQ(one.trace.stats.count(StatKind::kHostParentMissingReattached), orphaned);
    }
  }
}

// LinkedTrace::exec_tids as one pass in order decides them: each host tid's home is the device
// thread most of its ops ran on (ties: the lower), each device thread the host tid whose home it
// is (several: more ops there, then the lower tid); an op off its home ran on its device
// thread's host tid, else on the device tid.
std::vector<std::pair<uint32_t, int64_t>> exec_tids_in_order(const HostTrace& host,
                                                             const DeviceTrace& device,
                                                             const std::vector<LinkedHostOp>& ops) {
  std::map<std::pair<uint64_t, int64_t>, uint64_t> count;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].device_event.valid()) ++count[{host.nodes[i].tid, device[ops[i].device_event].tid}];
  }
  std::map<uint64_t, std::pair<uint64_t, int64_t>> home;
  for (const auto& [key, n] : count) {
    auto [it, inserted] = home.try_emplace(key.first, n, key.second);
    if (!inserted && n > it->second.first) it->second = {n, key.second};
  }
  std::map<int64_t, std::pair<uint64_t, uint64_t>> host_of;
  for (const auto& [host_tid, h] : home) {
    auto [it, inserted] = host_of.try_emplace(h.second, h.first, host_tid);
    if (!inserted && h.first > it->second.first) it->second = {h.first, host_tid};
  }
  std::vector<std::pair<uint32_t, int64_t>> out;
  for (uint32_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].device_event.valid()) continue;
    const int64_t ran_on = device[ops[i].device_event].tid;
    if (home.at(host.nodes[i].tid).second == ran_on) continue;
    auto it = host_of.find(ran_on);
    out.emplace_back(i, it != host_of.end() ? static_cast<int64_t>(it->second.second) : ran_on);
  }
  return out;
}

// The threads the ops ran on, counted in ranges of host ops on workers (three threads, ranges
// from last to first): the same as one pass in order. Three quarters of the busiest host thread's
// ops in the second range (32,768 host ops each) ran on another device thread: the most of that
// range, not of the whole trace, so the home holds only if the ranges' counts are summed.
TEST(Link, ExecTidsOnWorkersCountOverAllRanges) {
  std::optional<HostTrace> host;
  std::optional<DeviceTrace> device;
  ASSERT_NO_FATAL_FAILURE(parse_generated_rank(5.0, host, device));
  ASSERT_GT(host->nodes.size(), 32768u);
  LinkOptions options;
  DataProblems stats;
  auto mapping = map_host_to_device(*host, *device, options, stats);
  ASSERT_TRUE(mapping.ok()) << mapping.status().message();
  std::map<uint64_t, size_t> ops_of_tid;
  for (size_t i = 0; i < host->nodes.size(); ++i) {
    if (mapping->device_of[i].valid()) ++ops_of_tid[host->nodes[i].tid];
  }
  const uint64_t busiest =
      std::max_element(ops_of_tid.begin(), ops_of_tid.end(), [](auto& a, auto& b) {
        return a.second < b.second;
      })->first;
  std::vector<size_t> late;  // the busiest thread's ops in the second range
  for (size_t i = 32768; i < host->nodes.size(); ++i) {
    if (host->nodes[i].tid == busiest && mapping->device_of[i].valid()) late.push_back(i);
  }
  ASSERT_GT(late.size(), 100u);
  constexpr int64_t kElsewhere = 987654;
  for (size_t k = 0; k < late.size() * 3 / 4; ++k) {
    device->events[mapping->device_of[late[k]].value].tid = kElsewhere;
  }
  const testing::Findings found = testing::device_findings(*device, options, stats);
  const testing::ThreadedBatches workers(3);
  const LinkedRank many =
      assign_linked_ids(*host, *device, found.view(), *mapping, options, stats, &workers);
  const auto expected = exec_tids_in_order(*host, *device, many.trace.ops);
  EXPECT_TRUE(many.trace.exec_tids == expected);
  EXPECT_GE(expected.size(), late.size() * 3 / 4);
  EXPECT_EQ(std::count_if(expected.begin(), expected.end(),
                          [](const auto& e) { return e.second == kElsewhere; }),
            static_cast<std::ptrdiff_t>(late.size() * 3 / 4));
  const LinkedRank one = assign_linked_ids(*host, *device, found.view(), *mapping, options, stats);
  EXPECT_TRUE(one.trace.exec_tids == expected);
}

// The rf_id mapping as one pass in host order decides it: the last CPU op of an rf_id (in ts
// order) is its event, an event's owner is its first host op, and in default mode a later op of
// the same event is not paired (counted, with both ops named, in host order).
HostDeviceMap rf_id_map_in_order(const HostTrace& host, const DeviceTrace& device, Compat compat,
                                 DataProblems& stats) {
  std::map<uint64_t, uint32_t> event_of;
  for (DeviceEventIdx e : device.cpu_ops) {
    if (device[e].has(kHasRfId)) event_of[device[e].rf_id] = e.value;
  }
  const std::vector<bool> reach =
      compat == Compat::kChakra ? reachable_from_root(host) : std::vector<bool>();
  HostDeviceMap map;
  map.device_of.assign(host.nodes.size(), DeviceEventIdx{});
  map.host_of.assign(device.events.size(), HostNodeIdx{});
  for (uint32_t i = 0; i < host.nodes.size(); ++i) {
    const HostNode& n = host.nodes[i];
    if (n.rf_id == 0) continue;
    ++map.host_ops_with_rf_id;
    if (compat == Compat::kChakra && !reach[i]) {
      ++map.unreachable;
      continue;
    }
    auto it = event_of.find(n.rf_id);
    if (it == event_of.end()) {
      ++map.unmatched_with_rf_id;
      continue;
    }
    HostNodeIdx& owner = map.host_of[it->second];
    if (owner.valid() && compat == Compat::kDefault) {
      stats.add(
          StatKind::kHostOpsSharingRfId,
          fmt::format("node {} and node {} (rf_id {})", host.nodes[owner.value].id, n.id, n.rf_id));
      continue;
    }
    map.device_of[i] = DeviceEventIdx{it->second};
    if (!owner.valid()) owner = HostNodeIdx{i};
    ++map.matched;
  }
  map.candidates = map.host_ops_with_rf_id;
  if (map.unmatched_with_rf_id > 0) {
    stats.add_count(StatKind::kHostRfIdNotInDevice, map.unmatched_with_rf_id);
  }
  return map;
}

// rf_id lookups in ranges on workers (three threads, each taking its ranges from last to first,
// so that a later op is often the event's owner stored last): the same pairs, owners, counts and
// messages as one pass in order, with rf_ids shared within a range and across ranges (32,768 host
// ops each), three ops of one rf_id, and rf_ids no CPU op has.
TEST(Link, RfIdMapOnWorkersEqualsOnePassInOrder) {
  std::optional<HostTrace> host;
  std::optional<DeviceTrace> device;
  ASSERT_NO_FATAL_FAILURE(parse_generated_rank(5.0, host, device));
  const size_t n = host->nodes.size();
  ASSERT_GT(n, 32768u);
  std::vector<uint32_t> with_rf_id;
  for (uint32_t i = 0; i < n; ++i) {
    if (host->nodes[i].rf_id != 0) with_rf_id.push_back(i);
  }
  ASSERT_GT(with_rf_id.size(), 1000u);
  // Ops late in the trace take the rf_id of early ones (shared across ranges), neighbours take
  // each other's (shared within a range), one rf_id goes to three ops, some get unknown ones.
  size_t changed = 0;
  for (size_t k = 50; k + 1 < with_rf_id.size(); k += 997) {
    const uint32_t late = with_rf_id[with_rf_id.size() - 1 - k], early = with_rf_id[k];
    host->nodes[late].rf_id = host->nodes[early].rf_id;
    host->nodes[with_rf_id[k + 1]].rf_id = host->nodes[early].rf_id;
    changed += 2;
  }
  host->nodes[with_rf_id[with_rf_id.size() / 2]].rf_id = host->nodes[with_rf_id[10]].rf_id;
  for (size_t k = 20; k < with_rf_id.size(); k += 4001) {
    host->nodes[with_rf_id[k]].rf_id = uint64_t{1} << 50 | k;
  }
  ASSERT_GT(changed, 20u);
  const testing::ThreadedBatches workers(3);
  for (Compat compat : {Compat::kDefault, Compat::kChakra}) {
    DataProblems expected_stats, stats;
    const HostDeviceMap expected = rf_id_map_in_order(*host, *device, compat, expected_stats);
    const HostDeviceMap got = map_by_rf_id(*host, *device, compat, stats, &workers);
    EXPECT_TRUE(got.device_of == expected.device_of);
    EXPECT_TRUE(got.host_of == expected.host_of);
    EXPECT_EQ(got.matched, expected.matched);
    EXPECT_EQ(got.host_ops_with_rf_id, expected.host_ops_with_rf_id);
    EXPECT_EQ(got.unmatched_with_rf_id, expected.unmatched_with_rf_id);
    EXPECT_EQ(got.unreachable, expected.unreachable);
    EXPECT_EQ(got.candidates, expected.candidates);
    EXPECT_GT(expected.unmatched_with_rf_id, 5u);
    ASSERT_EQ(stats.entries().size(), expected_stats.entries().size());
    for (const auto& [kind, entry] : expected_stats.entries()) {
      EXPECT_EQ(stats.count(kind), entry.count);
      EXPECT_EQ(stats.entries().at(kind).examples, entry.examples);
    }
    if (compat == Compat::kDefault) {
      EXPECT_GE(expected_stats.count(StatKind::kHostOpsSharingRfId), changed);
    }
    // The same with the lookups one after another.
    DataProblems one_stats;
    const HostDeviceMap one = map_by_rf_id(*host, *device, compat, one_stats);
    EXPECT_TRUE(one.device_of == expected.device_of);
    EXPECT_TRUE(one.host_of == expected.host_of);
  }
}

TEST(Link, ChakraModeKeepsChakrasNumberingDefects) {
  LinkOptions chakra;
  chakra.compat = Compat::kChakra;
  Linked l = run(host_json(false), device_json(), chakra);
  simdjson::dom::parser p;
  auto nodes = nodes_of(p, l.et_plus);
  // No memset node; the orphan is unreachable from the root, so unlinked, and its missing parent
  // becomes a fresh id that no node has.
  ASSERT_EQ(nodes.size(), 9u);
  auto orphan = nodes.at(8);
  EXPECT_EQ(std::string_view(orphan["name"]), "orphan");
  EXPECT_EQ(int64_t(orphan["ctrl_deps"]), 9);
  // The process root's self reference becomes 0 -> 0.
  EXPECT_EQ(int64_t(nodes.at(0)["ctrl_deps"]), 0);
}

TEST(Link, FlatLayoutParentIsRemappedByDefaultAndLeftAloneInChakraMode) {
  simdjson::dom::parser p;
  Linked fixed = run(host_json(true), device_json());
  auto nodes = nodes_of(p, fixed.et_plus);

  auto empty = nodes.at(6);
  EXPECT_EQ(std::string_view(empty["name"]), "aten::empty");
  EXPECT_EQ(int64_t(empty["parent"]), 3);  // aten::mm's new id
  auto gemm = nodes.at(4);
  EXPECT_EQ(int64_t(gemm["parent"]), 3);
  EXPECT_EQ(int64_t(gemm["ctrl_deps"]), 3);

  LinkOptions chakra;
  chakra.compat = Compat::kChakra;
  Linked compat = run(host_json(true), device_json(), chakra);
  simdjson::dom::parser p2;
  auto cn = nodes_of(p2, compat.et_plus);
  // Chakra attaches the kernel to aten::empty (the nearest preceding op, already finished).
  ASSERT_EQ(std::string_view(cn.at(4)["name"]), "aten::empty");
  EXPECT_EQ(int64_t(cn.at(4)["parent"]), 4);  // keeps the old id of aten::mm
  ASSERT_EQ(std::string_view(cn.at(5)["name"]), "gemm_kernel");
  EXPECT_EQ(int64_t(cn.at(5)["ctrl_deps"]), 4);  // the GPU node gets the new id of its launcher
  EXPECT_EQ(int64_t(cn.at(5)["parent"]), 4);     // copied from aten::empty
}

TEST(Link, OutputIsTheSameWhateverTheRunAndSequenceModeIsReported) {
  Linked a = run(host_json(false), device_json());
  Linked b = run(host_json(false), device_json());
  EXPECT_EQ(a.et_plus, b.et_plus);

  // A device trace without rf_ids cannot be linked by rf_id: a clear error, not an empty link.
  auto h = parse_host_trace("h.json", host_json(false));
  auto d = parse_device_trace("legacy.json", KinetoBuilder().cpu_op("aten::mm", 1, 0, 10).json());
  ASSERT_TRUE(h.ok() && d.ok());
  LinkOptions rf;
  rf.mode = MatchMode::kRfId;
  auto r = link_traces(*h, *d, rf);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("Record function id"), std::string::npos);
}

}  // namespace
}  // namespace chakraflow

namespace chakraflow {
namespace {

// The one parser of link options (flags of `chakraflow link`, `link:` of run configurations).
TEST(LinkOptions, ParsesEveryOptionInBothSpellings) {
  LinkOptions o;
  EXPECT_TRUE(set_link_option(o, "mode", "sequence").ok());
  EXPECT_EQ(o.mode, MatchMode::kSequence);
  EXPECT_TRUE(set_link_option(o, "compat", "chakra").ok());
  EXPECT_EQ(o.compat, Compat::kChakra);
  EXPECT_TRUE(set_link_option(o, "format", "legacy").ok());
  EXPECT_EQ(o.format, OutputFormat::kLegacy);
  EXPECT_TRUE(set_link_option(o, "--gap-threshold-us", "2.5").ok());
  EXPECT_EQ(o.gap_threshold, 2500);
  EXPECT_TRUE(set_link_option(o, "gap_threshold_us", "1e12").ok());
  EXPECT_EQ(o.gap_threshold, TimeNs{1000000000000000});
  EXPECT_TRUE(set_link_option(o, "annotation", "ProfilerStep").ok());
  EXPECT_EQ(o.annotation, "ProfilerStep");
  EXPECT_TRUE(set_link_option(o, "--min-match-rate", "75").ok());
  EXPECT_DOUBLE_EQ(o.min_match_rate, 0.75);
  EXPECT_TRUE(set_link_option(o, "--profiler-overhead", "off").ok());
  EXPECT_EQ(o.profiler_overhead, LinkOptions::Overhead::kOff);
  EXPECT_TRUE(set_link_option(o, "profiler_overhead", "default").ok());
  EXPECT_EQ(o.profiler_overhead, LinkOptions::Overhead::kDefault);
  EXPECT_EQ(set_link_option(o, "profiler_overhead", "on").message(),
            "'profiler_overhead': unknown value 'on' (auto, off, default)");
  EXPECT_EQ(link_option_names().size(), 7u);
}

TEST(LinkOptions, BadValuesSayWhatIsWrong) {
  LinkOptions o;
  EXPECT_EQ(set_link_option(o, "mode", "fast").message(),
            "'mode': unknown mode 'fast' (auto, rf_id, sequence)");
  EXPECT_EQ(set_link_option(o, "--gap-threshold-us", "-1").message(),
            "--gap-threshold-us must be between 0 and 1e12");
  EXPECT_FALSE(set_link_option(o, "gap_threshold_us", "12abc").ok());
  EXPECT_FALSE(set_link_option(o, "gap_threshold_us", "nan").ok());
  EXPECT_EQ(set_link_option(o, "min_match_rate", "101").message(),
            "'min_match_rate' is a percentage (0-100)");
  EXPECT_FALSE(set_link_option(o, "compat", "").ok());
  EXPECT_FALSE(set_link_option(o, "threads", "4").ok());
  // Nothing was changed by the failures.
  EXPECT_EQ(o.mode, MatchMode::kAuto);
  EXPECT_EQ(o.gap_threshold, 1000 * 1000);
}

}  // namespace
}  // namespace chakraflow
