// The converter stages on small hand-made traces: the worked example of reference/chakra_spec.md
// §2.14 in both modes, node typing and communication attributes, dependency encoding, dangling
// removal, the cycle check, schema 1.0.1 input, and errors.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "proto/et_def.pb.h"
#include "stages/common/file_io.h"
#include "stages/common/move_to_targets.h"
#include "stages/convert/comm_attributes.h"
#include "stages/convert/cycle_check.h"
#include "stages/convert/et_plus_nodes.h"
#include "stages/convert/pytorch_converter.h"
#include "stages/link/host_et_loader.h"
#include "tests/testing/linked_rank_bytes.h"
#include "tests/testing/test_util.h"
#include "tests/testing/threaded_batches.h"

namespace chakraflow {
namespace {

namespace pb = ChakraProtoMsg;

// One ET+ node (schema 1.0.2+ layout). `extra` is raw JSON appended to the object ("" or
// starting with a comma). Attributes: rf_id = 10 * id and the given tid.
std::string node(uint64_t id, const std::string& name, int64_t parent, int64_t tid,
                 const std::string& extra = "", const std::string& inputs = "",
                 const std::string& extra_attrs = "") {
  std::string in = inputs.empty() ? R"({"values": [], "shapes": [], "types": []})" : inputs;
  return fmt::format(
      R"({{"id": {}, "name": "{}", "ctrl_deps": {}, "inputs": {}, "outputs": {{"values": [], "shapes": [], "types": []}}, "attrs": [{{"name": "rf_id", "type": "uint64", "value": {}}}, {{"name": "fw_parent", "type": "uint64", "value": 0}}, {{"name": "seq_id", "type": "int64", "value": -1}}, {{"name": "scope", "type": "uint64", "value": 0}}, {{"name": "tid", "type": "uint64", "value": {}}}, {{"name": "fw_tid", "type": "uint64", "value": 0}}, {{"name": "op_schema", "type": "string", "value": ""}}{}]{}}})",
      id, name, parent, in, id * 10, tid, extra_attrs, extra);
}

std::string trace(const std::vector<std::string>& nodes,
                  const std::string& schema = "1.0.2-chakra.0.0.4") {
  std::string s = fmt::format(
      R"({{"schema": "{}", "pid": 42, "time": "2024-01-01 00:00:00", "start_ts": 100, "nodes": [)",
      schema);
  for (size_t i = 0; i < nodes.size(); ++i) s += (i ? ",\n" : "\n") + nodes[i];
  s += "\n], \"finish_ts\": 200}";
  return s;
}

// A gloo rank's pieces: the process-group metadata's inputs (groups "0", every rank, and "1"),
// a c10d op's inputs and a gloo collective's, holding the same tensor of 64 floats.
const char* const kPgInit =
    R"({"values": ["[{\"pg_name\": \"0\", \"ranks\": [], \"group_size\": 2}, {\"pg_name\": \"1\", \"ranks\": [0], \"group_size\": 1}]"], "shapes": [[]], "types": ["String"]})";
const char* const kC10dInputs =
    R"({"values": [[[100, 101, 0, 64, 4, "cuda:0"]], "<Object>"], "shapes": [[[64]], []], "types": ["GenericList[Tensor(float)]", "Object"]})";
const char* const kGlooInputs =
    R"x({"values": [[100, 101, 0, 64, 4, "cuda:0"]], "shapes": [[64]], "types": ["Tensor(float)"]})x";

// A node's timing keys (inclusive and exclusive alike).
std::string timed(double ts, double dur) {
  return fmt::format(R"(, "inclusive_dur": {}, "exclusive_dur": {}, "ts": {})", dur, dur, ts);
}

// A kernel's keys: 2 us from `ts`, on `stream`.
std::string kernel(double ts, int stream) {
  return timed(ts, 2) + fmt::format(R"(, "cat": "kernel", "stream": {})", stream);
}

struct Converted {
  std::map<uint64_t, pb::Node> nodes;
  pb::GlobalMetadata metadata;
  DataProblems stats;
  ChakraTrace chakra;
};

// Runs the converter stages on `text` in memory and returns the messages that would be written.
StatusOr<Converted> convert_text(const std::string& text, Compat compat) {
  ConvertOptions options;
  options.compat = compat;
  CF_ASSIGN_OR_RETURN(EtPlusFile file, parse_et_plus("test.json", text, options));
  const EtPlusTrace& t = file.trace;
  Converted out;
  out.stats = t.stats;
  CF_ASSIGN_OR_RETURN(out.chakra, convert_et_plus(t, options, out.stats));
  fill_global_metadata(t, options, &out.metadata);
  std::string encoded;
  for (const ChakraNodeRecord& r : out.chakra.nodes) {
    pb::Node n;
    CF_RETURN_IF_ERROR(fill_node(t, out.chakra, r, &n));
    // What the writer writes: the same bytes, encoded without the message.
    CF_RETURN_IF_ERROR(encode_node(t, out.chakra, r, encoded));
    EXPECT_TRUE(encoded == n.SerializeAsString()) << "node " << n.id() << " encoded differently";
    out.nodes.emplace(n.id(), std::move(n));
  }
  return out;
}

std::vector<uint64_t> ids(const google::protobuf::RepeatedField<uint64_t>& f) {
  return std::vector<uint64_t>(f.begin(), f.end());
}

const pb::AttributeProto* attr(const pb::Node& n, const std::string& name) {
  for (const auto& a : n.attr()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// The worked example of reference/chakra_spec.md §2.14, plus times and durations.
std::string worked_example() {
  const std::string kGpu = R"(, "cat": "kernel", "ph": "X", "stream": 7)";
  const std::string kAllReduceInputs =
      R"({"values": [[[1, 2, 0, 256, 4, "cuda:0"], [3, 4, 0, 256, 2, "cuda:0"]]], "shapes": [[[256], [256]]], "types": ["GenericList[Tensor(float),Tensor(c10::Half)]"]})";
  const std::string kSendInputs =
      R"({"values": [[[5, 6, 0, 100, 4, "cuda:0"]], 12, ["3", "pg"], 1, "send", [], [], 0, 1, 2], "shapes": [[[100]], [], [[], []], [], [], [], [], [], [], []], "types": ["GenericList[Tensor(float)]", "Int", "Tuple[String,String]", "Int", "String", "GenericList[]", "GenericList[]", "Int", "Int", "Int"]})";
  const std::string kPgInit =
      R"({"values": ["[{\"pg_name\": \"0\", \"backend_config\": \"cuda:nccl\", \"ranks\": [], \"group_size\": 2}]"], "shapes": [[]], "types": ["String"]})";
  return trace({
      node(0, "[pytorch|profiler|execution_trace|process]", 0, 0),
      node(1, "[pytorch|profiler|execution_trace|thread]", 0, 1),
      node(2, "[pytorch|profiler|execution_trace|thread]", 0, 2),
      node(3, "aten::mm", 1, 1, R"(, "inclusive_dur": 9, "exclusive_dur": 2.6, "ts": 100)"),
      node(4, "void gemm_kernel<float>()", 3, 1,
           R"(, "inclusive_dur": 0.4, "exclusive_dur": 0.4, "ts": 110)" + kGpu),
      node(5, "aten::add", 3, 1, R"(, "exclusive_dur": 1, "ts": 105)"),
      node(6, "record_param_comms", 1, 1, R"(, "exclusive_dur": 3, "ts": 120)"),
      node(7, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 6,
           1, R"(, "exclusive_dur": 12, "ts": 130)" + kGpu + R"(, "pg_name": "0")",
           kAllReduceInputs),
      node(8, "nccl:send", 1, 1, R"(, "exclusive_dur": 2, "ts": 140)"),
      node(9, "record_param_comms", 8, 1, R"(, "exclusive_dur": 1, "ts": 141)", kSendInputs,
           R"(, {"name": "pg_name", "type": "string", "value": "3"})"),
      node(10, "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", 9, 1,
           R"(, "exclusive_dur": 20, "ts": 150)" + kGpu, kSendInputs),
      node(11, "aten::relu", 2, 2,
           R"(, "exclusive_dur": 4, "ts": 200, "inter_thread_dep": 5, "sync_dep": [4])"),
      node(12, "## process_group:init ##", 1, 1, "", kPgInit),
      node(13, "Optimizer.step#SGD.step", 99, 1, R"(, "exclusive_dur": 5, "ts": 300)"),
  });
}

// The measured step, read in ranges: the first start and the last end of the nodes with a ts,
// wherever in the trace they lie (the earliest start in the last range, the latest end in the
// first), nodes without a ts or with ts 0 left out; none without any.
TEST(pytorch_converter, MeasuredStepOverRanges) {
  EtPlusTrace t;
  std::mt19937 rng(7);
  constexpr size_t kNodes = 100000;
  for (size_t i = 0; i < kNodes; ++i) {
    EtPlusNode& n = t.nodes.emplace_back();
    n.has_ts = i % 5 != 0;
    n.ts = n.has_ts ? 1000.0 + static_cast<double>(rng() % 50000) : 0.0;
    n.inclusive_dur = static_cast<double>(rng() % 300);
    n.exclusive_dur = static_cast<double>(rng() % 400);
  }
  t.nodes[kNodes - 3].ts = 5.0;  // the first start, in the last range
  t.nodes[7].has_ts = true;      // the last end, in the first range
  t.nodes[7].ts = 90000.0;
  t.nodes[7].inclusive_dur = 3.0;
  t.nodes[7].exclusive_dur = 12.5;  // the larger of the two counts
  t.nodes[11].has_ts = true;        // ts 0: not linked, left out
  t.nodes[11].ts = 0.0;
  const OrderedBatches in_turn;
  for (const OrderedBatches* workers : {static_cast<const OrderedBatches*>(nullptr), &in_turn}) {
    const auto step = measured_step(t, workers);
    ASSERT_TRUE(step.has_value());
    EXPECT_EQ(step->start_us, 5.0);
    EXPECT_EQ(step->end_us, 90012.5);
  }
  for (EtPlusNode& n : t.nodes) n.has_ts = false;
  EXPECT_FALSE(measured_step(t, &in_turn).has_value());
}

TEST(pytorch_converter, WorkedExampleChakraMode) {
  auto c = convert_text(worked_example(), Compat::kChakra);
  ASSERT_TRUE(c.ok()) << c.status().message();
  // Nodes 0 (the process root) and 13 (parent 99 is missing) are removed as dangling.
  std::vector<uint64_t> written;
  for (const auto& [id, n] : c->nodes) written.push_back(id);
  EXPECT_EQ(written, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  struct Expect {
    uint64_t id;
    pb::NodeType type;
    std::vector<uint64_t> ctrl, data;
  };
  const std::vector<Expect> table = {
      {1, pb::COMP_NODE, {0}, {}},       {2, pb::COMP_NODE, {0}, {}},
      {3, pb::COMP_NODE, {1}, {1}},      {4, pb::COMP_NODE, {3}, {3}},
      {5, pb::COMP_NODE, {3}, {3}},      {6, pb::COMP_NODE, {1}, {5}},
      {7, pb::COMM_COLL_NODE, {6}, {6}}, {8, pb::COMP_NODE, {1}, {6}},
      {9, pb::COMP_NODE, {8}, {8}},      {10, pb::COMM_SEND_NODE, {9}, {9}},
      {11, pb::COMP_NODE, {2}, {5, 2}},  {12, pb::METADATA_NODE, {1}, {9}},
  };
  for (const Expect& e : table) {
    SCOPED_TRACE("node " + std::to_string(e.id));
    const pb::Node& n = c->nodes.at(e.id);
    EXPECT_EQ(n.type(), e.type);
    EXPECT_EQ(ids(n.ctrl_deps()), e.ctrl);
    EXPECT_EQ(ids(n.data_deps()), e.data);
    EXPECT_EQ(n.start_time_micros(), 0u);  // Chakra never sets it
    // The fixed attributes, in Chakra's order.
    ASSERT_GE(n.attr_size(), 9);
    const char* names[] = {"rf_id",  "fw_parent", "seq_id",    "scope", "tid",
                           "fw_tid", "op_schema", "is_cpu_op", "stream"};
    for (int k = 0; k < 9; ++k) EXPECT_EQ(n.attr(k).name(), names[k]);
    EXPECT_EQ(n.attr(0).int64_val(), static_cast<int64_t>(e.id * 10));
    EXPECT_EQ(n.attr(2).int64_val(), -1);
  }
  const pb::Node& gemm = c->nodes.at(4);
  EXPECT_FALSE(attr(gemm, "is_cpu_op")->bool_val());
  EXPECT_EQ(attr(gemm, "stream")->int64_val(), 7);
  EXPECT_EQ(gemm.duration_micros(), 0u);            // 0.4 µs truncated
  EXPECT_EQ(c->nodes.at(3).duration_micros(), 2u);  // 2.6 µs truncated
  EXPECT_TRUE(attr(c->nodes.at(3), "is_cpu_op")->bool_val());
  EXPECT_EQ(attr(c->nodes.at(3), "stream")->int64_val(), 0);  // CPU nodes: Chakra's default 0

  const pb::Node& allreduce = c->nodes.at(7);
  ASSERT_EQ(allreduce.attr_size(), 12);
  EXPECT_EQ(allreduce.attr(9).name(), "comm_type");
  EXPECT_EQ(allreduce.attr(9).int64_val(), pb::ALL_REDUCE);
  EXPECT_EQ(allreduce.attr(10).name(), "comm_size");
  EXPECT_EQ(allreduce.attr(10).int64_val(), 256 * 4 + 256 * 2);
  EXPECT_EQ(allreduce.attr(11).name(), "pg_name");
  EXPECT_EQ(allreduce.attr(11).string_val(), "0");

  const pb::Node& send = c->nodes.at(10);
  ASSERT_EQ(send.attr_size(), 11);
  EXPECT_EQ(send.attr(9).name(), "comm_size");
  EXPECT_EQ(send.attr(9).int64_val(), 400);
  EXPECT_EQ(send.attr(10).name(), "pg_name");
  EXPECT_EQ(send.attr(10).string_val(), "3");  // copied from its record_param_comms
  EXPECT_EQ(attr(send, "comm_dst"), nullptr);  // Chakra never writes peers

  const pb::Node& pg = c->nodes.at(12);
  EXPECT_EQ(
      pg.inputs().values(),
      R"(['[{"pg_name": "0", "backend_config": "cuda:nccl", "ranks": [], "group_size": 2}]'])");
  EXPECT_EQ(pg.inputs().shapes(), "[[]]");
  EXPECT_EQ(pg.inputs().types(), "['String']");
  EXPECT_EQ(c->nodes.at(7).inputs().values(),
            "[[[1, 2, 0, 256, 4, 'cuda:0'], [3, 4, 0, 256, 2, 'cuda:0']]]");

  EXPECT_EQ(c->metadata.version(), "");
  ASSERT_EQ(c->metadata.attr_size(), 5);
  EXPECT_EQ(c->metadata.attr(0).string_val(), "1.0.2-chakra.0.0.4");
  EXPECT_EQ(c->metadata.attr(1).uint64_val(), 42u);
  EXPECT_EQ(c->metadata.attr(4).name(), "finish_ts");
  EXPECT_EQ(c->metadata.attr(4).uint64_val(), 200u);
}

// Chakra mode truncates exclusive_dur; where the ET+ float holds rounding noise across a whole µs
// (Chakra's float arithmetic on timestamps near 5e12 µs), the exact value, recomputed from the
// node's inclusive_dur and its timed children, is truncated instead (the .et Chakra's tools give
// on the pt211 references). Values as Chakra's ET+ holds them.
TEST(pytorch_converter, ChakraModeTruncatesTheExactDurationUnderFloatNoise) {
  const std::string text = trace({
      node(0, "[pytorch|profiler|execution_trace|process]", 0, 0),
      node(1, "[pytorch|profiler|execution_trace|thread]", 0, 1),
      // 27.207 - 18.207 = 9 exactly; the float reads 8.99996875.
      node(2, "a", 1, 1,
           R"(, "inclusive_dur": 27.207, "exclusive_dur": 8.99996875, "ts": 4816240704925.07)"),
      node(3, "a_child", 2, 1,
           R"(, "inclusive_dur": 18.207, "exclusive_dur": 18.207, "ts": 4816240704930.07)"),
      // 40.0 - 14.001 = 25.999 exactly; the float reads 25.9995859375 (rounding it would give 26).
      node(4, "b", 1, 1,
           R"(, "inclusive_dur": 40.0, "exclusive_dur": 25.9995859375, "ts": 4816240705000.5)"),
      node(5, "b_child", 4, 1,
           R"(, "inclusive_dur": 14.001, "exclusive_dur": 14.001, "ts": 4816240705010.5)"),
      // No child explains the float: it is truncated as it is.
      node(6, "c", 1, 1,
           R"(, "inclusive_dur": 12.0, "exclusive_dur": 8.99996875, "ts": 4816240706000.5)"),
      // Far from a whole µs: truncated.
      node(7, "d", 1, 1, R"(, "inclusive_dur": 3.5, "exclusive_dur": 3.5, "ts": 4816240707000.5)"),
  });
  auto c = convert_text(text, Compat::kChakra);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->nodes.at(2).duration_micros(), 9u);
  EXPECT_EQ(c->nodes.at(4).duration_micros(), 25u);
  EXPECT_EQ(c->nodes.at(6).duration_micros(), 8u);
  EXPECT_EQ(c->nodes.at(7).duration_micros(), 3u);
  auto d = convert_text(text, Compat::kDefault);  // rounds to the nearest µs
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->nodes.at(4).duration_micros(), 26u);
}

// gloo runs a collective on its own thread; the ET records it on the caller's thread, under the
// op that ran there when it started (aten::mul), with the caller's later ops as its children
// (aten::add). Default mode: a communication node on the thread it ran on (exec_tid), under the
// c10d op that enqueued it (same tensor), its recorded children back under aten::mul, ordered on
// its thread before the copy that followed it there. Chakra mode: compute on the caller's thread.
TEST(pytorch_converter, GlooCollectivesAreCommunicationOnTheirOwnThread) {
  const std::string text = trace({
      node(0, "[pytorch|profiler|execution_trace|process]", 0, 0),
      node(1, "[pytorch|profiler|execution_trace|thread]", 0, 1),
      node(2, "[pytorch|profiler|execution_trace|thread]", 0, 6),
      node(3, "## process_group:init ##", 1, 1, "", kPgInit),
      node(4, "c10d::allreduce_", 1, 1, timed(100, 10), kC10dInputs),
      node(5, "aten::copy_", 4, 1, timed(104, 4)),
      node(6, "gloo:all_reduce", 7, 1, timed(120, 50) + R"(, "exec_tid": 6)", kGlooInputs),
      node(7, "aten::mul", 1, 1, timed(115, 20)),
      node(8, "aten::add", 6, 1, timed(140, 5)),
      node(9, "aten::copy_", 2, 6, timed(171, 5)),
  });
  auto c = convert_text(text, Compat::kDefault);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const pb::Node& gloo = c->nodes.at(6);
  EXPECT_EQ(gloo.type(), pb::COMM_COLL_NODE);
  EXPECT_EQ(attr(gloo, "comm_type")->int64_val(), pb::ALL_REDUCE);
  EXPECT_EQ(attr(gloo, "comm_size")->int64_val(), 256);
  EXPECT_FALSE(attr(gloo, "is_cpu_op")->bool_val());  // ASTRA-sim refuses comm on the CPU
  EXPECT_EQ(attr(gloo, "stream"), nullptr);
  EXPECT_EQ(attr(gloo, "tid")->int64_val(), 6);         // the thread it ran on
  EXPECT_EQ(attr(gloo, "pg_name")->string_val(), "0");  // the default group, guessed
  EXPECT_EQ(c->stats.count(StatKind::kCommCpuCollectiveGroupGuessed), 1u);
  EXPECT_EQ(ids(gloo.data_deps()), (std::vector<uint64_t>{5}));  // after its c10d op's copy
  EXPECT_EQ(ids(c->nodes.at(8).data_deps()), (std::vector<uint64_t>{7}));  // back after mul
  const auto copy_back = ids(c->nodes.at(9).data_deps());
  EXPECT_NE(std::find(copy_back.begin(), copy_back.end(), 6), copy_back.end());
  // Nothing on the caller's thread waits for the collective.
  for (uint64_t id : {7, 8}) {
    const auto deps = ids(c->nodes.at(id).data_deps());
    EXPECT_EQ(std::find(deps.begin(), deps.end(), 6), deps.end()) << id;
  }

  auto chakra = convert_text(text, Compat::kChakra);
  ASSERT_TRUE(chakra.ok()) << chakra.status().message();
  EXPECT_EQ(chakra->nodes.at(6).type(), pb::COMP_NODE);
  EXPECT_EQ(attr(chakra->nodes.at(6), "tid")->int64_val(), 1);

  // Without the ET+'s exec_tid (a host ET alone) the recorded tid stays, counted.
  std::string no_thread = text;
  no_thread.erase(no_thread.find(R"(, "exec_tid": 6)"), 15);
  auto alone = convert_text(no_thread, Compat::kDefault);
  ASSERT_TRUE(alone.ok()) << alone.status().message();
  EXPECT_EQ(attr(alone->nodes.at(6), "tid")->int64_val(), 1);
  EXPECT_EQ(alone->stats.count(StatKind::kCommCpuCollectiveThreadUnknown), 1u);
}

TEST(pytorch_converter, WorkedExampleDefaultMode) {
  auto c = convert_text(worked_example(), Compat::kDefault);
  ASSERT_TRUE(c.ok()) << c.status().message();
  std::vector<uint64_t> written;
  for (const auto& [id, n] : c->nodes) written.push_back(id);
  // The orphan 13 is kept, attached to the thread root of its tid.
  EXPECT_EQ(written, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}));
  struct Expect {
    uint64_t id;
    std::vector<uint64_t> ctrl, data;
  };
  const std::vector<Expect> table = {
      {1, {}, {}},          {2, {}, {}},     {3, {1}, {1}},     {4, {3}, {3}},
      {5, {3}, {3}},        {6, {1}, {5}},   {7, {6}, {6, 4}},   // waits for the stream's gemm
      {8, {1}, {6}},        {9, {8}, {8}},   {10, {9}, {9, 7}},  // and the all-reduce
      {11, {2}, {5, 2, 4}},                                      // the sync dependency
      {12, {1}, {9}},       {13, {1}, {12}},
  };
  for (const Expect& e : table) {
    SCOPED_TRACE("node " + std::to_string(e.id));
    const pb::Node& n = c->nodes.at(e.id);
    EXPECT_EQ(ids(n.ctrl_deps()), e.ctrl);
    EXPECT_EQ(ids(n.data_deps()), e.data);
  }
  EXPECT_EQ(c->chakra.gpu_stream_edges, 2u);
  EXPECT_EQ(c->chakra.sync_edges, 1u);
  // Durations: nearest µs, at least 1 µs for work that took time; Optimizer.step still 0.
  EXPECT_EQ(c->nodes.at(4).duration_micros(), 1u);
  EXPECT_EQ(c->nodes.at(3).duration_micros(), 3u);
  EXPECT_EQ(c->nodes.at(13).duration_micros(), 0u);
  EXPECT_EQ(c->nodes.at(3).start_time_micros(), 100u);
  EXPECT_EQ(c->nodes.at(10).start_time_micros(), 150u);
  // No stream on CPU nodes; GPU nodes keep theirs.
  EXPECT_EQ(attr(c->nodes.at(3), "stream"), nullptr);
  EXPECT_EQ(attr(c->nodes.at(4), "stream")->int64_val(), 7);
  // Send/recv peers from record_param_comms (rank argument 1), NCCL's tag-less matching.
  const pb::Node& send = c->nodes.at(10);
  EXPECT_EQ(send.type(), pb::COMM_SEND_NODE);
  ASSERT_NE(attr(send, "comm_dst"), nullptr);
  EXPECT_EQ(attr(send, "comm_dst")->int32_val(), 1);
  EXPECT_EQ(attr(send, "comm_tag")->int32_val(), 0);
  EXPECT_EQ(attr(send, "comm_src"), nullptr);
  EXPECT_EQ(c->metadata.version(), "1.0.0");
}

