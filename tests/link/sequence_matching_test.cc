#include "stages/link/sequence_matching.h"

#include <gtest/gtest.h>

#include <random>

#include "stages/link/device_trace_loader.h"
#include "stages/link/et_plus_writer.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/link.h"
#include "tests/testing/trace_builder.h"

namespace chakraflow {
namespace {

using testing::HostBuilder;
using testing::KinetoBuilder;
using Pairs = std::vector<std::pair<uint32_t, uint32_t>>;

// ---------- align_sequences ----------

uint32_t lcs_length(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::vector<std::vector<uint32_t>> l(a.size() + 1, std::vector<uint32_t>(b.size() + 1, 0));
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j)
      l[i][j] = a[i - 1] == b[j - 1] ? l[i - 1][j - 1] + 1 : std::max(l[i - 1][j], l[i][j - 1]);
  return l[a.size()][b.size()];
}

void expect_valid(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, const Pairs& p) {
  for (size_t k = 0; k < p.size(); ++k) {
    ASSERT_LT(p[k].first, a.size());
    ASSERT_LT(p[k].second, b.size());
    EXPECT_EQ(a[p[k].first], b[p[k].second]) << k;
    if (k > 0) {
      EXPECT_LT(p[k - 1].first, p[k].first);
      EXPECT_LT(p[k - 1].second, p[k].second);
    }
  }
}

TEST(AlignSequences, ToleratesInsertedAndMissingOps) {
  // b lacks a[2] (a host op the device trace does not have) and has an extra 9 (a device op the
  // host trace does not have): every other op is paired with its counterpart.
  std::vector<uint32_t> a = {1, 2, 3, 4, 5, 6};
  std::vector<uint32_t> b = {1, 2, 9, 4, 5, 6};
  Pairs p = align_sequences(a, b);
  EXPECT_EQ(p, (Pairs{{0, 0}, {1, 1}, {3, 3}, {4, 4}, {5, 5}}));
  // A fixed shift (the legacy linker's model) cannot do this: ops after the gap are shifted.
  std::vector<uint32_t> shifted = {7, 7, 1, 2, 4, 5, 6, 8};
  p = align_sequences(a, shifted);
  EXPECT_EQ(p, (Pairs{{0, 2}, {1, 3}, {3, 4}, {4, 5}, {5, 6}}));
  EXPECT_TRUE(align_sequences({}, b).empty());
  EXPECT_TRUE(align_sequences(a, {}).empty());
}

TEST(AlignSequences, PrefersTheEarliestDeviceOpAmongEqualAlternatives) {
  std::vector<uint32_t> a = {5};
  std::vector<uint32_t> b = {1, 5, 2, 5};
  EXPECT_EQ(align_sequences(a, b), (Pairs{{0, 1}}));
}

TEST(AlignSequences, IsALongestCommonSubsequenceOnRandomInputs) {
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::uniform_int_distribution<uint32_t> len(0, 40), sym(0, 1 + round % 6);
    std::vector<uint32_t> a(len(rng)), b(len(rng));
    for (auto& x : a) x = sym(rng);
    for (auto& x : b) x = sym(rng);
    Pairs p = align_sequences(a, b);
    expect_valid(a, b, p);
    ASSERT_EQ(p.size(), lcs_length(a, b)) << "round " << round;
  }
}

TEST(AlignSequences, LargeInputsAreCutAtAnchorsAndStayExact) {
  // 3000 x 3000 is past the exact-DP limit: the anchors (names equally frequent on both sides)
  // cut it. A repetitive program (20 "layers" of the same 150 names) with scattered edits.
  std::mt19937 rng(11);
  std::vector<uint32_t> layer(150);
  for (auto& x : layer) x = std::uniform_int_distribution<uint32_t>(0, 40)(rng);
  std::vector<uint32_t> a;
  for (int k = 0; k < 20; ++k) {
    a.push_back(1000 + k);  // a layer marker
    a.insert(a.end(), layer.begin(), layer.end());
  }
  std::vector<uint32_t> b = a;
  size_t edits = 0;
  for (size_t pos = 37; pos < b.size(); pos += 401, ++edits) b[pos] = 5000 + pos;  // substitutions
  b.insert(b.begin() + 1234, 7777);
  b.erase(b.begin() + 2222);
  Pairs p = align_sequences(a, b);
  expect_valid(a, b, p);
  // Each substitution costs one pair, the deletion at most one more.
  EXPECT_GE(p.size(), a.size() - edits - 1);
}

