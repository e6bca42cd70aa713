#include "stages/link/launcher_correlation.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <tuple>
#include <unordered_map>

#include "stages/common/key_index.h"
#include "stages/link/device_trace_loader.h"
#include "tests/testing/trace_builder.h"

namespace chakraflow {
namespace {

using testing::KinetoBuilder;

uint32_t index_of(const DeviceTrace& t, std::string_view name) {
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    if (t.name(t.events[i]) == name) return i;
  }
  ADD_FAILURE() << name;
  return 0;
}

DeviceTrace parse(const std::string& text) {
  auto t = parse_device_trace("l.json", text);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

TEST(LauncherCorrelation, EnclosingOpVersusChakrasNearestPreceding) {
  // addmm [0,50) encloses a finished child empty [2,5); the kernel is launched at 10.
  DeviceTrace t = parse(KinetoBuilder()
                            .cpu_op("addmm", 1, 0, 50)
                            .cpu_op("empty", 1, 2, 3)
                            .runtime("cudaLaunchKernel", 1, 10, 2, 77)
                            .gpu("gemm", 20, 5, 77)
                            .json());
  DataProblems stats;
  auto fixed = correlate_launchers(t, Compat::kDefault, stats);
  uint32_t gemm = index_of(t, "gemm");
  EXPECT_EQ(fixed.cpu_op_of[gemm].value, index_of(t, "addmm"));
  EXPECT_EQ(fixed.launch_of[gemm].value, index_of(t, "cudaLaunchKernel"));
  auto chakra = correlate_launchers(t, Compat::kChakra, stats);
  EXPECT_EQ(chakra.cpu_op_of[gemm].value, index_of(t, "empty"));
  EXPECT_EQ(fixed.linked, 1u);
}

TEST(LauncherCorrelation, OrphansAndDuplicateCorrelationsAreCountedNotFatal) {
  DeviceTrace t = parse(KinetoBuilder()
                            .cpu_op("op", 1, 0, 50)
                            .runtime("cudaLaunchKernel", 1, 10, 1, 5)
                            .runtime("cudaLaunchKernel", 1, 12, 1, 5)  // duplicate correlation
                            .gpu("k_ok", 20, 1, 5)
                            .gpu("k_orphan", 30, 1, 999)               // no launch event
                            .runtime("cudaLaunchKernel", 2, 40, 1, 6)  // thread without CPU ops
                            .gpu("k_nothread", 45, 1, 6)
                            .json());
  DataProblems stats;
  auto r = correlate_launchers(t, Compat::kDefault, stats);
  EXPECT_EQ(r.duplicate_correlations, 1u);
  EXPECT_EQ(r.no_launch_event, 1u);
  EXPECT_EQ(r.no_cpu_op, 1u);
  EXPECT_EQ(r.linked, 1u);
  EXPECT_EQ(stats.count(StatKind::kDuplicateCorrelationId), 1u);
  EXPECT_EQ(stats.count(StatKind::kGpuOpWithoutLaunchEvent), 1u);
  EXPECT_EQ(stats.count(StatKind::kGpuOpWithoutCpuOp), 1u);
  // The first launch with a duplicated correlation wins.
  EXPECT_EQ(t.events[r.launch_of[index_of(t, "k_ok")].value].ts, 10000);
}

// Launches are found by correlation id through a table indexed by id (ids dense over their
// range, as Kineto's) or a hash table (ids spread wide): the same launches, orphans and
// duplicates either way, ids just outside the launches' range included.
TEST(LauncherCorrelation, DenseAndSpreadCorrelationIdsLinkAlike) {
  auto build = [](int64_t a, int64_t b, int64_t below, int64_t above) {
    return parse(KinetoBuilder()
                     .cpu_op("op", 1, 0, 100)
                     .runtime("cudaLaunchKernel", 1, 10, 1, a)
                     .runtime("cudaLaunchKernel", 1, 12, 1, a)  // duplicate correlation
                     .runtime("cudaLaunchKernel", 1, 14, 1, b)
                     .gpu("k_a", 20, 1, a)
                     .gpu("k_b", 25, 1, b)
                     .gpu("k_below", 30, 1, below)  // no launch event
                     .gpu("k_above", 35, 1, above)  // no launch event
                     .json());
  };
  for (const auto& [name, t] : {std::pair{"dense", build(5, 6, 4, 7)},
                                std::pair{"spread", build(5, 6000000000000, 4, 6000000000001)},
                                std::pair{"negative", build(-9, 3000000000, -10, 3000000001)}}) {
    DataProblems stats;
    auto r = correlate_launchers(t, Compat::kDefault, stats);
    EXPECT_EQ(r.duplicate_correlations, 1u) << name;
    EXPECT_EQ(r.no_launch_event, 2u) << name;
    EXPECT_EQ(r.linked, 2u) << name;
    EXPECT_EQ(t.events[r.launch_of[index_of(t, "k_a")].value].ts, 10000) << name;
    EXPECT_EQ(t.events[r.launch_of[index_of(t, "k_b")].value].ts, 14000) << name;
    EXPECT_FALSE(r.launch_of[index_of(t, "k_below")].valid()) << name;
    EXPECT_FALSE(r.launch_of[index_of(t, "k_above")].valid()) << name;
  }
}

TEST(LauncherCorrelation, HipGraphsAndMemsets) {
  DeviceTrace t = parse(KinetoBuilder()
                            .cpu_op("op", 1, 0, 100)
                            .runtime("hipLaunchKernel", 1, 1, 1, 1)
                            .runtime("hipExtModuleLaunchKernel", 1, 2, 1, 2)
                            .runtime("cudaGraphLaunch", 1, 3, 1, 3)
                            .runtime("cudaMemsetAsync", 1, 4, 1, 4)
                            .gpu("hip_k", 10, 1, 1)
                            .gpu("hip_ext", 11, 1, 2)
                            .gpu("graph_k", 12, 1, 3)
                            .gpu("memset", 13, 1, 4, 7, "gpu_memset")
                            .json());
  DataProblems stats;
  auto fixed = correlate_launchers(t, Compat::kDefault, stats);
  EXPECT_EQ(fixed.linked, 4u);
  EXPECT_EQ(fixed.gpu_ops.size(), 4u);
  auto chakra = correlate_launchers(t, Compat::kChakra, stats);
  // Chakra knows the HIP names, not cudaGraphLaunch, and drops gpu_memset.
  EXPECT_EQ(chakra.linked, 2u);
  EXPECT_EQ(chakra.skipped_memsets, 1u);
  EXPECT_EQ(chakra.no_launch_event, 1u);
  EXPECT_TRUE(is_launch_name("hipMemcpyWithStream", Compat::kChakra));
  EXPECT_FALSE(is_launch_name("cudaGraphLaunch", Compat::kChakra));
  EXPECT_TRUE(is_launch_name("cudaGraphLaunch", Compat::kDefault));
}

TEST(LauncherCorrelation, NcclKernelsSkipCoalescedOps) {
  DeviceTrace t = parse(KinetoBuilder()
                            .cpu_op("record_param_comms", 1, 0, 100)
                            .cpu_op("nccl:coalesced", 1, 1, 50)
                            .runtime("cudaLaunchKernel", 1, 10, 1, 9)
                            .gpu("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 20, 5, 9)
                            .json());
  DataProblems stats;
  for (Compat c : {Compat::kDefault, Compat::kChakra}) {
    auto r = correlate_launchers(t, c, stats);
    EXPECT_EQ(r.cpu_op_of[index_of(t, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")].value,
              index_of(t, "record_param_comms"));
  }
}

TEST(LauncherCorrelation, OpsStartingTogetherTakeNestingOrder) {
  // inner [10,15) comes before outer [10,100) in the file, both starting at 10: in nesting order
  // outer encloses inner, and the launch at 12 is inner's (the innermost enclosing op).
  DeviceTrace t = parse(KinetoBuilder()
                            .cpu_op("inner", 1, 10, 5)
                            .cpu_op("outer", 1, 10, 90)
                            .runtime("cudaLaunchKernel", 1, 12, 1, 41)
                            .gpu("k", 30, 1, 41)
                            .json());
  DataProblems stats;
  auto r = correlate_launchers(t, Compat::kDefault, stats);
  EXPECT_EQ(r.cpu_op_of[index_of(t, "k")].value, index_of(t, "inner"));
}

TEST(LauncherCorrelation, ExternalIdMatchPreferredWhenItEnclosesTheLaunch) {
  // Modern Kineto gives the kernel the External id of the op that launched it.
  DeviceTrace t = parse(KinetoBuilder()
                            .cpu_op("outer", 1, 0, 100, 0, 11)
                            .cpu_op("launcher", 1, 5, 20, 0, 12)
                            .cpu_op("inner", 1, 6, 10, 0, 13)
                            .runtime("cudaLaunchKernel", 1, 8, 1, 40)
                            .gpu("k", 30, 1, 40, 7, "kernel", 12)
                            .json());
  DataProblems stats;
  auto r = correlate_launchers(t, Compat::kDefault, stats);
  EXPECT_EQ(r.cpu_op_of[index_of(t, "k")].value, index_of(t, "launcher"));
}

// KeyIndex finds what a std::unordered_map given the same insertions finds: the first value with
// try_emplace, the last with assign, nothing for an absent key or a removed one; for keys of every
// kind (0, the largest, negative ids cast, keys that differ only in their high or low bits) and
// through its growth from the smallest table.
TEST(KeyIndex, FindsWhatAMapFinds) {
  std::mt19937_64 rng(11);
  std::vector<uint64_t> keys = {0, 1, UINT64_MAX, static_cast<uint64_t>(int64_t{-1}),
                                static_cast<uint64_t>(int64_t{-7})};
  for (uint64_t k = 0; k < 500; ++k) keys.push_back(k << 40);   // only high bits differ
  for (uint64_t k = 0; k < 500; ++k) keys.push_back(k * 1024);  // only low bits zero
  for (int k = 0; k < 3000; ++k) keys.push_back(rng() % 5000);  // many repeats
  for (size_t expected : {size_t{0}, keys.size()}) {
    KeyIndex first(expected), last(expected);
    std::unordered_map<uint64_t, uint32_t> first_ref, last_ref;
    for (uint32_t i = 0; i < keys.size(); ++i) {
      auto [stored, inserted] = first.try_emplace(keys[i], i);
      auto [it, ref_inserted] = first_ref.try_emplace(keys[i], i);
      ASSERT_EQ(inserted, ref_inserted) << keys[i];
      ASSERT_EQ(*stored, it->second) << keys[i];
      last.assign(keys[i], i);
      last_ref[keys[i]] = i;
    }
    EXPECT_EQ(first.size(), first_ref.size());
    EXPECT_EQ(last.size(), last_ref.size());
    for (const auto& [key, value] : first_ref) EXPECT_EQ(first.find(key), value) << key;
    for (const auto& [key, value] : last_ref) EXPECT_EQ(last.find(key), value) << key;
    for (uint64_t absent : {uint64_t{5000}, uint64_t{123456789}, uint64_t{1} << 63}) {
      EXPECT_EQ(first.find(absent), KeyIndex::kNone) << absent;
    }
    // Removing every other key (the feeder's use) leaves the others findable: backward-shift
    // deletion keeps each probe run unbroken.
    size_t k = 0;
    for (const auto& [key, value] : last_ref) {
      if (k++ % 2 == 0) {
        EXPECT_EQ(last.take(key), value) << key;
      }
    }
    EXPECT_EQ(last.size(), last_ref.size() / 2);
    k = 0;
    for (const auto& [key, value] : last_ref) {
      EXPECT_EQ(last.find(key), k++ % 2 == 0 ? KeyIndex::kNone : value) << key;
    }
    EXPECT_EQ(last.take(123456789), KeyIndex::kNone);
  }
}

// DenseKeyIndex finds what a map given the same insertions finds, in both of its modes: keys
// dense over their range (a direct table; keys at both ends of it, lookups below and above it,
// past 2^63) and keys spread wider (a KeyIndex); and nothing when it was made for no keys.
TEST(DenseKeyIndex, FindsWhatAMapFindsDenseOrSpread) {
  std::mt19937_64 rng(5);
  const uint64_t high = (uint64_t{1} << 63) + 100;
  for (const auto& [least, span, want_dense] :
       {std::tuple{uint64_t{1000}, uint64_t{3000}, true}, std::tuple{high, uint64_t{3000}, true},
        std::tuple{uint64_t{0}, uint64_t{1} << 40, false}}) {
    std::vector<uint64_t> keys = {least, least + span};
    for (int k = 0; k < 2000; ++k) keys.push_back(least + rng() % (span + 1));  // repeats
    DenseKeyIndex first(least, least + span, keys.size()), last(least, least + span, keys.size());
    EXPECT_EQ(first.dense(), want_dense) << least << " " << span;
    std::map<uint64_t, uint32_t> first_ref, last_ref;
    for (uint32_t i = 0; i < keys.size(); ++i) {
      auto [stored, inserted] = first.try_emplace(keys[i], i);
      auto [it, ref_inserted] = first_ref.try_emplace(keys[i], i);
      ASSERT_EQ(inserted, ref_inserted) << keys[i];
      ASSERT_EQ(stored, it->second) << keys[i];
      last.assign(keys[i], i);
      last_ref[keys[i]] = i;
    }
    for (uint64_t key = least; key <= least + std::min<uint64_t>(span, 4000); ++key) {
      const auto f = first_ref.find(key);
      EXPECT_EQ(first.find(key), f == first_ref.end() ? DenseKeyIndex::kNone : f->second) << key;
      const auto l = last_ref.find(key);
      EXPECT_EQ(last.find(key), l == last_ref.end() ? DenseKeyIndex::kNone : l->second) << key;
    }
    for (const auto& [key, value] : last_ref) EXPECT_EQ(last.find(key), value) << key;
    for (uint64_t absent : {least - 1, least + span + 1, least - (uint64_t{1} << 62), UINT64_MAX}) {
      EXPECT_EQ(first.find(absent), DenseKeyIndex::kNone) << absent;
    }
  }
  const DenseKeyIndex none(UINT64_MAX, 0, 0);
  EXPECT_EQ(none.find(0), DenseKeyIndex::kNone);
  EXPECT_EQ(none.find(UINT64_MAX), DenseKeyIndex::kNone);
  EXPECT_EQ(DenseKeyIndex().find(7), DenseKeyIndex::kNone);
}

}  // namespace
}  // namespace chakraflow
