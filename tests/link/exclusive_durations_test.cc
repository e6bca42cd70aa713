#include "stages/link/exclusive_durations.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "stages/common/json_util.h"
#include "stages/link/device_trace_loader.h"
#include "tests/testing/trace_builder.h"

namespace chakraflow {
namespace {

using testing::KinetoBuilder;

DeviceTrace parse(const std::string& text) {
  auto t = parse_device_trace("t.json", text);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

TimeNs excl_of(const DeviceTrace& t, const ExclusiveDurations& x, std::string_view name) {
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    if (t.name(t.events[i]) == name) return x.by_event[i];
  }
  ADD_FAILURE() << "no event " << name;
  return -1;
}

TEST(ExclusiveDurations, NestedOpsWithEqualStartTimes) {
  // parent [0,100) has a child starting with it [0,30), a child [40,60) with a grandchild [45,50).
  DeviceTrace t = parse(KinetoBuilder()
                            .cpu_op("parent", 1, 0, 100)
                            .cpu_op("first", 1, 0, 30)
                            .cpu_op("second", 1, 40, 20)
                            .cpu_op("grand", 1, 45, 5)
                            .json());
  auto fixed = compute_exclusive_durations(t, Compat::kDefault);
  EXPECT_EQ(excl_of(t, fixed, "parent"), 50000);  // 100 - 30 - 20
  EXPECT_EQ(excl_of(t, fixed, "first"), 30000);
  EXPECT_EQ(excl_of(t, fixed, "second"), 15000);
  EXPECT_EQ(excl_of(t, fixed, "grand"), 5000);
  // Chakra sorts by (ts, dur): "first" sorts before "parent" and is not subtracted.
  auto chakra = compute_exclusive_durations(t, Compat::kChakra);
  EXPECT_EQ(excl_of(t, chakra, "parent"), 80000);
  EXPECT_EQ(excl_of(t, chakra, "second"), 15000);
}

TEST(ExclusiveDurations, ThreadsAreIndependentAndGapsAreNotChildren) {
  DeviceTrace t = parse(KinetoBuilder()
                            .cpu_op("a", 1, 0, 10)
                            .cpu_op("b", 1, 20, 10)        // after a gap: a sibling, not a child
                            .cpu_op("c", 2, 2, 5)          // other thread, inside a's interval
                            .cpu_op("overlap", 1, 25, 10)  // partial overlap with b: not nested
                            .json());
  auto x = compute_exclusive_durations(t, Compat::kDefault);
  EXPECT_EQ(excl_of(t, x, "a"), 10000);
  EXPECT_EQ(excl_of(t, x, "b"), 10000);
  EXPECT_EQ(excl_of(t, x, "c"), 5000);
  EXPECT_EQ(excl_of(t, x, "overlap"), 10000);
}

TEST(ExclusiveDurations, OverlappingChildrenAreMergedAndSubMicrosecondKept) {
  DeviceTrace t = parse(KinetoBuilder()
                            .cpu_op("p", 1, 0, 10)
                            .cpu_op("k1", 1, 1, 4)
                            .cpu_op("k2", 1, 3, 4)  // overlaps k1 (not nested in it)
                            .cpu_op("tiny", 1, 8.25, 0.5)
                            .json());
  auto x = compute_exclusive_durations(t, Compat::kDefault);
  EXPECT_EQ(excl_of(t, x, "p"), 10000 - 6000 - 500);
  EXPECT_EQ(excl_of(t, x, "tiny"), 500);
}

// Chakra computes on the numbers json.load gives: with fractional µs near 5e12, floats whose
// rounding noise it keeps (the expected values are Python's, printed by repr); with integers,
// exact ints. A whole number written as a float stays a float.
TEST(ExclusiveDurations, ChakraArithmeticOnPythonNumbers) {
  DeviceTrace t = parse(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "p", "pid": 1, "tid": 1,
     "ts": 4816240692227.668, "dur": 161.019},
    {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1,
     "ts": 4816240692251.904, "dur": 130.824},
    {"ph": "X", "cat": "cpu_op", "name": "ip", "pid": 1, "tid": 2, "ts": 100, "dur": 10},
    {"ph": "X", "cat": "cpu_op", "name": "ic", "pid": 1, "tid": 2, "ts": 102, "dur": 3},
    {"ph": "X", "cat": "cpu_op", "name": "whole", "pid": 1, "tid": 3, "ts": 7.000, "dur": 4.000}
  ]})");
  auto x = compute_exclusive_durations(t, Compat::kChakra);
  ASSERT_EQ(x.chakra.size(), t.events.size());
  auto chakra_of = [&](std::string_view name) {
    for (uint32_t i = 0; i < t.events.size(); ++i) {
      if (t.name(t.events[i]) == name) return x.chakra[i];
    }
    ADD_FAILURE() << "no event " << name;
    return PyNumber{};
  };
  EXPECT_EQ(chakra_of("p"), (PyNumber{30.194781250000005, true}));  // Python: 30.194781250000005
  EXPECT_EQ(excl_of(t, x, "p"), 30195);                             // the exact value, in ns
  EXPECT_EQ(chakra_of("c"), (PyNumber{130.824, true}));
  EXPECT_EQ(chakra_of("ip"), (PyNumber{7, false}));
  EXPECT_EQ(chakra_of("whole"), (PyNumber{4, true}));
  std::string text;
  json::append_python_number(text, chakra_of("whole").value, chakra_of("whole").is_float);
  json::append_python_number(text.append(" "), chakra_of("ip").value, false);
  json::append_python_number(text.append(" "), chakra_of("p").value, true);
  EXPECT_EQ(text, "4.0 7 30.194781250000005");
  // The default mode has no float values.
  EXPECT_TRUE(compute_exclusive_durations(t, Compat::kDefault).chakra.empty());
}