// ---------- map_by_sequence ----------

struct Traces {
  HostTrace host;
  DeviceTrace device;
};

Traces parse(const std::string& host, const std::string& device) {
  auto h = parse_host_trace("host.json", host);
  auto d = parse_device_trace("device.json", device);
  EXPECT_TRUE(h.ok()) << h.status().message();
  EXPECT_TRUE(d.ok()) << d.status().message();
  return {std::move(h).value(), std::move(d).value()};
}

LinkOptions sequence_options() {
  LinkOptions o;
  o.mode = MatchMode::kSequence;
  return o;
}

// Name of the device event matched with host node `id`, or "" when unmatched.
std::string matched_name(const Traces& t, const HostDeviceMap& m, uint64_t id) {
  for (uint32_t i = 0; i < t.host.nodes.size(); ++i) {
    if (t.host.nodes[i].id != id) continue;
    DeviceEventIdx e = m.device_of[i];
    return e.valid() ? std::string(t.device.name(e)) : std::string();
  }
  return "missing node";
}
TimeNs matched_ts(const Traces& t, const HostDeviceMap& m, uint64_t id) {
  for (uint32_t i = 0; i < t.host.nodes.size(); ++i)
    if (t.host.nodes[i].id == id && m.device_of[i].valid()) return t.device[m.device_of[i]].ts;
  return -1;
}

TEST(SequenceMatching, PairsThreadsByNamesAndAlignsAroundInsertedAndMissingOps) {
  // Host thread 1: fwd ops; thread 2: autograd ops. The device lists the autograd thread first
  // (OS tids 900 / 800), has an extra op on thread 800 and lacks host op 6 (aten::t).
  std::string host = HostBuilder()
                         .roots({{2, 1}, {3, 2}})
                         .node(4, "aten::linear", 2, 1, 1)
                         .node(5, "aten::addmm", 4, 2, 1)
                         .node(6, "aten::t", 4, 3, 1)
                         .node(7, "aten::relu", 2, 4, 1)
                         .node(8, "AddmmBackward0", 3, 5, 2)
                         .node(9, "aten::mm", 8, 6, 2)
                         .json();
  std::string device = KinetoBuilder()
                           .cpu_op("AddmmBackward0", 900, 100, 10)
                           .cpu_op("aten::mm", 900, 101, 5)
                           .cpu_op("aten::linear", 800, 10, 30)
                           .cpu_op("aten::empty", 800, 11, 1)  // not in the host trace
                           .cpu_op("aten::addmm", 800, 12, 20)
                           .cpu_op("aten::relu", 800, 50, 3)
                           .json();
  Traces t = parse(host, device);
  LinkOptions o = sequence_options();
  o.min_match_rate = 0.8;  // 5 of 6
  DataProblems stats;
  auto m = map_by_sequence(t.host, t.device, o, stats);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(matched_name(t, *m, 4), "aten::linear");
  EXPECT_EQ(matched_name(t, *m, 5), "aten::addmm");
  EXPECT_EQ(matched_name(t, *m, 6), "");
  EXPECT_EQ(matched_name(t, *m, 7), "aten::relu");
  EXPECT_EQ(matched_name(t, *m, 8), "AddmmBackward0");
  EXPECT_EQ(matched_name(t, *m, 9), "aten::mm");
  EXPECT_EQ(matched_name(t, *m, 2), "");  // thread annotations are never matched
  EXPECT_EQ(m->matched, 5u);
  EXPECT_EQ(m->candidates, 6u);
  ASSERT_EQ(m->threads.size(), 2u);
  EXPECT_EQ(m->threads[0].host_tid, 1u);
  EXPECT_EQ(m->threads[0].device_tid, 800);
  EXPECT_EQ(m->threads[0].matched, 3u);
  EXPECT_EQ(m->threads[0].host_ops, 4u);
  EXPECT_EQ(m->threads[1].device_tid, 900);
  EXPECT_EQ(m->threads[1].matched, 2u);
  EXPECT_EQ(stats.count(StatKind::kSeqHostOpWithoutDeviceOp), 1u);
  EXPECT_EQ(stats.count(StatKind::kSeqDeviceOpSkipped), 1u);
  // The report line says which threads were paired and how well.
  EXPECT_EQ(format_thread_match(m->threads[0]),
            "host tid 1 -> device pid 1 tid 800: 3 / 4 ops matched (75.0%)");
}

