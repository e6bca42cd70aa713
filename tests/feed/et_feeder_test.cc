#include "stages/feed/et_feeder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "tests/feed/feeder_test_util.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

using testing::feed_sync;
using ::testing::HasSubstr;
using testing::TempDir;
using testing::TraceNode;
using testing::write_trace;

FeederOptions window_of(uint64_t window, uint64_t refill = 256) {
  FeederOptions o;
  o.window = window;
  o.refill_below = refill;
  return o;
}

std::vector<NodeId> ids(std::initializer_list<NodeId> v) {
  return v;
}

TEST(EtFeeder, IssuesInIdOrderAndResolvesForwardReferences) {
  TempDir dir;
  // Children come before their parents in the file.
  write_trace(dir.file("t.et"), {{3, {1}}, {2, {1}}, {4, {3, 2}}, {1, {}}, {0, {4}}});
  auto r = feed_sync(dir.file("t.et"));
  EXPECT_EQ(r.order, ids({1, 2, 3, 4, 0}));
  EXPECT_EQ(r.state, FeedState::kDone);
  EXPECT_EQ(r.stats.forward_deps, 2u);  // 3 -> 1 and 2 -> 1: read before node 1
}

TEST(EtFeeder, ForwardReferenceCounts) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{3, {1}}, {2, {1}}, {1, {}}});
  auto r = feed_sync(dir.file("t.et"));
  EXPECT_EQ(r.order, ids({1, 2, 3}));
  EXPECT_EQ(r.stats.forward_deps, 2u);
  EXPECT_EQ(r.stats.dependencies, 2u);
}

TEST(EtFeeder, WindowOfTwoSatisfiesDependenciesOnCompletedNodes) {
  // Chakra, with window 2, drops node 1 before node 4 is read and then waits on it forever.
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {2, {1}}, {3, {2}}, {4, {1, 3}}, {5, {1, 2, 4}}});
  auto r = feed_sync(dir.file("t.et"), window_of(2));
  EXPECT_EQ(r.order, ids({1, 2, 3, 4, 5}));
  EXPECT_EQ(r.state, FeedState::kDone);
  EXPECT_LE(r.stats.max_resident, 2u);
  EXPECT_EQ(r.stats.reads_past_window, 0u);
  EXPECT_GT(r.stats.deps_already_done, 0u);
}

TEST(EtFeeder, WindowOfTwoNeverReissuesNodesInFlight) {
  // Chakra issues in-flight nodes again when it refills (spec §4.5, #26).
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {2, {}}, {3, {}}, {4, {}}, {5, {1}}});
  auto opened = EtFeeder::open(dir.file("t.et"), window_of(2));
  ASSERT_TRUE(opened.ok());
  EtFeeder& f = **opened;
  const FeederNode* a = f.issue();
  const FeederNode* b = f.issue();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->id, 1u);
  EXPECT_EQ(b->id, 2u);
  EXPECT_EQ(f.issue(), nullptr);  // the window is full of nodes in flight
  EXPECT_EQ(f.state(), FeedState::kRunning);
  std::multiset<NodeId> issued = {1, 2};
  ASSERT_TRUE(f.complete(2).ok());
  for (int step = 0; step < 100; ++step) {
    const FeederNode* n = f.issue();
    if (n == nullptr) {
      if (f.in_flight() == 0) break;
      ASSERT_TRUE(f.complete(1).ok());  // the one left in flight
      continue;
    }
    issued.insert(n->id);
    ASSERT_TRUE(f.complete(n->id).ok());
  }
  EXPECT_EQ(issued, (std::multiset<NodeId>{1, 2, 3, 4, 5}));
  EXPECT_EQ(f.state(), FeedState::kDone);
}

TEST(EtFeeder, CycleIsReportedWithItsIds) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {3}}, {2, {1}}, {3, {2}}, {4, {}}, {5, {4}}, {6, {2}}});
  auto r = feed_sync(dir.file("t.et"));
  EXPECT_EQ(r.order, ids({4, 5}));
  EXPECT_EQ(r.state, FeedState::kStalled);
  ASSERT_EQ(r.report.cycles.size(), 1u);
  EXPECT_EQ(r.report.cycles[0], ids({1, 2, 3}));  // each depends on the one before, 1 on 3
  EXPECT_EQ(r.report.waiting_nodes, 4u);          // the cycle and 6 behind it
  EXPECT_TRUE(r.report.missing.empty());
  EXPECT_THAT(r.report.to_string(), HasSubstr("cycle 1 -> 2 -> 3 -> 1"));
  EXPECT_THAT(r.report.to_string(), HasSubstr("4 nodes can never be issued"));
}

