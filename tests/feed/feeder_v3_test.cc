// Chakra::FeederV3: the API current ASTRA-sim drives (reference/astra_sim_feeder_v3.md), checked
// against a reference model (the whole trace parsed with protobuf, FeederV3's rules applied with
// std::map / std::set) on the shared Chakra traces and on hand-made ones.
#include "stages/feed/compat/feeder_v3/et_feeder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <typeinfo>

#include "stages/et/et_io.h"
#include "tests/feed/feeder_test_util.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::TraceNode;
using testing::write_trace;
using V3Feeder = Chakra::FeederV3::ETFeeder;
using V3Node = Chakra::FeederV3::ETFeederNode;

// --- The reference model.

struct Reference {
  std::map<uint64_t, ChakraProtoMsg::Node> nodes;
  // ASTRA-sim master's loop: take every free node in ascending id order, then finish them in that
  // order; repeat. Dependencies on ids not in the trace are ignored.
  std::vector<uint64_t> order(bool data = true, bool ctrl = true) const {
    std::map<uint64_t, std::set<uint64_t>> parents;
    std::map<uint64_t, std::set<uint64_t>> children;
    for (const auto& [id, n] : nodes) {
      parents[id];
      // id = id: clang 14 does not capture a structured binding (C++20 allows it, GCC does).
      auto add = [&, id = id](uint64_t p) {
        if (nodes.count(p) == 0) return;
        parents[id].insert(p);
        children[p].insert(id);
      };
      if (data) {
        for (uint64_t p : n.data_deps()) add(p);
      }
      if (ctrl) {
        for (uint64_t p : n.ctrl_deps()) add(p);
      }
    }
    std::set<uint64_t> free;
    for (const auto& [id, ps] : parents) {
      if (ps.empty()) free.insert(id);
    }
    std::vector<uint64_t> out;
    while (!free.empty()) {
      std::vector<uint64_t> round(free.begin(), free.end());
      free.clear();
      for (uint64_t id : round) {
        out.push_back(id);
        for (uint64_t c : children[id]) {
          parents[c].erase(id);
          if (parents[c].empty()) free.insert(c);
        }
      }
    }
    return out;
  }
};

Reference load_reference(const std::string& path) {
  Reference ref;
  auto reader = EtReader::open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return ref;
  ChakraProtoMsg::GlobalMetadata meta;
  EXPECT_TRUE(*reader->next(&meta));
  ChakraProtoMsg::Node node;
  while (true) {
    auto more = reader->next(&node);
    EXPECT_TRUE(more.ok()) << more.status().message();
    if (!more.ok() || !*more) break;
    ref.nodes[node.id()] = node;
  }
  return ref;
}

// The same loop through the FeederV3 API, as ASTRA-sim master runs it.
std::vector<uint64_t> drive_like_astra_sim(V3Feeder& feeder) {
  auto& resolver = feeder.getDependancyResolver();
  std::vector<uint64_t> out;
  while (!resolver.get_dependancy_free_nodes().empty()) {
    const auto& free = resolver.get_dependancy_free_nodes();
    std::set<uint64_t> round(free.begin(), free.end());
    for (uint64_t id : round) {
      resolver.take_node(id);
      out.push_back(id);
    }
    for (uint64_t id : round) resolver.finish_node(id);
  }
  return out;
}