TEST(pytorch_converter, HostTraceFileOrderDecidesChakraCtrlDeps) {
  // Host traces list a node when it exits: children first, the process root last.
  const std::string text = trace({
      node(2, "[pytorch|profiler|execution_trace|thread]", 1, 1),
      node(4, "aten::empty", 3, 1),
      node(3, "aten::to", 2, 1),
      node(5, "aten::add", 2, 1),
      node(1, "[pytorch|profiler|execution_trace|process]", 1, 0),
  });
  auto chakra = convert_text(text, Compat::kChakra);
  ASSERT_TRUE(chakra.ok()) << chakra.status().message();
  EXPECT_EQ(ids(chakra->nodes.at(4).ctrl_deps()), std::vector<uint64_t>{});  // parent came later
  EXPECT_EQ(ids(chakra->nodes.at(3).ctrl_deps()), std::vector<uint64_t>{2});
  EXPECT_EQ(ids(chakra->nodes.at(2).ctrl_deps()), std::vector<uint64_t>{});
  // The pre-order chain does not depend on file order.
  EXPECT_EQ(ids(chakra->nodes.at(3).data_deps()), std::vector<uint64_t>{2});
  EXPECT_EQ(ids(chakra->nodes.at(4).data_deps()), std::vector<uint64_t>{3});
  EXPECT_EQ(ids(chakra->nodes.at(5).data_deps()), std::vector<uint64_t>{4});
  EXPECT_EQ(chakra->nodes.count(1), 0u);
  auto def = convert_text(text, Compat::kDefault);
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(ids(def->nodes.at(4).ctrl_deps()), std::vector<uint64_t>{3});
  EXPECT_EQ(ids(def->nodes.at(2).ctrl_deps()), std::vector<uint64_t>{});  // root 1 is removed
}