TEST(EtFeeder, SelfDependencyIsACycleOfOne) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{7, {7}}, {8, {}}});
  auto r = feed_sync(dir.file("t.et"));
  EXPECT_EQ(r.order, ids({8}));
  EXPECT_EQ(r.state, FeedState::kStalled);
  ASSERT_EQ(r.report.cycles.size(), 1u);
  EXPECT_EQ(r.report.cycles[0], ids({7}));
}

TEST(EtFeeder, DanglingDependencyIsReportedWithTheMissingId) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {2, {1, 99}}, {3, {2}}, {4, {99, 98}}});
  auto r = feed_sync(dir.file("t.et"));
  EXPECT_EQ(r.order, ids({1}));
  EXPECT_EQ(r.state, FeedState::kStalled);
  EXPECT_EQ(r.report.waiting_nodes, 3u);
  ASSERT_EQ(r.report.missing.size(), 2u);
  EXPECT_EQ(r.report.missing[0].id, 98u);
  EXPECT_EQ(r.report.missing[0].examples, ids({4}));
  EXPECT_EQ(r.report.missing[1].id, 99u);
  EXPECT_EQ(r.report.missing[1].waiting, 2u);
  EXPECT_EQ(r.report.missing[1].examples, ids({2, 4}));
  EXPECT_TRUE(r.report.cycles.empty());
  EXPECT_THAT(r.report.to_string(), HasSubstr("wait on id 99, which is not in the trace"));
}

TEST(EtFeeder, DanglingDependencyDoesNotMakeItReadTheWholeFile) {
  TempDir dir;
  std::vector<TraceNode> nodes = {{0, {999}}, {1, {}}};  // then a chain 2 -> 1, 3 -> 2, ...
  for (uint64_t id = 2; id <= 200; ++id) nodes.push_back({id, {id - 1}});
  write_trace(dir.file("t.et"), nodes);
  auto r = feed_sync(dir.file("t.et"), window_of(4));
  EXPECT_EQ(r.order.size(), 200u);
  EXPECT_EQ(r.state, FeedState::kStalled);
  EXPECT_LE(r.stats.max_resident, 4u);
  ASSERT_EQ(r.report.missing.size(), 1u);
  EXPECT_EQ(r.report.missing[0].id, 999u);
}

TEST(EtFeeder, ReadsPastTheWindowOnlyWhenEverythingHeldIsBlocked) {
  // Nodes 1..5 all wait on node 9, the last in the file: with a window of 2 the feeder must read
  // on to find it, and says so.
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {9}}, {2, {9}}, {3, {9}}, {4, {9}}, {5, {9}}, {9, {}}});
  auto r = feed_sync(dir.file("t.et"), window_of(2));
  EXPECT_EQ(r.order, ids({9, 1, 2, 3, 4, 5}));
  EXPECT_EQ(r.state, FeedState::kDone);
  EXPECT_EQ(r.stats.max_resident, 6u);
  EXPECT_EQ(r.stats.reads_past_window, 4u);
}

TEST(EtFeeder, DuplicateDependenciesCountOnce) {
  // Chakra erases one copy per completion and waits forever on the other (spec §5 #29).
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {2, {1, 1, 1}}, {3, {1, 2, 2}}, {4, {5, 5}}, {5, {}}},
              true);
  auto r = feed_sync(dir.file("t.et"));
  EXPECT_EQ(r.order, ids({1, 2, 3, 5, 4}));
  EXPECT_EQ(r.state, FeedState::kDone);
  EXPECT_EQ(r.stats.dependencies, 8u);
}

TEST(EtFeeder, ZeroNodes) {
  TempDir dir;
  write_trace(dir.file("meta_only.et"), {});
  auto r = feed_sync(dir.file("meta_only.et"));
  EXPECT_TRUE(r.order.empty());
  EXPECT_EQ(r.state, FeedState::kDone);
  EXPECT_EQ(r.stats.nodes_read, 0u);
  EXPECT_FALSE(r.stats.metadata_missing);

  testing::write_text(dir.file("empty.et"), "");
  auto e = feed_sync(dir.file("empty.et"));
  EXPECT_TRUE(e.order.empty());
  EXPECT_EQ(e.state, FeedState::kDone);
  EXPECT_TRUE(e.stats.metadata_missing);
}

