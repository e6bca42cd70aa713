// Communicator groups (stages/convert/comm_groups.h): read from hand-made traces, combined over
// ranks, written as ASTRA-sim's JSON.
#include "stages/convert/comm_groups.h"

#include <gtest/gtest.h>

#include "proto/et_def.pb.h"
#include "stages/convert/convert_model.h"
#include "stages/et/et_io.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

using testing::TempDir;

ChakraProtoMsg::Node comm_node(uint64_t id, const std::string& pg) {
  ChakraProtoMsg::Node n;
  n.set_id(id);
  n.set_name("nccl:all_reduce");
  n.set_type(ChakraProtoMsg::COMM_COLL_NODE);
  if (!pg.empty()) {
    auto* a = n.add_attr();
    a->set_name("pg_name");
    a->set_string_val(pg);
  }
  return n;
}

ChakraProtoMsg::Node metadata_node(uint64_t id, const std::string& groups, bool as_compute) {
  ChakraProtoMsg::Node n;
  n.set_id(id);
  n.set_name("## process_group:init ##");
  n.set_type(as_compute ? ChakraProtoMsg::COMP_NODE : ChakraProtoMsg::METADATA_NODE);
  n.mutable_inputs()->set_values("['" + groups + "']");
  return n;
}

void write_nodes(const std::string& path, const std::vector<ChakraProtoMsg::Node>& nodes) {
  auto writer = EtWriter::open(path);
  ASSERT_TRUE(writer.ok());
  ChakraProtoMsg::GlobalMetadata meta;
  meta.set_version("0.0.4");
  writer->write(meta);
  for (const auto& n : nodes) writer->write(n);
  ASSERT_TRUE(writer->commit().ok());
}

TEST(CommGroups, ScanReadsMetadataAndCollectives) {
  TempDir dir;
  write_nodes(dir.file("r1.et"),
              {metadata_node(1,
                             R"([{"pg_name": "0", "ranks": []}, )"
                             R"({"pg_name": "3", "pg_desc": "tp", "ranks": [3, 1, 1]}])",
                             /*as_compute=*/true),
               comm_node(2, "3"), comm_node(3, "7"), comm_node(4, "")});
  auto scanned = scan_comm_groups(dir.file("r1.et"), 1, 0);
  ASSERT_TRUE(scanned.ok()) << scanned.status().message();
  EXPECT_EQ(scanned->declared.size(), 2u);
  EXPECT_TRUE(scanned->declared.at("0").empty());
  EXPECT_EQ(scanned->declared.at("3"), (std::vector<int>{1, 3}));
  EXPECT_EQ(scanned->used, (std::set<std::string>{"3", "7"}));
  EXPECT_EQ(scanned->unreadable_metadata, 0u);
  // With an offset, the metadata's numeric names move as the converter moves pg_name.
  auto offset = scan_comm_groups(dir.file("r1.et"), 1, 1);
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(offset->declared.count("1"), 1u);
  EXPECT_EQ(offset->declared.count("4"), 1u);
}

TEST(CommGroups, UnreadableMetadataIsCountedAndBadFilesNamed) {
  TempDir dir;
  write_nodes(dir.file("r.et"), {metadata_node(1, "not json", false), comm_node(2, "0")});
  auto scanned = scan_comm_groups(dir.file("r.et"), 0, 0);
  ASSERT_TRUE(scanned.ok());
  EXPECT_EQ(scanned->unreadable_metadata, 1u);
  testing::write_text(dir.file("cut.et"), std::string("\x05\x0a\x03", 3));
  auto bad = scan_comm_groups(dir.file("cut.et"), 0, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(dir.file("cut.et")), std::string::npos);
}

