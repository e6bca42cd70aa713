// Stage 2: the device trace (Kineto Chrome JSON) loader.
//
// Reads traceEvents into DeviceEvent records: cpu_op, user_annotation, cuda_runtime, cuda_driver,
// kernel, gpu_memcpy, gpu_memset and other events, with ts/dur kept at nanosecond resolution, and
// the args the linker needs (External id, correlation, stream, device, Record function id,
// Process Group Name). Capitalised 2021-era categories ("Operator", "Kernel", "Runtime", ...)
// are accepted. Builds the per-role index lists sorted by (ts, file order). The ac2g flow events
// (a third of a trace's events: one start and one end per launch) are checked like the others and
// counted, but not kept: no stage reads them (launches are correlated by their args).
#pragma once

#include <cstddef>
#include <string>

#include "stages/common/ordered_batches.h"
#include "stages/common/status.h"
#include "stages/link/trace_model.h"

namespace chakraflow {

// traceEvents are parsed a window of text at a time when the text is more than twice as large
// (json::read_array_in_windows), the window sized by the text as the host ET's (see
// kHostWindowBytes). A text the windows cannot read is parsed whole, which reports its errors.
inline constexpr size_t kDeviceWindowBytes = kWindowBySize;

// `shards`: a large trace's traceEvents are read in shards, concurrently (ParseShards,
// stages/common/ordered_batches.h); the trace is the same.
StatusOr<DeviceTrace> load_device_trace(const std::string& path, const ParseShards& shards = {});

// Parses `text` (already decompressed); `path` is used in messages only.
StatusOr<DeviceTrace> parse_device_trace(std::string path, std::string text);
// The same with windows of `window_bytes` (0: the whole document at once), for tests.
StatusOr<DeviceTrace> parse_device_trace(std::string path, std::string text, size_t window_bytes);
StatusOr<DeviceTrace> parse_device_trace(std::string path, std::string text, size_t window_bytes,
                                         const ParseShards& shards);

// Category of a Kineto "cat" string (case-insensitive, 2021 names included).
DeviceCategory classify_category(std::string_view cat);

// (Re)builds the trace's indices by role (cpu_ops, launches, gpu_ops, other_with_args, each by
// (ts, file order); cpu_ops_by_thread) from its events: the loader's last step, and after a stage
// changed the events' times (stages/link/profiler_overhead.h). Through `workers` (may be null)
// in ranges of events and one sort per role, concurrently; the same indices either way.
void build_device_indices(DeviceTrace& trace, const OrderedBatches* workers = nullptr);

}  // namespace chakraflow
