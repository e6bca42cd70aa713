// Stage 5b: synchronization dependencies, computed from the device trace alone (no HTA, no
// ProfilerStep annotation). For every synchronizing runtime call, the GPU ops it waited on and the
// op that waited:
//
//   device sync  (cudaDeviceSynchronize, hipDeviceSynchronize, cuCtxSynchronize): every stream of
//                the device; the waiter is the thread's next CPU op.
//   stream sync  (cudaStreamSynchronize, hipStreamSynchronize, cuStreamSynchronize): one stream;
//                the waiter is the thread's next CPU op.
//   event sync   (cudaEventSynchronize, hipEventSynchronize, cuEventSynchronize): the stream work
//                captured by the event's cudaEventRecord; the waiter is the thread's next CPU op.
//   stream wait  (cudaStreamWaitEvent, hipStreamWaitEvent, cuStreamWaitEvent): the stream work
//                captured by the event's record; the waiter is the first GPU op launched on the
//                waiting stream after the call (GPU to GPU, across streams).
//
// Definitions (all times as the trace gives them):
//  - "launched before call c": the GPU op's launch event is on c's thread and precedes c in
//    (ts, file order), or is on another thread and ended at or before c started. A launch on
//    another thread that overlaps c is ambiguous and is not counted as before (nor as after).
//  - Targets are minimal: per stream only the LAST GPU op launched before the call (stream order
//    implies the earlier ones). Not reduced across streams.
//  - CPU waiter: the first CPU op (cpu_op / user_annotation, ProfilerStep excluded) on the calling
//    thread that starts at or after the call ENDS; of several starting at that ts, the longest
//    (outermost). Not the enclosing op: it started before the GPU ops it would wait on, and it
//    is often their launcher (aten::copy_ launches the memcpy, then syncs), which would be a cycle.
//  - Never a dependency on a later op: a target is kept only if it ends at or before the sync
//    call returned (CPU kinds), and ends at or before the waiter starts and starts strictly before
//    it. Targets the timestamps contradict are dropped and counted.
//
// Where the fields come from: Kineto's `cuda_sync` records (one per sync call, same
// `correlation`; args `cuda_sync_kind`, `stream`, `wait_on_stream`,
// `wait_on_cuda_event_record_corr_id`, `device`), read from DeviceTrace::args_raw. Traces from
// Kineto versions without them (e.g. all of ../shared/data/pairs):
//  - stream sync: the stream is taken from the last GPU op the calling thread launched before the
//    call (PyTorch syncs the stream it just copied on), flagged `inferred` and counted. The
//    timestamp check above rejects an inference the trace contradicts.
//  - device sync: a trace with a single GPU device needs no record; with several, the device of
//    the thread's last launch is used (inferred, counted).
//  - event sync and stream wait: the event cannot be identified; counted, no dependency.
//
// Compat::kChakra: Chakra's sync dependencies come from HTA and its converter drops them; this
// stage returns an empty result.
//
// Pure function of its inputs; the result refers to the trace by DeviceEventIdx only.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "stages/common/ordered_batches.h"
#include "stages/link/launcher_correlation.h"
#include "stages/link/link_options.h"
#include "stages/link/trace_model.h"

namespace chakraflow {

enum class SyncKind : uint8_t { kDevice, kStream, kEvent, kStreamWait };
inline constexpr size_t kSyncKindCount = 4;

// Why a sync call yields no dependency.
enum class SyncProblem : uint8_t {
  kNone,              // targets and a waiter: it yields dependencies
  kNothingToWaitFor,  // no GPU op launched before it (or the event was never recorded)
  kSameStream,        // stream wait on an event of the waiting stream itself: stream order
  kNoWaiter,          // targets, but no CPU op after it on its thread / no later GPU op on the
                      // waiting stream
  kNoSyncRecord,      // event sync / stream wait without Kineto's cuda_sync record
  kUnknownStream,     // no record and nothing launched before it on its thread: the stream
                      // (stream sync) or device (device sync, several GPUs) is unknown
  kRecordNotInTrace,  // the cudaEventRecord the record names is not in the trace
  kContradicted,      // every target ends after the call returned / the waiter started
};

struct SyncCall {
  DeviceEventIdx call;         // the runtime / driver event
  DeviceEventIdx record;       // Kineto's cuda_sync record of this call, if any
  DeviceEventIdx waiter;       // CPU op (device/stream/event sync) or GPU op (stream wait)
  uint32_t targets_begin = 0;  // SyncDependencies::targets[targets_begin, targets_end)
  uint32_t targets_end = 0;
  SyncKind kind = SyncKind::kDevice;
  SyncProblem problem = SyncProblem::kNone;
  bool inferred = false;  // stream / device taken from the thread's last launch
  uint32_t target_count() const { return targets_end - targets_begin; }
};

struct SyncEdge {
  DeviceEventIdx waiter;
  DeviceEventIdx target;
  friend bool operator==(const SyncEdge&, const SyncEdge&) = default;
  friend auto operator<=>(const SyncEdge&, const SyncEdge&) = default;
};

struct SyncDependencies {
  std::vector<SyncCall> calls;          // every sync call, in (ts, file order)
  std::vector<DeviceEventIdx> targets;  // GPU ops each call waits on, grouped by call
  // The dependencies, merged over calls: per waiter only the last target of each stream. Sorted
  // by (waiter, target).
  std::vector<SyncEdge> cpu_waits;  // CPU op waits on GPU op
  std::vector<SyncEdge> gpu_waits;  // GPU op waits on a GPU op of another stream
  std::array<uint64_t, kSyncKindCount> calls_by_kind{};
  uint64_t inferred = 0;  // calls with an inferred stream / device
};

// `workers`: the indexes the calls are resolved with (launches by stream and by thread, CPU ops by
// thread, the sync records) built through it, concurrently; the same result.
SyncDependencies compute_sync_dependencies(const DeviceTrace& trace, const LauncherLinks& launchers,
                                           Compat compat, DataProblems& stats,
                                           const OrderedBatches* workers = nullptr);

// Keeps, of the GPU ops `ops`, only the last one of each (device, stream); the result is sorted
// by DeviceEventIdx and free of duplicates.
void keep_last_per_stream(const DeviceTrace& trace, std::vector<DeviceEventIdx>& ops);

std::string_view sync_problem_name(SyncProblem problem);

}  // namespace chakraflow
