// The run report of `chakraflow run`: one row per rank, declared once in the tables below, from
// which the rest is generated: the RankRow struct, its summary.json object, its MPI exchange (the
// same object, decoded back on process 0), the text table, and the Python dict (`cf.run` returns
// summary.json as read by Python's json module). A key never changes once released
// (configs/README.md and docs/python.md describe them); a new field is a new row. Constant data;
// the functions are pure and thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stages/common/status.h"
#include "stages/convert/comm_groups.h"

namespace chakraflow {

// A rank's outcome: X(enum name, key (summary.json, stable), word in the text table)
#define CHAKRAFLOW_RANK_STATUSES(X) \
  X(kOk, "ok", "ok")                \
  X(kFailed, "failed", "FAILED")    \
  X(kSkipped, "skipped", "skipped") /* --resume: its outputs are newer than its inputs */

enum class RankStatus : uint8_t {
#define CHAKRAFLOW_RANK_STATUS_ENUM(name, key, word) name,
  CHAKRAFLOW_RANK_STATUSES(CHAKRAFLOW_RANK_STATUS_ENUM)
#undef CHAKRAFLOW_RANK_STATUS_ENUM
};

std::string_view rank_status_key(RankStatus status);
std::optional<RankStatus> rank_status_from_key(std::string_view key);

// When a field is in a row's summary.json object (and so in the text table, through its column).
enum class FieldPresence : uint8_t {
  kAlways,  // every row
  kIfSet,   // when it is not empty
  kIfRan,   // every rank but a skipped one
};

// The text table's columns, in order: X(enum name, header, width, alignment). Each shows the
// fields that name it below (run_report.cc renders a column's cell from them); a row shows the
// columns of the fields it writes to summary.json.
#define CHAKRAFLOW_RUN_TABLE_COLUMNS(X)     \
  X(kRank, "rank", 6, kRight)               \
  X(kStatus, "status", 8, kLeft)            \
  X(kJsonMb, "JSON MB", 9, kRight)          \
  X(kHostLinked, "host linked", 14, kRight) \
  X(kGpuLinked, "GPU linked", 14, kRight)   \
  X(kSeconds, "seconds", 9, kRight)         \
  X(kWarnings, "warnings", 0, kLeft)

enum class TableColumn : uint8_t {
  kNone,  // not in the text table
#define CHAKRAFLOW_TABLE_COLUMN_ENUM(name, header, width, align) name,
  CHAKRAFLOW_RUN_TABLE_COLUMNS(CHAKRAFLOW_TABLE_COLUMN_ENUM)
#undef CHAKRAFLOW_TABLE_COLUMN_ENUM
};

// Data problems by their stat_kinds.h key.
using WarningCounts = std::map<std::string, uint64_t>;

// A rank's row, in summary.json's order: X(key, C++ type, presence, text-table column,
// description). The key is the member's name and summary.json's key; a double is written with
// three decimals.
#define CHAKRAFLOW_RANK_ROW_FIELDS(X)                                                       \
  X(rank, int, kAlways, kRank, "the rank")                                                  \
  X(status, RankStatus, kAlways, kStatus, "ok, failed, or skipped (--resume: up to date)")  \
  X(error, std::string, kIfSet, kNone, "why it failed: the first error, naming its file")   \
  X(input_file_bytes, uint64_t, kIfRan, kNone, "bytes of the host and device trace files")  \
  X(input_text_bytes, uint64_t, kIfRan, kJsonMb, "bytes of their JSON text, decompressed")  \
  X(output_bytes, uint64_t, kIfRan, kNone, "bytes of its .et (its ET+ when not converted)") \
  X(mode, std::string, kIfRan, kNone, "how host ops were matched: rf_id or sequence")       \
  X(host_nodes, uint64_t, kIfRan, kNone, "nodes of the host trace")                         \
  X(host_ops, uint64_t, kIfRan, kHostLinked,                                                \
    "host ops the mode can link (with an rf_id, or every op in sequence mode)")             \
  X(host_ops_linked, uint64_t, kIfRan, kHostLinked, "host ops paired with a device CPU op") \
  X(gpu_ops, uint64_t, kIfRan, kGpuLinked, "GPU ops of the device trace")                   \
  X(gpu_ops_linked, uint64_t, kIfRan, kGpuLinked, "GPU ops written as GPU nodes")           \
  X(et_plus_nodes, uint64_t, kIfRan, kNone, "nodes of the ET+")                             \
  X(et_nodes, uint64_t, kIfRan, kNone, "nodes of the .et")                                  \
  X(sync_deps, uint64_t, kIfRan, kNone, "synchronization dependencies (host and GPU)")      \
  X(link_seconds, double, kIfRan, kSeconds, "wall time of its link")                        \
  X(convert_seconds, double, kIfRan, kSeconds, "wall time of its conversion")               \
  X(warnings, WarningCounts, kIfRan, kWarnings, "data problems counted by kind, link and convert")

struct RankRow {
#define CHAKRAFLOW_RANK_ROW_MEMBER(key, type, presence, column, description) type key{};
  CHAKRAFLOW_RANK_ROW_FIELDS(CHAKRAFLOW_RANK_ROW_MEMBER)
#undef CHAKRAFLOW_RANK_ROW_MEMBER
  // The communicator groups its conversion reported, for the group file: in the MPI exchange
  // (hand-written beside the table: nested records, not fields of the report), not in
  // summary.json.
  std::optional<RankCommGroups> comm_groups;

