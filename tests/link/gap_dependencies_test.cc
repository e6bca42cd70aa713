#include "stages/link/gap_dependencies.h"

#include <gtest/gtest.h>

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

TEST(GapDependencies, GroupStartsDependOnTheLatestOpOfOtherThreads) {
  // Thread 1: a [10,20), b [21,30) (same group), gap, c [2000,2010).
  // Thread 2: x [5,8), y [1500,1600), z [1990, 1991).
  auto t = parse_device_trace("g.json", KinetoBuilder()
                                            .cpu_op("a", 1, 10, 10, 1)
                                            .cpu_op("b", 1, 21, 9, 2)
                                            .cpu_op("c", 1, 2000, 10, 3)
                                            .cpu_op("x", 2, 5, 3, 4)
                                            .cpu_op("y", 2, 1500, 100, 5)
                                            .cpu_op("z", 2, 1990, 1, 6)
                                            .json());
  ASSERT_TRUE(t.ok());
  auto g = compute_gap_dependencies(*t, 1000 * 1000);
  auto dep = [&](std::string_view n) { return g.by_event[index_of(*t, n)]; };
  // a starts thread 1's first group: latest op of thread 2 before ts 10 is x.
  EXPECT_EQ(dep("a").value, index_of(*t, "x"));
  EXPECT_EQ(dep("b").value, index_of(*t, "x"));  // same group, same dependency
  EXPECT_EQ(dep("c").value, index_of(*t, "z"));  // after a 1970 us gap
  EXPECT_FALSE(dep("x").valid());                // nothing on thread 1 starts before 5
  EXPECT_EQ(dep("y").value, index_of(*t, "b"));  // 1492 us gap after x
  EXPECT_EQ(dep("z").value, index_of(*t, "b"));  // same group as y
  EXPECT_EQ(g.groups, 4u);

  // A larger threshold merges c into the first group.
  auto wide = compute_gap_dependencies(*t, 5000 * 1000);
  EXPECT_EQ(wide.by_event[index_of(*t, "c")].value, index_of(*t, "x"));
  EXPECT_EQ(wide.groups, 2u);
}

TEST(GapDependencies, SingleThreadHasNoDependencies) {
  auto t = parse_device_trace("g.json",
                              KinetoBuilder().cpu_op("a", 1, 10, 1).cpu_op("b", 1, 5000, 1).json());
  ASSERT_TRUE(t.ok());
  auto g = compute_gap_dependencies(*t, 1000 * 1000);
  for (auto d : g.by_event) EXPECT_FALSE(d.valid());
  EXPECT_EQ(g.groups, 2u);
}

}  // namespace
}  // namespace chakraflow
