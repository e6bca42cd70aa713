// Stage 6: host-to-device mapping. Pairs host ops with device CPU ops (cpu_op / user_annotation):
//   - by rf_id: the host op's rf_id equals the event's args["Record function id"];
//   - by operator order (sequence mode, for traces without rf_ids): map_by_sequence in
//     sequence_matching.h.
// Both produce a HostDeviceMap, which the later stages consume without knowing how it was made.
#pragma once

#include <cstdint>
#include <vector>

#include "stages/common/ordered_batches.h"
#include "stages/common/status.h"
#include "stages/link/link_options.h"
#include "stages/link/trace_model.h"

namespace chakraflow {

// Sequence mode: how one host thread was matched (sequence_matching.h).
struct ThreadMatch {
  uint64_t host_tid = 0;
  bool paired = false;  // a device thread was found for it
  int64_t device_pid = 0;
  int64_t device_tid = 0;
  uint64_t host_ops = 0;    // host ops of the thread (process/thread annotations excluded)
  uint64_t matched = 0;     // paired with a device CPU op
  uint64_t device_ops = 0;  // CPU ops of the paired device thread, all iterations
  // The device ops (positions in the thread's ts order) the host ops were aligned with, and the
  // time they span. Covers the whole thread unless a window (iteration) was chosen.
  uint64_t window_begin = 0;
  uint64_t window_end = 0;
  TimeNs window_ts_begin = 0;
  TimeNs window_ts_end = 0;
  uint32_t windows_considered = 0;  // candidate windows aligned to choose this one
};

struct HostDeviceMap {
  std::vector<DeviceEventIdx> device_of;  // by HostNodeIdx
  // by DeviceEventIdx: the host op paired with a CPU event (first one when several are).
  std::vector<HostNodeIdx> host_of;
  uint64_t matched = 0;
  uint64_t host_ops_with_rf_id = 0;
  uint64_t unmatched_with_rf_id = 0;  // host ops carrying an rf_id no device event has
  uint64_t unreachable = 0;           // host ops not reachable from the root (Chakra skips them)
  // Host ops the mapping tried to pair: rf_id mode those with an rf_id; sequence mode every op but
  // the process/thread annotations.
  uint64_t candidates = 0;
  std::vector<ThreadMatch> threads;  // sequence mode: one per host thread, by host tid
};

// Host nodes reachable from the process root (id 1) through parent links; Chakra links only
// these. Indexed by HostNodeIdx.
std::vector<bool> reachable_from_root(const HostTrace& host);

// `workers` (may be null): the lookups in ranges of host ops, concurrently (the same map).
HostDeviceMap map_by_rf_id(const HostTrace& host, const DeviceTrace& device, Compat compat,
                           DataProblems& stats, const OrderedBatches* workers = nullptr);

}  // namespace chakraflow
