// The table of data-problem kinds (stages/common/stat_kinds.h) and DataProblems over it: keys that
// outputs and tests can rely on, and counts that merge and list in a fixed order.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "stages/common/stats.h"

namespace chakraflow {
namespace {

// [a-z][a-z0-9_]* (by hand: GCC 12's <regex> trips -Wmaybe-uninitialized in the sanitizer build).
bool is_snake_case(std::string_view key) {
  if (key.empty() || key[0] < 'a' || key[0] > 'z') return false;
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

TEST(StatKinds, KeysAreUniqueSnakeCaseAndDescribed) {
  EXPECT_FALSE(is_snake_case("Not_snake"));
  EXPECT_FALSE(is_snake_case("has space"));
  std::set<std::string_view> keys, descriptions;
  for (size_t k = 0; k < kStatKindCount; ++k) {
    const auto kind = static_cast<StatKind>(k);
    const std::string_view key = stat_key(kind);
    EXPECT_TRUE(is_snake_case(key)) << key;
    EXPECT_LE(key.size(), 40u) << key;
    EXPECT_TRUE(keys.insert(key).second) << "key twice: " << key;
    EXPECT_FALSE(stat_description(kind).empty()) << key;
    EXPECT_TRUE(descriptions.insert(stat_description(kind)).second)
        << "description twice: " << stat_description(kind);
  }
  EXPECT_EQ(keys.size(), kStatKindCount);
}

TEST(StatKinds, KeyRoundTrip) {
  for (size_t k = 0; k < kStatKindCount; ++k) {
    const auto kind = static_cast<StatKind>(k);
    EXPECT_EQ(stat_kind_from_key(stat_key(kind)), kind) << stat_key(kind);
  }
  EXPECT_EQ(stat_kind_from_key("duplicate_correlation_id"), StatKind::kDuplicateCorrelationId);
  EXPECT_FALSE(stat_kind_from_key("duplicate correlation id").has_value());
  EXPECT_FALSE(stat_kind_from_key("").has_value());
  static_assert(stat_key(StatKind::kHostParentMissingReattached) ==
                "host_parent_missing_reattached");
}

TEST(DataProblems, CountsMergesAndListsByKey) {
  DataProblems a;
  a.add(StatKind::kGpuOpWithoutLaunchEvent, "byte 10");
  a.add(StatKind::kDuplicateCorrelationId);
  a.add_count(StatKind::kHostInvalidUtf8Bytes, 0);  // nothing: not listed
  EXPECT_EQ(a.count(StatKind::kHostInvalidUtf8Bytes), 0u);
  DataProblems b;
  for (int i = 0; i < 7; ++i)
    b.add(StatKind::kGpuOpWithoutLaunchEvent, "byte " + std::to_string(i));
  b.add_count(StatKind::kConvertCtrlDepOnRemoved, 3);
  a.merge(b);
  EXPECT_EQ(a.count(StatKind::kGpuOpWithoutLaunchEvent), 8u);
  EXPECT_EQ(a.count(StatKind::kConvertCtrlDepOnRemoved), 3u);
  EXPECT_EQ(a.entries().at(StatKind::kGpuOpWithoutLaunchEvent).examples.size(),
            DataProblems::kMaxExamples);
  EXPECT_EQ(a.entries().at(StatKind::kGpuOpWithoutLaunchEvent).examples.front(), "byte 10");
  std::vector<std::string_view> order;
  for (const auto& [kind, entry] : a.entries()) order.push_back(stat_key(kind));
  EXPECT_EQ(order, (std::vector<std::string_view>{"convert_ctrl_dep_on_removed",
                                                  "duplicate_correlation_id",
                                                  "gpu_op_without_launch_event"}));
}

}  // namespace
}  // namespace chakraflow