TEST(pytorch_converter, CollectiveTypesAndUnknownKernels) {
  const std::string kGpu = R"(, "cat": "kernel", "stream": 3, "ts": 50)";
  const std::string text = trace({
      node(0, "[pytorch|profiler|execution_trace|thread]", 0, 1),
      node(1, "nccl:reduce", 0, 1),
      node(2, "ncclDevKernel_Reduce_Sum_f32_RING_LL", 1, 1, kGpu),
      node(3, "nccl:all_gather", 0, 1),
      node(4, "ncclDevKernel_Generic_4", 3, 1, kGpu),
      node(5, "mystery_op", 0, 1),
      node(6, "ncclDevKernel_Mystery", 5, 1, kGpu),
      node(7, "c10d::broadcast_", 0, 1),
      node(8, "ncclKernel_Broadcast_RING_LL_Sum_int8_t", 7, 1, kGpu),
  });
  for (Compat mode : {Compat::kChakra, Compat::kDefault}) {
    SCOPED_TRACE(mode == Compat::kChakra ? "chakra" : "default");
    auto c = convert_text(text, mode);
    ASSERT_TRUE(c.ok()) << c.status().message();
    // Chakra aborts on the first three; we type them and count them.
    EXPECT_EQ(c->nodes.at(2).type(), pb::COMM_COLL_NODE);
    EXPECT_EQ(attr(c->nodes.at(2), "comm_type")->int64_val(), pb::REDUCE);
    EXPECT_EQ(c->nodes.at(4).type(), pb::COMM_COLL_NODE);
    EXPECT_EQ(attr(c->nodes.at(4), "comm_type")->int64_val(),
              pb::ALL_GATHER);                        // from nccl:all_gather
    EXPECT_EQ(c->nodes.at(6).type(), pb::COMP_NODE);  // nothing says which collective
    EXPECT_EQ(attr(c->nodes.at(6), "comm_type"), nullptr);
    EXPECT_EQ(attr(c->nodes.at(8), "comm_type")->int64_val(), pb::BROADCAST);
    EXPECT_EQ(c->stats.count(StatKind::kCommCollectiveUnknown), 1u);
    if (mode == Compat::kChakra) {
      EXPECT_EQ(c->stats.count(StatKind::kCommCollectiveChakraUntyped), 3u);
    }
  }
  EXPECT_EQ(chakra_collective_type("ncclKernel_ReduceScatter_RING_LL_Sum_float"),
            CollectiveType::kReduceScatter);
  EXPECT_EQ(chakra_collective_type("ncclDevKernel_AllGather_RING_LL"), CollectiveType::kAllGather);
  EXPECT_EQ(chakra_collective_type("ncclDevKernel_SendRecv(x)"), CollectiveType::kAllToAll);
  EXPECT_EQ(chakra_collective_type("ncclDevKernel_Reduce_Sum"), std::nullopt);
  EXPECT_EQ(collective_type_from_name("c10d::_reduce_scatter_base_"),
            CollectiveType::kReduceScatter);
  EXPECT_EQ(collective_type_from_name("gloo:barrier"), CollectiveType::kBarrier);
  EXPECT_EQ(collective_type_from_name("c10d::gather_"), CollectiveType::kGather);
  EXPECT_EQ(collective_type_from_name("aten::mm"), std::nullopt);
}

