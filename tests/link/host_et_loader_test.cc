#include "stages/link/host_et_loader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "stages/generate/synthetic_trace.h"
#include "tests/testing/test_util.h"
#include "tests/testing/trace_builder.h"
#include "tests/testing/window_test_util.h"

namespace chakraflow {
namespace {

using testing::HostBuilder;

TEST(HostEtLoader, ReadsAttrsLayout) {
  std::string text = HostBuilder()
                         .roots({{2, 1}})
                         .node(5, "aten::mm", 2, 3, 1)
                         .node(4, "aten::add", 2, 2, 1)
                         .json();
  auto t = parse_host_trace("h.json", text);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->schema, "1.1.1-chakra.0.0.4");
  EXPECT_EQ(t->layout, HostLayout::kAttrs);
  ASSERT_EQ(t->nodes.size(), 4u);
  // Sorted by id.
  EXPECT_EQ(t->nodes[0].id, 1u);
  EXPECT_EQ(t->nodes[2].id, 4u);
  const HostNode& mm = t->nodes[3];
  EXPECT_EQ(mm.name, "aten::mm");
  EXPECT_EQ(mm.parent, 2u);
  EXPECT_EQ(mm.parent_key, ParentKey::kCtrlDeps);
  EXPECT_EQ(mm.rf_id, 3u);
  EXPECT_EQ(mm.tid, 1u);
  EXPECT_EQ(mm.seq_id, -1);
  // Spans point at the values inside the verbatim node text.
  EXPECT_EQ(mm.raw.front(), '{');
  EXPECT_EQ(mm.raw.back(), '}');
  EXPECT_EQ(mm.raw.substr(mm.id_value.begin, mm.id_value.end - mm.id_value.begin), "5");
  EXPECT_EQ(mm.raw.substr(mm.name_value.begin, mm.name_value.end - mm.name_value.begin),
            "\"aten::mm\"");
  EXPECT_EQ(mm.raw.substr(mm.parent_value.begin, mm.parent_value.end - mm.parent_value.begin), "2");
  // Top-level fields in file order, nodes marked.
  ASSERT_EQ(t->top_level.size(), 6u);
  EXPECT_EQ(t->top_level[4].key_raw, "\"nodes\"");
  EXPECT_TRUE(t->top_level[4].is_nodes);
  EXPECT_EQ(t->top_level[5].value_raw, "2");
}

TEST(HostEtLoader, ReadsFlatLayoutAndKeepsOrphans) {
  std::string text = HostBuilder(true).roots({{2, 1}}).node(9, "orphan", 77, 4, 1).json();
  auto t = parse_host_trace("h.json", text);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->layout, HostLayout::kFlat);
  ASSERT_EQ(t->nodes.size(), 3u);
  EXPECT_EQ(t->nodes[2].name, "orphan");
  EXPECT_EQ(t->nodes[2].parent, 77u);
  EXPECT_EQ(t->nodes[2].parent_key, ParentKey::kParent);
  EXPECT_EQ(t->nodes[2].rf_id, 4u);
}

TEST(HostEtLoader, NestedObjectsInsideNodesDoNotCutTheRawText) {
  std::string text = R"J({"schema": "1.1.1-chakra.0.0.4", "nodes": [
    {"id": 3, "name": "n", "ctrl_deps": 1, "inputs": {"values": [[1,2,0,4,4,"cuda:0"]], "shapes": [[4]], "types": ["Tensor(float)"]},
     "outputs": {"values": [], "shapes": [], "types": []}, "attrs": [{"name": "rf_id", "type": "uint64", "value": 9}]}
  ]})J";
  auto t = parse_host_trace("h.json", text);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const HostNode& n = t->nodes[0];
  EXPECT_EQ(n.rf_id, 9u);
  EXPECT_EQ(n.raw.front(), '{');
  EXPECT_NE(n.raw.find("\"attrs\""), std::string_view::npos);
  EXPECT_EQ(n.raw.substr(n.raw.size() - 3), "}]}");
}