// Every value of `node` as the reference parsed it.
void expect_same_values(V3Feeder& feeder, const ChakraProtoMsg::Node& want) {
  auto node = feeder.lookupNode(want.id());
  EXPECT_EQ(node->id(), want.id());
  EXPECT_EQ(node->name(), want.name());
  EXPECT_EQ(node->type(), want.type());
  EXPECT_EQ(node->runtime(), want.duration_micros());
  EXPECT_EQ(node->get_inputs_values("none"), want.has_inputs() ? want.inputs().values() : "none");
  EXPECT_EQ(node->get_outputs_shapes(), want.has_outputs() ? want.outputs().shapes() : "");
  std::set<std::string> seen;
  for (const auto& attr : want.attr()) {
    if (!seen.insert(attr.name()).second) continue;  // the first of a name is the one found
    ASSERT_TRUE(node->has_attr(attr.name())) << want.id() << " " << attr.name();
    EXPECT_EQ(node->get_attr_msg(attr.name()).SerializeAsString(), attr.SerializeAsString());
    if (attr.name() == "comm_size" && attr.has_int64_val()) {
      EXPECT_EQ(node->comm_size(), static_cast<uint64_t>(attr.int64_val()));
    }
    if (attr.name() == "is_cpu_op" && attr.has_bool_val()) {
      EXPECT_EQ(node->is_cpu_op(), attr.bool_val());
    }
  }
  EXPECT_FALSE(node->has_attr("no such attribute"));
}

void check_real_trace(const std::string& relative, bool ctrl_deps = true) {
  const std::string path = (testing::shared_data_dir() / relative).string();
  Reference ref = load_reference(path);
  ASSERT_FALSE(ref.nodes.empty());
  V3Feeder feeder(path, true, ctrl_deps);
  EXPECT_EQ(feeder.nodeCount(), ref.nodes.size());
  const std::vector<uint64_t> order = drive_like_astra_sim(feeder);
  EXPECT_EQ(order, ref.order(true, ctrl_deps));
  EXPECT_EQ(order.size(), ref.nodes.size()) << "every node issued once";
  EXPECT_TRUE(feeder.getDependancyResolver().get_ongoing_nodes().empty());
  EXPECT_FALSE(feeder.getDependancyResolver().stalled());
  for (const auto& [id, n] : ref.nodes) expect_same_values(feeder, n);
}

// chakra.0.et (an old Chakra trace) names ids it does not hold (FeederV3 throws on it) and its
// ctrl_deps close cycles with its data_deps: with both layers, 2,283 nodes wait forever, as the
// reference model says; with data_deps only (Chakra's old feeder's choice) every node runs.
TEST(FeederV3, ResnetRank0LikeAstraSim) {
  CF_REQUIRE_SHARED_DATA("chakra_et/resnet_ddp_rank0/chakra.0.et");
  check_real_trace("chakra_et/resnet_ddp_rank0/chakra.0.et", /*ctrl_deps=*/false);
  const std::string path = (testing::shared_data_dir() / "chakra_et/resnet_ddp_rank0/chakra.0.et");
  Reference ref = load_reference(path);
  V3Feeder both(path);
  EXPECT_GT(both.danglingDependencies(), 0u);
  EXPECT_EQ(drive_like_astra_sim(both), ref.order(true, true));
  EXPECT_TRUE(both.getDependancyResolver().stalled());
  EXPECT_THAT(both.getDependancyResolver().stallReport(), HasSubstr("2283 nodes can never"));
}

TEST(FeederV3, MicrobenchmarksLikeAstraSim) {
  CF_REQUIRE_SHARED_DATA("chakra_et/microbench_synthetic");
  check_real_trace("chakra_et/microbench_synthetic/all_reduce_8npus_1MB/all_reduce.3.et");
  check_real_trace(
      "chakra_et/microbench_synthetic/custom_ring_allreduce_8npus_1MB/custom_allreduce.5.et");
}

// --- Hand-made traces.

ChakraProtoMsg::AttributeProto* add_attr(ChakraProtoMsg::Node* node, const std::string& name) {
  ChakraProtoMsg::AttributeProto* a = node->add_attr();
  a->set_name(name);
  return a;
}

void write_nodes(const std::string& path, const std::vector<ChakraProtoMsg::Node>& nodes) {
  auto writer = EtWriter::open(path);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  ChakraProtoMsg::GlobalMetadata meta;
  meta.set_version("0.0.4");
  writer->write(meta);
  for (const auto& n : nodes) writer->write(n);
  ASSERT_TRUE(writer->commit().ok());
}