TEST(pytorch_converter, CommSizeOfNestedListsAndUndefinedTensors) {
  EtPlusTrace t;
  ConvertOptions options;
  DataProblems stats;
  CommTyper typer(t, options, stats);
  // A plain list of tensors: both rules agree.
  EXPECT_EQ(typer.comm_size(R"([[[1,2,0,8,4,"cuda:0"],[3,4,0,8,2,"cuda:0"]], 5])",
                            R"(["GenericList[Tensor(float),Tensor(c10::Half)]", "Int"])", true),
            48);
  // Nested lists (c10d::allgather_ inputs): Chakra raises, the default rule sums every tensor.
  const char* nested_values = R"([[[[1,2,0,4,4,"cuda:0"],[3,4,0,4,4,"cuda:0"]]]])";
  const char* nested_types = R"(["GenericList[GenericList[Tensor(float),Tensor(float)]]"])";
  EXPECT_EQ(typer.comm_size(nested_values, nested_types, true), std::nullopt);
  EXPECT_EQ(typer.comm_size(nested_values, nested_types, false), 32);
  // Undefined optional tensors and empty values.
  EXPECT_EQ(
      typer.comm_size(R"(["<None>", []])", R"j(["Optional[Tensor]", "Tensor(float)"])j", true),
      std::nullopt);
  EXPECT_EQ(
      typer.comm_size(R"(["<None>", []])", R"j(["Optional[Tensor]", "Tensor(float)"])j", false), 0);
  // zip() stops at the shorter list; non-tensor types are skipped.
  EXPECT_EQ(typer.comm_size(R"([[1,2,0,10,8,"cpu"], 3])", R"j(["Tensor(long)"])j", true), 80);
}

TEST(pytorch_converter, CyclesAreReportedWithTheirNodeIds) {
  // Two threads whose inter-thread dependencies point at each other.
  const std::string text = trace({
      node(1, "[pytorch|profiler|execution_trace|thread]", 1, 1),
      node(2, "[pytorch|profiler|execution_trace|thread]", 2, 2),
      node(3, "aten::a", 1, 1, R"(, "inter_thread_dep": 4)"),
      node(4, "aten::b", 2, 2, R"(, "inter_thread_dep": 3)"),
  });
  for (Compat mode : {Compat::kChakra, Compat::kDefault}) {
    auto c = convert_text(text, mode);
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find("cyclic data dependency"), std::string::npos)
        << c.status().message();
    EXPECT_NE(c.status().message().find("3 -> 4 -> 3"), std::string::npos) << c.status().message();
    EXPECT_NE(c.status().message().find("test.json"), std::string::npos);
  }
}

TEST(pytorch_converter, CycleCheckIsIterativeOnLongChains) {
  // 300k nodes in one dependency chain (a recursive DFS would overflow the stack), then close
  // the chain into a cycle.
  const uint32_t n = 300000;
  EtPlusTrace t;
  t.path = "chain";
  t.nodes.resize(n);
  ChakraTrace c;
  c.nodes.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    t.nodes[i].id = i;
    t.nodes[i].name = "op";
    c.nodes[i].source = i;
    if (i > 0) c.nodes[i].data_deps.push_back(i - 1);
  }
  EXPECT_TRUE(check_acyclic(t, c).ok());
  c.nodes[0].data_deps.push_back(n - 1);
  Status s = check_acyclic(t, c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("over 300000 node(s)"), std::string::npos)
      << s.message().substr(0, 300);
  // A dependency on a node that is not written.
  c.nodes.pop_back();
  s = check_acyclic(t, c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not in the output"), std::string::npos) << s.message();
}

TEST(pytorch_converter, DanglingRemovalKeepsReferencedNodes) {
  const std::string text = trace({
      node(1, "[pytorch|profiler|execution_trace|thread]", 1, 1),
      node(2, "[pytorch|profiler|execution_trace|thread]", 2, 2),  // no children: removed
      node(3, "[pytorch|profiler|execution_trace|thread]", 3, 3),
      node(4, "aten::a", 1, 1),
      node(5, "lonely", 77, 5, ""),  // orphan with no thread root for tid 5
      node(6, "aten::b", 3, 3, R"(, "inter_thread_dep": 5)"),
  });
  auto chakra = convert_text(text, Compat::kChakra);
  ASSERT_TRUE(chakra.ok()) << chakra.status().message();
  EXPECT_EQ(chakra->nodes.count(2), 0u);
  EXPECT_EQ(chakra->nodes.count(5), 1u);  // kept: node 6 depends on it
  EXPECT_EQ(ids(chakra->nodes.at(6).data_deps()), (std::vector<uint64_t>{5, 3}));
  EXPECT_EQ(chakra->chakra.removed_dangling, 1u);
  auto def = convert_text(text, Compat::kDefault);
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->nodes.count(2), 0u);
  EXPECT_EQ(ids(def->nodes.at(5).data_deps()), std::vector<uint64_t>{});  // walked on its own
  EXPECT_EQ(def->stats.count(StatKind::kConvertParentMissingOwnRoot), 1u);
}

TEST(pytorch_converter, DependenciesOnMissingOrSelfAreDropped) {
  const std::string text = trace({
      node(1, "[pytorch|profiler|execution_trace|thread]", 1, 1),
      node(2, "aten::a", 1, 1, R"(, "inter_thread_dep": 2, "sync_dep": [99])"),
      node(3, "aten::b", 1, 1, R"(, "inter_thread_dep": 55)"),
  });
  for (Compat mode : {Compat::kChakra, Compat::kDefault}) {
    auto c = convert_text(text, mode);
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ(ids(c->nodes.at(2).data_deps()), std::vector<uint64_t>{1});
    EXPECT_EQ(ids(c->nodes.at(3).data_deps()), std::vector<uint64_t>{2});
    EXPECT_EQ(c->stats.count(StatKind::kConvertInterThreadDepOnSelf), 1u);
    EXPECT_EQ(c->stats.count(StatKind::kConvertInterThreadDepNotConverted), 1u);
  }
}

TEST(pytorch_converter, GpuNodesUnderAGpuNodeAreNotConvertedAndCounted) {
  // Kernel 4 names kernel 3 its parent: no CPU node is followed by it in the conversion order,
  // so it is not converted; the default mode counts it (kernel 3, under aten::a, converts).
  const std::string kGpu = R"(, "cat": "kernel", "stream": 1)";
  const std::string text = trace({
      node(1, "[pytorch|profiler|execution_trace|thread]", 1, 1),
      node(2, "aten::a", 1, 1, R"(, "ts": 10)"),
      node(3, "kernel_a", 2, 1, R"(, "ts": 20)" + kGpu),
      node(4, "kernel_b", 3, 1, R"(, "ts": 30)" + kGpu),
  });
  for (Compat mode : {Compat::kChakra, Compat::kDefault}) {
    auto c = convert_text(text, mode);
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ(c->nodes.count(3), 1u);
    EXPECT_EQ(c->nodes.count(4), 0u);
    EXPECT_EQ(c->stats.count(StatKind::kConvertGpuLauncherNotConverted),
              mode == Compat::kDefault ? 1u : 0u);
  }
}

