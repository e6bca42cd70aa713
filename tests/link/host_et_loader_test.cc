#include "stages/link/host_et_loader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "stages/common/json_util.h"
#include "stages/common/ordered_batches.h"
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
    EXPECT_EQ(a.parent, b.parent) << where;
    EXPECT_EQ(a.parent_key, b.parent_key) << where;
    EXPECT_EQ(a.rf_id, b.rf_id) << where;
    EXPECT_EQ(a.tid, b.tid) << where;
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

// The host ETs and ET+ files under ../shared/data.
std::vector<std::string> shared_host_traces(std::initializer_list<const char*> dirs) {
  return testing::shared_trace_files(dirs, [](const std::string& path, std::string_view) {
    return path.find("kineto") == std::string::npos && path.find(".json") != std::string::npos &&
           path.find("step_time") == std::string::npos;
  });
}

TEST(HostTraceWindows, RealTracesReadAsWhole) {
  CF_REQUIRE_SHARED_DATA("host_et");
  size_t files = 0;
  for (const std::string& path : shared_host_traces({"host_et", "pairs"})) {
    const std::string text = testing::read_text(path);
    const size_t windows = expect_windows_read_as_whole(text, path, {333, 1 << 16});
    if (text.size() > 4 * 333) {
      EXPECT_GT(windows, 1u) << path << ": the windows were not used";
    }
    ++files;
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

// ---------- the converter's fields: a HostNodeSink ----------

// A sink that keeps a copy of what it receives.
struct Received {
  HostNode node;
  HostNodeDetail detail;
  std::vector<uint64_t> sync_deps;
};
class RecordingSink final : public HostNodeSink {
 public:
  explicit RecordingSink(bool keep) : keep_(keep) {}
  bool keep_nodes() const override { return keep_; }
  Status node(const HostNode& node, const HostNodeDetail& detail) override {
    Received& r = received.emplace_back(Received{node, detail, {}});
    r.sync_deps.assign(detail.sync_deps.begin(), detail.sync_deps.end());
    r.detail.sync_deps = {};
    return Status();
  }
  void restart() override {
    received.clear();
    ++restarts;
  }
  std::vector<Received> received;  // in file order
  int restarts = 0;

 private:
  bool keep_;
};

std::string_view in_raw(const HostNode& n, Span s) {
  return n.raw.substr(s.begin, s.end - s.begin);
}

// One reading for the linker and the converter: the sink gets every node once, in file order,
// with the fields both read; the loader keeps the same nodes with a sink as without.
TEST(HostEtLoader, SinkGetsEachNodeWithItsDetail) {
  const std::string attrs = R"J({"schema": "1.1.1-chakra.0.0.4", "nodes": [
  {"id": 5, "name": "aten::add", "parent": 1, "ctrl_deps": 2, "ts": 7.5, "exclusive_dur": 3, "inclusive_dur": 4.25, "cat": "kernel", "stream": 7, "device": 1, "inter_thread_dep": -1, "sync_dep": [3, 4], "inputs": {"values": [1], "shapes": [[]], "types": ["Int"], "strides": [[]]}, "outputs": {"values": [], "shapes": [], "types": []}, "pg_name": "node_pg", "attrs": [{"value": 77, "name": "rf_id", "type": "uint64"}, {"name": "tid", "type": "uint64", "value": -1}, {"name": "seq_id", "type": "int64", "value": -3}, {"name": "fw_parent", "type": "int64", "value": 2.0}, {"value": 5, "name": "op_schema"}, {"name": "op_schema", "value": "add(\"x\")"}, {"name": "pg_name", "value": "attr_pg"}, {"name": "collective_name", "value": ["x"]}]},
  {"id": 4, "name": "aten::mul", "parent": 1, "ctrl_deps": null, "stream": null, "attrs": [{"name": "rf_id", "value": 3}, {"name": "scope", "value": null}]},
  {"id": 2, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 1},
  {"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "ctrl_deps": 1}
  ]})J";
  auto own = parse_host_trace("h.json", attrs);
  ASSERT_TRUE(own.ok()) << own.status().message();
  RecordingSink sink(/*keep=*/true);
  auto with_sink = parse_host_trace("h.json", attrs, &sink);
  ASSERT_TRUE(with_sink.ok()) << with_sink.status().message();
  expect_same_trace(*own, *with_sink, "with a sink");
  ASSERT_EQ(sink.received.size(), 4u);
  EXPECT_EQ(sink.received[0].node.id, 5u);  // file order
  EXPECT_EQ(sink.received[3].node.id, 1u);

  const Received& add = sink.received[0];
  const HostNode& n = add.node;
  const HostNodeDetail& d = add.detail;
  // ctrl_deps wins over parent, whatever their order; attrs are read in any key order.
  EXPECT_EQ(n.parent, 2u);
  EXPECT_EQ(n.parent_key, ParentKey::kCtrlDeps);
  EXPECT_EQ(in_raw(n, n.parent_value), "2");
  EXPECT_EQ(n.rf_id, 77u);
  EXPECT_EQ(n.tid, 0u);             // -1: none for the linker ...
  EXPECT_EQ(d.int_attr[kTid], -1);  // ... as written for the converter
  EXPECT_EQ(d.int_attr[kSeqId], -3);
  EXPECT_EQ(d.int_attr[kFwParent], 2);
  EXPECT_EQ(d.int_attr[kScope], 0);
  EXPECT_EQ(d.ts, 7.5);
  EXPECT_TRUE(d.has_ts);
  EXPECT_EQ(d.exclusive_dur, 3.0);
  EXPECT_EQ(d.inclusive_dur, 4.25);
  EXPECT_TRUE(d.has_cat);
  EXPECT_TRUE(d.stream_given && d.has_stream);
  EXPECT_EQ(d.stream, 7);
  EXPECT_EQ(d.device, 1);
  EXPECT_EQ(d.inter_thread_dep, 0u);
  EXPECT_EQ(add.sync_deps, (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(in_raw(n, d.io[0]), "[1]");
  EXPECT_EQ(in_raw(n, d.io[1]), "[[]]");
  EXPECT_EQ(in_raw(n, d.io[2]), "[\"Int\"]");
  EXPECT_EQ(in_raw(n, d.io[5]), "[]");
  EXPECT_EQ(d.op_schema, "add(\"x\")");
  EXPECT_TRUE(d.op_schema_not_string);  // the first op_schema attr was a number
  EXPECT_EQ(d.pg_name, "attr_pg");      // the attr wins over the node-level key
  EXPECT_TRUE(d.pg_name_from_attr);
  EXPECT_TRUE(d.collective_name.empty());
  EXPECT_TRUE(d.collective_name_not_string);

  const Received& mul = sink.received[1];
  EXPECT_EQ(mul.node.parent_key, ParentKey::kParent);  // a null ctrl_deps is no key
  EXPECT_EQ(mul.node.parent, 1u);
  EXPECT_EQ(mul.node.rf_id, 3u);
  EXPECT_TRUE(mul.detail.stream_given);
  EXPECT_FALSE(mul.detail.has_stream);
  EXPECT_FALSE(mul.detail.has_ts);
  EXPECT_FALSE(mul.detail.has_cat);
  EXPECT_TRUE(mul.detail.io[0].empty());  // absent
  EXPECT_EQ(mul.detail.int_attr[kSeqId], -1);

  // Without keep_nodes, the trace keeps no nodes and the sink gets the same.
  RecordingSink alone(/*keep=*/false);
  auto without = parse_host_trace("h.json", attrs, &alone);
  ASSERT_TRUE(without.ok()) << without.status().message();
  EXPECT_TRUE(without->nodes.empty());
  ASSERT_EQ(alone.received.size(), 4u);
  EXPECT_EQ(alone.received[0].detail.op_schema, "add(\"x\")");

  // The flat layout: the same fields at node level, the lists as their own keys.
  const std::string flat = R"J({"schema": "1.0.1", "nodes": [
  {"id": 3, "name": "aten::mm", "parent": 2, "rf_id": -1, "fw_parent": 4, "seq_id": -5, "scope": 2, "tid": 1, "fw_tid": 9, "op_schema": "mm(\u0041)", "inputs": [1], "input_shapes": [[]], "input_types": ["Int"], "outputs": [], "output_shapes": [], "output_types": []},
  {"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "parent": 1}]})J";
  RecordingSink flat_sink(/*keep=*/true);
  auto f = parse_host_trace("h.json", flat, &flat_sink);
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_EQ(flat_sink.received.size(), 2u);
  const Received& mm = flat_sink.received[0];
  EXPECT_EQ(mm.node.parent_key, ParentKey::kParent);
  EXPECT_EQ(mm.node.rf_id, 0u);
  EXPECT_EQ(mm.detail.int_attr[kRfId], -1);
  EXPECT_EQ(mm.detail.int_attr[kFwTid], 9);
  EXPECT_EQ(mm.detail.op_schema, "mm(A)");
  EXPECT_EQ(in_raw(mm.node, mm.detail.io[0]), "[1]");
  EXPECT_EQ(in_raw(mm.node, mm.detail.io[2]), "[\"Int\"]");
  EXPECT_EQ(in_raw(mm.node, mm.detail.io[4]), "[]");
}

// The fields only the converter reads are checked only when it reads them (a sink); those both
// read are checked either way.
TEST(HostEtLoader, DetailFieldsAreCheckedForTheConverter) {
  const std::string bad_ts = R"J({"schema": "1.1.1-chakra.0.0.4", "nodes": [
  {"id": 1, "name": "x", "ctrl_deps": 1, "ts": "soon"}]})J";
  EXPECT_TRUE(parse_host_trace("h.json", bad_ts).ok());
  RecordingSink sink(true);
  auto failed = parse_host_trace("h.json", bad_ts, &sink);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(
      failed.status().message().find("h.json: byte 46: node #0 (id 1): \"ts\" is not a number"),
      std::string::npos)
      << failed.status().message();
  const std::string bad_rf_id = R"J({"schema": "1.1.1-chakra.0.0.4", "nodes": [
  {"id": 1, "name": "x", "ctrl_deps": 1, "attrs": [{"name": "rf_id", "value": 18446744073709551615}]}]})J";
  for (RecordingSink* s : {static_cast<RecordingSink*>(nullptr), &sink}) {
    auto r = parse_host_trace("h.json", bad_rf_id, s);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("attr \"rf_id\" = 18446744073709551615 is not an int64"),
              std::string::npos)
        << r.status().message();
  }
}

