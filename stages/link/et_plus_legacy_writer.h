// Stage 8 (--format legacy): the ET+ layout of the legacy exact-match linker (param
// tools/trace_link.py, the ET+ ASTRA-sim published for DLRM), for consumers written against it.
//
//  - Host nodes in file order, every field verbatim except `id` and the parent (`parent`, or
//    `ctrl_deps` in schema 1.0.2+) renumbered; a matched node gains `"dur"` and `"ts"` (its device
//    CPU op's, in microseconds as Kineto wrote them). The process and thread annotation nodes get
//    the span of the matched device ops of the process / their thread.
//  - Ids: each node keeps its original id unless an earlier node took it, then the next free one;
//    a node's GPU nodes take the next free ids after its own. Parents point at the new ids.
//  - GPU nodes after all host nodes, in the order of their host nodes and then GPU ts: the Kineto
//    event verbatim (ph, cat, name, pid, tid, ts, dur, args), then `"parent"` (its host node's new
//    id), `"id"`, and the host node's inputs, input_shapes, input_types, outputs, output_shapes and
//    output_types (those present).
// Deliberate differences from the legacy linker are listed in docs/compatibility.md ("Sequence
// matching and the legacy format"). One node per line; output bytes depend only on the inputs.
#pragma once

#include "stages/common/status.h"
#include "stages/link/et_plus_writer.h"
#include "stages/link/link_options.h"
#include "stages/link/linked_trace.h"
#include "stages/link/trace_model.h"

namespace chakraflow {

Status write_et_plus_legacy(const HostTrace& host, const DeviceTrace& device,
                            const LinkedTrace& linked, const LinkOptions& options,
                            const ByteSink& sink);

}  // namespace chakraflow
