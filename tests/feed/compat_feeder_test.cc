// Chakra::ETFeeder / Chakra::ETFeederNode: Chakra's own feeder unit tests (tests/feeder/tests.cpp,
// on the same chakra.0.et), the call sequences ASTRA-sim makes, and the documented differences.
#include "stages/feed/compat/et_feeder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <queue>
#include <set>

#include "tests/feed/feeder_test_util.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::TraceNode;
using testing::write_trace;

const char* const kChakra0 = "chakra_et/resnet_ddp_rank0/chakra.0.et";
std::string chakra0() {
  return (testing::shared_data_dir() / kChakra0).string();
}

// --- Chakra's tests/feeder/tests.cpp, same trace, same expectations.

TEST(CompatFeeder, ConstructorNodeIDTest) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  Chakra::ETFeeder trace(chakra0());
  EXPECT_EQ(trace.getNextIssuableNode()->id(), 216u);
  EXPECT_EQ(trace.getNextIssuableNode()->id(), 432u);
}

TEST(CompatFeeder, ConstructorNodeValuesTest) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  Chakra::ETFeeder trace(chakra0());
  auto node = trace.getNextIssuableNode();
  EXPECT_EQ(node->type(), ChakraProtoMsg::COMP_NODE);
  EXPECT_TRUE(node->is_cpu_op());
  EXPECT_EQ(node->get_other_attr("rf_id").int64_val(), 2);
  EXPECT_EQ(node->name(), "aten::flatten_dense_tensors(0)");
  EXPECT_EQ(node->runtime(), 318u);
  node = trace.getNextIssuableNode();
  EXPECT_EQ(node->type(), ChakraProtoMsg::COMM_COLL_NODE);
  EXPECT_TRUE(node->is_cpu_op());
  EXPECT_EQ(node->get_other_attr("rf_id").int64_val(), 110);
}

TEST(CompatFeeder, ConstructorETFeederTest) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  Chakra::ETFeeder trace(chakra0());
  auto children = trace.getNextIssuableNode()->getChildren();
  ASSERT_GE(children.size(), 3u);
  EXPECT_EQ(children[0]->id(), 217u);
  EXPECT_EQ(children[1]->id(), 430u);
  EXPECT_EQ(children[2]->id(), 435u);
}

TEST(CompatFeeder, RemoveTest) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  Chakra::ETFeeder trace(chakra0());
  EXPECT_EQ(trace.lookupNode(216)->id(), 216u);
  trace.removeNode(216);
  EXPECT_THROW(trace.lookupNode(216), std::out_of_range);
}

TEST(CompatFeeder, FreeChildrenBeforeTheParentIsIssued) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  Chakra::ETFeeder trace(chakra0());
  EXPECT_EQ(trace.lookupNode(216)->id(), 216u);
  trace.freeChildrenNodes(216);
  EXPECT_EQ(trace.getNextIssuableNode()->id(), 216u);
  EXPECT_EQ(trace.getNextIssuableNode()->id(), 217u);
}

TEST(CompatFeeder, HasNodesToIssueTest) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  Chakra::ETFeeder trace(chakra0());
  auto node = trace.getNextIssuableNode();
  EXPECT_EQ(node->id(), 216u);
  EXPECT_TRUE(trace.hasNodesToIssue());
  trace.removeNode(216);
  EXPECT_TRUE(trace.hasNodesToIssue());
}

