// Stage 8: the ET+ writer. Streams the host trace back out with what linking learned: new ids,
// remapped parents, inclusive/exclusive durations, ts and inter-thread dependencies on matched
// host ops, and one GPU node per linked GPU op right after its launching host op (a copy of the
// host node with the GPU op's name, cat, ph, durations, ts, stream and pg_name) -- the keys
// Chakra's chakra_trace_link writes. Every host field is passed through verbatim (whitespace
// removed). One node per line. Output bytes depend only on the inputs and options.
//
// Synchronization dependencies (default mode): `"sync_dep": [id, ...]`, the last key of a host node
// (LinkedTrace::sync_deps) or of a GPU node (LinkedTrace::gpu_sync_deps), only when non-empty: the
// new ids, ascending, of GPU nodes of this output that ended before this node started.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "stages/common/ordered_batches.h"
#include "stages/common/status.h"
#include "stages/link/link_options.h"
#include "stages/link/linked_trace.h"
#include "stages/link/trace_model.h"

namespace chakraflow {

using ByteSink = std::function<void(std::string_view)>;

// Host nodes per batch of the ET+ writer: about 1-2 MB of output (a batch is formatted whole,
// possibly on a worker thread, then written).
inline constexpr uint32_t kEtPlusBatchNodes = 2048;

// Writes the host trace's top-level object into `buf` (keys and values as in the file, whitespace
// removed), calling `write_nodes` where the "nodes" array goes, then `extra_members` (",\"key\":
// value..." or empty) before the closing brace. Shared by the ET+ writers.
Status write_document(std::string& buf, const HostTrace& host,
                      const std::function<Status()>& write_nodes,
                      std::string_view extra_members = {});

// Writes ET+ (default mode: with the "exec_tid" of ops that ran off their thread and, when the
// link took profiler overhead out or knows the unprofiled step, a top-level "profiler_overhead"
// object: stages/link/profiler_overhead.h). The nodes are formatted in batches through `batches`
// (concurrently where it runs them so; one after another without it), `batch_nodes` host nodes
// each (or the batches' range_size, when less), and written in order: the same bytes either way.

Status write_et_plus(const HostTrace& host, const DeviceTrace& device, const LinkedTrace& linked,
                     const LinkOptions& options, const ByteSink& sink,
                     const OrderedBatches* batches = nullptr,
                     uint32_t batch_nodes = kEtPlusBatchNodes);

}  // namespace chakraflow