TEST(CommGroups, BuildCombinesRanks) {
  RankCommGroups r0, r1;
  r0.rank = 0;
  r1.rank = 1;
  r0.declared = {{"0", {}}, {"5", {0, 1}}};
  r1.declared = {{"0", {}}, {"5", {1, 2}}};
  r0.used = {"5", "9"};
  r1.used = {"9", "abc"};
  const CommGroups g = build_comm_groups({r0, r1}, {0, 1, 2}, 0);
  EXPECT_EQ(g.groups.at("0"), (std::vector<int>{0, 1, 2}));  // empty ranks: the world
  EXPECT_EQ(g.groups.at("5"), (std::vector<int>{0, 1, 2}));  // union of what ranks declare
  EXPECT_EQ(g.groups.at("9"), (std::vector<int>{0, 1}));     // inferred from its users
  EXPECT_EQ(g.groups.at("abc"), (std::vector<int>{1}));
  EXPECT_EQ(g.disagreements, 1u);
  EXPECT_EQ(g.inferred, 2u);
  EXPECT_FALSE(g.default_world);
  EXPECT_EQ(comm_groups_json(g),
            "{\n  \"0\": [0, 1, 2],\n  \"5\": [0, 1, 2],\n  \"9\": [0, 1],\n  \"abc\": [1]\n}\n");
}

TEST(CommGroups, NoGroupAnywhereIsTheDefaultGroupOfEveryRank) {
  RankCommGroups r0;
  const CommGroups g = build_comm_groups({r0}, {0, 1, 2, 3}, 0);
  EXPECT_TRUE(g.default_world);
  EXPECT_EQ(comm_groups_json(g), "{\n  \"0\": [0, 1, 2, 3]\n}\n");
  const CommGroups renumbered = build_comm_groups({r0}, {0, 1}, 1);
  EXPECT_EQ(comm_groups_json(renumbered), "{\n  \"1\": [0, 1]\n}\n");
  EXPECT_EQ(comm_groups_json(CommGroups{}), "{}\n");
}

// comm_groups_of searches the records in ranges: communication in several ranges, CPU-side
// collectives listed in record order whichever range they are in, on the workers or not.
TEST(CommGroups, FromAConversionInRangesInRecordOrder) {
  EtPlusTrace trace;
  ChakraTrace chakra;
  constexpr uint32_t kRecords = 100000;
  std::vector<uint64_t> off_thread;
  const std::string_view names[] = {"pg_a", "pg_b", "pg_c"};
  for (uint32_t i = 0; i < kRecords; ++i) {
    EtPlusNode& n = trace.nodes.emplace_back();
    n.id = i;
    n.name = "aten::mm";
    ChakraNodeRecord& r = chakra.nodes.emplace_back();
    r.source = i;
    if (i % 9973 == 5) {  // ten of them, in every range
      r.type = ChakraNodeType::kCommColl;
      r.comm = static_cast<uint32_t>(chakra.comm.size());
      CommAttrs& c = chakra.comm.emplace_back();
      c.pg_name = names[(i / 9973) % 3];
      c.comm_size = i;
      if (i / 9973 % 2 == 0) {
        r.set(ChakraNodeRecord::kOffThread);
        off_thread.push_back(i);
      }
    }
  }
  const OrderedBatches in_turn;
  for (const OrderedBatches* workers : {static_cast<const OrderedBatches*>(nullptr), &in_turn}) {
    auto groups = comm_groups_of(trace, chakra, 0, workers);
    ASSERT_TRUE(groups.ok()) << groups.status().message();
    EXPECT_EQ(groups->used, (std::set<std::string>{"pg_a", "pg_b", "pg_c"}));
    std::vector<uint64_t> listed;
    for (const CpuCollective& c : groups->cpu_collectives) {
      listed.push_back(c.node_id);
      EXPECT_EQ(c.comm_size, static_cast<int64_t>(c.node_id));
    }
    EXPECT_EQ(listed, off_thread);
    EXPECT_TRUE(groups->declared.empty());
  }
}

TEST(CommGroups, NumericNamesSortNumericallyAndOffsetOnlyNumbers) {
  CommGroups g;
  g.groups = {{"10", {0}}, {"2", {1}}, {"b\"x", {2}}};
  EXPECT_EQ(comm_groups_json(g), "{\n  \"2\": [1],\n  \"10\": [0],\n  \"b\\\"x\": [2]\n}\n");
  EXPECT_EQ(offset_group_name("0", 1), "1");
  EXPECT_EQ(offset_group_name("41", 1), "42");
  EXPECT_EQ(offset_group_name("default_pg", 1), "default_pg");
  EXPECT_EQ(offset_group_name("7", 0), "7");
}

}  // namespace
}  // namespace chakraflow