TEST(pytorch_converter, ForwardSyncDependenciesAreSkipped) {
  // Node 3 claims to wait for a kernel (5) that starts after it: following it could close a
  // cycle (5 runs after its launcher 4, which follows 3), so it is skipped and counted.
  const std::string kGpu = R"(, "cat": "kernel", "stream": 1)";
  const std::string text = trace({
      node(1, "[pytorch|profiler|execution_trace|thread]", 1, 1),
      node(2, "aten::a", 1, 1, R"(, "ts": 10)"),
      node(3, "aten::sync", 1, 1, R"(, "ts": 20, "sync_dep": [5])"),
      node(4, "aten::b", 1, 1, R"(, "ts": 30)"),
      node(5, "kernel_b", 4, 1, R"(, "ts": 40)" + kGpu),
  });
  auto c = convert_text(text, Compat::kDefault);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(ids(c->nodes.at(3).data_deps()), std::vector<uint64_t>{2});
  EXPECT_EQ(c->stats.count(StatKind::kConvertSyncDepAgainstOrder), 1u);
}

TEST(pytorch_converter, StreamsChainByStartTimeNotId) {
  // Two threads launch onto stream 9; the later id runs first on the stream.
  const std::string kGpu = R"(, "cat": "kernel", "stream": 9)";
  const std::string text = trace({
      node(1, "[pytorch|profiler|execution_trace|thread]", 1, 1),
      node(2, "[pytorch|profiler|execution_trace|thread]", 2, 2),
      node(3, "aten::a", 1, 1, R"(, "ts": 10)"),
      node(4, "kernel_a", 3, 1, R"(, "ts": 50)" + kGpu),
      node(5, "aten::b", 2, 2, R"(, "ts": 12)"),
      node(6, "kernel_b", 5, 2, R"(, "ts": 20)" + kGpu),
      node(7, "kernel_c", 5, 2, R"(, "ts": 60, "stream": null, "cat": "kernel")"),
  });
  auto c = convert_text(text, Compat::kDefault);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(ids(c->nodes.at(4).data_deps()), (std::vector<uint64_t>{3, 6}));
  EXPECT_EQ(ids(c->nodes.at(6).data_deps()), std::vector<uint64_t>{5});
  EXPECT_EQ(ids(c->nodes.at(7).data_deps()), std::vector<uint64_t>{5});  // unknown stream
  EXPECT_EQ(attr(c->nodes.at(7), "stream"), nullptr);
  auto chakra = convert_text(text, Compat::kChakra);
  ASSERT_TRUE(chakra.ok());
  EXPECT_EQ(ids(chakra->nodes.at(4).data_deps()), std::vector<uint64_t>{3});
}

TEST(pytorch_converter, FlatSchemaWithRenumberedParents) {
  // A schema 1.0.1 ET+ as Chakra's trace_link writes it: ids renumbered from 0, `parent` still
  // in the host trace's ids (process 1, thread 2, ops 5, 7, 8), GPU nodes with a `ctrl_deps`.
  auto flat = [](uint64_t id, const std::string& name, uint64_t parent, int tid,
                 const std::string& extra = "") {
    return fmt::format(
        R"j({{"name": "{}", "id": {}, "rf_id": {}, "parent": {}, "fw_parent": 0, "seq_id": -1, "scope": 7, "tid": {}, "fw_tid": 0, "op_schema": "s{}", "inputs": [[1, 2, 0, 3, 4, "cuda:0"], 1.5], "input_shapes": [[3], []], "input_types": ["Tensor(float)", "Double"], "outputs": [], "output_shapes": [], "output_types": []{}}})j",
        name, id, id + 100, parent, tid, id, extra);
  };
  const std::string text = trace(
      {
          flat(0, "[pytorch|profiler|execution_trace|process]", 1, 0),
          flat(1, "[pytorch|profiler|execution_trace|thread]", 1, 1),
          flat(2, "aten::outer", 2, 1, R"(, "exclusive_dur": 4, "ts": 1)"),
          flat(3, "kernel", 2, 1, R"(, "ctrl_deps": 2, "cat": "kernel", "stream": 7, "ts": 2)"),
          flat(4, "aten::inner", 5, 1, R"(, "ts": 3)"),
          flat(5, "aten::next", 2, 1, R"(, "ts": 4)"),
      },
      "1.0.1");
  for (Compat mode : {Compat::kChakra, Compat::kDefault}) {
    auto c = convert_text(text, mode);
    ASSERT_TRUE(c.ok()) << c.status().message();
    // old 5 = new 2 (aten::outer), so aten::inner's parent is 2; old 2 = new 1 (the thread).
    EXPECT_EQ(ids(c->nodes.at(4).ctrl_deps()), std::vector<uint64_t>{2});
    EXPECT_EQ(ids(c->nodes.at(5).ctrl_deps()), std::vector<uint64_t>{1});
    EXPECT_EQ(ids(c->nodes.at(3).ctrl_deps()), std::vector<uint64_t>{2});
    EXPECT_EQ(ids(c->nodes.at(2).data_deps()), std::vector<uint64_t>{1});
    EXPECT_EQ(ids(c->nodes.at(3).data_deps()), std::vector<uint64_t>{2});
    EXPECT_EQ(ids(c->nodes.at(4).data_deps()), std::vector<uint64_t>{2});
    EXPECT_EQ(ids(c->nodes.at(5).data_deps()), std::vector<uint64_t>{4});
    // Flat fields become the usual attributes and IOInfo strings.
    const pb::Node& outer = c->nodes.at(2);
    EXPECT_EQ(attr(outer, "rf_id")->int64_val(), 102);
    EXPECT_EQ(attr(outer, "scope")->int64_val(), 7);
    EXPECT_EQ(attr(outer, "op_schema")->string_val(), "s2");
    EXPECT_EQ(outer.inputs().values(), "[[1, 2, 0, 3, 4, 'cuda:0'], 1.5]");
    EXPECT_EQ(outer.inputs().shapes(), "[[3], []]");
    EXPECT_EQ(outer.inputs().types(), "['Tensor(float)', 'Double']");
    EXPECT_EQ(outer.duration_micros(), 4u);
    EXPECT_EQ(c->stats.count(StatKind::kEtPlusOldParentIdsMapped), 1u);
  }
}

TEST(pytorch_converter, MalformedNodesAreErrorsNamingTheNode) {
  const std::string text = trace({
      node(1, "[pytorch|profiler|execution_trace|thread]", 1, 1),
      node(2, "aten::a", 1, 1, R"(, "exclusive_dur": "soon")"),
  });
  auto c = convert_text(text, Compat::kDefault);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("test.json: byte"), std::string::npos)
      << c.status().message();
  EXPECT_NE(c.status().message().find("(id 2)"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("exclusive_dur"), std::string::npos);

  // An IOInfo list is rendered (and so checked past its brackets) as its node is written: a bad
  // one stops the conversion, named like any other problem.
  const std::string bad_inputs = trace({
      node(1, "[pytorch|profiler|execution_trace|thread]", 1, 1),
      node(2, "aten::a", 1, 1, "", R"({"values": ["\q"], "shapes": [], "types": []})"),
      node(3, "aten::b", 1, 1),
  });
  auto c2 = convert_text(bad_inputs, Compat::kDefault);
  ASSERT_FALSE(c2.ok());
  const std::string m = c2.status().message();
  EXPECT_NE(m.find("test.json: byte "), std::string::npos) << m;
  EXPECT_NE(m.find("node id 2: inputs.values: byte 1 of the value: invalid string escape"),
            std::string::npos)
      << m;
  // The same list in a node that is not written (dangling: nothing depends on it) is not read.
  const std::string dropped =
      trace({node(1, "aten::a", 1, 1, "", R"({"values": ["\q"], "shapes": [], "types": []})")});
  auto c3 = convert_text(dropped, Compat::kDefault);
  ASSERT_TRUE(c3.ok()) << c3.status().message();
  EXPECT_TRUE(c3->nodes.empty());
}