  uint64_t warning_count() const;
};

// The declaration as data: for tests, the Python module and documentation.
struct RankRowField {
  std::string_view key;
  FieldPresence presence;
  TableColumn column;
  std::string_view description;
};

inline constexpr std::array kRankRowFields = {
#define CHAKRAFLOW_RANK_ROW_FIELD(key, type, presence, column, description) \
  RankRowField{#key, FieldPresence::presence, TableColumn::column, description},
    CHAKRAFLOW_RANK_ROW_FIELDS(CHAKRAFLOW_RANK_ROW_FIELD)
#undef CHAKRAFLOW_RANK_ROW_FIELD
};

enum class Align : uint8_t { kLeft, kRight };

struct TableColumnSpec {
  TableColumn column;
  std::string_view header;
  int width;  // 0: as wide as its text
  Align align;
};

inline constexpr std::array kTableColumns = {
#define CHAKRAFLOW_TABLE_COLUMN_SPEC(name, header, width, align) \
  TableColumnSpec{TableColumn::name, header, width, Align::align},
    CHAKRAFLOW_RUN_TABLE_COLUMNS(CHAKRAFLOW_TABLE_COLUMN_SPEC)
#undef CHAKRAFLOW_TABLE_COLUMN_SPEC
};

// Calls f(const RankRowField&, member) for every field of `row` (a RankRow, const or not), in
// the declaration's order: what the generated writers and readers are made of.
template <typename Row, typename F>
void for_each_rank_row_field(Row& row, F&& f) {
  size_t i = 0;
#define CHAKRAFLOW_RANK_ROW_VISIT(key, type, presence, column, description) \
  f(kRankRowFields[i++], row.key);
  CHAKRAFLOW_RANK_ROW_FIELDS(CHAKRAFLOW_RANK_ROW_VISIT)
#undef CHAKRAFLOW_RANK_ROW_VISIT
}

// A column's header; "" for kNone.
std::string_view column_header(TableColumn column);

// FieldPresence's stable name ("always", "if_set", "if_ran"): for the Python module.
std::string_view presence_key(FieldPresence presence);

// Whether `row`'s summary.json object holds the field `field`.
bool row_has_field(const RankRow& row, const RankRowField& field);

struct RankJobResult;

// The row of a rank that ran (`output`: the file it ends with, its .et or its ET+), and of one
// --resume skipped.
RankRow rank_row(int rank, uint64_t input_file_bytes, const RankJobResult& result,
                 const std::string& output);
RankRow skipped_row(int rank);

// One process's rows, as a JSON array for MPI's gather: each row the object summary.json lists,
// plus its communicator groups.
std::string encode_rows(const std::vector<RankRow>& rows);

// Every process's rows (encode_rows's arrays), sorted in the order of `rank_order`.
StatusOr<std::vector<RankRow>> decode_rows(const std::vector<std::string>& blobs,
                                           const std::vector<int>& rank_order);

// What the run says besides its rows.
struct RunTotals {
  size_t failed = 0, skipped = 0;
  uint64_t text_bytes = 0;
  double seconds = 0;
  uint64_t in_flight = 0;
  int processes = 1;
  bool malloc_huge_pages = false;
  bool malloc_one_arena = false;
};

// Adds what the rows tell to `totals` (failed and skipped ranks, JSON bytes).
void count_rows(const std::vector<RankRow>& rows, RunTotals& totals);

// A row's cell in `column` of the text table, unpadded.
std::string table_cell(const RankRow& row, TableColumn column);

// The text table: a header, a line per row, the totals.
std::string report_table(const std::vector<RankRow>& rows, const RunTotals& totals);

// summary.json: the run (`config_path`, the totals) and its rows.
std::string summary_json(const std::string& config_path, const std::vector<RankRow>& rows,
                         const RunTotals& totals);

}  // namespace chakraflow
