// Stage 6: host-to-device mapping. Pairs host ops with device CPU ops (cpu_op / user_annotation):
//   - by rf_id: the host op's rf_id equals the event's args["Record function id"];
//   - (sequence mode, traces without rf_ids: see sequence_matching.h) by operator order.
// Both produce a HostDeviceMap, which the later stages consume without knowing how it was made.
#pragma once

#include <vector>

#include "stages/link_options.h"
#include "stages/status.h"
#include "stages/trace_model.h"

namespace chakraflow {

struct HostDeviceMap {
  std::vector<DeviceEventIdx> device_of;  // by HostNodeIdx
  // by DeviceEventIdx: the host op paired with a CPU event (first one when several are).
  std::vector<HostNodeIdx> host_of;
  uint64_t matched = 0;
  uint64_t host_ops_with_rf_id = 0;
  uint64_t unmatched_with_rf_id = 0;  // host ops carrying an rf_id no device event has
  uint64_t unreachable = 0;           // host ops not reachable from the root (Chakra skips them)
};

// Host nodes reachable from the process root (id 1) through parent links; Chakra links only
// these. Indexed by HostNodeIdx.
std::vector<bool> reachable_from_root(const HostTrace& host);

HostDeviceMap map_by_rf_id(const HostTrace& host, const DeviceTrace& device, Compat compat,
                           LinkStats& stats);

}  // namespace chakraflow