// A sink sees each node once when the windows read them, and starts again when they give up.
TEST(HostTraceWindows, SinkGetsEachNodeOnce) {
  const std::string text = synthetic_host_trace(1, 0.03, false);
  RecordingSink whole(false), windowed(false);
  // Kept alive: the nodes received view their text.
  auto all = parse_host_trace("t.json", text, size_t{0}, &whole);
  ASSERT_TRUE(all.ok()) << all.status().message();
  auto w = parse_host_trace("t.json", text, size_t{100}, &windowed);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_GT(w->parse_windows, 1u);
  ASSERT_EQ(whole.received.size(), windowed.received.size());
  for (size_t i = 0; i < whole.received.size(); ++i) {
    const Received& a = whole.received[i];
    const Received& b = windowed.received[i];
    ASSERT_EQ(a.node.id, b.node.id) << i;
    ASSERT_EQ(a.node.byte_offset, b.node.byte_offset) << i;
    ASSERT_EQ(a.sync_deps, b.sync_deps) << i;
    ASSERT_EQ(a.detail.op_schema, b.detail.op_schema) << i;
    for (int f = 0; f < kHostIoLists; ++f) {
      ASSERT_EQ(in_raw(a.node, a.detail.io[f]), in_raw(b.node, b.detail.io[f])) << i;
    }
  }
  // Invalid UTF-8 halfway: the windows give up, the whole document is read again.
  std::string bad = text;
  bad.insert(bad.find("\"name\": \"", bad.size() / 2) + 9, "\xff");
  RecordingSink again(false);
  auto r = parse_host_trace("t.json", bad, size_t{100}, &again);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->parse_windows, 0u);
  EXPECT_EQ(again.restarts, 1);
  EXPECT_EQ(again.received.size(), whole.received.size());
}