TEST(CompatFeeder, PushBackIssuableNodeTest) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  Chakra::ETFeeder trace(chakra0());
  trace.pushBackIssuableNode(217);  // still waits on 216: Chakra queues it anyway
  EXPECT_EQ(trace.getNextIssuableNode()->id(), 216u);
  EXPECT_EQ(trace.getNextIssuableNode()->id(), 217u);
  // Difference: when 216 completes, 217 is not queued a second time.
  trace.freeChildrenNodes(216);
  trace.removeNode(216);
  trace.freeChildrenNodes(217);
  trace.removeNode(217);
  std::set<uint64_t> rest;
  for (int i = 0; i < 10000; ++i) {
    auto node = trace.getNextIssuableNode();
    if (!node) break;
    EXPECT_TRUE(rest.insert(node->id()).second) << node->id() << " issued twice";
    trace.freeChildrenNodes(node->id());
    trace.removeNode(node->id());
  }
  EXPECT_EQ(rest.size(), 3662u);
  EXPECT_EQ(rest.count(217), 0u);
  EXPECT_FALSE(trace.hasNodesToIssue());
}

TEST(CompatFeeder, AddNodeTest) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  Chakra::ETFeeder trace(chakra0());
  auto node = trace.lookupNode(216);
  trace.removeNode(216);
  trace.addNode(node);
  EXPECT_EQ(trace.lookupNode(216)->id(), 216u);
  // The re-added node still frees its children.
  trace.freeChildrenNodes(216);
  EXPECT_EQ(trace.getNextIssuableNode()->id(), 217u);
}

TEST(CompatFeeder, NodeGetChildrenTest) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  Chakra::ETFeeder trace(chakra0());
  auto node = trace.lookupNode(216);
  auto children = node->getChildren();
  EXPECT_EQ(children[0]->id(), 217u);
  EXPECT_EQ(children[2]->id(), 435u);
  trace.freeChildrenNodes(216);
  EXPECT_EQ(node->getChildren().size(), children.size());  // still listed after freeing
}

// Chakra's RemoveAndGetNextTest expects a removed node to be issued; chakraflow drops it from the
// queue (documented difference: issuing a removed node then crashes Chakra's freeChildrenNodes).
TEST(CompatFeeder, RemovedNodeIsNotIssued) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  Chakra::ETFeeder trace(chakra0());
  trace.removeNode(216);
  EXPECT_EQ(trace.getNextIssuableNode()->id(), 432u);
}

// --- How ASTRA-sim drives the feeder (spec §4.7): drain getNextIssuableNode, issue what the
// hardware model accepts, push the rest back; on completion free children, drain, remove.
struct AstraSimModel {
  explicit AstraSimModel(Chakra::ETFeeder& f) : feeder(f) {}

  struct Event {
    uint64_t time;
    uint64_t seq;
    std::shared_ptr<Chakra::ETFeederNode> node;
    bool operator>(const Event& o) const { return std::tie(time, seq) > std::tie(o.time, o.seq); }
  };
  int slot(const std::shared_ptr<Chakra::ETFeederNode>& n) const {
    if (n->is_cpu_op()) return 0;
    if (n->type() == ChakraProtoMsg::COMP_NODE) return 1;
    if (n->type() == ChakraProtoMsg::COMM_COLL_NODE || n->type() == ChakraProtoMsg::COMM_SEND_NODE)
      return 2;
    return -1;  // always available
  }
  void check_parents_done(const std::shared_ptr<Chakra::ETFeederNode>& n) {
    for (uint64_t parent : n->getChakraNode()->data_deps()) {
      EXPECT_TRUE(completed.count(parent)) << n->id() << " issued before " << parent;
    }
  }
  void issue_dep_free_nodes() {
    std::vector<std::shared_ptr<Chakra::ETFeederNode>> deferred;
    while (auto node = feeder.getNextIssuableNode()) {
      const int s = slot(node);
      if (s >= 0 && busy[s]) {
        deferred.push_back(node);
        continue;
      }
      check_parents_done(node);
      EXPECT_TRUE(issued.insert(node->id()).second) << node->id() << " issued twice";
      if (node->runtime() == 0 && node->num_ops() == 0) {  // skip_invalid
        completed.insert(node->id());
        feeder.freeChildrenNodes(node->id());
        feeder.removeNode(node->id());
        continue;
      }
      if (s >= 0) busy[s] = true;
      events.push(Event{now + node->runtime(), seq++, node});
    }
    for (auto& node : deferred) feeder.pushBackIssuableNode(node->id());
  }
  void run() {
    issue_dep_free_nodes();
    for (int steps = 0; !events.empty() && steps < 100000; ++steps) {
      Event e = events.top();
      events.pop();
      now = e.time;
      const int s = slot(e.node);
      if (s >= 0) busy[s] = false;
      completed.insert(e.node->id());
      feeder.freeChildrenNodes(e.node->id());
      issue_dep_free_nodes();
      feeder.removeNode(e.node->id());
    }
  }

