// OrderedBatches: how a stage asks for work split in batches to be done, possibly concurrently,
// without knowing the threads: produce(i, out) for every batch i (any order, any thread), then
// consume(out) for each in the order of i, one at a time (an empty consume: nothing in order). The
// first failure in the order of the batches (of produce, then consume) ends the run and is
// returned: the same whatever the threads. A stage that writes a long output in order formats its
// batches through it, and writes them as they come.
//
// The base class runs the batches one after another on the calling thread; pipeline/ gives the
// stages one over the process's oneTBB workers (pipeline/parallel_batches.h), which holds a
// bounded number of batches at once. Either way the consumed bytes are the same.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stages/common/status.h"

namespace chakraflow {

class OrderedBatches {
 public:
  // `max_range`: the most items a range of a stage's work holds through these batches, whatever
  // the stage asks for (range_size); SIZE_MAX, the default, leaves the stages' own sizes. Tests
  // and fuzz targets cut finer, so that small traces reach the seams between ranges that only
  // large ones reach otherwise: every range size gives the same output.
  explicit OrderedBatches(size_t max_range = SIZE_MAX)
      : max_range_(max_range < 1 ? 1 : max_range) {}
  virtual ~OrderedBatches() = default;
  // The items per range of a stage that splits its work in ranges of `per_range` through these
  // batches: `per_range`, or max_range when less. A stage takes it once and uses it throughout.
  size_t range_size(size_t per_range) const { return std::min(per_range, max_range_); }
  virtual Status run(size_t batches, const std::function<Status(size_t, std::string&)>& produce,
                     const std::function<Status(std::string&)>& consume) const {
    std::string out;
    for (size_t i = 0; i < batches; ++i) {
      out.clear();
      CF_RETURN_IF_ERROR(produce(i, out));
      if (consume) CF_RETURN_IF_ERROR(consume(out));
    }
    return Status();
  }
  // task(i) for every i < count, possibly concurrently: work that cannot fail and writes no
  // output in order (each task fills only its own part).
  void for_each(size_t count, const std::function<void(size_t)>& task) const {
    const Status done = run(
        count,
        [&task](size_t i, std::string&) {
          task(i);
          return Status();
        },
        nullptr);  // nothing in order
    (void)done;    // the tasks do not fail
  }

 private:
  size_t max_range_;
};

// How many ranges of `per_range` items (the last one shorter) a stage splits `n` items into: one
// at least, so that the stage's one-range path also covers no items.
inline size_t range_count(size_t n, size_t per_range) {
  return n == 0 ? 1 : (n - 1) / per_range + 1;  // (no overflow for a per_range near SIZE_MAX)
}

// The ranges a stage that splits `n` items only when given workers cuts them into: one without
// workers (the whole in one pass), else range_count of the workers' range_size(per_range).
inline size_t range_count_on(const OrderedBatches* workers, size_t n, size_t per_range) {
  return workers != nullptr ? range_count(n, workers->range_size(per_range)) : 1;
}

// fn(r, begin, end) for each range r of `per_range` items [begin, end) of [0, n) (range_count of
// them; one empty range when n is 0), through `batches`: possibly concurrently.
template <typename Fn>
void for_each_range(const OrderedBatches& batches, size_t n, size_t per_range, Fn&& fn) {
  batches.for_each(range_count(n, per_range), [&](size_t r) {
    const size_t begin = std::min(n, r * per_range);
    fn(r, begin, std::min(n, begin + per_range));
  });
}

// The least i in [0, n) where pred(i) holds, n if none: searched in ranges of `per_range` through
// `batches` (each range stops at its first), the same whatever the batches.
template <typename Pred>
size_t first_in_ranges(const OrderedBatches& batches, size_t n, size_t per_range, Pred&& pred) {
  std::vector<size_t> first(range_count(n, per_range), n);
  for_each_range(batches, n, per_range, [&](size_t r, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      if (pred(i)) {
        first[r] = i;
        return;
      }
    }
  });
  return *std::min_element(first.begin(), first.end());
}

// `batches`, or when null the base class (one after another on the calling thread): what a stage
// given an optional OrderedBatches runs its batches through.
inline const OrderedBatches& batches_or_in_turn(const OrderedBatches* batches) {
  static const OrderedBatches in_turn;
  return batches != nullptr ? *batches : in_turn;
}

// A loader's window_bytes that asks for windows sized by the text it reads
// (json::window_bytes_for, stages/common/json_util.h): the loaders' default.
inline constexpr size_t kWindowBySize = SIZE_MAX;

// How a loader may read one large JSON array in shards, concurrently (json::read_array_in_shards):
// through `workers`, in at most `count` shards of at least `min_bytes` of text each. The default
// reads on the calling thread, in one piece; the output is the same either way.
struct ParseShards {
  static constexpr size_t kMinBytes = size_t{4} << 20;
  const OrderedBatches* workers = nullptr;
  size_t count = 1;
  size_t min_bytes = kMinBytes;
  // The workers when the trace has some of its own to share (more than one shard): what else it
  // does while read (inflating a .gz output's blocks) may run on them too.
  const OrderedBatches* own_workers() const { return count > 1 ? workers : nullptr; }
  // Shards for a text of `bytes`: 1 when there are no workers.
  size_t for_text(size_t bytes) const {
    if (workers == nullptr || count < 2 || min_bytes == 0) return 1;
    const size_t by_size = bytes / min_bytes;
    return by_size < count ? (by_size < 1 ? 1 : by_size) : count;
  }
};

}  // namespace chakraflow