// ---------- the nodes array read in shards ----------

// Parses `text` whole and in shards of each count (shards of at least `min_bytes`, windows of
// `window` bytes, one after another on this thread: OrderedBatches' own run): the same trace
// (the nodes' positions in the file too), or the same error. Returns the shards of the last count
// (0: not read in shards).
size_t expect_shards_read_as_whole(const std::string& text, const std::string& what,
                                   std::initializer_list<size_t> counts, size_t window = 4096,
                                   size_t min_bytes = 1024) {
  const OrderedBatches in_turn;
  auto whole = parse_host_trace("t.json", text, size_t{0});
  size_t shards = 0;
  for (size_t count : counts) {
    auto sharded =
        parse_host_trace("t.json", text, window, ParseShards{&in_turn, count, min_bytes});
    const std::string label = fmt::format("{}, {} shards", what, count);
    if (!testing::expect_read_as_whole(whole, sharded, label, expect_same_trace)) continue;
    for (size_t i = 0; i < whole->nodes.size() && !::testing::Test::HasFailure(); ++i) {
      EXPECT_EQ(whole->nodes[i].file_index, sharded->nodes[i].file_index) << label << ", " << i;
    }
    if (sharded->parse_shards > 0) {
      EXPECT_EQ(std::string_view(sharded->text), text) << label << ": the text was left changed";
    }
    shards = sharded->parse_shards;
  }
  return shards;
}

