#include "stages/feed/multi_feeder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>

#include <map>
#include <set>
#include <tuple>

#include "tests/feed/feeder_test_util.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::TraceNode;
using testing::write_trace;

struct Popped {
  int64_t time;
  uint32_t rank;
  NodeId id;
  bool operator==(const Popped& o) const {
    return std::tie(time, rank, id) == std::tie(o.time, o.rank, o.id);
  }
};

// Rounds of release -> pop all -> complete at time + duration; bounded.
std::vector<Popped> drive(MultiFeeder& feeder, int max_rounds = 100000) {
  std::vector<Popped> popped;
  std::vector<Completion> batch;
  for (int round = 0; round < max_rounds; ++round) {
    feeder.release_ready();
    batch.clear();
    ReadyNode ready;
    while (feeder.try_pop(&ready)) {
      popped.push_back({ready.time, ready.rank, ready.id});
      batch.push_back(
          {ready.rank, ready.id, ready.time + static_cast<int64_t>(ready.node->duration_micros)});
    }
    if (batch.empty()) break;
    Status s = feeder.complete_all(batch);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  return popped;
}

class MultiFeederTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Rank 0: 1 (10 us) -> 2 (5 us) -> 4, 3 (1 us) -> 4. Rank 1: 7 (3 us) -> 8, 9 independent.
    write_trace(dir_.file("r0.et"),
                {{1, {}, {}, 10}, {2, {1}, {}, 5}, {3, {}, {}, 1}, {4, {2, 3}, {}, 1}});
    write_trace(dir_.file("r1.et"), {{8, {7}, {}, 2}, {7, {}, {}, 3}, {9, {}, {}, 4}});
    paths_ = {dir_.file("r0.et"), dir_.file("r1.et")};
  }
  TempDir dir_;
  std::vector<std::string> paths_;
};

TEST_F(MultiFeederTest, PopsByReadyTimeThenRankThenId) {
  auto feeder = MultiFeeder::open(paths_);
  ASSERT_TRUE(feeder.ok()) << feeder.status().message();
  EXPECT_EQ((*feeder)->ranks(), 2u);
  auto popped = drive(**feeder);
  const std::vector<Popped> expected = {
      {0, 0, 1},  {0, 0, 3},  {0, 1, 7}, {0, 1, 9},  // round 1: every root
      {3, 1, 8},  {10, 0, 2},                        // 8 ready at 3 (7 done), 2 at 10 (1 done)
      {15, 0, 4},                                    // 4 waits on 2 (done at 15) and 3 (at 1)
  };
  EXPECT_EQ(popped, expected);
  EXPECT_EQ((*feeder)->state(), FeedState::kDone);
  for (const RankSummary& s : (*feeder)->summary()) {
    EXPECT_EQ(s.state, FeedState::kDone);
    EXPECT_TRUE(s.problem.empty());
  }
}

TEST_F(MultiFeederTest, SameSequenceWhateverTheThreadCount) {
  // Sixteen ranks of random-ish graphs.
  std::vector<std::string> paths;
  for (int r = 0; r < 16; ++r) {
    std::vector<TraceNode> nodes;
    for (uint64_t id = 0; id < 300; ++id) {
      TraceNode t{id, {}, {}, (id * 7 + r) % 13};
      if (id > 0) t.data_deps.push_back((id * 31 + r) % id);
      if (id > 3) t.data_deps.push_back(id - 3);
      nodes.push_back(t);
    }
    paths.push_back(dir_.file("rank" + std::to_string(r) + ".et"));
    write_trace(paths.back(), nodes);
  }
  std::vector<Popped> runs[2];
  for (int run = 0; run < 2; ++run) {
    oneapi::tbb::global_control threads(oneapi::tbb::global_control::max_allowed_parallelism,
                                        run == 0 ? 1 : 8);
    auto feeder = MultiFeeder::open(paths);
    ASSERT_TRUE(feeder.ok());
    runs[run] = drive(**feeder);
    EXPECT_EQ((*feeder)->state(), FeedState::kDone);
  }
  EXPECT_EQ(runs[0].size(), 16u * 300);
  EXPECT_EQ(runs[0], runs[1]);
}

TEST_F(MultiFeederTest, ConcurrentCompletionsFromManyThreads) {
  auto feeder = MultiFeeder::open(paths_);
  ASSERT_TRUE(feeder.ok());
  MultiFeeder& f = **feeder;
  std::set<std::pair<uint32_t, NodeId>> seen;
  for (int round = 0; round < 100; ++round) {
    if (f.release_ready() == 0 && f.queue_empty()) break;
    std::vector<ReadyNode> popped;
    ReadyNode ready;
    while (f.try_pop(&ready)) popped.push_back(ready);
    std::vector<Status> results(popped.size());
    oneapi::tbb::parallel_for(size_t{0}, popped.size(), [&](size_t i) {
      results[i] = f.complete(popped[i].rank, popped[i].id, popped[i].time + 1);
    });
    for (size_t i = 0; i < popped.size(); ++i) {
      EXPECT_TRUE(results[i].ok()) << results[i].message();
      EXPECT_TRUE(seen.insert({popped[i].rank, popped[i].id}).second) << "issued twice";
    }
  }
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_EQ(f.state(), FeedState::kDone);
}

TEST_F(MultiFeederTest, PushBackRequeuesOnTheNextRelease) {
  auto feeder = MultiFeeder::open(paths_);
  ASSERT_TRUE(feeder.ok());
  MultiFeeder& f = **feeder;
  EXPECT_EQ(f.release_ready(), 4u);
  ReadyNode first;
  ASSERT_TRUE(f.try_pop(&first));
  EXPECT_EQ(first.id, 1u);
  ASSERT_TRUE(f.push_back(first.rank, first.id).ok());
  EXPECT_EQ(f.release_ready(), 1u);
  std::vector<NodeId> order;
  ReadyNode ready;
  while (f.try_pop(&ready)) order.push_back(ready.id);
  EXPECT_EQ(order, (std::vector<NodeId>{1, 3, 7, 9}));
  EXPECT_FALSE(f.complete(5, 1, 0).ok());  // no such rank
}

TEST_F(MultiFeederTest, StalledRankIsReported) {
  write_trace(dir_.file("cycle.et"), {{1, {2}}, {2, {1}}, {3, {}}});
  auto feeder = MultiFeeder::open({paths_[0], dir_.file("cycle.et")});
  ASSERT_TRUE(feeder.ok());
  auto popped = drive(**feeder);
  EXPECT_EQ(popped.size(), 5u);  // rank 0's four nodes and rank 1's node 3
  EXPECT_EQ((*feeder)->state(), FeedState::kStalled);
  auto summary = (*feeder)->summary();
  EXPECT_EQ(summary[0].state, FeedState::kDone);
  EXPECT_EQ(summary[1].state, FeedState::kStalled);
  EXPECT_THAT(summary[1].problem, HasSubstr("cycle 1 -> 2 -> 1"));
}

TEST_F(MultiFeederTest, OpenErrorNamesTheRank) {
  auto feeder = MultiFeeder::open({paths_[0], dir_.file("absent.et")});
  ASSERT_FALSE(feeder.ok());
  EXPECT_THAT(feeder.status().message(), HasSubstr("rank 1"));
  EXPECT_THAT(feeder.status().message(), HasSubstr("absent.et"));
}

}  // namespace
}  // namespace chakraflow
