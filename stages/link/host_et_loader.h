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

#include <cstddef>
#include <string>
#include <string_view>

#include "stages/common/status.h"
#include "stages/link/trace_model.h"

namespace chakraflow {

// An optional reader of node fields riding on the loader's single pass over the document (the
// converter reads its fields this way instead of parsing every node a second time). With a
// visitor, the loader reads only "id" and "name" itself: every other field of every node goes to
// field(), once, in file order.
// - Without keep_nodes(), HostTrace::nodes stays empty: the visitor keeps what it needs and checks
//   that ids are unique.
// - With keep_nodes(), the loader keeps its nodes as without a visitor (sorted by id, checked),
//   and field() must set the fields of `node` the loader would have read from the keys it is
//   given: parent, parent_key and parent_value (from "ctrl_deps" / "parent"), op_schema, and the
//   integer attributes (node level or in "attrs", see host_id_attr). While fields are read,
//   `node.raw` is empty and starts at the node's first byte (for the spans).
// Values must be consumed (or left) within field(); string views into the trace text stay valid
// for the HostTrace's lifetime.
class HostFieldVisitor {
 public:
  virtual ~HostFieldVisitor() = default;
  virtual bool keep_nodes() const { return false; }
  // `node` has its byte_offset and file_index, and id and name when they came before this field.
  virtual Status field(HostNode& node, std::string_view key, simdjson::ondemand::value& value) = 0;
  // After the node's last field: `node` is complete (id, name, raw, byte_offset).
  virtual Status end_node(const HostNode& node) = 0;

  // The loader reads the nodes in windows (kHostWindowBytes) only for a visitor that can take
  // back what it read. drop_node(): forget the node being read (its fields so far; end_node was
  // not called): it was cut by a window's end and is read again from its start. drop_all(): forget
  // every node: the loader parses the whole document again, from the first node.
  virtual bool can_take_back() const { return false; }
  virtual void drop_node() {}
  virtual void drop_all() {}
};

// The nodes array is parsed this many bytes of text at a time when the text is more than twice
// as large (json::read_array_in_windows): simdjson's structural index, which the parser sizes at
// 4 bytes per byte of what it parses, then stays about 1 MB, in the L2 cache with its window
// (docs/performance.md, "Sizes chosen by measurement"). A text the windows cannot read is parsed
// whole, which reports its errors.
inline constexpr size_t kHostWindowBytes = size_t{256} << 10;

// The id-valued integer attribute of HostNode named `key` (rf_id, fw_parent, scope, tid, fw_tid),
// or nullptr. The loader stores a negative value (some traces write -1 for "none") as 0; seq_id
// is signed and kept as it is.
uint64_t* host_id_attr(HostNode& node, std::string_view key);

StatusOr<HostTrace> load_host_trace(const std::string& path, HostFieldVisitor* fields = nullptr,
                                    size_t window_bytes = kHostWindowBytes);

// Parses `text` (already decompressed); `path` is used in messages only.
StatusOr<HostTrace> parse_host_trace(std::string path, std::string text,
                                     HostFieldVisitor* fields = nullptr);
// The same with windows of `window_bytes` (0: the whole document at once), for tests.
StatusOr<HostTrace> parse_host_trace(std::string path, std::string text, size_t window_bytes,
                                     HostFieldVisitor* fields = nullptr);

}  // namespace chakraflow