struct BadCase {
  const char* name;
  const char* text;
  const char* expect;  // substring of the message
};

TEST(HostEtLoader, BadInputGivesLocatedErrors) {
  const BadCase cases[] = {
      {"empty", "", "empty file"},
      {"not json", "hello", "byte"},
      {"truncated",
       R"({"schema": "1.1.1", "nodes": [{"id": 2, "name": "a", "ctrl_deps": 1}, {"id": 3, "na)",
       "byte"},
      {"no nodes", R"({"schema": "1.1.1"})", "no \"nodes\""},
      {"missing id", R"({"nodes": [{"name": "a"}]})", "missing required field \"id\""},
      {"missing name", R"({"nodes": [{"id": 4}]})", "id 4"},
      {"negative id", R"({"nodes": [{"id": -4, "name": "x"}]})",
       "\"id\" is not a non-negative integer"},
      {"string ctrl_deps", R"({"nodes": [{"id": 4, "name": "x", "ctrl_deps": "1"}]})",
       "\"ctrl_deps\""},
      {"duplicate id", R"({"nodes": [{"id": 4, "name": "x"}, {"id": 4, "name": "y"}]})",
       "duplicate node id 4"},
      {"array root", "[1, 2]", "not a JSON object"},
      {"trailing", R"({"nodes": []} {"nodes": []})", "after the top-level object"},
  };
  for (const auto& c : cases) {
    auto t = parse_host_trace("bad_host.json", c.text);
    ASSERT_FALSE(t.ok()) << c.name;
    EXPECT_NE(t.status().message().find("bad_host.json"), std::string::npos)
        << c.name << ": " << t.status().message();
    EXPECT_NE(t.status().message().find(c.expect), std::string::npos)
        << c.name << ": " << t.status().message();
  }
}

// ---------- the nodes array read in windows ----------

void expect_same_trace(const HostTrace& whole, const HostTrace& windowed, const std::string& what) {
  EXPECT_EQ(whole.schema, windowed.schema) << what;
  EXPECT_EQ(whole.layout, windowed.layout) << what;
  EXPECT_EQ(whole.invalid_utf8_bytes, windowed.invalid_utf8_bytes) << what;
  ASSERT_EQ(whole.top_level.size(), windowed.top_level.size()) << what;
  for (size_t i = 0; i < whole.top_level.size(); ++i) {
    EXPECT_EQ(whole.top_level[i].key_raw, windowed.top_level[i].key_raw) << what << ", field " << i;
    EXPECT_EQ(whole.top_level[i].value_raw, windowed.top_level[i].value_raw) << what;
    EXPECT_EQ(whole.top_level[i].is_nodes, windowed.top_level[i].is_nodes) << what;
  }
  ASSERT_EQ(whole.nodes.size(), windowed.nodes.size()) << what;
  const std::string_view text = windowed.text;
  for (size_t i = 0; i < whole.nodes.size(); ++i) {
    const HostNode& a = whole.nodes[i];
    const HostNode& b = windowed.nodes[i];
    const std::string where = fmt::format("{}, node {} (id {})", what, i, a.id);
    EXPECT_EQ(a.id, b.id) << where;
    EXPECT_EQ(a.name, b.name) << where;
    EXPECT_EQ(a.raw, b.raw) << where;
    EXPECT_EQ(a.op_schema, b.op_schema) << where;
    EXPECT_EQ(a.parent, b.parent) << where;
    EXPECT_EQ(a.parent_key, b.parent_key) << where;
    EXPECT_EQ(a.rf_id, b.rf_id) << where;
    EXPECT_EQ(a.fw_parent, b.fw_parent) << where;
    EXPECT_EQ(a.seq_id, b.seq_id) << where;
    EXPECT_EQ(a.scope, b.scope) << where;
    EXPECT_EQ(a.tid, b.tid) << where;
    EXPECT_EQ(a.fw_tid, b.fw_tid) << where;
    EXPECT_EQ(a.byte_offset, b.byte_offset) << where;
    for (auto span : {&HostNode::id_value, &HostNode::name_value, &HostNode::parent_value}) {
      EXPECT_EQ((a.*span).begin, (b.*span).begin) << where;
      EXPECT_EQ((a.*span).end, (b.*span).end) << where;
    }
    EXPECT_TRUE(b.raw.data() >= text.data() &&
                b.raw.data() + b.raw.size() <= text.data() + text.size())
        << where;
    if (::testing::Test::HasFailure()) return;  // one node's report is enough
  }
}