TEST(FeederV3, ForwardReferencesAndDuplicateDependencies) {
  TempDir dir;
  // 3 and 0 come before their parents; 4 lists 1 twice (data and ctrl) and 2 once.
  write_trace(dir.file("t.et"),
              {{3, {1, 2}}, {2, {1}}, {1, {}}, {0, {4}}, {4, {1, 1, 2}, {1}}, {5, {}, {4}}});
  Reference ref = load_reference(dir.file("t.et"));
  V3Feeder feeder(dir.file("t.et"));
  EXPECT_EQ(drive_like_astra_sim(feeder), ref.order());
  EXPECT_EQ(ref.order(), (std::vector<uint64_t>{1, 2, 3, 4, 0, 5}));
}

TEST(FeederV3, DataOrCtrlLayerOnly) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {2, {}, {1}}, {3, {2}}});
  Reference ref = load_reference(dir.file("t.et"));
  V3Feeder data_only(dir.file("t.et"), true, false);
  EXPECT_EQ(drive_like_astra_sim(data_only), ref.order(true, false));
  V3Feeder ctrl_only(dir.file("t.et"), false, true);
  EXPECT_EQ(drive_like_astra_sim(ctrl_only), ref.order(false, true));
  EXPECT_NE(ref.order(true, false), ref.order(false, true));
  EXPECT_THROW(V3Feeder(dir.file("t.et"), false, false), std::runtime_error);
}

TEST(FeederV3, DanglingDependencyIsIgnoredNotFatal) {
  TempDir dir;
  // Chakra's converter gives the profiler roots a ctrl dependency on node 0, never written.
  write_trace(dir.file("t.et"), {{1, {}, {0}}, {2, {1}, {0}}, {3, {99}}});
  V3Feeder feeder(dir.file("t.et"));
  EXPECT_EQ(feeder.danglingDependencies(), 3u);
  EXPECT_EQ(drive_like_astra_sim(feeder), (std::vector<uint64_t>{1, 3, 2}));
}

TEST(FeederV3, CycleStallsAndIsReported) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {2, {1, 3}}, {3, {2}}, {4, {4}}, {5, {1}}});
  V3Feeder feeder(dir.file("t.et"));
  const std::vector<uint64_t> order = drive_like_astra_sim(feeder);
  EXPECT_EQ(order, (std::vector<uint64_t>{1, 5}));
  auto& resolver = feeder.getDependancyResolver();
  EXPECT_TRUE(resolver.stalled());
  EXPECT_THAT(resolver.stallReport(), HasSubstr("3 nodes can never be issued"));
  EXPECT_THAT(resolver.stallReport(), HasSubstr("node 4 waits on node 4"));
  EXPECT_EQ(resolver.get_parents(2), (std::unordered_set<uint64_t>{3}));
}

TEST(FeederV3, NoFreeNodeAtAllThrows) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {2}}, {2, {1}}});
  try {
    V3Feeder feeder(dir.file("t.et"));
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr(dir.file("t.et")));
    EXPECT_THAT(e.what(), HasSubstr("2 nodes can never be issued"));
  }
}

TEST(FeederV3, BadFilesThrowWithTheirName) {
  TempDir dir;
  try {
    V3Feeder feeder(dir.file("missing.et"));
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("Failed to open file " + dir.file("missing.et")));
  }
  write_trace(dir.file("dup.et"), {{1, {}}, {2, {1}}, {1, {}}});
  try {
    V3Feeder feeder(dir.file("dup.et"));
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr(dir.file("dup.et") + ": record #3: node id 1 appears again"));
  }
  testing::write_text(dir.file("cut.et"), std::string("\x02\x0a\x00\x10\x08\x01", 6));
  EXPECT_THROW(V3Feeder(dir.file("cut.et")), std::runtime_error);
}