TEST(EtFeeder, ZeroLengthRecordIsANodeWithIdZero) {
  TempDir dir;
  // GlobalMetadata "0.0.4", a 0-byte Node, a Node {id 1, data_deps [0]} (spec §3's example bytes).
  const std::string bytes = {0x07, 0x0a, 0x05, '0', '.', '0',  '.',  '4',  0x00, 0x0b, 0x08,
                             0x01, 0x12, 0x02, 'n', '1', 0x18, 0x04, 0x2a, 0x01, 0x00};
  testing::write_text(dir.file("t.et"), bytes);
  auto r = feed_sync(dir.file("t.et"));
  EXPECT_EQ(r.order, ids({0, 1}));
  EXPECT_EQ(r.state, FeedState::kDone);
}

TEST(EtFeeder, FileWithoutGlobalMetadataKeepsItsFirstNode) {
  // Chakra takes the first Node for the metadata and loses it (spec §4.5).
  TempDir dir;
  write_trace(dir.file("t.et"), {{5, {}}, {6, {5}}}, /*metadata=*/false);
  auto r = feed_sync(dir.file("t.et"));
  EXPECT_EQ(r.order, ids({5, 6}));
  EXPECT_TRUE(r.stats.metadata_missing);
}

TEST(EtFeeder, DuplicateNodeIdIsALocatedError) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {2, {}}, {1, {2}}});
  auto r = feed_sync(dir.file("t.et"), window_of(8, 0));
  EXPECT_EQ(r.state, FeedState::kError);
  EXPECT_THAT(r.error, HasSubstr("record #3"));
  EXPECT_THAT(r.error, HasSubstr("node id 1 appears again (first at record #1)"));
}

TEST(EtFeeder, TruncatedFileIsALocatedError) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {2, {1}}, {3, {2}}});
  const auto size = std::filesystem::file_size(dir.file("t.et"));
  std::filesystem::resize_file(dir.file("t.et"), size - 2);
  auto r = feed_sync(dir.file("t.et"));
  EXPECT_EQ(r.state, FeedState::kError);
  EXPECT_THAT(r.error, HasSubstr("t.et: record #3"));
  EXPECT_THAT(r.error, HasSubstr("truncated"));
  EXPECT_EQ(r.order, ids({1, 2}));  // what was read before the error is still fed
}

TEST(EtFeeder, MissingFileIsAnError) {
  auto opened = EtFeeder::open("/nonexistent/trace.et");
  ASSERT_FALSE(opened.ok());
  EXPECT_THAT(opened.status().message(), HasSubstr("/nonexistent/trace.et"));
}

TEST(EtFeeder, CtrlDepsOnlyWhenAsked) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}, {3}}, {2, {1}}, {3, {}}});
  EXPECT_EQ(feed_sync(dir.file("t.et")).order, ids({1, 2, 3}));
  FeederOptions with_ctrl;
  with_ctrl.ctrl_deps = true;
  auto r = feed_sync(dir.file("t.et"), with_ctrl);
  EXPECT_EQ(r.order, ids({3, 1, 2}));
  EXPECT_EQ(r.stats.dependencies, 2u);
}

TEST(EtFeeder, PriorityComesBeforeId) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}, {}, 5}, {2, {}, {}, 1}, {3, {}, {}, 9}, {4, {}, {}, 1}});
  FeederOptions o;
  o.priority = [](const FeederNode& n) { return static_cast<int64_t>(n.duration_micros); };
  EXPECT_EQ(feed_sync(dir.file("t.et"), o).order, ids({2, 4, 1, 3}));
}

TEST(EtFeeder, ReleasePriorityOrdersChildrenByCompletionTime) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {2, {}}, {3, {1}}, {4, {2}}});
  auto opened = EtFeeder::open(dir.file("t.et"));
  ASSERT_TRUE(opened.ok());
  EtFeeder& f = **opened;
  ASSERT_EQ(f.issue()->id, 1u);
  ASSERT_EQ(f.issue()->id, 2u);
  ASSERT_TRUE(f.complete(1, 50).ok());  // 3 ready at time 50
  ASSERT_TRUE(f.complete(2, 10).ok());  // 4 ready at time 10: issued first
  const FeederNode* n = f.issue();
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->id, 4u);
  EXPECT_EQ(n->priority, 10);
  EXPECT_EQ(f.issue()->id, 3u);
}