// Parses `text` whole and in windows of each size: the same trace, or the same error. Returns the
// number of windows of the smallest size (0: read whole).
size_t expect_windows_read_as_whole(const std::string& text, const std::string& what,
                                    std::initializer_list<size_t> window_sizes) {
  return testing::expect_windows_read_as_whole(
      [](const std::string& t, size_t window) { return parse_host_trace("t.json", t, window); },
      expect_same_trace, text, what, window_sizes);
}

std::string synthetic_host_trace(int rank, double scale, bool legacy) {
  SynthOptions opt;
  opt.ranks = 2;
  opt.scale = scale;
  opt.legacy = legacy;
  auto [host, device, stats] = synthesize_rank_text(opt, rank);
  return host;
}

TEST(HostTraceWindows, SyntheticTracesReadAsWhole) {
  for (bool legacy : {false, true}) {
    const std::string text = synthetic_host_trace(1, 0.03, legacy);
    const std::string what = legacy ? "synth 1.0.1" : "synth 1.1.x";
    const size_t windows = expect_windows_read_as_whole(text, what, {100, 4096, 65536});
    EXPECT_GT(windows, text.size() / 4096) << what << ": the windows were not used";
    // The text is left as it was (windows patch bytes in place and restore them).
    auto windowed = parse_host_trace("t.json", text, 4096);
    ASSERT_TRUE(windowed.ok()) << windowed.status().message();
    EXPECT_EQ(std::string_view(windowed->text), text);
    EXPECT_GT(windowed->nodes.size(), 200u);
  }
}

TEST(HostTraceWindows, RealTracesReadAsWhole) {
  CF_REQUIRE_SHARED_DATA("host_et");
  size_t files = 0;
  for (const char* dir : {"host_et", "pairs"}) {
    const auto root = testing::shared_data_dir() / dir;
    if (!std::filesystem::exists(root)) continue;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
      const std::string path = entry.path().string();
      if (!entry.is_regular_file() || path.find("reference") != std::string::npos ||
          path.find("kineto") != std::string::npos || path.find(".json") == std::string::npos) {
        continue;
      }
      const std::string text = testing::read_text(path);
      const size_t windows = expect_windows_read_as_whole(text, path, {333, 1 << 16});
      if (text.size() > 4 * 333) {
        EXPECT_GT(windows, 1u) << path << ": the windows were not used";
      }
      ++files;
    }
  }
  EXPECT_GE(files, 10u);
}