// The reader takes the keys of attrs entries and of IOInfo objects as written when they are the
// ones PyTorch writes, and unescapes any other: escaped spellings of the same keys convert alike.
TEST(pytorch_converter, EscapedAttrAndIoKeysReadAsTheirText) {
  const std::string plain = worked_example();
  std::string escaped = plain;
  auto replace_all = [&escaped](const std::string& from, const std::string& to) {
    size_t count = 0;
    for (size_t at = escaped.find(from); at != std::string::npos; at = escaped.find(from, at)) {
      escaped.replace(at, from.size(), to);
      at += to.size();
      ++count;
    }
    return count;
  };
  // `{"name": ` opens only attrs entries (a node's name follows its id).
  ASSERT_GT(replace_all(R"({"name": )", R"({"n\u0061me": )"), 0u);
  ASSERT_GT(replace_all(R"("value": )", R"("v\u0061lue": )"), 0u);
  ASSERT_GT(replace_all(R"("values": )", R"("v\u0061lues": )"), 0u);
  ASSERT_GT(replace_all(R"("shapes": )", R"("sh\u0061pes": )"), 0u);
  ASSERT_GT(replace_all(R"("types": )", R"("typ\u0065s": )"), 0u);
  // Attribute names written with an escape are the names they unescape to.
  ASSERT_GT(replace_all(R"("rf_id")", R"("rf\u005fid")"), 0u);
  ASSERT_GT(replace_all(R"("op_schema")", R"("op\u005fschema")"), 0u);
  for (Compat compat : {Compat::kChakra, Compat::kDefault}) {
    auto a = convert_text(plain, compat);
    auto b = convert_text(escaped, compat);
    ASSERT_TRUE(a.ok()) << a.status().message();
    ASSERT_TRUE(b.ok()) << b.status().message();
    ASSERT_EQ(a->nodes.size(), b->nodes.size());
    for (const auto& [id, n] : a->nodes) {
      ASSERT_TRUE(b->nodes.count(id)) << id;
      EXPECT_EQ(n.SerializeAsString(), b->nodes.at(id).SerializeAsString()) << "node " << id;
    }
  }
}

// A node's IOInfo spans and integer attributes are kept in 16 and 32 bits, a node whose values do
// not fit in a side table (EtPlusTrace::wide): attributes past 32 bits, a values list longer than
// 64 KiB, lists that start past 64 KiB of their node's text (a long name before them), and a GPU
// node sharing such a launcher's lists are written as they were read.
TEST(pytorch_converter, WideAttributesAndLongListsAreWrittenWhole) {
  const std::string long_value(70000, 'v');
  const std::string long_name = "aten::" + std::string(70000, 'n');
  const std::string long_inputs = fmt::format(
      R"x({{"values": ["{}", 3], "shapes": [[], []], "types": ["String", "Int"]}})x", long_value);
  const std::string short_inputs =
      R"x({"values": [[1, 2, 0, 8, 4, "cuda:0"]], "shapes": [[8]], "types": ["Tensor(float)"]})x";
  std::string wide_attrs = node(4, "aten::wide", 1, 1, timed(10, 1));
  const std::pair<std::string, std::string> widened[] = {
      {R"("rf_id", "type": "uint64", "value": 40)",
       R"("rf_id", "type": "uint64", "value": 5000000000)"},
      {R"("seq_id", "type": "int64", "value": -1)",
       R"("seq_id", "type": "int64", "value": -3000000000)"},
      {R"("fw_parent", "type": "uint64", "value": 0)",
       R"("fw_parent", "type": "uint64", "value": 4294967296)"},
  };
  for (const auto& [from, to] : widened) {
    const size_t at = wide_attrs.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    wide_attrs.replace(at, from.size(), to);
  }
  const std::string kGpu = R"(, "cat": "kernel", "ph": "X", "stream": 7)";
  const std::string text = trace({
      node(0, "[pytorch|profiler|execution_trace|process]", 0, 0),
      node(1, "[pytorch|profiler|execution_trace|thread]", 0, 1),
      node(2, "aten::long_list", 1, 1, timed(20, 1), long_inputs),
      node(3, long_name, 1, 1, timed(30, 1), short_inputs),
      wide_attrs,
      node(5, "aten::narrow", 1, 1, timed(40, 1), short_inputs),
      node(6, "void long_list_kernel()", 2, 1, timed(21, 0.5) + kGpu, long_inputs),
  });
  for (Compat compat : {Compat::kChakra, Compat::kDefault}) {
    auto c = convert_text(text, compat);
    ASSERT_TRUE(c.ok()) << c.status().message();
    const std::string long_repr = fmt::format("['{}', 3]", long_value);
    for (uint64_t id : {2, 6}) {
      ASSERT_TRUE(c->nodes.count(id)) << id;
      EXPECT_EQ(c->nodes.at(id).inputs().values(), long_repr) << id;
      EXPECT_EQ(c->nodes.at(id).inputs().types(), "['String', 'Int']") << id;
    }
    for (uint64_t id : {3, 5}) {
      ASSERT_TRUE(c->nodes.count(id)) << id;
      EXPECT_EQ(c->nodes.at(id).inputs().values(), "[[1, 2, 0, 8, 4, 'cuda:0']]") << id;
      EXPECT_EQ(c->nodes.at(id).inputs().shapes(), "[[8]]") << id;
      EXPECT_EQ(c->nodes.at(id).outputs().values(), "[]") << id;
    }
    ASSERT_TRUE(c->nodes.count(4) && c->nodes.count(5));
    const pb::Node& w = c->nodes.at(4);
    ASSERT_NE(attr(w, "rf_id"), nullptr);
    EXPECT_EQ(attr(w, "rf_id")->int64_val(), 5000000000);
    EXPECT_EQ(attr(w, "seq_id")->int64_val(), -3000000000);
    EXPECT_EQ(attr(w, "fw_parent")->int64_val(), 4294967296);
    EXPECT_EQ(attr(w, "scope")->int64_val(), 0);
    EXPECT_EQ(attr(c->nodes.at(5), "rf_id")->int64_val(), 50);
    EXPECT_EQ(attr(c->nodes.at(5), "seq_id")->int64_val(), -1);
  }
}

// Runs the batches last to first, then consumes them in order: what a stage sees from workers
// that finish out of order.
// check(options, trace) on `text` parsed in each compat mode: Chakra's, then the default.
template <typename Check>
void in_each_mode(const std::string& text, Check&& check) {
  for (Compat mode : {Compat::kChakra, Compat::kDefault}) {
    SCOPED_TRACE(mode == Compat::kChakra ? "chakra" : "default");
    ConvertOptions options;
    options.compat = mode;
    auto file = parse_et_plus("test.json", text, options);
    ASSERT_TRUE(file.ok()) << file.status().message();
    check(options, file->trace);
  }
}

// The same kinds of problems, each with the same count and examples.
void expect_same_problems(const DataProblems& expected, const DataProblems& actual) {
  ASSERT_EQ(actual.entries().size(), expected.entries().size());
  for (const auto& [kind, entry] : expected.entries()) {
    EXPECT_EQ(actual.count(kind), entry.count);
    EXPECT_EQ(actual.entries().at(kind).examples, entry.examples);
  }
}

class LastToFirst : public OrderedBatches {
 public:
  Status run(size_t batches, const std::function<Status(size_t, std::string&)>& produce,
             const std::function<Status(std::string&)>& consume) const override {
    std::vector<std::string> out(batches);
    for (size_t i = batches; i-- > 0;) CF_RETURN_IF_ERROR(produce(i, out[i]));
    for (std::string& o : out) {
      if (consume) CF_RETURN_IF_ERROR(consume(o));
    }
    return Status();
  }
};

