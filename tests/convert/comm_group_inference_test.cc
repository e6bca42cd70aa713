#include "stages/convert/comm_group_inference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "proto/et_def.pb.h"
#include "stages/et/et_io.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

constexpr int32_t kColl = 7;       // COMM_COLL_NODE
constexpr int32_t kAllReduce = 0;  // ALL_REDUCE

CpuCollective coll(uint64_t id, int64_t size, uint64_t start, uint64_t end,
                   std::string pg_name = "0") {
  return {id, kColl, kAllReduce, size, start, end - start, std::move(pg_name)};
}

// Four ranks in the default group "0" and in {0,1} ("1") or {2,3} ("2"), as PyTorch lists them:
// each rank declares the groups it belongs to.
RankCommGroups rank_of(int rank, std::vector<CpuCollective> collectives) {
  RankCommGroups r;
  r.rank = rank;
  r.declared["0"] = {};
  r.declared[rank < 2 ? "1" : "2"] = rank < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
  r.cpu_collectives = std::move(collectives);
  return r;
}

const std::vector<int> kWorld = {0, 1, 2, 3};

// The shape of gloo_4rank: each pair first runs an all-reduce of 16 KB on its own group, at
// different times (ranks 0 and 1 end theirs before ranks 2 and 3 start), then all four run
// two buckets on the default group. Conversion wrote "0" everywhere.
std::vector<RankCommGroups> subgroups_then_buckets() {
  std::vector<RankCommGroups> ranks;
  for (int r = 0; r < 4; ++r) {
    const uint64_t early = r < 2 ? 100 : 1600;  // the pairs' first collectives do not overlap
    ranks.push_back(rank_of(r, {coll(10 + r, 16384, early, early + 1000),
                                coll(20 + r, 4 << 20, 3000 + 10 * r, 9000 + r),
                                coll(30 + r, 2 << 20, 9500 + 10 * r, 12000 + r)}));
  }
  return ranks;
}

TEST(PlaceCpuCollectives, SubgroupsAreFoundWhereNoMemberEndsBeforeAnotherStarts) {
  const CollectivePlacement p = place_cpu_collectives(subgroups_then_buckets(), kWorld);
  EXPECT_EQ(p.considered, 12u);
  EXPECT_EQ(p.placed, 12u);
  EXPECT_EQ(p.unplaced, 0u);
  // Only the first collective of each rank moves, to its pair's group.
  ASSERT_EQ(p.changed.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    const auto& changed = p.changed.at(r);
    ASSERT_EQ(changed.size(), 1u) << "rank " << r;
    EXPECT_EQ(changed.begin()->first, uint64_t(10 + r));
    EXPECT_EQ(changed.begin()->second, r < 2 ? "1" : "2");
  }
}

TEST(PlaceCpuCollectives, OverlappingCollectivesOfOneShapeGoToTheLargestGroup) {
  // The pairs' first collectives overlap in time: nothing tells them from one collective of the
  // default group, where they are placed (documented).
  auto ranks = subgroups_then_buckets();
  for (auto& r : ranks) r.cpu_collectives[0] = coll(10 + r.rank, 16384, 100 + r.rank, 1100);
  const CollectivePlacement p = place_cpu_collectives(ranks, kWorld);
  EXPECT_EQ(p.placed, 12u);
  EXPECT_TRUE(p.changed.empty());
}

TEST(PlaceCpuCollectives, ShapesThatDoNotMatchAreLeftAndCounted) {
  // Rank 3's last bucket has another size: the default group no longer fits that bucket; ranks 0
  // and 1 still agree with each other (their pair's group fits), ranks 2 and 3 do not.
  auto ranks = subgroups_then_buckets();
  ranks[3].cpu_collectives[2].comm_size = 1 << 20;
  const CollectivePlacement p = place_cpu_collectives(ranks, kWorld);
  EXPECT_EQ(p.considered, 12u);
  EXPECT_EQ(p.unplaced, 2u);
  EXPECT_EQ(p.placed, 10u);
  EXPECT_EQ(p.changed.at(0).at(30), "1");
  EXPECT_EQ(p.changed.at(2).count(32), 0u);  // left as written
  EXPECT_EQ(p.changed.at(3).count(33), 0u);
  // Without times the order and shapes still place what they can: the buckets; the first
  // collectives of all four ranks look like one of the default group.
  auto untimed = subgroups_then_buckets();
  for (auto& r : untimed) {
    for (auto& c : r.cpu_collectives) c.start_us = 0;
  }
  const CollectivePlacement q = place_cpu_collectives(untimed, kWorld);
  EXPECT_EQ(q.placed, 12u);
  EXPECT_TRUE(q.changed.empty());
}