// Nodes whose text has what a window's cut looks for inside strings and nested arrays, nodes
// larger than a window, every separator style, and root fields before and after the array.
TEST(HostTraceWindows, HardCutsReadAsWhole) {
  std::string nodes;
  for (int i = 1; i <= 300; ++i) {
    const std::string name = testing::hard_cut_string(i);
    if (i > 1) nodes += testing::hard_cut_separator(i);
    nodes += fmt::format(
        R"({{"id": {}, "name": "{}", "ctrl_deps": {}, "inputs": {{"values": [[{{"a": "}},{{"}}], )"
        R"({{"b": [2, {{"c": "]"}}]}}], "shapes": [], "types": []}}, )"
        R"("attrs": [{{"name": "rf_id", "type": "uint64", "value": {}}}, )"
        R"({{"name": "op_schema", "type": "string", "value": "s{}"}}]}})",
        301 - i, name, i > 1 ? 300 : 0, i, i % 7);
  }
  const std::string text = R"({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "meta": [{"x": 0}],)"
                           "\n\"nodes\": [" +
                           nodes + "],\n\"finish_ts\": 12, \"tail\": {\"y\": [1]}}";
  const size_t windows = expect_windows_read_as_whole(text, "hard cuts", {64, 150, 500, 2048});
  EXPECT_GT(windows, 20u);
  auto t = parse_host_trace("t.json", text, 64);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->nodes.size(), 300u);
  ASSERT_EQ(t->top_level.size(), 6u);
  EXPECT_TRUE(t->top_level[3].is_nodes);
  EXPECT_EQ(t->top_level[4].key_raw, "\"finish_ts\"");
}

// What the windows cannot read is parsed whole: the same trace, or exactly the same error.
TEST(HostTraceWindows, WholeParseTakesOverWithItsErrors) {
  std::string nodes;
  for (int i = 1; i <= 200; ++i) {
    if (i > 1) nodes += ", ";
    nodes += fmt::format(R"({{"id": {}, "name": "op{}", "ctrl_deps": 1, "attrs": []}})", i, i);
  }
  const testing::ArrayText array{"[" + nodes + "]"};
  struct Case {
    std::string what;
    std::string text;
    bool ok;
  } cases[] = {
      // A top-level key twice is an error (issue: link wrote both arrays, convert then failed).
      {"a second nodes array", R"({"nodes": )" + array.text + R"(, "nodes": [])" + "}", false},
      {"nodes nested first", R"({"meta": {"nodes": []}, "nodes": )" + array.text + "}", true},
      {"nodes in a string first", R"({"note": "\"nodes\": [", "nodes": )" + array.text + "}", true},
      {"a long tail",
       R"({"nodes": )" + array.text + R"(, "more": ")" + std::string(5000, 'y') + "\"}", true},
      {"trailing content", R"({"nodes": )" + array.text + "} {}", false},
      {"truncated", (R"({"nodes": )" + array.text).substr(0, 3000), false},
      {"bad id in the middle",
       R"({"nodes": )" +
           array.inserted(array.element_after(2000), R"({"id": "abc", "name": "x"}, )") + "}",
       false},
      {"duplicate id",
       R"({"nodes": )" + array.inserted(array.element_after(2000), R"({"id": 5, "name": "x"}, )") +
           "}",
       false},
      {"missing comma", R"({"nodes": )" + array.without_comma_after(2500) + "}", false},
      {"invalid UTF-8 in a name",
       R"({"nodes": )" + array.inserted(array.text.find("op", 1500) + 2, "\xff") + "}", true},
      {"not an object", R"({"nodes": )" + array.inserted(array.element_after(1700), "7, ") + "}",
       false},
      {"schema not a string", R"({"nodes": )" + array.text + R"(, "schema": 3})", false},
  };
  for (const auto& c : cases) {
    auto whole = parse_host_trace("t.json", c.text, size_t{0});
    EXPECT_EQ(whole.ok(), c.ok) << c.what << ": " << whole.status().message();
    expect_windows_read_as_whole(c.text, c.what, {80, 256, 1000});
  }
}

TEST(HostTraceWindows, BadInputCorpusReadsAsWhole) {
  size_t files = 0;
  for (const char* sub : {"host_et", "et_plus"}) {
    const auto dir = std::filesystem::path(CHAKRAFLOW_SOURCE_DIR) / "tests" / "bad_inputs" / sub;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".json") continue;
      const std::string text = testing::read_text(entry.path().string());
      expect_windows_read_as_whole(text, entry.path().filename().string(), {16, 64, 256});
      ++files;
    }
  }
  EXPECT_GE(files, 20u);
}
}  // namespace
}  // namespace chakraflow
