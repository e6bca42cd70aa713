// Stage 1: the host execution trace loader.
//
// Reads a PyTorch execution trace (JSON or .json.gz) in either layout:
//   - schema 1.0.1 ("flat"): parent, rf_id, tid, ... at node level,
//   inputs/input_shapes/input_types;
//   - schema 1.0.2 .. 1.1.x ("attrs"): ctrl_deps, inputs {values, shapes, types[, strides]}, attrs.
// Every node is kept (a node whose parent is missing too); its JSON text is kept verbatim so that
// writers can pass every field through. Errors name the file, the byte offset and the node.
#pragma once

#include <string>

#include "stages/status.h"
#include "stages/trace_model.h"

namespace chakraflow {

StatusOr<HostTrace> load_host_trace(const std::string& path);

// Parses `text` (already decompressed); `path` is used in messages only.
StatusOr<HostTrace> parse_host_trace(std::string path, std::string text);

}  // namespace chakraflow
