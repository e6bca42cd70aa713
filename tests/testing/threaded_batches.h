// An OrderedBatches whose batches are produced on several threads at once, each thread taking its
// share from last to first, then consumed in order: what a pool of workers may do
// (pipeline/parallel_batches.h), for tests of stages that split their work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "stages/common/ordered_batches.h"

namespace chakraflow::testing {

class ThreadedBatches final : public OrderedBatches {
 public:
  explicit ThreadedBatches(size_t threads, size_t max_range = SIZE_MAX)
      : OrderedBatches(max_range), threads_(threads < 1 ? 1 : threads) {}

  Status run(size_t batches, const std::function<Status(size_t, std::string&)>& produce,
             const std::function<Status(std::string&)>& consume) const override {
    std::vector<std::string> outs(batches);
    std::vector<Status> produced(batches);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < threads_; ++t) {
      threads.emplace_back([&, t] {
        for (size_t i = batches; i-- > 0;) {
          if (i % threads_ == t) produced[i] = produce(i, outs[i]);
        }
      });
    }
    for (std::thread& th : threads) th.join();
    for (size_t i = 0; i < batches; ++i) {
      CF_RETURN_IF_ERROR(produced[i]);
      if (consume) CF_RETURN_IF_ERROR(consume(outs[i]));
    }
    return Status();
  }

 private:
  size_t threads_;
};

}  // namespace chakraflow::testing
