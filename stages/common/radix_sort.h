// A stable sort by an integer key for the loaders' and linker's index vectors (event and node
// positions keyed by timestamp, id or correlation), where a comparison sort's n log n compares
// and mispredicted branches are most of the time: the keys span a narrow range (a step's
// nanoseconds, dense ids), so a few passes of a least-significant-digit radix sort order them.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "stages/common/ordered_batches.h"
#include "stages/common/prefault.h"

namespace chakraflow {

// Sorts `v` by key(v[i]) (an integer, signed or not), stable: records with equal keys keep their
// order. Passes of 11 bits over the bits that (key - smallest key) spans, through one scratch
// vector; a short vector goes to std::stable_sort (the same order). Given `workers`, a long
// vector is sorted in chunks on them (radix_detail::parallel_sort below): the same order.
template <typename T, typename KeyFn>
void stable_radix_sort(std::vector<T>& v, KeyFn key, const OrderedBatches* workers = nullptr);

namespace radix_detail {

inline constexpr size_t kBits = 11;
inline constexpr size_t kBuckets = size_t{1} << kBits;
// A chunk per this many records (at most kMaxChunks; the workers' range_size may cut finer), and
// below two chunks' worth the sort stays on the calling thread: each chunk's pass over its
// records is long beside the tasks' start.
inline constexpr size_t kChunkRecords = size_t{1} << 15;
inline constexpr size_t kMaxChunks = 64;

// The number of kBits passes that keys spanning `span` (largest - smallest) need.
inline size_t passes_for(uint64_t span) {
  size_t passes = 0;
  for (uint64_t s = span; s != 0; s >>= kBits) ++passes;
  return passes;
}

// The sort in chunks of `v` on `workers`: each chunk's smallest and largest keys (and whether
// it is in order), then per pass each chunk's bucket counts, their starts (bucket by bucket, the
// chunks in order within a bucket: stable) and each chunk's records scattered to them, the
// chunks side by side. The scratch vector's pages are faulted in on the workers.
template <typename T, typename KeyFn>
void parallel_sort(std::vector<T>& v, KeyFn key, const OrderedBatches& workers) {
  using Key = std::decay_t<decltype(key(v[0]))>;
  const size_t n = v.size();
  const size_t chunks = std::clamp<size_t>(n / workers.range_size(kChunkRecords), 2, kMaxChunks);
  auto begin_of = [&](size_t c) { return n * c / chunks; };
  struct Range {
    Key lo{}, hi{};
    bool sorted = true;
  };
  std::vector<Range> ranges(chunks);
  workers.for_each(chunks, [&](size_t c) {
    const size_t b = begin_of(c), e = begin_of(c + 1);
    Range& r = ranges[c];
    r.lo = r.hi = key(v[b]);
    // The record before the chunk too: together the chunks check every neighbouring pair.
    if (b > 0) r.sorted = !(key(v[b]) < key(v[b - 1]));
    for (size_t i = b + 1; i < e; ++i) {
      const Key k = key(v[i]);
      r.sorted &= !(k < key(v[i - 1]));
      r.lo = std::min(r.lo, k);
      r.hi = std::max(r.hi, k);
    }
  });
  Key lo = ranges[0].lo, hi = ranges[0].hi;
  bool sorted = true;
  for (const Range& r : ranges) {
    lo = std::min(lo, r.lo);
    hi = std::max(hi, r.hi);
    sorted &= r.sorted;
  }
  if (sorted) return;
  const uint64_t base = static_cast<uint64_t>(lo);
  const size_t passes = passes_for(static_cast<uint64_t>(hi) - base);
  std::vector<T> scratch;
  grow_prefaulted(scratch, n, workers);
  T* from = v.data();
  T* to = scratch.data();
  std::vector<std::array<size_t, kBuckets>> start(chunks);
  for (size_t p = 0; p < passes; ++p) {
    const unsigned shift = static_cast<unsigned>(p * kBits);
    auto digit = [&](const T& r) {
      return static_cast<size_t>(((static_cast<uint64_t>(key(r)) - base) >> shift) &
                                 (kBuckets - 1));
    };
    workers.for_each(chunks, [&](size_t c) {
      std::array<size_t, kBuckets>& s = start[c];
      s.fill(0);
      for (size_t i = begin_of(c), e = begin_of(c + 1); i < e; ++i) ++s[digit(from[i])];
    });
    size_t sum = 0;
    for (size_t d = 0; d < kBuckets; ++d) {
      for (size_t c = 0; c < chunks; ++c) {
        const size_t count = start[c][d];
        start[c][d] = sum;
        sum += count;
      }
    }
    workers.for_each(chunks, [&](size_t c) {
      std::array<size_t, kBuckets>& s = start[c];
      for (size_t i = begin_of(c), e = begin_of(c + 1); i < e; ++i)
        to[s[digit(from[i])]++] = from[i];
    });
    std::swap(from, to);
  }
  if (from != v.data()) {
    workers.for_each(chunks, [&](size_t c) {
      std::copy(from + begin_of(c), from + begin_of(c + 1), v.data() + begin_of(c));
    });
  }
}

}  // namespace radix_detail

template <typename T, typename KeyFn>
void stable_radix_sort(std::vector<T>& v, KeyFn key, const OrderedBatches* workers) {
  static_assert(std::is_nothrow_copy_assignable_v<T> && std::is_trivially_destructible_v<T>,
                "small plain records, copied between two buffers");
  using Key = std::decay_t<decltype(key(v[0]))>;
  static_assert(std::is_integral_v<Key>, "the key is an integer");
  using radix_detail::kBits;
  using radix_detail::kBuckets;
  constexpr size_t kSmall = 1024;
  const size_t n = v.size();
  if (n < 2) return;
  if (n < kSmall) {
    std::stable_sort(v.begin(), v.end(), [&](const T& a, const T& b) { return key(a) < key(b); });
    return;
  }
  if (workers != nullptr && n / 2 >= workers->range_size(radix_detail::kChunkRecords)) {
    radix_detail::parallel_sort(v, key, *workers);
    return;
  }
  // Keys as offsets from the smallest, in unsigned arithmetic (a signed range may span more than
  // the signed type holds).
  Key lo = key(v[0]), hi = lo;
  bool sorted = true;
  for (size_t i = 1; i < n; ++i) {
    const Key k = key(v[i]);
    sorted &= !(k < key(v[i - 1]));
    lo = std::min(lo, k);
    hi = std::max(hi, k);
  }
  if (sorted) return;
  const uint64_t base = static_cast<uint64_t>(lo);
  const uint64_t span = static_cast<uint64_t>(hi) - base;
  const size_t passes = radix_detail::passes_for(span);
  std::vector<T> scratch(n);
  T* from = v.data();
  T* to = scratch.data();
  std::array<size_t, kBuckets> start{};
  for (size_t p = 0; p < passes; ++p) {
    const unsigned shift = static_cast<unsigned>(p * kBits);
    auto digit = [&](const T& r) {
      return static_cast<size_t>(((static_cast<uint64_t>(key(r)) - base) >> shift) &
                                 (kBuckets - 1));
    };
    start.fill(0);
    for (size_t i = 0; i < n; ++i) ++start[digit(from[i])];
    size_t sum = 0;
    for (size_t& s : start) {
      const size_t count = s;
      s = sum;
      sum += count;
    }
    for (size_t i = 0; i < n; ++i) to[start[digit(from[i])]++] = from[i];
    std::swap(from, to);
  }
  if (from != v.data()) std::copy(from, from + n, v.data());
}

}  // namespace chakraflow