TEST(EtFeeder, PushBackReturnsAnInFlightNodeToTheQueue) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {2, {}}});
  auto opened = EtFeeder::open(dir.file("t.et"));
  ASSERT_TRUE(opened.ok());
  EtFeeder& f = **opened;
  ASSERT_EQ(f.issue()->id, 1u);
  EXPECT_FALSE(f.push_back(2).ok());  // not in flight
  ASSERT_TRUE(f.push_back(1).ok());
  EXPECT_TRUE(f.is_ready(1));
  EXPECT_EQ(f.issue()->id, 1u);
  EXPECT_TRUE(f.is_in_flight(1));
  EXPECT_FALSE(f.complete(2).ok());  // not in flight
  ASSERT_TRUE(f.complete(1).ok());
  EXPECT_FALSE(f.complete(1).ok());  // already completed
  EXPECT_EQ(f.issue()->id, 2u);
  ASSERT_TRUE(f.complete(2).ok());
  EXPECT_EQ(f.issue(), nullptr);
  EXPECT_EQ(f.state(), FeedState::kDone);
  EXPECT_EQ(f.stats().nodes_issued, 3u);
}

TEST(EtFeeder, NodeBytesAndDependencyListsAreNeverChanged) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {2, {1, 1, 3}}, {3, {}}});
  auto opened = EtFeeder::open(dir.file("t.et"));
  ASSERT_TRUE(opened.ok());
  EtFeeder& f = **opened;
  for (NodeId expect : {1, 3}) {
    const FeederNode* n = f.issue();
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->id, expect);
    ASSERT_TRUE(f.complete(n->id).ok());
  }
  const FeederNode* n = f.issue();
  ASSERT_NE(n, nullptr);
  ChakraProtoMsg::Node parsed;
  ASSERT_TRUE(n->parse(&parsed).ok());
  EXPECT_EQ(std::vector<uint64_t>(parsed.data_deps().begin(), parsed.data_deps().end()),
            ids({1, 1, 3}));
  EXPECT_EQ(parsed.name(), "n2");
  EXPECT_EQ(n->raw, testing::to_proto({2, {1, 1, 3}}).SerializeAsString());
}

TEST(EtFeeder, ChildrenAreListedInReadOrder) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{5, {1}}, {3, {1}}, {1, {}}, {4, {1}}, {2, {1}}});
  auto opened = EtFeeder::open(dir.file("t.et"), window_of(100, 0));
  ASSERT_TRUE(opened.ok());
  EtFeeder& f = **opened;
  ASSERT_EQ(f.state(), FeedState::kRunning);  // reads the window
  EXPECT_EQ(f.children(1), ids({5, 3, 4, 2}));
  ASSERT_EQ(f.issue()->id, 1u);
  ASSERT_TRUE(f.complete(1).ok());
  EXPECT_TRUE(f.children(1).empty());
}

TEST(EtFeeder, MakeReadyIssuesAWaitingNodeOnceOnly) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {2, {1}}, {3, {2}}});
  auto opened = EtFeeder::open(dir.file("t.et"));
  ASSERT_TRUE(opened.ok());
  EtFeeder& f = **opened;
  EXPECT_EQ(f.state(), FeedState::kRunning);
  ASSERT_TRUE(f.make_ready(2).ok());  // still waits on 1
  std::vector<NodeId> order;
  for (int step = 0; step < 10; ++step) {
    const FeederNode* n = f.issue();
    if (n == nullptr) break;
    order.push_back(n->id);
    ASSERT_TRUE(f.complete(n->id).ok());
  }
  EXPECT_EQ(order, ids({1, 2, 3}));  // 2 is not queued again when 1 completes
  EXPECT_EQ(f.state(), FeedState::kDone);
}

