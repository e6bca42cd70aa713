#include "pipeline/parallel_batches.h"

#include <tbb/global_control.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "stages/common/profile.h"

namespace chakraflow {

size_t shards_per_trace(size_t workers, size_t traces, size_t ranks_side_by_side) {
  const size_t sharing = std::max<size_t>(traces, 1) * std::max<size_t>(ranks_side_by_side, 1);
  return std::max<size_t>(workers / sharing, 1);
}

std::shared_ptr<void> limit_threads(size_t threads) {
  if (threads == 0) return nullptr;
  return std::make_shared<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                               threads);
}

size_t ParallelBatches::workers() {
  // The arena's concurrency does not know of a global limit (limit_threads): `--threads 1` on 16
  // cores would cut the traces into 8 shards each, read one after another.
  const size_t arena = static_cast<size_t>(tbb::this_task_arena::max_concurrency());
  const size_t limit =
      tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
  return std::max<size_t>(std::min(arena, limit), 1);
}

Status ParallelBatches::run(size_t batches,
                            const std::function<Status(size_t, std::string&)>& produce,
                            const std::function<Status(std::string&)>& consume) const {
  if (batches <= 1) return OrderedBatches::run(batches, produce, consume);
  // On a profile, each batch and its in-order step are spans on the thread that ran them, named
  // after the stage that handed them out.
  const char* stage = profile::current_name();
  const int64_t rank = profile::current_rank();
  struct Batch {
    size_t index = 0;
    Status produced;
    std::string out;
  };
  // A consumed batch is taken again for a later one, its output's room kept: grown from empty
  // each time, a batch's output was reallocated and copied at every doubling. At most
  // `in_flight_` batches exist.
  std::mutex pool_mutex;
  std::vector<std::unique_ptr<Batch>> pool;
  auto take = [&]() -> std::unique_ptr<Batch> {
    std::lock_guard<std::mutex> lock(pool_mutex);
    if (pool.empty()) return std::make_unique<Batch>();
    std::unique_ptr<Batch> b = std::move(pool.back());
    pool.pop_back();
    return b;
  };
  auto give_back = [&](std::unique_ptr<Batch> b) {
    b->out.clear();
    b->produced = Status();
    std::lock_guard<std::mutex> lock(pool_mutex);
    pool.push_back(std::move(b));
  };
  size_t next = 0;
  Status failed;                     // written by the (serial) consuming filter only
  std::atomic<bool> stopped{false};  // read by the input filter, on another thread
  tbb::parallel_pipeline(
      in_flight_,
      tbb::make_filter<void, Batch*>(tbb::filter_mode::serial_in_order,
                                     [&](tbb::flow_control& fc) -> Batch* {
                                       if (next == batches ||
                                           stopped.load(std::memory_order_acquire)) {
                                         fc.stop();
                                         return nullptr;
                                       }
                                       Batch* b = take().release();
                                       b->index = next++;
                                       return b;
                                     }) &
          tbb::make_filter<Batch*, Batch*>(tbb::filter_mode::parallel,
                                           [&](Batch* b) {
                                             const profile::Span span(stage, rank, -1,
                                                                      profile::Kind::kBatch);
                                             b->produced = produce(b->index, b->out);
                                             return b;
                                           }) &
          tbb::make_filter<Batch*, void>(tbb::filter_mode::serial_in_order, [&](Batch* b) {
            std::unique_ptr<Batch> owned(b);
            const profile::Span span(consume ? stage : nullptr, rank, -1, profile::Kind::kInOrder);
            if (failed.ok()) {
              failed = !owned->produced.ok() ? std::move(owned->produced)
                       : consume             ? consume(owned->out)
                                             : Status();
              if (!failed.ok()) stopped.store(true, std::memory_order_release);
            }
            give_back(std::move(owned));
          }));
  return failed;
}

}  // namespace chakraflow