  Chakra::ETFeeder& feeder;
  bool busy[3] = {false, false, false};
  uint64_t now = 0;
  uint64_t seq = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::set<uint64_t> issued;
  std::set<uint64_t> completed;
};

TEST(CompatFeeder, AstraSimDriveIssuesEveryNodeOnce) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  Chakra::ETFeeder trace(chakra0());
  AstraSimModel sim(trace);
  sim.run();
  EXPECT_EQ(sim.issued.size(), 3664u);
  EXPECT_EQ(sim.completed.size(), 3664u);
  EXPECT_FALSE(trace.hasNodesToIssue());
  EXPECT_TRUE(trace.isDone());
}

TEST(CompatFeeder, SmallWindowDriveIssuesEveryNodeOnce) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  Chakra::ETFeederOptions options = Chakra::ETFeeder::chakra_options();
  options.window = 32;
  Chakra::ETFeeder trace(chakra0(), options);
  AstraSimModel sim(trace);
  sim.run();
  EXPECT_EQ(sim.issued.size(), 3664u);
  EXPECT_FALSE(trace.hasNodesToIssue());
  EXPECT_TRUE(trace.isDone());
}

// Chakra's window: the first window is read at construction (and on to the parents it names),
// one more on a removeNode while fewer than a window of nodes are ready.
TEST(CompatFeeder, WindowIsReadAsChakraReadsIt) {
  TempDir dir;
  std::vector<TraceNode> nodes;
  for (uint64_t i = 0; i < 100; ++i) {
    TraceNode t;
    t.id = i;
    if (i > 0) t.data_deps = {i - 1};
    if (i == 5) t.data_deps.push_back(13);  // a forward reference: read on to node 13
    nodes.push_back(t);
  }
  write_trace(dir.file("t.et"), nodes);
  Chakra::ETFeederOptions options;
  options.window = 10;
  Chakra::ETFeeder trace(dir.file("t.et"), options);
  EXPECT_EQ(trace.nodesRead(), 14u);
  EXPECT_EQ(trace.lookupNode(13)->id(), 13u);
  EXPECT_THROW(trace.lookupNode(14), std::out_of_range);  // not read yet
  auto first = trace.getNextIssuableNode();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->id(), 0u);
  trace.freeChildrenNodes(0);
  trace.removeNode(0);
  EXPECT_EQ(trace.nodesRead(), 24u);
}

// A window whose every node waits on an id not in the trace, nothing in flight: it reads on
// rather than leave the nodes after it unread.
TEST(CompatFeeder, ReadsOnWhenTheWholeWindowWaits) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {99}}, {2, {99}}, {3, {}}, {4, {3}}});
  Chakra::ETFeederOptions options;
  options.window = 2;
  Chakra::ETFeeder trace(dir.file("t.et"), options);
  EXPECT_EQ(trace.nodesRead(), 2u);
  std::vector<uint64_t> order;
  while (auto node = trace.getNextIssuableNode()) {
    order.push_back(node->id());
    trace.freeChildrenNodes(node->id());
    trace.removeNode(node->id());
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{3, 4}));
  EXPECT_TRUE(trace.isStalled());
  EXPECT_THAT(trace.stallReport(), HasSubstr("id 99"));
}

