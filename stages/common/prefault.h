// Growing a large vector with the page faults taken concurrently. A vector resized on one thread
// faults its new pages in on that thread, and the kernel's zeroing of them can cost as much as the
// stage that then fills the vector in ranges concurrently (docs/performance.md). grow_prefaulted
// reserves the room, faults its pages in over the workers, then resizes: the same vector, its
// serial part a pass over memory already in place.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "stages/common/ordered_batches.h"

namespace chakraflow {

// Faults in [begin, begin + bytes) for writing (madvise MADV_POPULATE_WRITE on the whole pages it
// touches); a no-op where the kernel lacks it. The memory must be mapped; its contents are kept.
void prefault_for_writing(const void* begin, size_t bytes);

// Below this the serial zeroing is too short to split.
inline constexpr size_t kPrefaultMinBytes = size_t{1} << 20;

// Room for `n` elements reserved in `v` and the pages past its size faulted in through `batches`
// (one slice of at least kPrefaultMinBytes per batch); the size is unchanged, so that the records
// can then be placed there (or the vector resized) without faults on one thread.
template <typename T>
void reserve_prefaulted(std::vector<T>& v, size_t n, const OrderedBatches& batches) {
  if (n <= v.size()) return;
  v.reserve(n);
  const auto* begin = reinterpret_cast<const char*>(v.data() + v.size());
  const size_t bytes = (n - v.size()) * sizeof(T);
  const size_t slices = bytes / kPrefaultMinBytes;
  if (slices > 1) {
    batches.for_each(slices, [&](size_t k) {
      const size_t from = bytes * k / slices, to = bytes * (k + 1) / slices;
      prefault_for_writing(begin + from, to - from);
    });
  }
}

// `v` resized to `n` elements, its new pages faulted in through `batches` first.
template <typename T>
void grow_prefaulted(std::vector<T>& v, size_t n, const OrderedBatches& batches) {
  reserve_prefaulted(v, n, batches);
  v.resize(n);
}

}  // namespace chakraflow