TEST(EtFeeder, ForcedNodeCompletingBeforeItsParentIsReleasedLater) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {2, {1}}, {3, {2}}});
  auto opened = EtFeeder::open(dir.file("t.et"));
  ASSERT_TRUE(opened.ok());
  EtFeeder& f = **opened;
  EXPECT_EQ(f.state(), FeedState::kRunning);
  ASSERT_TRUE(f.make_ready(2).ok());
  ASSERT_EQ(f.issue()->id, 1u);
  ASSERT_EQ(f.issue()->id, 2u);
  ASSERT_TRUE(f.complete(2).ok());  // before its parent
  EXPECT_EQ(f.issue()->id, 3u);
  ASSERT_TRUE(f.complete(3).ok());
  ASSERT_TRUE(f.complete(1).ok());  // releases 2, already gone
  EXPECT_EQ(f.issue(), nullptr);
  EXPECT_EQ(f.state(), FeedState::kDone);
  EXPECT_EQ(f.resident(), 0u);
}

TEST(EtFeeder, RemovedNodeBlocksItsChildrenUntilReleased) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {2, {1}}});
  auto opened = EtFeeder::open(dir.file("t.et"));
  ASSERT_TRUE(opened.ok());
  EtFeeder& f = **opened;
  ASSERT_EQ(f.issue()->id, 1u);
  ASSERT_TRUE(f.remove(1).ok());
  EXPECT_EQ(f.find(1), nullptr);
  EXPECT_FALSE(f.remove(1).ok());
  EXPECT_EQ(f.issue(), nullptr);
  ASSERT_EQ(f.state(), FeedState::kStalled);
  StallReport report = f.stall_report();
  ASSERT_EQ(report.unreleased.size(), 1u);
  EXPECT_EQ(report.unreleased[0].id, 1u);
  EXPECT_THAT(report.to_string(), HasSubstr("removed without its children being released"));
  ASSERT_TRUE(f.release_children(1).ok());
  ASSERT_TRUE(f.release_children(1).ok());  // idempotent
  EXPECT_FALSE(f.release_children(77).ok());
  ASSERT_EQ(f.issue()->id, 2u);
  ASSERT_TRUE(f.complete(2).ok());
  EXPECT_EQ(f.state(), FeedState::kDone);
}

TEST(EtFeeder, DependencyOnAReleasedNodeStillHeldIsSatisfied) {
  // Chakra links a child read after its parent's children were freed (the parent not removed
  // yet) and the child then waits forever.
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {3, {}}, {2, {1}}});
  auto opened = EtFeeder::open(dir.file("t.et"), window_of(2));
  ASSERT_TRUE(opened.ok());
  EtFeeder& f = **opened;
  ASSERT_EQ(f.issue()->id, 1u);
  ASSERT_TRUE(f.release_children(1).ok());  // freed, still in flight
  ASSERT_EQ(f.issue()->id, 3u);
  ASSERT_TRUE(f.complete(3).ok());
  const FeederNode* two = f.issue();  // read now, after 1 was released
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->id, 2u);
  EXPECT_TRUE(f.is_in_flight(1));
  ASSERT_TRUE(f.complete(2).ok());
  ASSERT_TRUE(f.remove(1).ok());
  EXPECT_EQ(f.state(), FeedState::kDone);
}

TEST(EtFeeder, ReadsGzipTraces) {
  TempDir dir;
  std::vector<TraceNode> nodes = {{3, {1}}, {1, {}}, {2, {1}}, {4, {2, 3}}};
  write_trace(dir.file("t.et"), nodes);
  write_trace(dir.file("t.et.gz"), nodes);
  auto plain = feed_sync(dir.file("t.et"));
  auto gz = feed_sync(dir.file("t.et.gz"));
  EXPECT_EQ(gz.order, ids({1, 2, 3, 4}));
  EXPECT_EQ(gz.order, plain.order);
  EXPECT_EQ(gz.state, FeedState::kDone);
}

TEST(EtFeeder, MemoryIsBoundedByTheWindow) {
  TempDir dir;
  std::vector<TraceNode> nodes;
  for (uint64_t id = 0; id < 20000; ++id) {
    TraceNode n{id, {}};
    for (uint64_t back : {1, 2, 5, 17}) {
      if (id >= back) n.data_deps.push_back(id - back);
    }
    nodes.push_back(n);
  }
  write_trace(dir.file("t.et"), nodes);
  auto r = feed_sync(dir.file("t.et"), window_of(8));
  EXPECT_EQ(r.order.size(), 20000u);
  EXPECT_EQ(r.state, FeedState::kDone);
  EXPECT_LE(r.stats.max_resident, 8u);
  EXPECT_EQ(r.stats.reads_past_window, 0u);
  EXPECT_LT(r.stats.done_set_bytes, 64u * 1024);
  EXPECT_TRUE(std::is_sorted(r.order.begin(), r.order.end()));
}