// select_nodes converts in ranges of 16,384 nodes when given workers: on 40,000 nodes (three
// ranges, converted last to first) with communication in every range (NCCL kernels, gloo
// collectives whose group is guessed), problems counted in every range (negative durations,
// unknown collectives), sync and inter-thread dependencies and GPU streams, the records, their
// communication attributes, the walks' facts and the problems equal those of the one-range
// conversion, in both modes.
TEST(pytorch_converter, NodesConvertedInRangesEqualOneRange) {
  std::vector<std::string> nodes = {
      node(0, "[pytorch|profiler|execution_trace|process]", 0, 0),
      node(1, "[pytorch|profiler|execution_trace|thread]", 0, 1),
      node(2, "[pytorch|profiler|execution_trace|thread]", 0, 6),
      node(3, "## process_group:init ##", 1, 1, "", kPgInit),
  };
  constexpr int kBlocks = 4000;
  for (int b = 0; b < kBlocks; ++b) {
    const uint64_t id = 10 + 10 * static_cast<uint64_t>(b);
    const double ts = 1000.0 + 100.0 * b;
    // Each block's tensors of another size: a record pointing at another block's communication
    // attributes has another comm_size.
    const std::string numel = std::to_string(64 + b);
    std::string c10d_inputs = kC10dInputs, gloo_inputs = kGlooInputs;
    c10d_inputs.replace(c10d_inputs.find("64"), 2, numel);
    gloo_inputs.replace(gloo_inputs.find("64"), 2, numel);
    nodes.push_back(node(id, "c10d::allreduce_", 1, 1, timed(ts, 10), c10d_inputs));
    nodes.push_back(
        node(id + 1, "ncclDevKernel_AllReduce_Sum_f32", id, 1, kernel(ts + 5, 7), c10d_inputs));
    nodes.push_back(node(id + 2, "gloo:all_reduce", id + 3, 1,
                         timed(ts + 20, 50) + R"(, "exec_tid": 6)", gloo_inputs));
    nodes.push_back(node(id + 3, "aten::mul", 1, 1, timed(ts + 15, b % 7 == 0 ? -3 : 20)));
    nodes.push_back(node(id + 4, "aten::add", id + 2, 1, timed(ts + 40, 5)));
    nodes.push_back(node(id + 5, "kernel_x", id + 3, 1, kernel(ts + 30, 9)));
    nodes.push_back(
        node(id + 6, "aten::sync", 1, 1,
             timed(ts + 60, 1) +
                 fmt::format(R"(, "sync_dep": [{}], "inter_thread_dep": {})", id + 5, id + 3)));
    nodes.push_back(node(id + 7, "mystery_op", 1, 1, timed(ts + 70, 3)));
    nodes.push_back(node(id + 8, "ncclDevKernel_Mystery", id + 7, 1, kernel(ts + 72, 7)));
    nodes.push_back(node(id + 9, "Optimizer.step#SGD.step", 1, 1, timed(ts + 80, 4)));
  }
  // In the last range: a thread root, a node whose parent is missing on its thread, a node that
  // is its own parent.
  const uint64_t last = 10 + 10 * static_cast<uint64_t>(kBlocks);
  nodes.push_back(node(last, "[pytorch|profiler|execution_trace|thread]", 0, 9));
  nodes.push_back(node(last + 1, "aten::orphan", 999999999, 9, timed(1e6, 2)));
  nodes.push_back(node(last + 2, "aten::self", static_cast<int64_t>(last + 2), 9, timed(1e6, 2)));
  in_each_mode(trace(nodes), [&](const ConvertOptions& options, const EtPlusTrace& t) {
    const Compat mode = options.compat;
    DataProblems one_stats, ranges_stats;
    const Conversion one = select_nodes(t, options, one_stats);
    const LastToFirst workers;
    const Conversion ranges = select_nodes(t, options, ranges_stats, &workers);
    const ConversionGraph& a = one.graph;
    const ConversionGraph& b = ranges.graph;
    ASSERT_GT(a.records.size(), 2u * 16384u);
    ASSERT_EQ(a.records.size(), b.records.size());
    size_t with_comm = 0;
    for (size_t k = 0; k < a.records.size(); ++k) {
      const ChakraNodeRecord& x = a.records[k];
      const ChakraNodeRecord& y = b.records[k];
      ASSERT_EQ(std::tie(x.source, x.ctrl_dep, x.type, x.is_cpu_op, x.flags, x.duration_micros,
                         x.start_time_micros, x.stream),
                std::tie(y.source, y.ctrl_dep, y.type, y.is_cpu_op, y.flags, y.duration_micros,
                         y.start_time_micros, y.stream))
          << "record " << k;
      ASSERT_EQ(x.comm == kNoNode, y.comm == kNoNode) << "record " << k;
      if (x.comm == kNoNode) continue;
      ++with_comm;
      const CommAttrs& p = a.comm[x.comm];
      const CommAttrs& q = b.comm[y.comm];
      ASSERT_EQ(std::tie(p.comm_type, p.comm_size, p.pg_name, p.comm_src, p.comm_dst, p.comm_tag,
                         p.exec_tid),
                std::tie(q.comm_type, q.comm_size, q.pg_name, q.comm_src, q.comm_dst, q.comm_tag,
                         q.exec_tid))
          << "record " << k;
    }
    EXPECT_EQ(a.comm.size(), b.comm.size());
    EXPECT_GE(with_comm, static_cast<size_t>(kBlocks));  // an NCCL kernel in every block
    EXPECT_EQ(a.slot, b.slot);
    EXPECT_EQ(a.inter_thread_dep, b.inter_thread_dep);
    EXPECT_EQ(a.start, b.start);
    EXPECT_EQ(a.walk.thread_roots, b.walk.thread_roots);
    EXPECT_EQ(a.walk.with_sync, b.walk.with_sync);
    EXPECT_EQ(a.walk.with_sync.size(), static_cast<size_t>(kBlocks));
    EXPECT_EQ(a.walk.off_thread, b.walk.off_thread);
    EXPECT_EQ(a.walk.off_thread.size(), mode == Compat::kDefault ? size_t{kBlocks} : 0u);
    ASSERT_EQ(a.walk.stream_keys.size(), b.walk.stream_keys.size());
    for (size_t k = 0; k < a.walk.stream_keys.size(); ++k) {
      EXPECT_EQ(a.walk.stream_keys[k].index, b.walk.stream_keys[k].index) << k;
    }
    if (mode == Compat::kDefault) {
      EXPECT_EQ(a.walk.stream_keys.size(), 3u * kBlocks);
      EXPECT_EQ(one_stats.count(StatKind::kCommCpuCollectiveGroupGuessed),
                static_cast<uint64_t>(kBlocks));
    }
    EXPECT_EQ(one_stats.count(StatKind::kConvertNegativeExclusiveDur), (kBlocks + 6u) / 7u);
    EXPECT_EQ(one_stats.count(mode == Compat::kChakra ? StatKind::kConvertSelfParentDropped
                                                      : StatKind::kConvertSelfParentAttached),
              1u);
    if (mode == Compat::kDefault) {
      EXPECT_EQ(one_stats.count(StatKind::kConvertParentMissingAttached), 1u);
      EXPECT_EQ(a.walk.thread_roots.size(), 3u);
    }
    expect_same_problems(one_stats, ranges_stats);
  });
}

// The dependencies encoded on workers (three threads taking their ranges of 5 last to first, and
// one after another from last to first) against one pass in turn: the same data_deps on every
// record, problems and edge counts, in both modes. Three thread roots with work of their own
// (kernels on shared streams, inter-thread and sync dependencies, dependencies on themselves and
// on missing nodes, off-thread gloo collectives) and, in default mode, 100 orphans walked as roots
// of their own: more roots than groups. `nested` puts a fourth thread root under an op of the
// first: its nodes lie under two roots, and the walks must run one after another.
void expect_dependencies_as_in_turn(bool nested) {
  std::vector<std::string> nodes = {
      node(0, "[pytorch|profiler|execution_trace|process]", 0, 0),
      node(1, "[pytorch|profiler|execution_trace|thread]", 0, 1),
      node(2, "[pytorch|profiler|execution_trace|thread]", 0, 2),
      node(3, "[pytorch|profiler|execution_trace|thread]", 0, 3),
      node(4, "## process_group:init ##", 1, 1, "", kPgInit),
  };
  constexpr int kBlocks = 300;
  uint64_t id = 10;
  for (int b = 0; b < kBlocks; ++b) {
    for (int64_t thread = 1; thread <= 3; ++thread, id += 10) {
      const double ts = 1000.0 + 100.0 * b + 7.0 * static_cast<double>(thread);
      nodes.push_back(node(id, "c10d::allreduce_", thread, thread, timed(ts, 10), kC10dInputs));
      nodes.push_back(node(id + 1, "ncclDevKernel_AllReduce_Sum_f32", id, thread, kernel(ts + 5, 7),
                           kC10dInputs));
      nodes.push_back(node(id + 2, "gloo:all_reduce", id + 3, thread,
                           timed(ts + 20, 50) + R"(, "exec_tid": 6)", kGlooInputs));
      nodes.push_back(node(id + 3, "aten::mul", thread, thread, timed(ts + 15, 20)));
      nodes.push_back(node(id + 4, "kernel_x", id + 3, thread, kernel(ts + 30, b % 2 ? 9 : 7)));
      // On the op of the thread before (the first one's: on none), on itself, on a node that is
      // not there.
      const uint64_t other = id >= 20 ? id - 10 + 3 : 0;
      const uint64_t dep = b % 5 == 0 ? id + 5 : b % 5 == 1 ? 999999999 : other;
      nodes.push_back(node(
          id + 5, "aten::sync", thread, thread,
          timed(ts + 60, 1) +
              (dep == 0
                   ? std::string()
                   : fmt::format(R"(, "sync_dep": [{}], "inter_thread_dep": {})", id + 4, dep))));
      nodes.push_back(node(id + 6, "aten::add", id + 5, thread, timed(ts + 62, 3)));
    }
  }
  for (int k = 0; k < 100; ++k, ++id) {
    nodes.push_back(node(id, "aten::orphan", 999999999, 77, timed(1e6 + k, 2)));
  }
  if (nested) {
    nodes.push_back(node(id, "[pytorch|profiler|execution_trace|thread]", 13, 4));
    nodes.push_back(node(id + 1, "aten::inner", static_cast<int64_t>(id), 4, timed(1018, 1)));
    nodes.push_back(node(id + 2, "kernel_y", static_cast<int64_t>(id + 1), 4, kernel(1019, 7)));
  }
  in_each_mode(trace(nodes), [&](const ConvertOptions& options, const EtPlusTrace& t) {
    const bool default_mode = options.compat == Compat::kDefault;
    DataProblems one_stats;
    Conversion one = select_nodes(t, options, one_stats);
    if (default_mode) {
      ASSERT_EQ(one.graph.extra_roots.size(), 100u);
      ASSERT_EQ(one.graph.walk.off_thread.size(), 3u * kBlocks);
    }
    DependencyStats one_edges;
    encode_dependencies(t, options, one.graph, one_stats, &one_edges);
    EXPECT_GT(one_stats.count(StatKind::kConvertInterThreadDepOnSelf), 100u);
    EXPECT_GT(one_stats.count(StatKind::kConvertInterThreadDepNotConverted), 100u);
    if (default_mode) {
      EXPECT_GT(one_edges.gpu_stream_edges, 1000u);
      EXPECT_GT(one_edges.sync_edges, 100u);
    }
    const testing::ThreadedBatches threads(3, 5);
    const LastToFirst last_to_first;
    for (const OrderedBatches* workers : {static_cast<const OrderedBatches*>(&threads),
                                          static_cast<const OrderedBatches*>(&last_to_first)}) {
      DataProblems stats;
      Conversion many = select_nodes(t, options, stats);
      DependencyStats edges;
      encode_dependencies(t, options, many.graph, stats, &edges, workers);
      ASSERT_EQ(many.graph.records.size(), one.graph.records.size());
      for (size_t k = 0; k < one.graph.records.size(); ++k) {
        const DepList& a = one.graph.records[k].data_deps;
        const DepList& b = many.graph.records[k].data_deps;
        ASSERT_EQ(std::vector<uint32_t>(a.begin(), a.end()),
                  std::vector<uint32_t>(b.begin(), b.end()))
            << "record " << k << " (node " << t.nodes[one.graph.records[k].source].id << ")";
      }
      EXPECT_EQ(edges.gpu_stream_edges, one_edges.gpu_stream_edges);
      EXPECT_EQ(edges.sync_edges, one_edges.sync_edges);
      expect_same_problems(one_stats, stats);
    }
  });
}