// Chakra's algorithm, written the slow obvious way, as the oracle for Compat::kChakra; and the
// obvious O(n^2) "subtract the union of everything nested" for Compat::kDefault.
std::vector<TimeNs> naive(const std::vector<std::pair<TimeNs, TimeNs>>& ops, bool chakra) {
  std::vector<size_t> order(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ops[a].first != ops[b].first ? ops[a].first < ops[b].first
                                        : ops[a].second < ops[b].second;
  });
  std::vector<TimeNs> out(ops.size());
  for (size_t oi = 0; oi < order.size(); ++oi) {
    size_t i = order[oi];
    TimeNs s = ops[i].first, e = s + ops[i].second;
    std::vector<std::pair<TimeNs, TimeNs>> inside;
    for (size_t oj = 0; oj < order.size(); ++oj) {
      size_t j = order[oj];
      if (j == i) continue;
      if (chakra && oj < oi) continue;
      TimeNs cs = ops[j].first, ce = cs + ops[j].second;
      bool contained = cs >= s && ce <= e;
      // Without the Chakra order, identical intervals: the earlier one is the parent.
      if (!chakra && cs == s && ce == e && oj < oi) contained = false;
      if (contained) inside.push_back({cs, ce});
    }
    std::sort(inside.begin(), inside.end());
    TimeNs covered = 0, frontier = s;
    for (auto [cs, ce] : inside) {
      TimeNs from = std::max(cs, frontier);
      if (ce > from) covered += ce - from;
      frontier = std::max(frontier, ce);
    }
    out[i] = ops[i].second - covered;
  }
  return out;
}

TEST(ExclusiveDurations, MatchesNaiveOraclesOnRandomNestedTraces) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 200; ++round) {
    // Random properly nested intervals on one thread, on a coarse grid so that equal starts,
    // equal ends and identical intervals are frequent.
    std::vector<std::pair<TimeNs, TimeNs>> ops;
    std::function<void(TimeNs, TimeNs, int)> gen = [&](TimeNs s, TimeNs e, int depth) {
      TimeNs t = s;
      while (t < e && ops.size() < 60) {
        TimeNs len =
            std::uniform_int_distribution<TimeNs>(0, std::min<TimeNs>((e - t) / 1000, 8))(rng) *
            1000;
        if (rng() % 4 == 0) len = (e - t);  // child spanning to the parent's end
        TimeNs cs = t;
        ops.push_back({cs, len});
        if (depth < 4 && len > 0) gen(cs, cs + len, depth + 1);
        t = cs + len + std::uniform_int_distribution<TimeNs>(0, 2)(rng) * 1000;
        if (t > e) break;
      }
    };
    gen(0, 40000, 0);
    std::shuffle(ops.begin(), ops.end(), rng);
    KinetoBuilder b;
    for (size_t i = 0; i < ops.size(); ++i) {
      b.cpu_op("op" + std::to_string(i), 1, static_cast<double>(ops[i].first) / 1000,
               static_cast<double>(ops[i].second) / 1000);
    }
    DeviceTrace t = parse(b.json());
    // The loader sorts by ts (file order kept for ties), which is the order Chakra sorts from.
    std::vector<std::pair<TimeNs, TimeNs>> in_ts_order;
    std::vector<uint32_t> event_of;
    for (DeviceEventIdx idx : t.cpu_ops) {
      in_ts_order.push_back({t[idx].ts, t[idx].dur});
      event_of.push_back(idx.value);
    }
    for (bool chakra : {false, true}) {
      auto expected = naive(in_ts_order, chakra);
      auto got = compute_exclusive_durations(t, chakra ? Compat::kChakra : Compat::kDefault);
      for (size_t k = 0; k < expected.size(); ++k) {
        if (got.by_event[event_of[k]] != expected[k]) {
          for (auto [s0, d0] : in_ts_order)
            std::fprintf(stderr, "(%ld,%ld) ", (long)s0 / 1000, (long)d0 / 1000);
          std::fprintf(stderr, "\n");
        }
        ASSERT_EQ(got.by_event[event_of[k]], expected[k])
            << "round " << round << (chakra ? " chakra" : " default") << " op " << k << " ts "
            << in_ts_order[k].first << " dur " << in_ts_order[k].second;
        // On whole µs Chakra's float arithmetic is exact: the same values.
        if (chakra) {
          ASSERT_EQ(got.chakra[event_of[k]].value * 1000, static_cast<double>(expected[k]))
              << "round " << round << " op " << k;
        }
      }
    }
  }
}

}  // namespace
}  // namespace chakraflow
