// The feeder on Chakra's own test trace (chakra.0.et: 3,664 nodes, 181,878 data dependencies)
// and the microbenchmark traces, in process and through `chakraflow feed`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include <fmt/format.h>

#include "stages/et/et_io.h"
#include "stages/feed/et_feeder.h"
#include "stages/feed/multi_feeder.h"
#include "tests/feed/feeder_test_util.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

using testing::feed_sync;
using ::testing::HasSubstr;
using testing::TempDir;

const char* const kChakra0 = "chakra_et/resnet_ddp_rank0/chakra.0.et";
std::string data_path(const std::string& relative) {
  return (testing::shared_data_dir() / relative).string();
}

uint64_t checksum_of(const std::vector<NodeId>& order) {
  IssueChecksum c;
  for (NodeId id : order) c.add(id);
  return c.value();
}

TEST(FeederGolden, Chakra0IssuesEveryNodeInChakrasOrder) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  auto r = feed_sync(data_path(kChakra0));
  ASSERT_EQ(r.state, FeedState::kDone) << r.error;
  EXPECT_EQ(r.order.size(), 3664u);
  EXPECT_EQ(std::set<NodeId>(r.order.begin(), r.order.end()).size(), 3664u);
  // Chakra's feeder with get -> freeChildren -> remove (spec §4.5).
  const std::vector<NodeId> chakra_first = {216, 217, 430, 432, 433, 435, 541};
  EXPECT_EQ(std::vector<NodeId>(r.order.begin(), r.order.begin() + 7), chakra_first);
  EXPECT_EQ(r.stats.dependencies, 181878u);
  EXPECT_GT(r.stats.forward_deps, 0u);  // 53 dependencies name a node later in the file
  EXPECT_LE(r.stats.forward_deps, 53u);
  EXPECT_FALSE(r.stats.metadata_missing);
}

TEST(FeederGolden, Chakra0OrderIsTheSameForEveryWindow) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  FeederOptions eager;
  eager.refill_below = 0;
  const auto reference = feed_sync(data_path(kChakra0), eager).order;
  ASSERT_EQ(reference.size(), 3664u);
  for (uint64_t window : {1, 2, 16, 1024}) {
    for (uint64_t refill : {0, 1, 256}) {
      FeederOptions o;
      o.window = window;
      o.refill_below = refill;
      auto r = feed_sync(data_path(kChakra0), o);
      EXPECT_EQ(r.state, FeedState::kDone);
      EXPECT_EQ(r.order, reference) << "window " << window << " refill " << refill;
      EXPECT_LE(r.stats.max_resident, window + r.stats.reads_past_window);
    }
  }
}

TEST(FeederGolden, Chakra0FirstIssuableIdsChildrenAndLookup) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  auto opened = EtFeeder::open(data_path(kChakra0));
  ASSERT_TRUE(opened.ok());
  EtFeeder& f = **opened;
  const FeederNode* first = f.issue();
  const FeederNode* second = f.issue();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->id, 216u);
  EXPECT_EQ(second->id, 432u);
  EXPECT_EQ(first->type, 4);   // COMP_NODE
  EXPECT_EQ(second->type, 7);  // COMM_COLL_NODE
  const auto children = f.children(216);
  ASSERT_GE(children.size(), 3u);
  EXPECT_EQ(std::vector<NodeId>(children.begin(), children.begin() + 3),
            (std::vector<NodeId>{217, 430, 435}));
  EXPECT_NE(f.find(216), nullptr);
  ASSERT_TRUE(f.complete(216).ok());
  EXPECT_EQ(f.find(216), nullptr);
  EXPECT_FALSE(f.complete(216).ok());
  EXPECT_EQ(f.issue()->id, 217u);
}

TEST(FeederGolden, Chakra0WithCtrlDepsStallsOnTheMissingProcessNode) {
  // The converter leaves ctrl_deps pointing at nodes it removed (spec §5 #21): honouring them,
  // nothing can start; the report names the missing ids instead of hanging.
  CF_REQUIRE_SHARED_DATA(kChakra0);
  FeederOptions o;
  o.ctrl_deps = true;
  auto r = feed_sync(data_path(kChakra0), o);
  EXPECT_TRUE(r.order.empty());
  EXPECT_EQ(r.state, FeedState::kStalled);
  EXPECT_EQ(r.report.waiting_nodes, 3664u);
  bool found3 = false;
  for (const auto& m : r.report.missing) {
    if (m.id == 3) {
      found3 = true;
      EXPECT_EQ(m.waiting, 851u);
    }
  }
  EXPECT_TRUE(found3);
  EXPECT_EQ(r.report.missing.size(), 210u);  // ids named by a dependency, absent from the trace
  // ctrl_deps name the enclosing op, data_deps the ops before: together they form cycles.
  ASSERT_FALSE(r.report.cycles.empty());
  EXPECT_EQ(r.report.cycles[0], (std::vector<NodeId>{3317, 3318}));
  EXPECT_THAT(r.report.to_string(), HasSubstr("wait on id 3, which is not in the trace"));
}