TEST(HostTraceShards, SyntheticTracesReadAsWhole) {
  for (bool legacy : {false, true}) {
    const std::string text = synthetic_host_trace(1, 0.03, legacy);
    const std::string what = legacy ? "synth 1.0.1" : "synth 1.1.x";
    ASSERT_GT(text.size(), 16 * 4096u) << what;
    EXPECT_EQ(expect_shards_read_as_whole(text, what, {2, 3, 7, 16}), 16u) << what;
  }
}

TEST(HostTraceShards, RealTracesReadAsWhole) {
  CF_REQUIRE_SHARED_DATA("host_et");
  testing::expect_real_traces_read_in_shards(
      shared_host_traces({"host_et", "pairs", "pt211_h200"}),
      [](const std::string& text, const std::string& path) {
        return expect_shards_read_as_whole(text, path, {2, 5});
      });
}

// Cuts that look right and are not ({"id": after `}, ` in nested lists and in strings, all over
// the text), root fields before and after the array ("schema" after it), and a key repeated
// across the array.
TEST(HostTraceShards, FalseCutsAndRootFieldsReadAsWhole) {
  std::string nodes;
  for (int i = 1; i <= 400; ++i) {
    if (i > 1) nodes += testing::hard_cut_separator(i);
    nodes += fmt::format(
        R"({{"id": {}, "name": "{}", "ctrl_deps": {}, "inputs": {{"values": [[{{"id": 1}}, )"
        R"({{"id": 2}},{{"id": "}}, {{\"id\": 3"}}]], "shapes": [], "types": []}}, )"
        R"("attrs": [{{"name": "rf_id", "type": "uint64", "value": {}}}]}})",
        401 - i, testing::hard_cut_string(i), i > 1 ? 400 : 0, i);
  }
  const std::string head = R"({"pid": 1, "meta": [{"x": 0}],)"
                           "\n\"nodes\": [";
  const std::string text = head + nodes + "],\n\"schema\": \"1.0.1\", \"finish_ts\": 12}";
  auto whole = parse_host_trace("t.json", text, size_t{0});
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(whole->layout, HostLayout::kFlat);  // the schema after the array decides
  expect_shards_read_as_whole(text, "false cuts", {2, 3, 6, 11}, 512, 256);
  // Clean cuts: shards read it.
  std::string clean;
  for (int i = 1; i <= 400; ++i) {
    if (i > 1) clean += ",\n";
    clean += fmt::format(R"({{"id": {}, "name": "op{}", "ctrl_deps": 1, "attrs": []}})", i, i);
  }
  EXPECT_GE(expect_shards_read_as_whole(head + clean + "],\n\"schema\": \"1.0.1\"}", "clean", {4},
                                        512, 256),
            2u);
  expect_shards_read_as_whole(head + clean + "],\n\"pid\": 2}", "pid twice", {2, 4}, 512, 256);
}