TEST(FeederV3, StateMachineErrors) {
  TempDir dir;
  write_trace(dir.file("t.et"), {{1, {}}, {2, {1}}, {3, {}}});
  V3Feeder feeder(dir.file("t.et"));
  auto& r = feeder.getDependancyResolver();
  EXPECT_EQ(r.get_dependancy_free_nodes(), (std::unordered_set<uint64_t>{1, 3}));
  EXPECT_THROW(r.take_node(2), std::runtime_error);    // waits on 1
  EXPECT_THROW(r.take_node(77), std::runtime_error);   // not in the trace
  EXPECT_THROW(r.finish_node(1), std::runtime_error);  // not taken
  r.resolve_dependancy_free_nodes();                   // allowed before the first take
  r.take_node(1);
  EXPECT_THROW(r.take_node(1), std::runtime_error);
  EXPECT_THROW(r.resolve_dependancy_free_nodes(), std::runtime_error);
  EXPECT_EQ(r.get_ongoing_nodes(), (std::unordered_set<uint64_t>{1}));
  r.push_back_node(1);
  EXPECT_TRUE(r.get_ongoing_nodes().empty());
  EXPECT_EQ(r.get_dependancy_free_nodes().count(1), 1u);
  // getNextIssuableNode: the smallest free id.
  auto first = feeder.getNextIssuableNode();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->id(), 1u);
  feeder.freeChildrenNodes(1);
  EXPECT_EQ(r.get_dependancy_free_nodes(), (std::unordered_set<uint64_t>{2, 3}));
  EXPECT_EQ(r.get_children(1), (std::unordered_set<uint64_t>{2}));
  EXPECT_EQ(feeder.getNextIssuableNode()->id(), 2u);
  feeder.pushBackIssuableNode(2);
  EXPECT_TRUE(feeder.hasNodesToIssue());
  feeder.removeNode(2);  // ignored, as in FeederV3
  EXPECT_THROW(feeder.addNode(nullptr), std::runtime_error);
}

TEST(FeederV3, AttributeConversions) {
  TempDir dir;
  ChakraProtoMsg::Node n;
  n.set_id(7);
  n.set_name("all_reduce");
  n.set_type(ChakraProtoMsg::COMM_COLL_NODE);
  n.set_duration_micros(12);
  add_attr(&n, "comm_size")->set_int64_val(-1);
  add_attr(&n, "comm_type")->set_int64_val(ChakraProtoMsg::ALL_TO_ALL);
  add_attr(&n, "num_ops")->set_uint32_val(5);
  add_attr(&n, "comm_src")->set_bool_val(true);
  add_attr(&n, "ratio")->set_double_val(2.5);
  add_attr(&n, "pg_name")->set_string_val("3");
  add_attr(&n, "dims")->mutable_int64_list()->add_values(4);
  add_attr(&n, "comm_size")->set_int64_val(99);  // a second of a name is not the one found
  n.mutable_inputs()->set_values("[[{\"pg_name\": \"0\", \"ranks\": [0, 1]}]]");
  write_nodes(dir.file("t.et"), {n});
  V3Feeder feeder(dir.file("t.et"));
  auto node = feeder.lookupNode(7);
  EXPECT_EQ(node->comm_size<uint64_t>(), UINT64_MAX);  // unchecked integer cast
  EXPECT_EQ(node->comm_size<int32_t>(), -1);
  EXPECT_EQ(node->comm_type(), ChakraProtoMsg::ALL_TO_ALL);
  EXPECT_EQ(node->num_ops(), 5u);
  EXPECT_EQ(node->comm_src(), 1u);  // bool counts as an integer
  EXPECT_DOUBLE_EQ(node->get_attr<double>("num_ops"), 5.0);
  EXPECT_FLOAT_EQ(node->get_attr<float>("ratio"), 2.5f);
  EXPECT_THROW(node->get_attr<uint64_t>("ratio"), std::bad_cast);
  EXPECT_THROW(node->get_attr<uint64_t>("pg_name"), std::bad_cast);
  EXPECT_THROW(node->get_attr<std::string>("num_ops"), std::bad_cast);
  EXPECT_EQ(node->pg_name<std::string>(""), "3");
  EXPECT_THROW(node->get_attr<int64_t>("dims"), std::invalid_argument);
  EXPECT_EQ(node->get_attr<ChakraProtoMsg::AttributeProto>("dims").int64_list().values(0), 4);
  // Strict: the exact field type only.
  const auto attr = node->get_attr_msg("num_ops");
  EXPECT_EQ(node->get_attr<uint32_t>(attr, true), 5u);
  EXPECT_THROW(node->get_attr<uint64_t>(attr, true), std::bad_cast);
  EXPECT_EQ(node->get_attr_type(attr), ChakraProtoMsg::AttributeProto::kUint32Val);
  // Missing attributes: the built-in defaults, a caller's default, or std::runtime_error.
  EXPECT_FALSE(node->is_cpu_op());
  EXPECT_EQ(node->comm_priority(), 0u);
  EXPECT_EQ(node->tensor_loc(), 0u);
  EXPECT_EQ(node->comm_dst(7), 7);  // T deduced from the default: int
  EXPECT_THROW(node->comm_dst(), std::runtime_error);
  EXPECT_THROW(node->get_attr_msg("nope"), std::runtime_error);
  const ChakraProtoMsg::AttributeProto* ptr = nullptr;
  EXPECT_TRUE(node->get_attr_msg("ratio", &ptr));
  ASSERT_NE(ptr, nullptr);
  EXPECT_DOUBLE_EQ(ptr->double_val(), 2.5);
  EXPECT_FALSE(node->get_attr_msg("nope", &ptr));
  EXPECT_EQ(node->get_inputs_values(), n.inputs().values());
  EXPECT_EQ(node->get_outputs_values("absent"), "absent");
  EXPECT_EQ(node->getChakraNode().SerializeAsString(), n.SerializeAsString());
  // A handle for an id that is not in the trace: id() works, contents throw.
  auto ghost = feeder.lookupNode(8);
  EXPECT_EQ(ghost->id(), 8u);
  EXPECT_THROW(ghost->name(), std::runtime_error);
}