// The wiki's order (removeNode, then freeChildrenNodes) crashes Chakra; it works here.
TEST(CompatFeeder, RemoveThenFreeChildren) {
  CF_REQUIRE_SHARED_DATA(kChakra0);
  Chakra::ETFeeder trace(chakra0());
  uint64_t issued = 0;
  while (auto node = trace.getNextIssuableNode()) {
    trace.removeNode(node->id());
    trace.freeChildrenNodes(node->id());
    if (++issued > 5000) break;
  }
  EXPECT_EQ(issued, 3664u);
  EXPECT_FALSE(trace.hasNodesToIssue());
}

// --- Hand-made traces.

TEST(CompatFeeder, WindowOfTwoDoesNotIssueTwice) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {2, {}}, {3, {1}}, {4, {1, 2}}, {5, {3}}, {6, {}}});
  Chakra::ETFeederOptions options = Chakra::ETFeeder::chakra_options();
  options.window = 2;
  Chakra::ETFeeder trace(dir.file("t.et"), options);
  std::vector<uint64_t> order;
  std::vector<std::shared_ptr<Chakra::ETFeederNode>> in_flight;
  for (int step = 0; step < 100; ++step) {
    // Issue everything ready, then complete the oldest: nodes stay in flight across refills.
    while (auto node = trace.getNextIssuableNode()) {
      order.push_back(node->id());
      in_flight.push_back(node);
    }
    if (in_flight.empty()) break;
    trace.freeChildrenNodes(in_flight.front()->id());
    trace.removeNode(in_flight.front()->id());
    in_flight.erase(in_flight.begin());
  }
  std::multiset<uint64_t> unique(order.begin(), order.end());
  EXPECT_EQ(unique, (std::multiset<uint64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_FALSE(trace.hasNodesToIssue());
}

TEST(CompatFeeder, StallIsReportedNotSilent) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {2}}, {2, {1}}, {3, {}}, {4, {42}}});
  Chakra::ETFeeder trace(dir.file("t.et"));
  auto node = trace.getNextIssuableNode();
  ASSERT_TRUE(node);
  EXPECT_EQ(node->id(), 3u);
  trace.freeChildrenNodes(3);
  trace.removeNode(3);
  EXPECT_EQ(trace.getNextIssuableNode(), nullptr);
  EXPECT_TRUE(trace.hasNodesToIssue());  // as Chakra: nodes are left
  EXPECT_TRUE(trace.isStalled());
  EXPECT_THAT(trace.stallReport(), HasSubstr("cycle 1 -> 2 -> 1"));
  EXPECT_THAT(trace.stallReport(), HasSubstr("id 42"));
}

TEST(CompatFeeder, UnknownIdsThrowInsteadOfCrashing) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}});
  Chakra::ETFeeder trace(dir.file("t.et"));
  EXPECT_THROW(trace.freeChildrenNodes(99), std::out_of_range);
  EXPECT_THROW(trace.pushBackIssuableNode(99), std::out_of_range);
  EXPECT_THROW(trace.lookupNode(99), std::out_of_range);
  trace.removeNode(99);  // a no-op, as in Chakra
  EXPECT_EQ(trace.getNextIssuableNode()->id(), 1u);
}

TEST(CompatFeeder, OpenAndReadErrorsThrow) {
  TempDir dir;
  try {
    Chakra::ETFeeder trace(dir.file("absent.et"));
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("Failed to open trace file"));
  }
  write_trace(dir.file("t.et"), {{1, {}}, {2, {1}}});
  std::filesystem::resize_file(dir.file("t.et"), std::filesystem::file_size(dir.file("t.et")) - 1);
  try {
    Chakra::ETFeeder trace(dir.file("t.et"));
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("record #2"));
  }
}

