// Stage 4: inter-thread dependencies from per-thread execution gaps.
//
// Each thread's CPU ops (ts order) are split into groups wherever the gap between an op's start and
// the end of the op before it exceeds the threshold (Chakra's rule: consecutive ops, nesting
// ignored). The first op of every group depends on the latest-starting CPU op of any other thread
// that starts strictly before it; every op of the group carries that dependency.
// O(n log n) overall (Chakra re-sorts every other thread for every group).
#pragma once

#include <vector>

#include "stages/link/trace_model.h"

namespace chakraflow {

struct GapDependencies {
  // Indexed by DeviceEventIdx: the CPU op (on another thread) this CPU op depends on, or none.
  std::vector<DeviceEventIdx> by_event;
  uint64_t groups = 0;  // number of groups found over all threads
  DeviceEventIdx operator[](DeviceEventIdx i) const { return by_event[i.value]; }
};

GapDependencies compute_gap_dependencies(const DeviceTrace& trace, TimeNs threshold);

}  // namespace chakraflow
