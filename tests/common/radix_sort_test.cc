// stable_radix_sort gives std::stable_sort's order, whatever the keys' type, range and repeats,
// on the calling thread or in chunks on workers.
#include "stages/common/radix_sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "stages/common/ordered_batches.h"
#include "tests/testing/threaded_batches.h"

namespace chakraflow {
namespace {

// Records keyed by `Key`, each remembering where it started (so that stability shows).
template <typename Key>
void expect_as_stable_sort(std::vector<std::pair<Key, uint32_t>> v,
                           const OrderedBatches* workers = nullptr) {
  for (uint32_t i = 0; i < v.size(); ++i) v[i].second = i;
  auto expected = v;
  std::stable_sort(expected.begin(), expected.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  stable_radix_sort(
      v, [](const auto& r) { return r.first; }, workers);
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

// Long vectors sorted in chunks on workers: the same order, also where every chunk is in order
// but the chunks are not (only the pairs across a chunk's start show it).
TEST(RadixSort, InChunksOnWorkersOrdersAsStableSort) {
  const testing::ThreadedBatches workers(3);
  uint32_t seed = 100;
  for (size_t n : {size_t{65535}, size_t{65536}, size_t{100001}, size_t{300000}}) {
    expect_as_stable_sort(random_keys<int64_t>(n, 5, 9, seed++), &workers);
    expect_as_stable_sort(
        random_keys<int64_t>(n, 1'700'000'000'000'000'000, 1'700'000'002'000'000'000, seed++),
        &workers);
    expect_as_stable_sort(random_keys<uint32_t>(n, 0, 2048, seed++), &workers);
    expect_as_stable_sort(random_keys<int64_t>(n, std::numeric_limits<int64_t>::min(),
                                               std::numeric_limits<int64_t>::max(), seed++),
                          &workers);
  }
  // Each chunk (of at least 32,768 records) sorted, the whole not: only one pair of neighbours
  // out of order, across the middle, then the chunks in reverse order.
  auto v = random_keys<int64_t>(200000, 0, 1'000'000, 9);
  std::sort(v.begin(), v.end());
  std::swap(v[99999], v[100000]);
  v[99999].first = v[100000].first + 1;
  expect_as_stable_sort(v, &workers);
  std::sort(v.begin(), v.end());
  std::rotate(v.begin(), v.begin() + 150000, v.end());
  expect_as_stable_sort(v, &workers);
  std::sort(v.begin(), v.end());
  expect_as_stable_sort(v, &workers);  // sorted: left as it is
}

}  // namespace
}  // namespace chakraflow