TEST(PlaceCpuCollectives, ARankInOneGroupAndNamedGroupsAreKept) {
  auto ranks = subgroups_then_buckets();
  // A name other than the default group's came from a record: it stays, and its members follow
  // it; rank 2 and 3 write theirs too.
  ranks[0].cpu_collectives[0].pg_name = "1";
  ranks[1].cpu_collectives[0].pg_name = "1";
  const CollectivePlacement p = place_cpu_collectives(ranks, kWorld);
  EXPECT_EQ(p.placed, 12u);
  EXPECT_EQ(p.changed.count(0), 0u);
  EXPECT_EQ(p.changed.count(1), 0u);
  EXPECT_EQ(p.changed.at(2).at(12), "2");
  // Ranks in a single group have nothing to place.
  std::vector<RankCommGroups> single;
  for (int r = 0; r < 2; ++r) {
    RankCommGroups g;
    g.rank = r;
    g.declared["0"] = {};
    g.cpu_collectives = {coll(1, 8, 10, 20)};
    single.push_back(g);
  }
  const CollectivePlacement s = place_cpu_collectives(single, {0, 1});
  EXPECT_EQ(s.considered, 0u);
  EXPECT_TRUE(s.changed.empty());
}

TEST(PlaceCpuCollectives, TheResultDoesNotDependOnTheInputOrder) {
  const CollectivePlacement expected = place_cpu_collectives(subgroups_then_buckets(), kWorld);
  std::mt19937 rng(7);
  for (int round = 0; round < 10; ++round) {
    auto ranks = subgroups_then_buckets();
    std::shuffle(ranks.begin(), ranks.end(), rng);
    const CollectivePlacement p = place_cpu_collectives(ranks, kWorld);
    EXPECT_EQ(p.changed, expected.changed);
    EXPECT_EQ(p.placed, expected.placed);
  }
}

TEST(RewritePgNames, ChangesOnlyTheNamedNodesAndWritesWhatProtobufWould) {
  testing::TempDir dir;
  const std::string path = dir.file("t.et");
  ChakraProtoMsg::GlobalMetadata md;
  md.set_version("1.0.0");
  std::vector<ChakraProtoMsg::Node> nodes(3);
  for (int i = 0; i < 3; ++i) {
    nodes[i].set_id(i + 1);
    nodes[i].set_name("gloo:all_reduce");
    nodes[i].set_type(ChakraProtoMsg::COMM_COLL_NODE);
    auto* a = nodes[i].add_attr();
    a->set_name("pg_name");
    a->set_string_val("0");
    auto* b = nodes[i].add_attr();
    b->set_name("comm_size");
    b->set_int64_val(64);
  }
  nodes[2].mutable_attr()->DeleteSubrange(0, 1);  // no pg_name: one is added
  {
    auto w = EtWriter::open(path);
    ASSERT_TRUE(w.ok());
    w->write(md);
    for (const auto& n : nodes) w->write(n);
    ASSERT_TRUE(w->commit().ok());
  }
  ASSERT_TRUE(rewrite_pg_names(path, {{2, "1"}, {3, "2"}}).ok());
  nodes[1].mutable_attr(0)->set_string_val("1");
  auto* added = nodes[2].add_attr();
  added->set_name("pg_name");
  added->set_string_val("2");
  auto r = EtReader::open(path);
  ASSERT_TRUE(r.ok());
  ChakraProtoMsg::GlobalMetadata md_read;
  ASSERT_TRUE(r->next(&md_read).value());
  EXPECT_EQ(md_read.SerializeAsString(), md.SerializeAsString());
  for (const auto& n : nodes) {
    std::string_view raw;
    ASSERT_TRUE(r->next_raw(&raw).value());
    EXPECT_EQ(std::string(raw), n.SerializeAsString()) << "node " << n.id();
  }
  std::string_view raw;
  EXPECT_FALSE(r->next_raw(&raw).value());
  // A node that is not there is an error naming the file; the trace is left as it was.
  const std::string before = testing::read_text(path);
  Status missing = rewrite_pg_names(path, {{9, "1"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("t.et"), std::string::npos) << missing.message();
  EXPECT_EQ(testing::read_text(path), before);
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) files += e.exists();
  EXPECT_EQ(files, 1u) << "a temporary file was left behind";
}

}  // namespace
}  // namespace chakraflow