TEST(pytorch_converter, DependenciesEncodedOnWorkersEqualOnePass) {
  expect_dependencies_as_in_turn(false);
}

TEST(pytorch_converter, DependenciesUnderTwoRootsOnWorkersEqualOnePass) {
  expect_dependencies_as_in_turn(true);
}

// A generated rank linked and converted (testing::linked_rank_bytes) with every stage's ranges and
// batches cut to 3 items, on 4 plain threads taking their work last to first, and one after
// another with ranges of 2: the same ET+ and .et bytes and problems as one pass in order, in both
// compat modes. No oneTBB here: ThreadSanitizer (scripts/tsan.sh) sees every hand-off between the
// ranges' threads.
TEST(pytorch_converter, AGeneratedRankInRangesOfAFewItemsOnThreadsIsTheSameBytes) {
  const testing::ThreadedBatches threads(4, 3);
  const OrderedBatches in_turn(2);
  testing::expect_linked_rank_bytes_as_in_order(
      0.25, {{&threads, "4 threads, ranges of 3"}, {&in_turn, "in turn, ranges of 2"}});
}

TEST(pytorch_converter, OutputIsDeterministic) {
  testing::TempDir tmp;
  testing::write_text(tmp.file("in.json"), worked_example());
  std::string first;
  for (int run = 0; run < 3; ++run) {
    ConvertReport report;
    ASSERT_TRUE(
        convert_file(tmp.file("in.json"), tmp.file("out.et"), ConvertOptions(), &report).ok());
    EXPECT_EQ(report.output_nodes, 13u);
    std::string bytes = testing::read_text(tmp.file("out.et"));
    if (run == 0) first = bytes;
    EXPECT_EQ(bytes, first);
  }
}

// move_to_targets gives what copying each record to its target gives, for permutations with
// cycles of every length, fixed points, and growth (positions no record targets), in turn and with
// its paths in ranges on three threads (ranges of 16,384 ends: 40,000 positions more).
TEST(MoveToTargets, MovesEveryRecordToItsTarget) {
  std::mt19937 rng(7);
  const testing::ThreadedBatches workers(3);
  for (size_t n : {0u, 1u, 2u, 5u, 100u, 1000u, 50000u}) {
    for (size_t extra : {0u, 3u, 40000u}) {
      const size_t total = n + extra;
      std::vector<uint32_t> positions(total);
      for (uint32_t i = 0; i < total; ++i) positions[i] = i;
      std::shuffle(positions.begin(), positions.end(), rng);
      std::vector<uint32_t> target(positions.begin(), positions.begin() + n);
      std::vector<std::string> v(n), expected(total);
      for (size_t i = 0; i < n; ++i) {
        v[i] = "record " + std::to_string(i) + std::string(i % 40, 'x');  // heap-held strings
        expected[target[i]] = v[i];
      }
      std::vector<std::string> w = v;
      move_to_targets(v, target, total);
      EXPECT_EQ(v, expected) << n << " records, " << extra << " positions more";
      move_to_targets(w, target, total, &workers);
      EXPECT_EQ(w, expected) << n << " records, " << extra << " positions more, on workers";
    }
  }
}

// DepList holds what a std::vector given the same pushes holds, inline (up to 4) and on the heap,
// through copies, moves and assignments between lists of every size.
TEST(DepList, HoldsWhatAVectorHolds) {
  auto equal = [](const DepList& d, const std::vector<uint32_t>& v) {
    return std::vector<uint32_t>(d.begin(), d.end()) == v && d.size() == v.size() &&
           d.empty() == v.empty();
  };
  std::vector<DepList> lists;
  std::vector<std::vector<uint32_t>> expected;
  for (uint32_t n : {0u, 1u, 3u, 4u, 5u, 8u, 9u, 100u}) {
    DepList d;
    std::vector<uint32_t> v;
    for (uint32_t k = 0; k < n; ++k) {
      d.push_back(k * 7 + n);
      v.push_back(k * 7 + n);
      ASSERT_TRUE(equal(d, v)) << n << " after " << k + 1;
    }
    for (size_t k = 0; k < v.size(); ++k) EXPECT_EQ(d[k], v[k]);
    lists.push_back(d);  // a copy
    expected.push_back(v);
  }
  for (size_t a = 0; a < lists.size(); ++a) {
    EXPECT_TRUE(equal(lists[a], expected[a]));
    for (size_t b = 0; b < lists.size(); ++b) {
      DepList copy = lists[a];
      copy = lists[b];  // copy-assign over a list of another size
      EXPECT_TRUE(equal(copy, expected[b])) << a << " <- " << b;
      DepList moved = lists[a];
      DepList source = lists[b];
      moved = std::move(source);  // move-assign
      EXPECT_TRUE(equal(moved, expected[b])) << a << " <- " << b;
      EXPECT_TRUE(source.empty());  // NOLINT(bugprone-use-after-move): a moved-from list is empty
      source.push_back(42);         // and usable
      EXPECT_TRUE(equal(source, {42}));
      moved.push_back(1);  // growing after the move keeps what it held
      std::vector<uint32_t> grown = expected[b];
      grown.push_back(1);
      EXPECT_TRUE(equal(moved, grown));
    }
    DepList self = lists[a];
    const DepList& alias = self;
    self = alias;  // self-assignment keeps the list
    EXPECT_TRUE(equal(self, expected[a]));
    DepList constructed(std::move(self));
    EXPECT_TRUE(equal(constructed, expected[a]));
  }
  // A vector of records (reallocating: every record moved) keeps every list.
  std::vector<ChakraNodeRecord> records;
  for (uint32_t i = 0; i < 200; ++i) {
    records.emplace_back();
    for (uint32_t k = 0; k < i % 11; ++k) records.back().data_deps.push_back(i + k);
  }
  for (uint32_t i = 0; i < 200; ++i) {
    std::vector<uint32_t> v;
    for (uint32_t k = 0; k < i % 11; ++k) v.push_back(i + k);
    EXPECT_TRUE(equal(records[i].data_deps, v)) << i;
  }
}

// A linked rank's converter nodes are reserved for the host ET's text, a gzip'd file's inflated
// size (its own would reserve for a twentieth of the nodes: the vector then grows by copying);
// a trailer that claims more than 128 times the file's size reserves no more than that.
TEST(EtPlusNodeSink, ReservesForTheInflatedTextOfAGzippedHostEt) {
  testing::TempDir tmp;
  // Digits, one in ten varying: about 10:1 compressed.
  std::string text(3 << 20, '7');
  std::mt19937 rng(3);
  for (size_t i = 0; i < text.size(); i += 10) text[i] = static_cast<char>('0' + rng() % 10);
  const std::string plain = tmp.file("host.json"), gz = tmp.file("host.json.gz");
  ASSERT_TRUE(write_file_atomically(plain, text).ok());
  ASSERT_TRUE(write_file_atomically(gz, text).ok());
  ASSERT_LT(std::filesystem::file_size(gz), text.size() / 4);
  for (const std::string& path : {plain, gz}) {
    EXPECT_GE(EtPlusNodeSink::for_linking(path).take_nodes().nodes.capacity(), text.size() / 300)
        << path;
  }
  std::string raw;
  {
    std::ifstream in(gz, std::ios::binary);
    raw.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GE(raw.size(), 18u);
  for (int i = 1; i <= 4; ++i) raw[raw.size() - i] = '\xff';  // ISIZE 4 GiB - 1
  const std::string claims = tmp.file("claims.json.gz");
  {
    std::ofstream out(claims, std::ios::binary);
    out << raw;
  }
  EXPECT_LE(EtPlusNodeSink::for_linking(claims).take_nodes().nodes.capacity(),
            raw.size() * 128 / 300);
}

}  // namespace
}  // namespace chakraflow
