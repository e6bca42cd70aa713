// Stage 1: the host execution trace loader.
//
// Reads a PyTorch execution trace (JSON or .json.gz) in either layout:
//   - schema 1.0.1 ("flat"): parent, rf_id, tid, ... at node level,
//   inputs/input_shapes/input_types;
//   - schema 1.0.2 .. 1.1.x ("attrs"): ctrl_deps, inputs {values, shapes, types[, strides]}, attrs.
// Every node is kept (a node whose parent is missing too); its JSON text is kept verbatim so that
// writers can pass every field through. Errors name the file, the byte offset and the node.
//
// This is the one reading of a node's fields, for the linker (HostNode) and the converter
// (HostNodeDetail, through a HostNodeSink), with one set of rules: `ctrl_deps` over `parent`;
// "attrs" entries with their keys in any order; an integer attribute given both at node level and
// in "attrs" takes the last value; a field whose value is null is absent. The converter's fields
// are read (and checked) only for a sink.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "stages/common/ordered_batches.h"
#include "stages/common/status.h"
#include "stages/link/trace_model.h"

namespace chakraflow {

// Where the loader delivers each node it reads, typed and complete, besides (or instead of) the
// HostTrace's own nodes: the converter builds its nodes this way, from the loader's one reading
// of the text (no second parse, no JSON in the converter). With a sink the loader also reads the
// HostNodeDetail fields; without one it reads only what linking needs.
class HostNodeSink {
 public:
  virtual ~HostNodeSink() = default;
  // Whether HostTrace::nodes is kept too (sorted by id and checked, as without a sink). If not,
  // it stays empty and the sink checks what it needs (ids unique).
  virtual bool keep_nodes() const = 0;
  // One node, in file order, once (a node cut by the end of a window of text reaches it whole,
  // once). `node` has raw and every field; `detail` and its views are valid during the call
  // (its strings for the HostTrace's lifetime).
  virtual Status node(const HostNode& node, const HostNodeDetail& detail) = 0;
  // The windows could not read the text: the loader reads the whole document again, from its
  // first node. Forget every node received.
  virtual void restart() = 0;
  // For the nodes read in shards: an empty sink of the same kind for one shard of about
  // `text_bytes` of the trace (null: this sink takes the nodes one at a time, in file order, and
  // the trace is not read in shards), and the nodes a shard's sink received, after the ones this
  // sink has (shards come in file order).
  virtual std::unique_ptr<HostNodeSink> shard(size_t /*text_bytes*/) const { return nullptr; }
  virtual void append(HostNodeSink&& /*shard*/) {}
  // Before the shards' sinks are appended: room for `nodes` more, its pages faulted in through
  // `workers` (so that the appends, one after another, only copy).
  virtual void reserve_more(size_t /*nodes*/, const OrderedBatches& /*workers*/) {}
};

// The nodes array is parsed a window of text at a time when the text is more than twice as large
// (json::read_array_in_windows), the window sized by the text (json::window_bytes_for: 256 KB to
// 1 MB): simdjson's structural index, which the parser sizes at 4 bytes per byte of what it
// parses, then stays at most 4 MB instead of four times the text's size (docs/performance.md,
// "Sizes chosen by measurement"). A text the windows cannot read is parsed whole, which reports
// its errors. Tests pass windows of their own.
inline constexpr size_t kHostWindowBytes = kWindowBySize;

// `shards`: a large trace's nodes are read in shards, concurrently (ParseShards,
// stages/common/ordered_batches.h), when there is no sink or the sink makes shard sinks; the trace
// and what the sink receives are the same.
StatusOr<HostTrace> load_host_trace(const std::string& path, HostNodeSink* sink = nullptr,
                                    size_t window_bytes = kHostWindowBytes,
                                    const ParseShards& shards = {});

// Parses `text` (already decompressed); `path` is used in messages only.
StatusOr<HostTrace> parse_host_trace(std::string path, std::string text,
                                     HostNodeSink* sink = nullptr);
// The same with windows of `window_bytes` (0: the whole document at once), for tests.
StatusOr<HostTrace> parse_host_trace(std::string path, std::string text, size_t window_bytes,
                                     HostNodeSink* sink = nullptr);
StatusOr<HostTrace> parse_host_trace(std::string path, std::string text, size_t window_bytes,
                                     const ParseShards& shards, HostNodeSink* sink = nullptr);

}  // namespace chakraflow
