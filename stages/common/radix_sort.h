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

namespace chakraflow {

// Sorts `v` by key(v[i]) (an integer, signed or not), stable: records with equal keys keep their
// order. Passes of 11 bits over the bits that (key - smallest key) spans, through one scratch
// vector; a short vector goes to std::stable_sort (the same order).
template <typename T, typename KeyFn>
void stable_radix_sort(std::vector<T>& v, KeyFn key) {
  static_assert(std::is_nothrow_copy_assignable_v<T> && std::is_trivially_destructible_v<T>,
                "small plain records, copied between two buffers");
  using Key = std::decay_t<decltype(key(v[0]))>;
  static_assert(std::is_integral_v<Key>, "the key is an integer");
  constexpr size_t kBits = 11;
  constexpr size_t kBuckets = size_t{1} << kBits;
  constexpr size_t kSmall = 1024;
  const size_t n = v.size();
  if (n < 2) return;
  if (n < kSmall) {
    std::stable_sort(v.begin(), v.end(), [&](const T& a, const T& b) { return key(a) < key(b); });
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
  size_t passes = 0;
  for (uint64_t s = span; s != 0; s >>= kBits) ++passes;
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