// Random DAGs in shuffled file order, driven with several nodes in flight completed in random
// order: every node is issued exactly once, after all of its parents completed, whatever the
// window; and the same seed gives the same order.
TEST(EtFeeder, RandomGraphsRespectDependenciesForEveryWindow) {
  TempDir dir;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 rng(seed);
    const uint64_t n = 1500;
    std::vector<uint64_t> label(n);  // topological rank -> sparse id
    std::iota(label.begin(), label.end(), 0);
    for (auto& l : label) l = l * 3 + (rng() % 3);
    std::map<uint64_t, std::vector<uint64_t>> deps;
    std::vector<TraceNode> nodes;
    for (uint64_t i = 0; i < n; ++i) {
      TraceNode t{label[i], {}};
      const uint64_t k = rng() % 6;
      for (uint64_t j = 0; j < k && i > 0; ++j) t.data_deps.push_back(label[rng() % i]);
      deps[t.id] = t.data_deps;
      nodes.push_back(t);
    }
    // Mostly in order, with some nodes moved early (forward references).
    for (uint64_t i = 0; i + 1 < n; ++i) {
      if (rng() % 8 == 0) std::swap(nodes[i], nodes[std::min(n - 1, i + 1 + rng() % 50)]);
    }
    const std::string path = dir.file("random" + std::to_string(seed) + ".et");
    write_trace(path, nodes);
    for (uint64_t window : {1, 2, 3, 16, 1000, 1 << 20}) {
      for (uint64_t refill : {0, 1, 256}) {
        std::vector<NodeId> orders[2];
        for (int run = 0; run < 2; ++run) {
          auto opened = EtFeeder::open(path, window_of(window, refill));
          ASSERT_TRUE(opened.ok());
          EtFeeder& f = **opened;
          std::mt19937_64 drive(seed * 1000 + window);
          std::set<uint64_t> completed;
          std::vector<uint64_t> in_flight;
          for (uint64_t step = 0; step < 10 * n; ++step) {
            const FeederNode* node = in_flight.size() < 4 ? f.issue() : nullptr;
            if (node != nullptr) {
              for (uint64_t p : deps[node->id]) {
                ASSERT_TRUE(completed.count(p)) << node->id << " issued before parent " << p;
              }
              orders[run].push_back(node->id);
              in_flight.push_back(node->id);
              continue;
            }
            if (in_flight.empty()) break;
            const size_t pick = drive() % in_flight.size();
            ASSERT_TRUE(f.complete(in_flight[pick]).ok());
            completed.insert(in_flight[pick]);
            in_flight.erase(in_flight.begin() + static_cast<long>(pick));
          }
          EXPECT_EQ(f.state(), FeedState::kDone) << "seed " << seed << " window " << window;
          EXPECT_EQ(completed.size(), n);
          std::set<NodeId> unique(orders[run].begin(), orders[run].end());
          EXPECT_EQ(unique.size(), orders[run].size()) << "a node was issued twice";
        }
        EXPECT_EQ(orders[0], orders[1]);
      }
    }
  }
}

// For a file sorted by id, the synchronous issue order does not depend on the window.
TEST(EtFeeder, SortedFileOrderIsTheSameForEveryWindow) {
  TempDir dir;
  std::mt19937_64 rng(7);
  std::vector<TraceNode> nodes;
  for (uint64_t id = 0; id < 3000; ++id) {
    TraceNode t{id * 2, {}};
    for (int j = 0; j < 3 && id > 0; ++j) {
      t.data_deps.push_back(2 * (id - 1 - rng() % std::min<uint64_t>(id, 40)));
    }
    nodes.push_back(t);
  }
  write_trace(dir.file("t.et"), nodes);
  const auto reference = feed_sync(dir.file("t.et"), window_of(1 << 20, 0)).order;
  ASSERT_EQ(reference.size(), 3000u);
  for (uint64_t window : {1, 2, 5, 64}) {
    EXPECT_EQ(feed_sync(dir.file("t.et"), window_of(window)).order, reference) << window;
  }
}

}  // namespace
}  // namespace chakraflow
