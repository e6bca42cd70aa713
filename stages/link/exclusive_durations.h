// Stage 3: per-thread exclusive durations of CPU ops (cpu_op / user_annotation).
//
// An op's exclusive duration is its duration minus the union of the intervals of the ops nested in
// it on the same thread. Computed with one stack sweep per thread over the ops sorted by
// (ts asc, end desc): O(n log n), unlike Chakra's nested scan.
//
// Compat::kChakra reproduces Chakra's result: it sorts by (ts, dur), so a child that starts at the
// same ts as its parent sorts before it and is not subtracted (spec §5 #8). Compat::kDefault
// subtracts it. Partially overlapping (non-nested) ops on one thread are not subtracted.
//
// Chakra computes in Python numbers: with Kineto's fractional microseconds near 5e12, its floats
// carry rounding noise (8.99996875 for 9). Compat::kChakra also computes
// ExclusiveDurations::chakra, Chakra's own arithmetic step by step (its sort, its containment tests
// and interval merge, its subtractions, all on the doubles json.load reads), which the
// chakra-compatible outputs write.
#pragma once

#include <vector>

#include "stages/link/link_options.h"
#include "stages/link/trace_model.h"

namespace chakraflow {

struct ExclusiveDurations {
  // Indexed by DeviceEventIdx; meaningful for CPU ops, equal to dur for every other event.
  std::vector<TimeNs> by_event;
  // Compat::kChakra only (else empty), indexed by DeviceEventIdx: the value Chakra computes, which
  // may be below 0 by rounding noise (Chakra then stops with a ValueError).
  std::vector<PyNumber> chakra;
  TimeNs operator[](DeviceEventIdx i) const { return by_event[i.value]; }
};

ExclusiveDurations compute_exclusive_durations(const DeviceTrace& trace, Compat compat);

// CPU ops of each thread, in (ts, file order), threads in order of first appearance: the device
// loader's grouping (DeviceTrace::cpu_ops_by_thread), as one vector per thread. Shared by the
// per-thread stages.
std::vector<std::vector<DeviceEventIdx>> cpu_ops_by_thread(const DeviceTrace& trace);

// Sorts one thread's ops (as cpu_ops_by_thread gives them) in nesting order: by ts, then by end
// descending, so that a parent comes before everything it contains; ties keep the order given.
void sort_in_nesting_order(const DeviceTrace& trace, std::vector<DeviceEventIdx>& ops);

}  // namespace chakraflow