std::vector<std::string> numbered(const std::string& prefix, int n, int distinct) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i % distinct));
  return out;
}

// One host iteration of a forward (main) and a backward thread against `iterations` device
// iterations; the first `warm_up` of them hold an extra op on the main thread.
struct Iterations {
  std::vector<std::string> fwd = numbered("fwd", 60, 13);
  std::vector<std::string> bwd = numbered("bwd", 40, 7);
  Traces t;
  Iterations(int iterations, int warm_up) {
    HostBuilder hb;
    hb.roots({{2, 1}, {3, 2}});
    uint64_t id = 10;
    auto add = [&](const std::string& name, uint64_t parent, uint64_t tid) {
      hb.node(id, name, parent, id, tid);
      ++id;
    };
    for (const auto& name : fwd) add(name, 2, 1);
    add("loss", 2, 1);
    for (const auto& name : bwd) add(name, 3, 2);
    add("step", 2, 1);
    KinetoBuilder kb;
    for (int it = 0; it < iterations; ++it) {
      double t0 = 1000.0 * it + 100;
      if (it < warm_up) kb.cpu_op("cudnn::find", 11, t0 + 10.5, 0.25);
      for (size_t k = 0; k < fwd.size(); ++k) kb.cpu_op(fwd[k], 11, t0 + k, 0.5);
      kb.cpu_op("loss", 11, t0 + 100, 200);
      for (size_t k = 0; k < bwd.size(); ++k) kb.cpu_op(bwd[k], 22, t0 + 150 + k, 0.5);
      kb.cpu_op("step", 11, t0 + 400, 5);
    }
    t = parse(hb.json(), kb.json());
  }
  uint64_t first_bwd_id() const { return 10 + fwd.size() + 1; }
};

TEST(SequenceMatching, FindsTheIterationWindowAndKeepsThreadsInTimeOrder) {
  // The first exact iteration, 1, is chosen for the main thread; the backward thread, identical
  // in every iteration, must go to the same iteration (host ids: backward runs between the main
  // thread's "loss" and "step"), not to the first.
  Iterations its(6, 1);
  DataProblems stats;
  auto m = map_by_sequence(its.t.host, its.t.device, sequence_options(), stats);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->matched, its.fwd.size() + its.bwd.size() + 2);
  // Iteration 1 starts at 1100 us; its backward ops at 1250 us.
  EXPECT_EQ(matched_ts(its.t, *m, 10), 1100 * 1000);
  EXPECT_EQ(matched_ts(its.t, *m, its.first_bwd_id()), 1250 * 1000);
  EXPECT_EQ(stats.count(StatKind::kSeqOutOfStartOrder), 0u);
  ASSERT_EQ(m->threads.size(), 2u);
  EXPECT_GT(m->threads[0].windows_considered, 1u);
  EXPECT_LT(m->threads[0].window_end - m->threads[0].window_begin, m->threads[0].device_ops);
}

TEST(SequenceMatching, ThreadsPlacedLaterSearchOnlyWhereTimeAllows) {
  // 100 iterations, the first 80 with a warm-up op: the main thread lands in iteration 80, past
  // the number of windows aligned per thread; the backward thread's windows are searched in the
  // time the main thread leaves for them, so it lands there too.
  Iterations its(100, 80);
  DataProblems stats;
  auto m = map_by_sequence(its.t.host, its.t.device, sequence_options(), stats);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(matched_ts(its.t, *m, 10), 80100 * 1000);
  EXPECT_EQ(matched_ts(its.t, *m, its.first_bwd_id()), 80250 * 1000);
  EXPECT_LE(m->threads[1].windows_considered, 2u);  // its iteration and a neighbour at most
}

