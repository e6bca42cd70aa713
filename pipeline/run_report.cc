// The run report generated from its declaration (run_report.h): a row's summary.json object
// (also what MPI's gather carries, with the communicator groups), its decoding, the text table.
#include "pipeline/run_report.h"

#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "pipeline/rank_graph.h"
#include "stages/common/json_writer.h"

namespace chakraflow {
namespace {

namespace fs = std::filesystem;

struct RankStatusNames {
  std::string_view key, word;
};

constexpr RankStatusNames kRankStatusNames[] = {
#define CHAKRAFLOW_RANK_STATUS_NAMES(name, key, word) {key, word},
    CHAKRAFLOW_RANK_STATUSES(CHAKRAFLOW_RANK_STATUS_NAMES)
#undef CHAKRAFLOW_RANK_STATUS_NAMES
};

std::string_view rank_status_word(RankStatus status) {
  return kRankStatusNames[static_cast<size_t>(status)].word;
}

// A field whose presence is kIfSet is written when it differs from its default (empty).
template <typename T>
bool is_set(const T& value) {
  return !(value == T{});
}

template <typename T>
bool present(const RankRow& row, const RankRowField& field, const T& value) {
  switch (field.presence) {
    case FieldPresence::kAlways:
      return true;
    case FieldPresence::kIfSet:
      return is_set(value);
    case FieldPresence::kIfRan:
      return row.status != RankStatus::kSkipped;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// summary.json: a value of each field type.

void write_value(JsonWriter& w, int v) {
  w.value(v);
}
void write_value(JsonWriter& w, uint64_t v) {
  w.value(v);
}
void write_value(JsonWriter& w, const std::string& v) {
  w.value(v);
}
void write_value(JsonWriter& w, RankStatus v) {
  w.value(rank_status_key(v));
}
void write_value(JsonWriter& w, double seconds) {
  w.fixed(seconds, 3);
}

void write_value(JsonWriter& w, const WarningCounts& warnings) {
  w.begin_object();
  for (const auto& [kind, count] : warnings) w.member(kind, count);
  w.end();
}

bool read_value(simdjson::dom::element e, int& out) {
  int64_t v = 0;
  if (e.get(v) != simdjson::SUCCESS || v < std::numeric_limits<int>::min() ||
      v > std::numeric_limits<int>::max()) {
    return false;
  }
  out = static_cast<int>(v);
  return true;
}

bool read_value(simdjson::dom::element e, uint64_t& out) {
  return e.get(out) == simdjson::SUCCESS;
}
bool read_value(simdjson::dom::element e, double& out) {
  return e.get(out) == simdjson::SUCCESS;
}

bool read_value(simdjson::dom::element e, std::string& out) {
  std::string_view v;
  if (e.get(v) != simdjson::SUCCESS) return false;
  out = std::string(v);
  return true;
}

bool read_value(simdjson::dom::element e, RankStatus& out) {
  std::string_view v;
  if (e.get(v) != simdjson::SUCCESS) return false;
  std::optional<RankStatus> status = rank_status_from_key(v);
  if (status) out = *status;
  return status.has_value();
}

bool read_value(simdjson::dom::element e, WarningCounts& out) {
  simdjson::dom::object warnings;
  if (e.get(warnings) != simdjson::SUCCESS) return false;
  for (auto [kind, count] : warnings) {
    uint64_t n = 0;
    if (count.get(n) != simdjson::SUCCESS) return false;
    out[std::string(kind)] = n;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// The MPI exchange's communicator groups: nested records, written and read by hand.

void write_groups(JsonWriter& w, const RankCommGroups& g) {
  w.key("comm_groups").begin_object().key("declared").begin_object();
  for (const auto& [name, ranks] : g.declared) {
    w.key(name).begin_array();
    for (int r : ranks) w.value(r);
    w.end();
  }
  w.end().key("used").begin_array();
  for (const std::string& name : g.used) w.value(name);
  w.end().member("unreadable_metadata", g.unreadable_metadata);
  w.key("cpu_collectives").begin_array();
  for (const CpuCollective& c : g.cpu_collectives) {
    w.begin_array()
        .value(c.node_id)
        .value(int64_t{c.type})
        .value(int64_t{c.comm_type})
        .value(c.comm_size)
        .value(c.start_us)
        .value(c.duration_us)
        .value(c.pg_name)
        .end();
  }
  w.end().end();
}

Status decode_cpu_collectives(simdjson::dom::array collectives, RankCommGroups& g) {
  for (simdjson::dom::element e : collectives) {
    simdjson::dom::array f;
    CpuCollective& c = g.cpu_collectives.emplace_back();
    int64_t type = 0, comm_type = 0;
    std::string_view pg_name;
    if (e.get(f) != simdjson::SUCCESS || f.size() != 7 || f.at(0).get(c.node_id) ||
        f.at(1).get(type) || f.at(2).get(comm_type) || f.at(3).get(c.comm_size) ||
        f.at(4).get(c.start_us) || f.at(5).get(c.duration_us) || f.at(6).get(pg_name)) {
      return Status::error("summary row: bad cpu_collectives");
    }
    c.type = static_cast<int32_t>(type);
    c.comm_type = static_cast<int32_t>(comm_type);
    c.pg_name = std::string(pg_name);
  }
  return Status();
}

StatusOr<RankCommGroups> decode_groups(simdjson::dom::object o, int rank) {
  RankCommGroups g;
  g.rank = rank;
  simdjson::dom::object declared;
  simdjson::dom::array used;
  if (o["declared"].get(declared) != simdjson::SUCCESS ||
      o["used"].get(used) != simdjson::SUCCESS ||
      o["unreadable_metadata"].get(g.unreadable_metadata) != simdjson::SUCCESS) {
    return Status::error("summary row: bad comm_groups");
  }
  for (auto [name, ranks] : declared) {
    std::vector<int>& members = g.declared[std::string(name)];
    simdjson::dom::array list;
    if (ranks.get(list) != simdjson::SUCCESS) return Status::error("summary row: bad comm_groups");
    for (simdjson::dom::element r : list) {
      int64_t v = 0;
      if (r.get(v) != simdjson::SUCCESS) return Status::error("summary row: bad comm_groups");
      members.push_back(static_cast<int>(v));
    }
  }
  for (simdjson::dom::element name : used) {
    std::string_view v;
    if (name.get(v) != simdjson::SUCCESS) return Status::error("summary row: bad comm_groups");
    g.used.insert(std::string(v));
  }
  simdjson::dom::array collectives;
  if (o["cpu_collectives"].get(collectives) != simdjson::SUCCESS) {
    return Status::error("summary row: bad cpu_collectives");
  }
  CF_RETURN_IF_ERROR(decode_cpu_collectives(collectives, g));
  return g;
}

// ---------------------------------------------------------------------------------------------
// A row.

// A row's summary.json object; for MPI's gather (`with_groups`) with its communicator groups.
void write_row(JsonWriter& w, const RankRow& row, bool with_groups) {
  w.begin_object(JsonWriter::Layout::kOneLine);
  for_each_rank_row_field(row, [&](const RankRowField& field, const auto& value) {
    if (!present(row, field, value)) return;
    w.key(field.key);
    write_value(w, value);
  });
  if (with_groups && row.comm_groups) write_groups(w, *row.comm_groups);
  w.end();
}

// A member that is absent leaves its default (a skipped rank's), unless the field is in every row.
StatusOr<RankRow> decode_row(simdjson::dom::object o) {
  RankRow row;
  Status status;
  for_each_rank_row_field(row, [&](const RankRowField& field, auto& value) {
    simdjson::dom::element e;
    if (!status.ok()) return;
    if (o[field.key].get(e) != simdjson::SUCCESS) {
      if (field.presence == FieldPresence::kAlways) {
        status = Status::errorf("summary row without {}", field.key);
      }
      return;
    }
    if (!read_value(e, value)) status = Status::errorf("summary row: bad {}", field.key);
  });
  CF_RETURN_IF_ERROR(status);
  simdjson::dom::object groups;
  if (o["comm_groups"].get(groups) == simdjson::SUCCESS) {
    CF_ASSIGN_OR_RETURN(row.comm_groups, decode_groups(groups, row.rank));
  }
  return row;
}

std::string padded(std::string_view text, int width, Align align) {
  return align == Align::kLeft ? fmt::format("{:<{}}", text, width)
                               : fmt::format("{:>{}}", text, width);
}

}  // namespace

std::string_view rank_status_key(RankStatus status) {
  return kRankStatusNames[static_cast<size_t>(status)].key;
}

std::optional<RankStatus> rank_status_from_key(std::string_view key) {
  for (size_t i = 0; i < std::size(kRankStatusNames); ++i) {
    if (kRankStatusNames[i].key == key) return static_cast<RankStatus>(i);
  }
  return std::nullopt;
}

std::string_view presence_key(FieldPresence presence) {
  switch (presence) {
    case FieldPresence::kAlways:
      return "always";
    case FieldPresence::kIfSet:
      return "if_set";
    case FieldPresence::kIfRan:
      return "if_ran";
  }
  return "";
}

std::string_view column_header(TableColumn column) {
  for (const TableColumnSpec& c : kTableColumns) {
    if (c.column == column) return c.header;
  }
  return "";
}

uint64_t RankRow::warning_count() const {
  uint64_t n = 0;
  for (const auto& [kind, count] : warnings) n += count;
  return n;
}

bool row_has_field(const RankRow& row, const RankRowField& field) {
  bool has = false;
  for_each_rank_row_field(row, [&](const RankRowField& f, const auto& value) {
    if (f.key == field.key) has = present(row, f, value);
  });
  return has;
}

RankRow rank_row(int rank, uint64_t input_file_bytes, const RankJobResult& r,
                 const std::string& output) {
  RankRow row;
  row.rank = rank;
  std::error_code ec;
  row.status = r.status.ok() ? RankStatus::kOk : RankStatus::kFailed;
  row.error = r.status.ok() ? std::string() : r.status.message();
  row.input_file_bytes = input_file_bytes;
  row.input_text_bytes = r.input_bytes;
  row.output_bytes = r.status.ok() ? fs::file_size(output, ec) : 0;
  const LinkSummary& s = r.summary;
  row.mode = s.mode;
  row.host_nodes = s.host_nodes;
  row.host_ops = s.host_op_candidates;
  row.host_ops_linked = s.host_ops_linked;
  row.gpu_ops = s.gpu_ops;
  row.gpu_ops_linked = s.gpu_ops_linked;
  row.et_plus_nodes = s.et_plus_nodes;
  row.et_nodes = r.convert.output_nodes;
  row.sync_deps = s.sync.host_deps + s.sync.gpu_deps;
  row.link_seconds = r.seconds - r.times.convert;
  row.convert_seconds = r.times.convert;
  if (r.status.ok() && r.convert.output_nodes > 0) {
    row.comm_groups = r.convert.comm_groups;
    row.comm_groups->rank = rank;
  }
  for (const DataProblems* stats : {&r.stats, &r.convert.stats}) {
    for (const auto& [kind, entry] : stats->entries()) {
      row.warnings[std::string(stat_key(kind))] += entry.count;
    }
  }
  return row;
}

RankRow skipped_row(int rank) {
  RankRow row;
  row.rank = rank;
  row.status = RankStatus::kSkipped;
  return row;
}

std::string encode_rows(const std::vector<RankRow>& rows) {
  JsonWriter w;
  w.begin_array();
  for (const RankRow& row : rows) write_row(w, row, /*with_groups=*/true);
  w.end();
  return w.take();
}

StatusOr<std::vector<RankRow>> decode_rows(const std::vector<std::string>& blobs,
                                           const std::vector<int>& rank_order) {
  std::vector<RankRow> rows;
  simdjson::dom::parser parser;
  for (const std::string& blob : blobs) {
    simdjson::dom::array array;
    if (parser.parse(blob).get(array) != simdjson::SUCCESS) {
      return Status::error("summary rows: not a JSON array");
    }
    for (simdjson::dom::element e : array) {
      simdjson::dom::object o;
      if (e.get(o) != simdjson::SUCCESS) return Status::error("summary rows: not an object");
      CF_ASSIGN_OR_RETURN(RankRow row, decode_row(o));
      rows.push_back(std::move(row));
    }
  }
  std::map<int, size_t> index;
  for (size_t i = 0; i < rank_order.size(); ++i) index[rank_order[i]] = i;
  std::sort(rows.begin(), rows.end(),
            [&](const RankRow& a, const RankRow& b) { return index[a.rank] < index[b.rank]; });
  return rows;
}

void count_rows(const std::vector<RankRow>& rows, RunTotals& t) {
  for (const RankRow& r : rows) {
    t.failed += r.status == RankStatus::kFailed;
    t.skipped += r.status == RankStatus::kSkipped;
    t.text_bytes += r.input_text_bytes;
  }
}

std::string table_cell(const RankRow& row, TableColumn column) {
  switch (column) {
    case TableColumn::kNone:
      return std::string();
    case TableColumn::kRank:
      return fmt::format("{}", row.rank);
    case TableColumn::kStatus:
      return std::string(rank_status_word(row.status));
    case TableColumn::kJsonMb:
      return fmt::format("{:.1f}", row.input_text_bytes / 1e6);
    case TableColumn::kHostLinked:
      return fmt::format("{}/{}", row.host_ops_linked, row.host_ops);
    case TableColumn::kGpuLinked:
      return fmt::format("{}/{}", row.gpu_ops_linked, row.gpu_ops);
    case TableColumn::kSeconds:
      return fmt::format("{:.2f}", row.link_seconds + row.convert_seconds);
    case TableColumn::kWarnings:
      return fmt::format("{}", row.warning_count());
  }
  return std::string();
}

std::string report_table(const std::vector<RankRow>& rows, const RunTotals& t) {
  std::vector<std::string> headers;
  for (const TableColumnSpec& c : kTableColumns) {
    headers.push_back(padded(c.header, c.width, c.align));
  }
  std::string out = fmt::format("\n{}\n", fmt::join(headers, "  "));
  for (const RankRow& row : rows) {
    // The columns of the fields the row writes to summary.json.
    std::vector<bool> shown(kTableColumns.size() + 1, false);
    for_each_rank_row_field(row, [&](const RankRowField& field, const auto& value) {
      if (present(row, field, value)) shown[static_cast<size_t>(field.column)] = true;
    });
    std::vector<std::string> cells;
    for (const TableColumnSpec& c : kTableColumns) {
      if (!shown[static_cast<size_t>(c.column)]) continue;
      cells.push_back(padded(table_cell(row, c.column), c.width, c.align));
    }
    out += fmt::format("{}\n", fmt::join(cells, "  "));
  }
  out += fmt::format("{} ranks, {} failed, {} skipped, {:.2f} s, {:.1f} MB/s of JSON{}\n",
                     rows.size(), t.failed, t.skipped, t.seconds,
                     t.seconds > 0 ? t.text_bytes / 1e6 / t.seconds : 0.0,
                     t.processes > 1 ? fmt::format(", {} processes", t.processes) : "");
  return out;
}

std::string summary_json(const std::string& config_path, const std::vector<RankRow>& rows,
                         const RunTotals& t) {
  JsonWriter w;
  w.begin_object().member("config", config_path);
  w.member("ranks_total", uint64_t{rows.size()})
      .member("ranks_failed", uint64_t{t.failed})
      .member("ranks_skipped", uint64_t{t.skipped});
  w.key("seconds").fixed(t.seconds, 3);
  w.member("processes", t.processes)
      .member("ranks_in_flight", t.in_flight)
      .member("malloc_huge_pages", t.malloc_huge_pages)
      .member("malloc_one_arena", t.malloc_one_arena);
  w.key("ranks").begin_array();
  for (const RankRow& row : rows) write_row(w, row, /*with_groups=*/false);
  w.end();
  w.end();
  return w.take();
}

}  // namespace chakraflow