TEST(FeederGolden, Chakra0GzipGivesTheSameOrder) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  TempDir dir;
  {
    auto reader = EtReader::open(data_path(kChakra0));
    ASSERT_TRUE(reader.ok());
    auto writer = EtWriter::open(dir.file("chakra.0.et.gz"));
    ASSERT_TRUE(writer.ok());
    std::string_view record;
    while (true) {
      auto got = reader->next_raw(&record);
      ASSERT_TRUE(got.ok());
      if (!*got) break;
      writer->write_raw(record);
    }
    ASSERT_TRUE(writer->commit().ok());
  }
  auto plain = feed_sync(data_path(kChakra0));
  auto gz = feed_sync(dir.file("chakra.0.et.gz"));
  EXPECT_EQ(gz.state, FeedState::kDone);
  EXPECT_EQ(gz.order, plain.order);
}

TEST(FeederGolden, MicrobenchmarkRanksOnTheMultiFeeder) {
  const std::string ring = "chakra_et/microbench_synthetic/custom_ring_allreduce_8npus_1MB";
  CF_REQUIRE_SHARED_DATA(ring);
  std::vector<std::string> paths;
  for (int r = 0; r < 8; ++r) {
    paths.push_back(data_path(fmt::format("{}/custom_allreduce.{}.et", ring, r)));
  }
  auto feeder = MultiFeeder::open(paths);
  ASSERT_TRUE(feeder.ok()) << feeder.status().message();
  std::vector<uint64_t> per_rank(8, 0);
  std::vector<Completion> batch;
  for (int round = 0; round < 1000; ++round) {
    (*feeder)->release_ready();
    batch.clear();
    ReadyNode ready;
    while ((*feeder)->try_pop(&ready)) {
      ++per_rank[ready.rank];
      batch.push_back({ready.rank, ready.id, ready.time + 1});
    }
    if (batch.empty()) break;
    ASSERT_TRUE((*feeder)->complete_all(batch).ok());
  }
  EXPECT_EQ((*feeder)->state(), FeedState::kDone);
  EXPECT_EQ(per_rank, std::vector<uint64_t>(8, 35));
}

// --- The CLI.

TEST(FeedCommand, IssuesChakra0AndPrintsTheChecksum) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  const auto reference = feed_sync(data_path(kChakra0)).order;
  std::string out;
  int rc = testing::run_command(
      fmt::format("{} feed {} --window 64", CHAKRAFLOW_BINARY, data_path(kChakra0)), &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("nodes issued:  3664 (read 3664)"));
  EXPECT_THAT(out, HasSubstr(fmt::format("checksum {:016x}", checksum_of(reference))));
  EXPECT_THAT(out, HasSubstr("first ids 216 217 430 432 433 435 541 542"));
  EXPECT_THAT(out, HasSubstr("end state:     done"));
  EXPECT_THAT(out, HasSubstr("nodes/s"));
}

TEST(FeedCommand, StalledTraceExitsWithTheIds) {
  TempDir dir;
  testing::write_trace(dir.file("t.et"), {{1, {2}}, {2, {1}}, {3, {}}, {4, {77}}});
  std::string out;
  int rc =
      testing::run_command(fmt::format("{} feed {}", CHAKRAFLOW_BINARY, dir.file("t.et")), &out);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_THAT(out, HasSubstr("end state:     stalled"));
  EXPECT_THAT(out, HasSubstr("cycle 1 -> 2 -> 1"));
  EXPECT_THAT(out, HasSubstr("node 4 waits on id 77, which is not in the trace"));
}

TEST(FeedCommand, SeveralRanksAndUsageErrors) {
  TempDir dir;
  testing::write_trace(dir.file("a.et"), {{1, {}}, {2, {1}}});
  testing::write_trace(dir.file("b.et.gz"), {{5, {6}}, {6, {}}, {7, {5, 6}}});
  std::string out;
  int rc = testing::run_command(fmt::format("{} feed {} {} --window 2 --quiet", CHAKRAFLOW_BINARY,
                                            dir.file("a.et"), dir.file("b.et.gz")),
                                &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("rank 0"));
  EXPECT_THAT(out, HasSubstr("2 ranks, 5 nodes"));
  EXPECT_THAT(out, HasSubstr("end state done"));
  EXPECT_EQ(testing::run_command(fmt::format("{} feed", CHAKRAFLOW_BINARY), &out), 2);
  EXPECT_EQ(testing::run_command(
                fmt::format("{} feed {} --window 0", CHAKRAFLOW_BINARY, dir.file("a.et")), &out),
            2);
  EXPECT_EQ(
      testing::run_command(fmt::format("{} feed {}", CHAKRAFLOW_BINARY, dir.file("no.et")), &out),
      1);
  EXPECT_THAT(out, HasSubstr("no.et"));
}

}  // namespace
}  // namespace chakraflow
