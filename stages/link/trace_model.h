// The data model shared by the link stages: the host execution trace and the device (Kineto) trace
// as compact records, and typed indices so that the id spaces cannot mix. The loaders count the
// data problems that do not stop a run in DataProblems (stages/common/stats.h).
//
// Ownership: a HostTrace / DeviceTrace owns the (decompressed) text of its file; every
// std::string_view inside points into that text or into the trace's own string arena, so the
// views live exactly as long as the trace object. Traces are immutable after loading and may be
// read from many threads at once.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stages/common/file_io.h"
#include "stages/common/stats.h"
#include "stages/common/time_ns.h"

namespace chakraflow {

// ---------- typed ids ----------
// Index of a device event in DeviceTrace::events (file order; flow events are not kept).
struct DeviceEventIdx {
  uint32_t value = kNone;
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  bool valid() const { return value != kNone; }
  friend bool operator==(DeviceEventIdx a, DeviceEventIdx b) = default;
  friend auto operator<=>(DeviceEventIdx a, DeviceEventIdx b) = default;
};
// Index of a host node in HostTrace::nodes (sorted by original id).
struct HostNodeIdx {
  uint32_t value = kNone;
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  bool valid() const { return value != kNone; }
  friend bool operator==(HostNodeIdx a, HostNodeIdx b) = default;
  friend auto operator<=>(HostNodeIdx a, HostNodeIdx b) = default;
};

// ---------- host execution trace ----------
enum class HostLayout : uint8_t {
  kFlat,   // schema 1.0.1: parent, rf_id, tid ... at node level; input_shapes/input_types lists
  kAttrs,  // schema 1.0.2 .. 1.1.x: ctrl_deps, inputs {values, shapes, types}, attrs list
};

// Which key holds the parent id of a node.
enum class ParentKey : uint8_t { kNone, kParent, kCtrlDeps };

// A span [begin, end) of bytes inside HostNode::raw.
struct Span {
  uint32_t begin = 0;
  uint32_t end = 0;
  bool empty() const { return begin == end; }
};

// One host node as the link stages keep it (a trace holds millions: only what linking reads).
// The loader reads every field of a node once; what the converter reads besides is in
// HostNodeDetail, which the loader fills for a HostNodeSink (stages/link/host_et_loader.h).
struct HostNode {
  uint64_t id = 0;
  uint64_t parent = 0;  // valid when parent_key != kNone
  // The id-valued attributes (node level in schema 1.0.1, in "attrs" later); a negative value
  // (some traces write -1 for "none") is kept as 0. HostNodeDetail has them as written.
  uint64_t rf_id = 0;  // 0 = none (the observer's invalid value)
  uint64_t tid = 0;
  std::string_view name;  // unescaped
  std::string_view raw;   // the node's JSON object text, as in the file
  Span id_value;          // span of the id value inside raw
  Span name_value;        // span of the name value (with quotes) inside raw
  Span parent_value;      // span of the parent/ctrl_deps value inside raw
  // `ctrl_deps` when the node has it (not null), else `parent`.
  ParentKey parent_key = ParentKey::kNone;
  uint32_t file_index = 0;   // position in the file's "nodes" array
  uint64_t byte_offset = 0;  // of the node object in the decompressed file
};

// The integer attributes of a host node, in HostNodeDetail::int_attr.
enum HostIntAttr : uint8_t { kRfId, kFwParent, kSeqId, kScope, kTid, kFwTid, kHostIntAttrCount };
// Their values when absent (seq_id -1, the others 0).
inline constexpr std::array<int64_t, kHostIntAttrCount> kNoHostIntAttrs = {0, 0, -1, 0, 0, 0};

// The inputs/outputs lists of a host node, in HostNodeDetail::io: values, shapes and types of
// the inputs, then of the outputs (schema 1.0.1: inputs, input_shapes, input_types, ...).
inline constexpr int kHostIoLists = 6;

// What the converter reads of a host node besides HostNode, read by the loader in the same pass
// for a HostNodeSink. Strings are views into the HostTrace's text or arena.
struct HostNodeDetail {
  double exclusive_dur = 0;  // µs, as written
  double inclusive_dur = 0;  // µs
  double ts = 0;             // µs
  int64_t stream = 0;
  int64_t device = -1;
  uint64_t inter_thread_dep = 0;  // 0 = none (a negative value too)
  int64_t exec_tid = 0;           // ET+ "exec_tid" (the thread it ran on), when has_exec_tid
  // As written (signed); when a node has one both at node level and in "attrs", the last wins.
  std::array<int64_t, kHostIntAttrCount> int_attr = kNoHostIntAttrs;
  std::string_view op_schema;           // unescaped: the node-level key or the attr, the last wins
  std::string_view pg_name;             // unescaped: the pg_name attr, else the node-level key
  std::string_view collective_name;     // unescaped: the attr (record_param_comms, schema 1.1.0+)
  std::span<const uint64_t> sync_deps;  // "sync_dep"; valid during HostNodeSink::node only
  // The raw JSON of each list inside HostNode::raw; an empty span: the list is absent.
  Span io[kHostIoLists];
  bool has_ts = false;
  bool has_cat = false;            // "cat" present and not null (a GPU op of an ET+)
  bool has_exec_tid = false;       // "exec_tid" present
  bool stream_given = false;       // "stream" present
  bool has_stream = true;          // false when "stream" is null
  bool pg_name_from_attr = false;  // pg_name came from the attr
  // A string attr whose value is not a string: ignored (the converter counts it).
  bool op_schema_not_string = false;
  bool pg_name_not_string = false;
  bool collective_name_not_string = false;
};

struct TopLevelField {
  std::string_view key_raw;    // with quotes, escaped as in the file
  std::string_view value_raw;  // raw JSON text (empty for "nodes")
  bool is_nodes = false;
};

struct HostTrace {
  std::string path;
  InputText text;                 // decompressed file content (owns every view)
  std::deque<std::string> arena;  // unescaped strings that differ from their raw form
  std::vector<std::deque<std::string>>
      more_arenas;  // the shards' (a deque moved keeps its strings)
  std::string schema;
  HostLayout layout = HostLayout::kAttrs;
  std::vector<TopLevelField> top_level;  // in file order
  std::vector<HostNode> nodes;           // sorted by id (stable)
  uint64_t invalid_utf8_bytes = 0;       // replaced by '?' while loading
  size_t parse_windows = 0;              // nodes read in this many windows (0: the whole document)
  size_t parse_shards = 0;               // or in this many shards, concurrently (0: not in shards)
  DataProblems load_stats;               // data problems the loader counted and went on past
};

// ---------- device trace ----------
enum class DeviceCategory : uint8_t {
  kCpuOp,
  kUserAnnotation,
  kCudaRuntime,
  kCudaDriver,
  kKernel,
  kGpuMemcpy,
  kGpuMemset,
  kAc2g,
  kOther,
};

enum DeviceEventFlags : uint16_t {
  kHasExternalId = 1 << 0,
  kHasCorrelation = 1 << 1,
  kHasStream = 1 << 2,
  kHasRfId = 1 << 3,
  kHasDevice = 1 << 4,
  kHasDur = 1 << 6,
  kTsFractional = 1 << 7,   // ts had a sub-microsecond part
  kDurFractional = 1 << 8,  // dur had a sub-microsecond part
  kProfilerStep = 1 << 9,   // name contains "ProfilerStep"
  kStreamNull = 1 << 10,    // args.stream present but null
  kHasTid = 1 << 11,
  kTsFloat = 1 << 12,  // ts written as a JSON float (with '.' or an exponent): Python reads a float
  kDurFloat = 1 << 13,  // dur likewise
  // The name is not its literal's text between the quotes (it had escapes): the unescaped name
  // is in DeviceTrace::decoded_names.
  kNameDecoded = 1 << 14,
};

// A number as Chakra's Python code holds it: json.load gives an int or a float, and arithmetic
// keeps an int only while every operand is one. `value` is exact for an int (times are far below
// 2^53 µs) and the double Python computes for a float. --compat chakra writes it as Python would.
struct PyNumber {
  double value = 0;
  bool is_float = false;
  friend bool operator==(const PyNumber&, const PyNumber&) = default;
};

struct DeviceEvent {
  TimeNs ts = 0;
  TimeNs dur = 0;
  int64_t tid = 0;
  int64_t pid = 0;
  int64_t external_id = -1;
  int64_t correlation = -1;
  int64_t stream = 0;
  int64_t device = 0;
  uint64_t rf_id = 0;
  uint64_t byte_offset = 0;
  // Relative to byte_offset (DeviceTrace::name_raw and args_raw give the text): the name's JSON
  // string literal as in the file (with quotes), and the raw JSON of "args" (empty if absent).
  // The name itself, unescaped, is DeviceTrace::name: its literal's text between the quotes but
  // for the few with escapes (kNameDecoded). Not a view of its own: a trace holds millions of
  // events, and every byte of one is paid in fresh pages (docs/performance.md).
  Span name_literal;
  Span args;
  // args["Process Group Name"] (unescaped), if any: an index into DeviceTrace::pg_names
  // (DeviceTrace::pg_name gives it), kNoPgName if absent. A few events in a hundred have one.
  static constexpr uint32_t kNoPgName = UINT32_MAX;
  uint32_t pg_name = kNoPgName;
  uint16_t flags = 0;
  DeviceCategory cat = DeviceCategory::kOther;
  char ph = 0;

