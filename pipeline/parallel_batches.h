// OrderedBatches (stages/common/ordered_batches.h) over the process's oneTBB workers: batches are
// produced concurrently and consumed in order, at most `in_flight` of them held at once (memory:
// that many batches of output). Also how many shards a trace is read in on those workers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "stages/common/ordered_batches.h"

namespace chakraflow {

// The shards each of `traces` traces loaded at once is read in: `workers` shared out among the
// `ranks_side_by_side` ranks loading at the same time (0 counts as 1), then among each rank's
// traces; at least 1.
size_t shards_per_trace(size_t workers, size_t traces, size_t ranks_side_by_side);

// A command's --threads N (`run: threads:` in a configuration): while the returned object lives,
// the process runs at most `threads` workers, the calling thread included; 0 leaves every core.
std::shared_ptr<void> limit_threads(size_t threads);

class ParallelBatches final : public OrderedBatches {
 public:
  // `max_range`: see OrderedBatches (tests cut the stages' ranges finer through it).
  explicit ParallelBatches(size_t in_flight, size_t max_range = SIZE_MAX)
      : OrderedBatches(max_range), in_flight_(in_flight < 2 ? 2 : in_flight) {}
  // The workers of the calling thread's task arena, at most the process's limit (limit_threads),
  // and batches over them, two per worker in flight at most (what every stage run on the rank
  // graph's workers takes).
  static size_t workers();
  static ParallelBatches two_per_worker() { return ParallelBatches(2 * workers()); }
  Status run(size_t batches, const std::function<Status(size_t, std::string&)>& produce,
             const std::function<Status(std::string&)>& consume) const override;

 private:
  size_t in_flight_;
};

}  // namespace chakraflow
