#include "stages/host_et_loader.h"

#include <gtest/gtest.h>

#include "tests/testing/trace_builder.h"

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

}  // namespace
}  // namespace chakraflow