  bool has(DeviceEventFlags f) const { return (flags & f) != 0; }
  TimeNs end() const { return ts + dur; }
  // ts and dur as json.load reads them (Chakra's Python): the double nearest to the written
  // decimal (exact for Kineto's at most three fraction digits), a float when written as one.
  PyNumber py_ts() const;
  PyNumber py_dur() const;
};
static_assert(sizeof(DeviceEvent) <= 104, "DeviceEvent grew: a trace holds millions of them");

struct DeviceTrace {
  std::string path;
  InputText text;  // decompressed file content (owns every view)
  std::deque<std::string> arena;
  std::vector<std::deque<std::string>>
      more_arenas;                         // the shards' (a deque moved keeps its strings)
  std::vector<DeviceEvent> events;         // in file order, ac2g flow events left out
  std::vector<std::string_view> pg_names;  // DeviceEvent::pg_name
  // The unescaped names of the events flagged kNameDecoded, by the event's byte offset (in file
  // order, so sorted): a few in a trace, if any.
  std::vector<std::pair<uint64_t, std::string_view>> decoded_names;
  uint64_t flow_events = 0;  // ac2g events read (checked, not kept)
  // Indices of events by role, each sorted by (ts, file order).
  std::vector<DeviceEventIdx> cpu_ops;   // cpu_op / user_annotation, ProfilerStep excluded
  std::vector<DeviceEventIdx> launches;  // cuda_runtime / cuda_driver events (all of them)
  std::vector<DeviceEventIdx> gpu_ops;   // kernel / gpu_memcpy / gpu_memset
  // cpu_ops grouped by thread: the threads in the order their first op comes in cpu_ops, each
  // thread's ops in cpu_ops order; thread k's are cpu_ops_by_thread[thread_begin[k] ..
  // thread_begin[k + 1]). Five stages group the ops by thread (cpu_ops_by_thread in
  // stages/link/exclusive_durations.h), and each grouping read every op's event.
  std::vector<DeviceEventIdx> cpu_ops_by_thread;
  std::vector<uint32_t> thread_begin;
  // Events of other categories with "args" and a correlation, in file order: the candidates for
  // cuda_sync records (stages/link/sync_dependencies.h), a few in a trace.
  std::vector<DeviceEventIdx> other_with_args;
  bool has_rf_ids = false;          // some cpu op carries "Record function id"
  uint64_t invalid_utf8_bytes = 0;  // replaced by '?' while loading
  size_t parse_windows = 0;         // traceEvents read in this many windows (0: the whole document)
  size_t parse_shards = 0;          // or in this many shards, concurrently (0: not in shards)
  DataProblems load_stats;          // data problems the loader counted and went on past