TEST(SequenceMatching, AnnotationRestrictsTheWindowToOneIteration) {
  // Iterations delimited by ProfilerStep#k: iteration 0 lacks two ops, 1 and 2 are exact, 3 has
  // an extra op. The host trace is matched inside one iteration (the best, then the earliest):
  // its window is exactly iteration 1, where the name-based search adds a margin on each side.
  std::vector<std::string> body = numbered("op", 30, 9);
  HostBuilder hb;
  hb.roots({{2, 1}});
  for (uint64_t k = 0; k < body.size(); ++k) hb.node(10 + k, body[k], 2, 1 + k, 1);
  KinetoBuilder kb;
  for (int it = 0; it < 4; ++it) {
    double t0 = 1000.0 * it;
    kb.cpu_op("ProfilerStep#" + std::to_string(it), 11, t0, 900, 0, -1, "user_annotation");
    // Iteration 0 lacks two ops; iteration 3 has an extra one.
    for (size_t k = 0; k < body.size(); ++k) {
      if (it == 0 && (k == 3 || k == 4)) continue;
      kb.cpu_op(body[k], 11, t0 + 1 + k, 0.5);
    }
    if (it == 3) kb.cpu_op("extra", 11, t0 + 50, 0.5);
  }
  Traces t = parse(hb.json(), kb.json());
  LinkOptions o = sequence_options();
  o.annotation = "ProfilerStep";
  DataProblems stats;
  auto m = map_by_sequence(t.host, t.device, o, stats);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->matched, body.size());
  EXPECT_EQ(matched_ts(t, *m, 10), 1001 * 1000);  // iteration 1: the first complete one
  EXPECT_EQ(stats.count(StatKind::kSeqAnnotationIterations), 5u);
  EXPECT_EQ(m->threads[0].windows_considered, 4u);  // the 5th (after the last step) is empty
  EXPECT_EQ(m->threads[0].window_begin, 28u);       // iteration 0 holds 28 ops
  EXPECT_EQ(m->threads[0].window_end, 58u);

  DataProblems by_name_stats;
  auto by_name = map_by_sequence(t.host, t.device, sequence_options(), by_name_stats);
  ASSERT_TRUE(by_name.ok()) << by_name.status().message();
  EXPECT_EQ(matched_ts(t, *by_name, 10), 1001 * 1000);
  EXPECT_LT(by_name->threads[0].window_begin, 28u);
  EXPECT_GT(by_name->threads[0].window_end, 58u);

  // An annotation the trace does not have: counted, and the window is found by names.
  o.annotation = "DataLoader";
  DataProblems stats2;
  m = map_by_sequence(t.host, t.device, o, stats2);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->matched, body.size());
  EXPECT_EQ(stats2.count(StatKind::kSeqAnnotationNotInDevice), 1u);
}

TEST(SequenceMatching, TracesThatDoNotAlignAreAnErrorNotASilentEmptyLink) {
  std::string host = HostBuilder()
                         .roots({{2, 1}})
                         .node(4, "aten::conv2d", 2, 1, 1)
                         .node(5, "aten::relu", 2, 2, 1)
                         .node(6, "aten::add", 2, 3, 1)
                         .node(7, "aten::mm", 2, 4, 1)
                         .json();
  std::string device = KinetoBuilder()
                           .cpu_op("aten::embedding_bag", 5, 0, 1)
                           .cpu_op("aten::add", 5, 2, 1)
                           .cpu_op("aten::index_select", 5, 4, 1)
                           .json();
  Traces t = parse(host, device);
  DataProblems stats;
  auto m = map_by_sequence(t.host, t.device, sequence_options(), stats);
  ASSERT_FALSE(m.ok());
  const std::string msg = m.status().message();
  EXPECT_NE(msg.find("host.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("device.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1 of 4 host ops matched (25.0%)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("below --min-match-rate 90.0%"), std::string::npos) << msg;
  EXPECT_NE(msg.find("host tid 1 -> device pid 1 tid 5: 1 / 4"), std::string::npos) << msg;

  // Accepting any rate links what aligns, and says how little that is.
  LinkOptions any = sequence_options();
  any.min_match_rate = 0;
  m = map_by_sequence(t.host, t.device, any, stats);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->matched, 1u);
  EXPECT_EQ(matched_name(t, *m, 6), "aten::add");
}

TEST(SequenceMatching, AThreadBelowTheRateFailsEvenWhenTheTraceAsAWholePasses) {
  HostBuilder hb;
  hb.roots({{2, 1}, {3, 2}});
  for (uint64_t k = 0; k < 400; ++k) hb.node(10 + k, "main" + std::to_string(k % 17), 2, 1 + k, 1);
  for (uint64_t k = 0; k < 40; ++k) hb.node(500 + k, "side" + std::to_string(k), 3, 500 + k, 2);
  KinetoBuilder kb;
  for (int k = 0; k < 400; ++k) kb.cpu_op("main" + std::to_string(k % 17), 11, k, 0.5);
  for (int k = 0; k < 20; ++k) kb.cpu_op("side" + std::to_string(k), 12, 1000 + k, 0.5);
  Traces t = parse(hb.json(), kb.json());
  DataProblems stats;
  auto m = map_by_sequence(t.host, t.device, sequence_options(), stats);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("host thread 2: 20 of 40 ops matched (50.0%)"),
            std::string::npos)
      << m.status().message();
}

