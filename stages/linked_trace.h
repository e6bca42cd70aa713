// LinkedTrace: everything linking learned about one rank, one record per host op plus the GPU ops
// attached to them, and the new (ET+) ids. Writers read only this and the two input traces.
#pragma once

#include <cstdint>
#include <vector>

#include "stages/trace_model.h"

namespace chakraflow {

enum class ParentState : uint8_t {
  kNone,        // the node has no parent key
  kFound,       // parent exists; new_parent is its new id
  kSelf,        // the process root pointing at itself
  kReattached,  // parent missing: attached to its thread's root (default mode)
  kDangling,    // parent missing: a fresh id no node has (Chakra mode, spec §5 #3)
};

struct LinkedHostOp {
  DeviceEventIdx device_event;   // matched device CPU op, or none
  HostNodeIdx inter_thread_dep;  // host op this one depends on across threads, or none
  TimeNs exclusive = 0;          // exclusive duration of the matched event
  uint64_t new_id = 0;
  uint64_t new_parent = 0;  // meaningful unless parent_state == kNone
  ParentState parent_state = ParentState::kNone;
  uint32_t gpu_begin = 0;  // GPU ops of this host op: gpu_events[gpu_begin, gpu_end)
  uint32_t gpu_end = 0;
};

struct LinkedTrace {
  std::vector<LinkedHostOp> ops;           // by HostNodeIdx
  std::vector<DeviceEventIdx> gpu_events;  // grouped by host op, each group in ts order
  // Synchronization dependencies (sync issue): by host op, ids of the GPU nodes it waits on.
  std::vector<std::vector<uint64_t>> sync_deps;
  uint64_t node_count = 0;  // host nodes + GPU nodes
  LinkStats stats;

  // New id of the k-th GPU op of host op h.
  uint64_t gpu_new_id(const LinkedHostOp& op, uint32_t k) const { return op.new_id + 1 + k; }
};

}  // namespace chakraflow
