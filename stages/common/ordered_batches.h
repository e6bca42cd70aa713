// OrderedBatches: how a stage asks for work split in batches to be done, possibly concurrently,
// without knowing the threads: produce(i, out) for every batch i (any order, any thread), then
// consume(out) for each in the order of i, one at a time. The first failure in the order of the
// batches (of produce, then consume) ends the run and is returned: the same whatever the threads. A
// stage that writes a long output in order formats its batches through it, and writes them as they
// come.
//
// The base class runs the batches one after another on the calling thread; pipeline/ gives the
// stages one over the process's oneTBB workers (pipeline/parallel_batches.h), which holds a
// bounded number of batches at once. Either way the consumed bytes are the same.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "stages/common/status.h"

namespace chakraflow {

class OrderedBatches {
 public:
  virtual ~OrderedBatches() = default;
  virtual Status run(size_t batches, const std::function<Status(size_t, std::string&)>& produce,
                     const std::function<Status(std::string&)>& consume) const {
    std::string out;
    for (size_t i = 0; i < batches; ++i) {
      out.clear();
      CF_RETURN_IF_ERROR(produce(i, out));
      CF_RETURN_IF_ERROR(consume(out));
    }
    return Status();
  }
};

}  // namespace chakraflow
