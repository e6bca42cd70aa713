// stable_radix_sort gives std::stable_sort's order, whatever the keys' type, range and repeats.
#include "stages/common/radix_sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

namespace chakraflow {
namespace {

// Records keyed by `Key`, each remembering where it started (so that stability shows).
template <typename Key>
void expect_as_stable_sort(std::vector<std::pair<Key, uint32_t>> v) {
  for (uint32_t i = 0; i < v.size(); ++i) v[i].second = i;
  auto expected = v;
  std::stable_sort(expected.begin(), expected.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  stable_radix_sort(v, [](const auto& r) { return r.first; });
  ASSERT_EQ(v, expected);
}

template <typename Key>
std::vector<std::pair<Key, uint32_t>> random_keys(size_t n, Key lo, Key hi, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<Key> key(lo, hi);
  std::vector<std::pair<Key, uint32_t>> v(n);
  for (auto& r : v) r.first = key(rng);
  return v;
}

TEST(RadixSort, OrdersAsStableSortOverRangesAndSizes) {
  uint32_t seed = 1;
  for (size_t n : {0, 1, 2, 1023, 1024, 1025, 5000, 100000}) {
    // Few distinct keys (many ties), a step's nanoseconds, dense ids, one pass's worth, and the
    // whole range of the type.
    expect_as_stable_sort(random_keys<int64_t>(n, 5, 9, seed++));
    expect_as_stable_sort(
        random_keys<int64_t>(n, 1'700'000'000'000'000'000, 1'700'000'002'000'000'000, seed++));
    expect_as_stable_sort(random_keys<uint64_t>(n, 0, 300'000, seed++));
    expect_as_stable_sort(random_keys<uint32_t>(n, 0, 2047, seed++));
    // Spans whose top bit starts a pass: one more pass than the bits below it need.
    expect_as_stable_sort(random_keys<uint32_t>(n, 0, 2048, seed++));
    expect_as_stable_sort(random_keys<int64_t>(n, -3, (int64_t{1} << 22) - 3, seed++));
    expect_as_stable_sort(random_keys<int64_t>(n, std::numeric_limits<int64_t>::min(),
                                               std::numeric_limits<int64_t>::max(), seed++));
    expect_as_stable_sort(
        random_keys<uint64_t>(n, 0, std::numeric_limits<uint64_t>::max(), seed++));
  }
}

TEST(RadixSort, NegativeKeysAndRunsInOrder) {
  auto v = random_keys<int64_t>(20000, -1'000'000, 1'000'000, 7);
  // Runs already in order, with a few out of place: the loaders' usual input.
  std::sort(v.begin(), v.end());
  for (size_t i = 0; i < v.size(); i += 997) std::swap(v[i], v[v.size() - 1 - i]);
  expect_as_stable_sort(v);
  std::sort(v.begin(), v.end());
  expect_as_stable_sort(v);  // sorted: left as it is
  std::reverse(v.begin(), v.end());
  expect_as_stable_sort(v);
}

}  // namespace
}  // namespace chakraflow