TEST(SequenceMatching, TracesOfAnotherProcessAreRejected) {
  std::string host = HostBuilder().pid(7).roots({{2, 1}}).node(4, "aten::mm", 2, 1, 1).json();
  std::string device = KinetoBuilder().cpu_op("aten::mm", 5, 0, 1).json();  // pid 1
  Traces t = parse(host, device);
  DataProblems stats;
  auto m = map_by_sequence(t.host, t.device, sequence_options(), stats);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("recorded by process 7"), std::string::npos)
      << m.status().message();
  EXPECT_NE(m.status().message().find("processes 1"), std::string::npos);
  LinkOptions any = sequence_options();
  any.min_match_rate = 0;
  m = map_by_sequence(t.host, t.device, any, stats);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->matched, 1u);
  EXPECT_EQ(stats.count(StatKind::kSeqHostPidNotInDevice), 1u);

  // A device trace without CPU ops cannot be matched at all.
  Traces empty = parse(HostBuilder().roots({{2, 1}}).node(4, "aten::mm", 2, 1, 1).json(),
                       KinetoBuilder().gpu("k", 0, 1, 1).json());
  m = map_by_sequence(empty.host, empty.device, sequence_options(), stats);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("no cpu_op / user_annotation events"), std::string::npos);
}

TEST(SequenceMatching, ChakraModeLeavesOpsUnreachableFromTheRootUnmatched) {
  std::string host = HostBuilder()
                         .roots({{2, 1}})
                         .node(4, "aten::mm", 2, 1, 1)
                         .node(5, "aten::add", 99, 2, 1)  // parent missing
                         .json();
  std::string device =
      KinetoBuilder().cpu_op("aten::mm", 5, 0, 1).cpu_op("aten::add", 5, 2, 1).json();
  Traces t = parse(host, device);
  LinkOptions chakra = sequence_options();
  chakra.compat = Compat::kChakra;
  DataProblems stats;
  auto m = map_by_sequence(t.host, t.device, chakra, stats);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(matched_name(t, *m, 5), "");
  EXPECT_EQ(m->unreachable, 1u);
  m = map_by_sequence(t.host, t.device, sequence_options(), stats);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(matched_name(t, *m, 5), "aten::add");
}

// The oracle: the same device trace with the rf_ids the host ops carry, linked by rf_id.
TEST(SequenceMatching, GivesTheSameEtPlusAsTheRfIdPath) {
  auto host = [] {
    return HostBuilder()
        .roots({{2, 1}, {3, 2}})
        .node(4, "aten::mm", 2, 3, 1)
        .node(5, "aten::empty", 4, 4, 1)
        .node(6, "aten::add", 2, 5, 1)
        .node(7, "bwd", 3, 6, 2)
        .json();
  };
  auto device = [](bool rf) {
    return KinetoBuilder()
        .cpu_op("aten::mm", 100, 10, 40, rf ? 3 : 0, 1)
        .cpu_op("aten::empty", 100, 12, 2, rf ? 4 : 0, 2)
        .runtime("cudaLaunchKernel", 100, 20, 2, 500)
        .cpu_op("aten::add", 100, 60, 5, rf ? 5 : 0, 3)
        .cpu_op("bwd", 200, 3000, 10, rf ? 6 : 0, 4)
        .gpu("gemm_kernel", 30, 4.5, 500, 7)
        .json();
  };
  auto link = [](const Traces& t, MatchMode mode) {
    LinkOptions o;
    o.mode = mode;
    auto linked = link_traces(t.host, t.device, o);
    EXPECT_TRUE(linked.ok()) << linked.status().message();
    std::string out;
    EXPECT_TRUE(write_et_plus(t.host, t.device, *linked, o, [&out](std::string_view b) {
                  out.append(b);
                }).ok());
    return out;
  };
  Traces legacy = parse(host(), device(false));
  Traces modern = parse(host(), device(true));
  std::string by_rf = link(modern, MatchMode::kRfId);
  EXPECT_EQ(link(legacy, MatchMode::kSequence), by_rf);
  EXPECT_EQ(link(legacy, MatchMode::kAuto), by_rf);  // auto: no rf_ids -> sequence
  EXPECT_NE(by_rf.find("\"inter_thread_dep\":6"), std::string::npos) << by_rf;  // bwd after add
}

}  // namespace
}  // namespace chakraflow
