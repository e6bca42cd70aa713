// The run report (pipeline/run_report.h): summary.json, the MPI exchange and the text table all
// follow the one declaration of a rank's row.
#include "pipeline/run_report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <iterator>
#include <set>
#include <sstream>

namespace chakraflow {
namespace {

// Changes a field's value, whatever its type (a status from ok to failed).
void bump(int& v) {
  v += 7;
}
void bump(uint64_t& v) {
  v += 1'000'000'007;
}
void bump(double& v) {
  v += 100.5;
}
void bump(std::string& v) {
  v += "x";
}
void bump(RankStatus& v) {
  v = v == RankStatus::kOk ? RankStatus::kFailed : RankStatus::kOk;
}
void bump(WarningCounts& v) {
  v["host_schema_missing"] += 3;
}

// A rank that ran, every field set (none at its default).
RankRow full_row(int rank) {
  RankRow row;
  for_each_rank_row_field(row, [](const RankRowField&, auto& value) { bump(value); });
  row.rank = rank;
  row.status = RankStatus::kFailed;
  return row;
}

RankRow ok_row(int rank) {
  RankRow row = full_row(rank);
  row.status = RankStatus::kOk;
  row.error.clear();
  return row;
}

// The keys of each row of summary.json, in order.
std::vector<std::vector<std::string>> row_keys(const std::string& summary) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(summary);
  std::vector<std::vector<std::string>> rows;
  for (simdjson::dom::element row : doc["ranks"].get_array()) {
    std::vector<std::string>& keys = rows.emplace_back();
    for (auto [key, value] : row.get_object()) keys.emplace_back(key);
  }
  return rows;
}

std::vector<std::string> declared_keys(const RankRow& row) {
  std::vector<std::string> keys;
  for (const RankRowField& f : kRankRowFields) {
    if (row_has_field(row, f)) keys.emplace_back(f.key);
  }
  return keys;
}

TEST(RunReport, SummaryJsonWritesTheDeclaredKeysInOrder) {
  const std::vector<RankRow> rows = {ok_row(0), full_row(1), skipped_row(2)};
  const auto keys = row_keys(summary_json("c.yaml", rows, RunTotals()));
  ASSERT_EQ(keys.size(), 3u);
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(keys[i], declared_keys(rows[i])) << i;
  EXPECT_EQ(keys[0].size(), kRankRowFields.size() - 1);  // no error
  EXPECT_EQ(keys[1].size(), kRankRowFields.size());
  EXPECT_EQ(keys[2], (std::vector<std::string>{"rank", "status"}));
  EXPECT_NE(summary_json("c.yaml", rows, RunTotals()).find("\"status\": \"skipped\""),
            std::string::npos);
}

// Process 0 decodes what every process encoded: each field, and the communicator groups that
// summary.json leaves out.
TEST(RunReport, TheMpiExchangeGivesBackEveryField) {
  RankRow a = full_row(5), b = skipped_row(2), c = ok_row(9);
  RankCommGroups groups;
  groups.rank = 9;
  groups.declared = {{"0", {}}, {"1", {0, 9}}};
  groups.used = {"0", "1"};
  groups.unreadable_metadata = 2;
  groups.cpu_collectives = {{12, 7, 4, 16384, 1000, 25, "1"}, {13, 7, 4, 8, 0, 0, "0"}};
  c.comm_groups = groups;
  auto decoded = decode_rows({encode_rows({a, b}), encode_rows({c})}, {9, 2, 5});
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  ASSERT_EQ(decoded->size(), 3u);
  const std::vector<RankRow> expected = {c, b, a};  // in the configuration's order
  EXPECT_EQ(summary_json("c.yaml", *decoded, RunTotals()),
            summary_json("c.yaml", expected, RunTotals()));
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ((*decoded)[i].comm_groups, expected[i].comm_groups) << i;
  }
  EXPECT_EQ((*decoded)[2].warnings, a.warnings);
  EXPECT_EQ(summary_json("c.yaml", {c}, RunTotals()).find("comm_groups"), std::string::npos);
}

TEST(RunReport, DecodingRefusesARowWithoutItsAlwaysFieldsOrWithAnUnknownStatus) {
  for (const auto& [blob, error] : std::vector<std::pair<std::string, std::string>>{
           {R"([{"status": "ok"}])", "summary row without rank"},
           {R"([{"rank": 1}])", "summary row without status"},
           {R"([{"rank": 1, "status": "done"}])", "summary row: bad status"},
           {R"([{"rank": 1, "status": "ok", "host_ops": "many"}])", "summary row: bad host_ops"},
       }) {
    auto decoded = decode_rows({blob}, {1});
    ASSERT_FALSE(decoded.ok()) << blob;
    EXPECT_EQ(decoded.status().message(), error) << blob;
  }
  for (std::string_view key : {"ok", "failed", "skipped"}) {
    auto status = rank_status_from_key(key);
    ASSERT_TRUE(status.has_value()) << key;
    EXPECT_EQ(rank_status_key(*status), key);
  }
}