  const DeviceEvent& operator[](DeviceEventIdx i) const { return events[i.value]; }
  // The event's args["Process Group Name"], unescaped; empty if absent.
  std::string_view pg_name(const DeviceEvent& e) const {
    return e.pg_name == DeviceEvent::kNoPgName ? std::string_view() : pg_names[e.pg_name];
  }
  // The event's name, unescaped (empty when it has none).
  std::string_view name(const DeviceEvent& e) const {
    if (e.has(kNameDecoded)) return decoded_name(e.byte_offset);
    if (e.name_literal.end - e.name_literal.begin < 2) return {};
    return in_event(e, Span{e.name_literal.begin + 1, e.name_literal.end - 1});
  }
  std::string_view name(DeviceEventIdx i) const { return name(events[i.value]); }
  std::string_view name_raw(const DeviceEvent& e) const { return in_event(e, e.name_literal); }
  std::string_view args_raw(const DeviceEvent& e) const { return in_event(e, e.args); }

 private:
  std::string_view decoded_name(uint64_t byte_offset) const {
    const auto it = std::lower_bound(
        decoded_names.begin(), decoded_names.end(), byte_offset,
        [](const std::pair<uint64_t, std::string_view>& d, uint64_t at) { return d.first < at; });
    return it != decoded_names.end() && it->first == byte_offset ? it->second : std::string_view();
  }
  std::string_view in_event(const DeviceEvent& e, Span s) const {
    return std::string_view(text).substr(e.byte_offset + s.begin, s.end - s.begin);
  }
};

}  // namespace chakraflow