TEST(CompatFeederNode, AttributesDefaultToZeroAndReadAnyIntegerField) {
  auto proto = std::make_shared<ChakraProtoMsg::Node>();
  proto->set_id(12);
  proto->set_name("all_reduce");
  proto->set_type(ChakraProtoMsg::COMM_COLL_NODE);
  proto->set_duration_micros(40);
  auto add = [&](const std::string& name) {
    auto* a = proto->add_attr();
    a->set_name(name);
    return a;
  };
  add("comm_type")->set_int64_val(ChakraProtoMsg::REDUCE_SCATTER);
  add("comm_size")->set_uint64_val(1 << 20);  // Chakra reads int64_val only: 0
  add("comm_src")->set_int32_val(3);
  add("num_ops")->set_int32_val(7);
  add("pg_name")->set_string_val("2");
  add("comm_tag")->set_int32_val(1);
  add("comm_tag")->set_int32_val(2);  // known attrs: the last wins
  add("rf_id")->set_int64_val(5);
  add("rf_id")->set_int64_val(6);  // other attrs: the first wins
  proto->mutable_inputs()->set_values("[1, 2]");
  Chakra::ETFeederNode node(proto);
  EXPECT_EQ(node.id(), 12u);
  EXPECT_EQ(node.runtime(), 40u);
  EXPECT_EQ(node.comm_type(), ChakraProtoMsg::REDUCE_SCATTER);
  EXPECT_EQ(node.comm_size(), 1u << 20);
  EXPECT_EQ(node.comm_src(), 3u);
  EXPECT_EQ(node.num_ops(), 7u);
  EXPECT_EQ(node.pg_name(), "2");
  EXPECT_EQ(node.comm_tag(), 2u);
  EXPECT_EQ(node.get_other_attr("rf_id").int64_val(), 5);
  // Absent: defined defaults (Chakra leaves these uninitialized).
  EXPECT_FALSE(node.is_cpu_op());
  EXPECT_FALSE(node.has_is_cpu_op());
  EXPECT_EQ(node.comm_dst(), 0u);
  EXPECT_FALSE(node.has_comm_dst());
  EXPECT_EQ(node.comm_priority(), 0u);
  EXPECT_EQ(node.tensor_size(), 0u);
  EXPECT_EQ(node.tensor_loc(), 0u);
  EXPECT_TRUE(node.has_comm_size());
  EXPECT_EQ(node.get_inputs_values(), "[1, 2]");
  EXPECT_EQ(node.get_inputs_shapes(), "");
  EXPECT_EQ(node.get_outputs_values(), "");
  EXPECT_FALSE(node.has_other_attr("comm_size"));
  EXPECT_TRUE(node.has_other_attr("rf_id"));
  EXPECT_THROW(node.get_other_attr("involved_dim"), std::runtime_error);
  EXPECT_EQ(node.getChakraNode(), proto);
}

TEST(CompatFeederNode, AddChildIgnoresDuplicatesAndKeepsOrder) {
  auto make = [](uint64_t id) {
    auto p = std::make_shared<ChakraProtoMsg::Node>();
    p->set_id(id);
    return std::make_shared<Chakra::ETFeederNode>(p);
  };
  auto parent = make(1);
  std::vector<std::shared_ptr<Chakra::ETFeederNode>> kids;
  for (uint64_t id = 2; id < 40; ++id) kids.push_back(make(id));
  for (auto& k : kids) parent->addChild(k);
  for (auto& k : kids) parent->addChild(k);  // again: ignored (past the indexed threshold too)
  auto children = parent->getChildren();
  ASSERT_EQ(children.size(), kids.size());
  for (size_t i = 0; i < kids.size(); ++i) EXPECT_EQ(children[i], kids[i]);
  parent->addDepUnresolvedParentID(9);
  EXPECT_EQ(parent->getDepUnresolvedParentIDs(), std::vector<uint64_t>{9});
  parent->setDepUnresolvedParentIDs({});
  EXPECT_TRUE(parent->getDepUnresolvedParentIDs().empty());
}

}  // namespace
}  // namespace chakraflow