// A field's column shows it: changing the field changes that column's cell, and no other; a
// field without a column changes none.
TEST(RunReport, EveryColumnShowsTheFieldsThatNameIt) {
  const RankRow base = ok_row(3);
  std::set<TableColumn> named;
  for (size_t i = 0; i < kRankRowFields.size(); ++i) {
    RankRow changed = base;
    size_t at = 0;
    for_each_rank_row_field(changed, [&](const RankRowField&, auto& value) {
      if (at++ == i) bump(value);
    });
    const RankRowField& field = kRankRowFields[i];
    named.insert(field.column);
    for (const TableColumnSpec& c : kTableColumns) {
      const bool differs = table_cell(changed, c.column) != table_cell(base, c.column);
      EXPECT_EQ(differs, c.column == field.column) << field.key << " in " << c.header;
    }
  }
  for (const TableColumnSpec& c : kTableColumns) EXPECT_TRUE(named.count(c.column)) << c.header;
}

// The table's columns for a row are those of the keys its summary.json object holds: the table,
// summary.json (and cf.run's dicts, which are summary.json) carry the same fields.
TEST(RunReport, TheTableShowsTheColumnsOfTheKeysSummaryJsonHolds) {
  const std::vector<RankRow> rows = {ok_row(0), full_row(1), skipped_row(2)};
  const auto keys = row_keys(summary_json("c.yaml", rows, RunTotals()));
  RunTotals totals;
  count_rows(rows, totals);
  std::istringstream table(report_table(rows, totals));
  std::string line;
  std::getline(table, line);
  EXPECT_EQ(line, "");
  std::getline(table, line);
  std::vector<std::string> headers;
  for (const TableColumnSpec& c : kTableColumns) {
    headers.push_back(c.align == Align::kLeft ? fmt::format("{:<{}}", c.header, c.width)
                                              : fmt::format("{:>{}}", c.header, c.width));
  }
  EXPECT_EQ(line, fmt::format("{}", fmt::join(headers, "  ")));
  for (size_t i = 0; i < rows.size(); ++i) {
    std::set<TableColumn> columns;
    for (const std::string& key : keys[i]) {
      for (const RankRowField& f : kRankRowFields) {
        if (f.key == key && f.column != TableColumn::kNone) columns.insert(f.column);
      }
    }
    ASSERT_TRUE(std::getline(table, line));
    std::istringstream cells(line);  // no cell of these rows holds a space
    std::vector<std::string> shown{std::istream_iterator<std::string>(cells), {}};
    std::vector<std::string> expected;
    for (const TableColumnSpec& c : kTableColumns) {
      if (columns.count(c.column)) expected.push_back(table_cell(rows[i], c.column));
    }
    EXPECT_EQ(shown, expected) << line;
  }
  std::getline(table, line);
  EXPECT_EQ(line.rfind("3 ranks, 1 failed, 1 skipped, ", 0), 0u) << line;
}

// The text is what the hand-written table printed before the declaration.
TEST(RunReport, TheTableKeepsItsLayout) {
  RankRow row;
  row.rank = 3;
  row.input_text_bytes = 12'345'678;
  row.host_ops_linked = 10;
  row.host_ops = 12;
  row.gpu_ops_linked = 5;
  row.gpu_ops = 6;
  row.link_seconds = 1.5;
  row.convert_seconds = 0.25;
  row.warnings = {{"host_schema_missing", 1}, {"duplicate_correlation_id", 3}};
  RankRow failed = row;
  failed.status = RankStatus::kFailed;
  RunTotals totals;
  totals.seconds = 2;
  totals.processes = 2;
  const std::vector<RankRow> rows = {row, failed, skipped_row(4)};
  count_rows(rows, totals);
  EXPECT_EQ(report_table(rows, totals),
            "\n  rank  status      JSON MB     host linked      GPU linked    seconds  warnings\n"
            "     3  ok             12.3           10/12             5/6       1.75  4\n"
            "     3  FAILED         12.3           10/12             5/6       1.75  4\n"
            "     4  skipped \n"
            "3 ranks, 1 failed, 1 skipped, 2.00 s, 12.3 MB/s of JSON, 2 processes\n");
}

}  // namespace
}  // namespace chakraflow
