// LinkedTrace: everything linking learned about one rank, one record per host op plus the GPU ops
// attached to them, and the new (ET+) ids. Writers read only this and the two input traces.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "stages/link/profiler_overhead.h"
#include "stages/link/trace_model.h"

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

// A GPU node's synchronization dependency on a GPU node of another stream (cudaStreamWaitEvent).
struct GpuSyncDep {
  uint32_t gpu_position = 0;  // of the waiting GPU op in LinkedTrace::gpu_events
  uint64_t dep_id = 0;        // new id of the GPU node it waits on
  friend bool operator==(const GpuSyncDep&, const GpuSyncDep&) = default;
  friend auto operator<=>(const GpuSyncDep&, const GpuSyncDep&) = default;
};

// What became of the sync calls (stages/link/sync_dependencies.h) once translated to new ids.
struct SyncSummary {
  uint64_t calls = 0;           // sync calls in the device trace
  uint64_t calls_resolved = 0;  // with targets and a waiting op (SyncProblem::kNone)
  uint64_t calls_emitted = 0;   // of those, the waiter and a target are written: it yields deps;
                                // the others lie outside the linked window
  uint64_t inferred = 0;        // stream / device inferred (trace without cuda_sync records)
  uint64_t host_deps = 0;       // sync_dep entries on host nodes
  uint64_t gpu_deps = 0;        // sync_dep entries on GPU nodes
  uint64_t dropped_orphan_target = 0;    // target GPU op not written as a node
  uint64_t dropped_unlinked_waiter = 0;  // waiting op not written as a node
};

// The sync dependencies of the host ops that waited (a few in a trace): lists by host op, kept
// only for the ops that have one, not a std::vector in every host op.
class HostSyncDeps {
 public:
  // The ids host op `op` waits on, ascending; empty for most ops.
  std::span<const uint64_t> operator[](uint32_t op) const {
    auto it = std::lower_bound(op_.begin(), op_.end(), op);
    if (it == op_.end() || *it != op) return {};
    const size_t k = static_cast<size_t>(it - op_.begin());
    return std::span<const uint64_t>(ids_).subspan(begin_[k], begin_[k + 1] - begin_[k]);
  }
  // Sets host op `op`'s list. Ops come in ascending order, each once.
  void add(uint32_t op, std::span<const uint64_t> ids) {
    op_.push_back(op);
    ids_.insert(ids_.end(), ids.begin(), ids.end());
    begin_.push_back(static_cast<uint32_t>(ids_.size()));
  }

 private:
  std::vector<uint32_t> op_;           // ascending
  std::vector<uint32_t> begin_ = {0};  // op_[k]'s ids: ids_[begin_[k] .. begin_[k + 1])
  std::vector<uint64_t> ids_;
};

struct LinkedTrace {
  std::vector<LinkedHostOp> ops;  // by HostNodeIdx
  // Default mode: the profiler overhead taken out of the device trace before linking, and the
  // unprofiled step the capture measured (prepare_device_trace, stages/link/link.h).
  std::optional<ProfilerOverheadNote> profiler;
  // Compat::kChakra only (else empty), by HostNodeIdx: the exclusive duration of the matched event
  // as Chakra computes it (ExclusiveDurations::chakra, never below 0), which its outputs write.
  std::vector<PyNumber> chakra_exclusive;
  std::vector<DeviceEventIdx> gpu_events;  // grouped by host op, each group in ts order
  // Synchronization dependencies (stages/link/sync_dependencies.h): by host op, the ids of the GPU
  // nodes it waits on, ascending. Every id is a written GPU node that ended before the host op
  // started. Empty in Chakra mode.
  HostSyncDeps sync_deps;
  // GPU nodes waiting on GPU nodes of other streams, sorted; same guarantees. Empty in Chakra mode.
  std::vector<GpuSyncDep> gpu_sync_deps;
  SyncSummary sync;
  // Default mode: host ops the device trace shows running on another thread than the host trace
  // gives them (gloo runs its collectives on its own threads, the ET names the caller's): (host
  // op, the tid it ran on), by host op. The tid is the host trace's tid of that thread (the tid
  // whose matched ops mostly ran there), else the device trace's. A few per trace.
  std::vector<std::pair<uint32_t, int64_t>> exec_tids;
  uint64_t node_count = 0;  // host nodes + GPU nodes
  DataProblems stats;

  // New id of the k-th GPU op of host op h.
  uint64_t gpu_new_id(const LinkedHostOp& op, uint32_t k) const { return op.new_id + 1 + k; }

  // Where a range of host ops that starts at host op `first_host` starts in exec_tids (by host
  // op) and in gpu_sync_deps (by GPU position): the cursors of a stage that goes through the
  // ranges apart (the ET+ writer's batches, the converter's linked nodes).
  struct Cursors {
    size_t exec_tid = 0;
    size_t gpu_sync = 0;
  };
  Cursors cursors_at(uint32_t first_host) const {
    const uint32_t first_gpu = first_host < ops.size() ? ops[first_host].gpu_begin : 0;
    Cursors c;
    c.exec_tid = static_cast<size_t>(
        std::lower_bound(exec_tids.begin(), exec_tids.end(), first_host,
                         [](const auto& e, uint32_t i) { return e.first < i; }) -
        exec_tids.begin());
    c.gpu_sync = static_cast<size_t>(
        std::lower_bound(gpu_sync_deps.begin(), gpu_sync_deps.end(), first_gpu,
                         [](const GpuSyncDep& d, uint32_t k) { return d.gpu_position < k; }) -
        gpu_sync_deps.begin());
    return c;
  }
};

}  // namespace chakraflow
