// Trace tiling: repeats the recorded iteration of a real (host ET, Kineto) pair `times` times, so
// that real structure scales to big traces (`chakraflow tile`).
//
// Copy k (0 <= k < times) of every record is the original JSON text with a few values rewritten;
// every other byte (unknown fields, number formatting, whitespace inside a record) is kept
// verbatim, and copy 0 is byte-for-byte the original record:
//   host ET  : "id", "parent"/"ctrl_deps" and "fw_parent" (node ids: + k * id_span), "rf_id"
//              (+ k * rf_span), at node level (schema 1.0.1) and inside "attrs" (1.0.2+);
//              "ProfilerStep#N" names (N + k * step_span); "finish_ts" extended by (times-1)
//              periods.
//   Kineto   : "ts" (+ k * period), args "correlation" and flow-event ("ph" s/f/t) "id"
//              (+ k * corr_span), args "External id" (+ k * ext_span), args "Record function id"
//              (+ k * rf_span, the host's span: rf_ids still link), "ProfilerStep#N" names.
// Kept once (copy 0 only): the process root and the thread roots of the host ET (the copies' ops
// hang off the same roots: a node id that refers to one of them is never offset), Kineto events
// without "ts" or with "ph": "M", and every top-level key other than "nodes" / "traceEvents".
// Values that are absent, null, 0 / negative ("none") or not integers are left as they are.
//
// Usage: parse both files (parse_tile_host / parse_tile_device), plan_tiling, then write each
// output (write_tiled_host / write_tiled_device), or tile_trace_pair for all of it. Templates own
// their input text; the views inside die with them. Plain functions of their inputs: the output
// bytes depend only on the inputs and `times`; thread-compatible (no shared state).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "stages/common/status.h"
#include "stages/link/trace_model.h"

namespace chakraflow {

using TileSink = std::function<void(std::string_view)>;

// What a rewritten value is; the byte range it replaces lies inside its record.
enum class TilePatchKind : uint8_t {
  kNodeId,       // host node id or a reference to one (+ k * id_span)
  kRfId,         // host rf_id / Kineto "Record function id" (+ k * rf_span)
  kTs,           // Kineto "ts" as a JSON number (+ k * period)
  kTsQuoted,     // Kineto "ts" written as a string holding a number
  kCorrelation,  // Kineto args "correlation" and flow-event "id" (+ k * corr_span)
  kExternalId,   // Kineto args "External id" (+ k * ext_span)
  kStepName,     // "ProfilerStep#N" name literal (N + k * step_span)
};

struct TilePatch {
  uint64_t begin = 0;   // byte offset in the template's text
  uint32_t length = 0;  // bytes replaced
  TilePatchKind kind = TilePatchKind::kNodeId;
  int64_t value = 0;  // the original value (ns for kTs / kTsQuoted)
};

// One node or event: text[begin, end) with patches[first_patch, first_patch + patch_count).
struct TileRecord {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint32_t first_patch = 0;
  uint32_t patch_count = 0;
  bool once = false;  // written in copy 0 only
};

struct TileTopField {
  std::string_view key_raw;    // with quotes, as in the file
  std::string_view value_raw;  // raw JSON text (empty for the record array)
  bool is_records = false;     // "nodes" / "traceEvents"
};

// A parsed input: its text, its records and what to rewrite in them.
struct TileTemplate {
  std::string path;
  std::string text;  // decompressed file content (owns every view)
  std::vector<TileTopField> top_level;
  std::vector<TileRecord> records;  // in file order
  std::vector<TilePatch> patches;   // grouped by record, in text order within a record
  uint64_t invalid_utf8_bytes = 0;  // replaced by '?' while parsing
  // Largest values seen (0 when none).
  uint64_t max_node_id = 0;  // host: node ids and node-id references
  uint64_t max_rf_id = 0;
  uint64_t max_correlation = 0;  // device: correlation and flow ids
  uint64_t max_external_id = 0;
  int64_t min_step = -1, max_step = -1;  // ProfilerStep#N numbers, -1 when none
  TimeNs first_ts = 0, last_end = 0;     // device: over the events copied `times` times
  bool has_times = false;                // device: some copied event has a "ts"
  uint64_t kept_once = 0;                // records with once == true
};

struct TilePlan {
  uint32_t times = 1;
  uint64_t id_span = 1;    // host node ids
  uint64_t rf_span = 1;    // rf_ids, shared by both files
  uint64_t corr_span = 1;  // correlation and flow ids (Kineto writes the same number for both)
  uint64_t ext_span = 1;   // External ids
  int64_t step_span = 0;   // ProfilerStep numbers (0: no ProfilerStep#N names)
  TimeNs length = 0;       // ns, the device trace's first start to last end (one iteration)
  TimeNs period = 0;       // ns between copies, a whole number of microseconds
  int64_t period_ms = 0;   // the same period in the host ET's milliseconds (finish_ts), rounded up
};

struct TileSummary {
  TilePlan plan;
  uint64_t host_nodes_in = 0;
  uint64_t host_nodes_kept_once = 0;
  uint64_t host_nodes_out = 0;
  uint64_t device_events_in = 0;
  uint64_t device_events_kept_once = 0;
  uint64_t device_events_out = 0;
  uint64_t invalid_utf8_bytes = 0;  // both inputs
};

// Parses a host execution trace (decompressed text; `path` is used in messages only). Errors name
// the file, the byte offset and the node.
StatusOr<TileTemplate> parse_tile_host(std::string path, std::string text);

// Parses a Kineto device trace. Errors name the file, the byte offset and the event index.
StatusOr<TileTemplate> parse_tile_device(std::string path, std::string text);

// The spans and the period for `times` copies; an error when `times` is 0 or a rewritten value
// would overflow (ids beyond int64, times beyond +-2^62 ns). `period` (ns, 0 = automatic: the
// device trace's first start to last end plus 1%, at least 1 us) sets the time between copies,
// e.g. one period for every rank of a multi-rank set so that their iterations stay aligned; it is
// rounded up to whole microseconds and must not be shorter than the trace (copies would overlap).
StatusOr<TilePlan> plan_tiling(const TileTemplate& host, const TileTemplate& device, uint32_t times,
                               TimeNs period = 0);

// Streams the tiled files to `sink` (in chunks of about 1 MiB). Return the records written.
uint64_t write_tiled_host(const TileTemplate& host, const TilePlan& plan, const TileSink& sink);
uint64_t write_tiled_device(const TileTemplate& device, const TilePlan& plan, const TileSink& sink);

// All of the above. Nothing reaches the sinks unless both inputs parse and the plan is valid.
StatusOr<TileSummary> tile_trace_pair(std::string host_path, std::string host_text,
                                      std::string device_path, std::string device_text,
                                      uint32_t times, TimeNs period, const TileSink& host_sink,
                                      const TileSink& device_sink);

// One line: copies, records in and out, period and spans.
std::string format_tile_summary(const TileSummary& summary);

}  // namespace chakraflow
