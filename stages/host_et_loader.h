// Stage 1: the host execution trace loader.
//
// Reads a PyTorch execution trace (JSON or .json.gz) in either layout:
//   - schema 1.0.1 ("flat"): parent, rf_id, tid, ... at node level,
//   inputs/input_shapes/input_types;
//   - schema 1.0.2 .. 1.1.x ("attrs"): ctrl_deps, inputs {values, shapes, types[, strides]}, attrs.
// Every node is kept (a node whose parent is missing too); its JSON text is kept verbatim so that
// writers can pass every field through. Errors name the file, the byte offset and the node.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

#include "stages/status.h"
#include "stages/trace_model.h"

namespace chakraflow {

// An optional reader of node fields riding on the loader's single pass over the document (the
// converter reads its fields this way instead of parsing every node a second time). With a
// visitor, the loader reads only "id" and "name" itself: every other field of every node goes to
// field(), once, in file order. HostTrace::nodes stays empty: the visitor keeps what it needs and
// checks that ids are unique.
// Values must be consumed (or left) within field(); string views into the trace text stay valid
// for the HostTrace's lifetime.
class HostFieldVisitor {
 public:
  virtual ~HostFieldVisitor() = default;
  // `node` has its byte_offset, and id and name when they came before this field.
  virtual Status field(const HostNode& node, std::string_view key,
                       simdjson::ondemand::value value) = 0;
  // After the node's last field: `node` is complete (id, name, raw, byte_offset).
  virtual Status end_node(const HostNode& node) = 0;
};

StatusOr<HostTrace> load_host_trace(const std::string& path, HostFieldVisitor* fields = nullptr);

// Parses `text` (already decompressed); `path` is used in messages only.
StatusOr<HostTrace> parse_host_trace(std::string path, std::string text,
                                     HostFieldVisitor* fields = nullptr);

}  // namespace chakraflow
