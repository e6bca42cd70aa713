// grow_prefaulted: the vector resize gives, its pages faulted in over batches first.
#include "stages/common/prefault.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace chakraflow {
namespace {

// Counts the batches it runs (one after another, on this thread).
class CountingBatches : public OrderedBatches {
 public:
  Status run(size_t batches, const std::function<Status(size_t, std::string&)>& produce,
             const std::function<Status(std::string&)>& consume) const override {
    runs += batches;
    return OrderedBatches::run(batches, produce, consume);
  }
  mutable size_t runs = 0;
};

TEST(Prefault, GrowsAsResizeDoesKeepingTheContents) {
  std::vector<uint64_t> v(1000);
  std::iota(v.begin(), v.end(), uint64_t{7});
  const CountingBatches batches;
  const size_t n = 1000 + 3 * kPrefaultMinBytes / sizeof(uint64_t) + 5;  // three slices
  grow_prefaulted(v, n, batches);
  ASSERT_EQ(v.size(), n);
  EXPECT_EQ(batches.runs, 3u);
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(v[i], 7 + i) << i;
  for (size_t i = 1000; i < n; ++i) ASSERT_EQ(v[i], 0u) << i;  // value-initialized

  // Small growth: no batches; shrinking: resize.
  grow_prefaulted(v, n + 10, batches);
  EXPECT_EQ(v.size(), n + 10);
  EXPECT_EQ(batches.runs, 3u);
  grow_prefaulted(v, 10, batches);
  ASSERT_EQ(v.size(), 10u);
  EXPECT_EQ(v[9], 16u);
}

TEST(Prefault, FaultingInKeepsWhatTheMemoryHolds) {
  std::vector<char> bytes(5 * 4096 + 123);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 31);
  // Not page-aligned at either end: the whole pages around are faulted in, nothing written.
  prefault_for_writing(bytes.data() + 100, bytes.size() - 200);
  prefault_for_writing(bytes.data(), 0);
  for (size_t i = 0; i < bytes.size(); ++i) ASSERT_EQ(bytes[i], static_cast<char>(i * 31)) << i;
}

}  // namespace
}  // namespace chakraflow