// An element larger than a cut's search where the first cut would fall: the shard before takes
// it, and the later cuts are made.
TEST(HostTraceShards, ALargeElementWhereACutFallsLeavesTheOtherCuts) {
  std::string nodes;
  for (int i = 1; i <= 400; ++i) {
    if (i > 1) nodes += ",\n";
    // Node 100 (about a quarter into the text) holds a name of 12 KB.
    const std::string name = i == 100 ? std::string(12000, 'x') : fmt::format("op{}", i);
    nodes += fmt::format(R"({{"id": {}, "name": "{}", "ctrl_deps": 1, "attrs": []}})", i, name);
  }
  const std::string text = R"({"schema": "1.1.1-chakra.0.0.4", "nodes": [)" + nodes + "]}";
  ASSERT_GT(text.find(std::string(12000, 'x')), text.size() / 4 - 6000);
  ASSERT_LT(text.find(std::string(12000, 'x')), text.size() / 4);
  EXPECT_EQ(expect_shards_read_as_whole(text, "a large element", {4}, 512, 256), 3u);
}

// A sink receives the nodes in file order, one at a time: no shards for it.
TEST(HostTraceShards, NotWithASink) {
  const std::string text = synthetic_host_trace(1, 0.03, false);
  const OrderedBatches in_turn;
  testing::TempDir dir;
  const std::string path = dir.file("host.json");
  testing::write_text(path, text);
  RecordingSink sink(true);
  auto t = load_host_trace(path, &sink, 4096, ParseShards{&in_turn, 4, 1024});
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->parse_shards, 0u);
  EXPECT_GT(t->parse_windows, 1u);
  EXPECT_EQ(sink.received.size(), t->nodes.size());
}

// The loaders' default windows grow with the text (json::window_bytes_for: fewer windows, each
// patched page copied once), from 256 KB to 1 MB, and read the same nodes as 256 KB ones.
TEST(HostEtLoader, DefaultWindowsAreSizedByTheText) {
  EXPECT_EQ(json::window_bytes_for(0), size_t{256} << 10);
  EXPECT_EQ(json::window_bytes_for(size_t{4} << 20), size_t{256} << 10);
  EXPECT_EQ(json::window_bytes_for(size_t{16} << 20), size_t{512} << 10);
  EXPECT_EQ(json::window_bytes_for(size_t{1} << 30), size_t{1} << 20);
  for (size_t bytes = 1; bytes < (size_t{64} << 20); bytes += 999'983) {
    EXPECT_LE(json::window_bytes_for(bytes), json::window_bytes_for(bytes + 999'983)) << bytes;
  }
  SynthOptions opt;
  opt.ranks = 2;
  opt.scale = 1.6;
  const auto [sized, fixed] = testing::read_in_sized_and_fixed_windows(
      synthesize_rank_text(opt, 1).host,
      [](const std::string& text, size_t w) { return parse_host_trace("t.json", text, w); });
  ASSERT_TRUE(sized.ok() && fixed.ok());
  ASSERT_EQ(sized->nodes.size(), fixed->nodes.size());
  size_t differ = 0;
  for (size_t i = 0; i < sized->nodes.size(); ++i) {
    const HostNode& a = sized->nodes[i];
    const HostNode& b = fixed->nodes[i];
    differ += a.id != b.id || a.raw != b.raw || a.name != b.name || a.parent != b.parent;
  }
  EXPECT_EQ(differ, 0u);
}

}  // namespace
}  // namespace chakraflow