// A node cache of two entries over a longer trace, plain and gzip'd: the same values.
TEST(FeederV3, SmallCacheAndGzipGiveTheSameValues) {
  TempDir dir;
  std::vector<TraceNode> nodes;
  for (uint64_t i = 0; i < 2000; ++i) {
    TraceNode t;
    t.id = i;
    t.duration = i * 3;
    if (i > 0) t.data_deps = {i - 1};
    if (i > 7) t.data_deps.push_back(i - 7);
    nodes.push_back(t);
  }
  write_trace(dir.file("t.et"), nodes);
  write_trace(dir.file("t.et.gz"), nodes);
  Reference ref = load_reference(dir.file("t.et"));
  for (const std::string name : {"t.et", "t.et.gz"}) {
    V3Feeder feeder(dir.file(name), true, true, 2);
    EXPECT_EQ(drive_like_astra_sim(feeder), ref.order()) << name;
    for (uint64_t id : {1999u, 0u, 1000u, 1001u, 3u}) expect_same_values(feeder, ref.nodes[id]);
  }
}

// The graph's memory: compact arrays, about 40 bytes per node and 4 per edge (FeederV3 holds
// about 1.5 KB per node). Not a timing: a bound on what the arrays hold.
TEST(FeederV3, GraphMemoryIsCompact) {
  TempDir dir;
  std::vector<TraceNode> nodes;
  constexpr uint64_t kNodes = 100000;
  for (uint64_t i = 0; i < kNodes; ++i) {
    TraceNode t;
    t.id = i;
    if (i > 0) t.data_deps = {i - 1};
    if (i > 10) t.ctrl_deps = {i - 10};
    nodes.push_back(t);
  }
  write_trace(dir.file("t.et"), nodes);
  V3Feeder feeder(dir.file("t.et"));
  EXPECT_LT(feeder.memoryBytes(), 80 * kNodes + (8u << 20));
}

}  // namespace
}  // namespace chakraflow
