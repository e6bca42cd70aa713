// Unit tests of the simulator stages: configuration, cost model, node scanning, process groups,
// the per-rank engine (resources, recorded delays), communication matching, stall reports, the
// critical path, and properties of the parallel run (causality, determinism) on random traces.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <oneapi/tbb/global_control.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "stages/simulate/sim_config.h"
#include "stages/simulate/simulator.h"
#include "stages/simulate/simulator_cost.h"
#include "stages/simulate/simulator_node.h"
#include "stages/simulate/simulator_timeline.h"
#include "tests/simulate/simulator_test_util.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

using ::testing::HasSubstr;
using testing::SimTraceNode;
using testing::TempDir;
namespace pb = ChakraProtoMsg;

constexpr int32_t kAllReduce = 0;
constexpr int32_t kAllGather = 2;

// ---------------------------------------------------------------------------------------------
// Configuration

TEST(SimConfigTest, EmptyGivesDefaults) {
  auto c = parse_sim_config("", "sim.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->mode, SimMode::kReplay);
  EXPECT_EQ(c->network.bandwidth_gbps, 100);
  EXPECT_EQ(c->network.latency_us, 5);
  EXPECT_EQ(c->network.algorithm, CollectiveAlgorithm::kRing);
  EXPECT_TRUE(c->host_gaps);
  EXPECT_TRUE(c->rank_skew);
  EXPECT_EQ(c->collective_replay, CollectiveReplay::kMin);
  EXPECT_EQ(c->compute_scale, 1.0);
}

TEST(SimConfigTest, ReadsEveryKey) {
  auto c = parse_sim_config(
      "mode: model\nnetwork:\n  bandwidth_gbps: 50\n  latency_us: 2.5\n  algorithm: tree\n"
      "host_gaps: false\nrank_skew: false\ncollective_replay: own\ncompute_scale: 0.5\n",
      "sim.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->mode, SimMode::kModel);
  EXPECT_EQ(c->network.bandwidth_gbps, 50);
  EXPECT_EQ(c->network.latency_us, 2.5);
  EXPECT_EQ(c->network.algorithm, CollectiveAlgorithm::kTree);
  EXPECT_FALSE(c->host_gaps);
  EXPECT_FALSE(c->rank_skew);
  EXPECT_EQ(c->collective_replay, CollectiveReplay::kOwn);
  EXPECT_EQ(c->compute_scale, 0.5);
}

TEST(SimConfigTest, UnknownKeysAreErrorsWithLineAndColumn) {
  auto top = parse_sim_config("mode: replay\nbandwith: 3\n", "sim.yaml");
  ASSERT_FALSE(top.ok());
  EXPECT_THAT(top.status().message(), HasSubstr("sim.yaml:2:1"));
  EXPECT_THAT(top.status().message(), HasSubstr("unknown key \"bandwith\""));
  auto nested = parse_sim_config("network:\n  bandwidth_gbps: 10\n  latncy_us: 3\n", "sim.yaml");
  ASSERT_FALSE(nested.ok());
  EXPECT_THAT(nested.status().message(), HasSubstr("sim.yaml:3:3"));
  EXPECT_THAT(nested.status().message(), HasSubstr("\"latncy_us\" in network"));
}

TEST(SimConfigTest, BadValuesAreErrors) {
  auto mode = parse_sim_config("mode: fast\n", "c.yaml");
  ASSERT_FALSE(mode.ok());
  EXPECT_THAT(mode.status().message(), HasSubstr("c.yaml:1:7"));
  EXPECT_THAT(mode.status().message(), HasSubstr("replay | model"));
  auto bw = parse_sim_config("network: {bandwidth_gbps: -1}\n", "c.yaml");
  ASSERT_FALSE(bw.ok());
  EXPECT_THAT(bw.status().message(), HasSubstr("bandwidth_gbps"));
  auto text = parse_sim_config("network:\n  latency_us: soon\n", "c.yaml");
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr("c.yaml:2:15"));
  EXPECT_FALSE(parse_sim_config("host_gaps: maybe\n", "c.yaml").ok());
  EXPECT_FALSE(parse_sim_config("- mode\n", "c.yaml").ok());  // not a mapping
  auto syntax = parse_sim_config("mode: [replay\n", "c.yaml");
  ASSERT_FALSE(syntax.ok());
  EXPECT_THAT(syntax.status().message(), HasSubstr("c.yaml:"));
}

TEST(SimConfigTest, ExampleConfigParses) {
  auto c = load_sim_config(std::string(CHAKRAFLOW_SOURCE_DIR) + "/configs/sim.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->mode, SimMode::kReplay);
}

// ---------------------------------------------------------------------------------------------
// Cost model

TEST(CostModelTest, RingAndTreeFormulas) {
  NetworkConfig net;  // 100 Gb/s = 12.5 bytes/ns, 5 us
  CostModel ring(net);
  const int64_t mb = 1 << 20;
  // 2 (p-1) alpha + 2 (p-1)/p S beta = 70000 + 1.75 * 1048576 * 0.08
  EXPECT_EQ(ring.collective_ns(kAllReduce, mb, 8), 216801);
  // (p-1) alpha + (p-1)/p S beta
  EXPECT_EQ(ring.collective_ns(kAllGather, mb, 8), 35000 + 73400);
  EXPECT_EQ(ring.collective_ns(6, mb, 8), 35000 + 73400);  // all-to-all
  EXPECT_EQ(ring.collective_ns(5, mb, 8), 35000 + 83886);  // broadcast: (p-1) alpha + S beta
  EXPECT_EQ(ring.collective_ns(9, 0, 8), 70000);           // barrier
  EXPECT_EQ(ring.collective_ns(kAllReduce, mb, 1), 0);
  EXPECT_EQ(ring.p2p_ns(mb), 5000 + 83886);
  net.algorithm = CollectiveAlgorithm::kTree;
  CostModel tree(net);
  // 2 ceil(log2 p) alpha + 2 S beta
  EXPECT_EQ(tree.collective_ns(kAllReduce, mb, 8), 30000 + 167772);
  EXPECT_EQ(tree.collective_ns(kAllReduce, mb, 5), 30000 + 167772);  // ceil(log2 5) = 3
  EXPECT_EQ(tree.collective_ns(kAllGather, mb, 8), 15000 + 73400);
}

TEST(CostModelTest, HalvingBandwidthDoublesTheBandwidthTerm) {
  NetworkConfig net;
  net.latency_us = 3;
  CostModel full(net);
  net.bandwidth_gbps /= 2;
  CostModel half(net);
  const int64_t latency = 2 * 7 * 3000;
  for (int64_t bytes : {int64_t{4096}, int64_t{1} << 20, int64_t{1} << 30}) {
    const int64_t a = full.collective_ns(kAllReduce, bytes, 8) - latency;
    const int64_t b = half.collective_ns(kAllReduce, bytes, 8) - latency;
    EXPECT_NEAR(b, 2 * a, 1) << bytes;
  }
}

// ---------------------------------------------------------------------------------------------
// Node fields and process groups

TEST(SimNodeTest, ScansFieldsAndAttributesOfAnyIntegerKind) {
  pb::Node node;
  node.set_id(42);
  node.set_name("ncclKernel_AllReduce");
  node.set_type(pb::COMM_COLL_NODE);
  node.set_start_time_micros(123456);
  node.set_duration_micros(77);
  node.add_data_deps(7);
  node.mutable_inputs()->set_values("[1, 2]");
  auto add = [&](const char* name) {
    pb::AttributeProto* a = node.add_attr();
    a->set_name(name);
    return a;
  };
  add("is_cpu_op")->set_bool_val(false);
  add("tid")->set_uint64_val(3);
  add("stream")->set_int32_val(-2);
  add("comm_type")->set_sint64_val(2);
  add("comm_size")->set_int64_val(1 << 20);
  add("comm_src")->set_int32_val(5);
  add("pg_name")->set_string_val("7");
  add("op_schema")->set_string_val("ignored");
  const std::string raw = node.SerializeAsString();
  SimNodeFields f;
  ASSERT_TRUE(scan_sim_fields(raw, &f).ok());
  EXPECT_EQ(f.id, 42u);
  EXPECT_EQ(f.type, pb::COMM_COLL_NODE);
  EXPECT_EQ(f.start_time_micros, 123456u);
  EXPECT_EQ(f.duration_micros, 77u);
  EXPECT_EQ(f.name, "ncclKernel_AllReduce");
  EXPECT_TRUE(f.inputs_values.empty());  // read for the process-group METADATA node only
  EXPECT_FALSE(f.is_cpu_op);
  EXPECT_EQ(f.tid, 3);
  EXPECT_EQ(f.stream, -2);
  EXPECT_EQ(f.comm_type, 2);
  EXPECT_EQ(f.comm_size, 1 << 20);
  EXPECT_EQ(f.comm_src, 5);
  EXPECT_EQ(f.pg_name, "7");

  node.set_type(pb::METADATA_NODE);
  const std::string metadata = node.SerializeAsString();
  ASSERT_TRUE(scan_sim_fields(metadata, &f).ok());
  EXPECT_EQ(f.inputs_values, "[1, 2]");

  std::string truncated = raw;
  truncated.resize(truncated.size() - 3);
  EXPECT_FALSE(scan_sim_fields(truncated, &f).ok());
}

TEST(SimNodeTest, ParsesProcessGroupsInPythonAndJsonSpelling) {
  auto py = parse_process_groups(
      "['[{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"ranks\": [], \"group_size\": 4}, "
      "{\"pg_name\": \"1\", \"ranks\": [3, 1], \"group_size\": 2}]']");
  ASSERT_TRUE(py.ok()) << py.status().message();
  ASSERT_EQ(py->size(), 2u);
  EXPECT_EQ((*py)[0].name, "0");
  EXPECT_EQ((*py)[0].desc, "default_pg");
  EXPECT_TRUE((*py)[0].ranks.empty());
  EXPECT_EQ((*py)[0].group_size, 4);
  EXPECT_EQ((*py)[1].ranks, (std::vector<uint32_t>{1, 3}));
  auto json = parse_process_groups(R"(["[{\"pg_name\": \"5\", \"ranks\": [0, 2]}]"])");
  ASSERT_TRUE(json.ok()) << json.status().message();
  ASSERT_EQ(json->size(), 1u);
  EXPECT_EQ((*json)[0].name, "5");
  EXPECT_EQ((*json)[0].ranks, (std::vector<uint32_t>{0, 2}));
  EXPECT_FALSE(parse_process_groups("[1, 2]").ok());
  EXPECT_FALSE(parse_process_groups("['not json']").ok());
}

// ---------------------------------------------------------------------------------------------
// Simulations of hand-made traces

struct Outcome {
  std::unique_ptr<Simulation> sim;
  Status status;
  const SimResult& result() const { return sim->result(); }
  const SimNode& node(uint32_t rank, NodeId id) const {
    for (const SimNode& n : sim->ranks()[rank]->nodes()) {
      if (n.id == id) return n;
    }
    ADD_FAILURE() << "no node " << id << " on rank " << rank;
    static SimNode none;
    return none;
  }
  double start_us(uint32_t rank, NodeId id) const { return node(rank, id).start / 1000.0; }
  double end_us(uint32_t rank, NodeId id) const { return node(rank, id).end / 1000.0; }
};

class SimulatorTest : public ::testing::Test {
 protected:
  // Writes one trace per rank and runs them (bounded: a bug cannot turn into a hang).
  Outcome simulate(const std::vector<std::vector<SimTraceNode>>& ranks, SimConfig config = {},
                   bool keep_names = false) {
    return simulate_files(write(ranks), config, keep_names);
  }
  std::vector<std::string> write(const std::vector<std::vector<SimTraceNode>>& ranks) {
    std::vector<std::string> paths;
    for (size_t r = 0; r < ranks.size(); ++r) {
      paths.push_back(dir_.file("t" + std::to_string(runs_) + "." + std::to_string(r) + ".et"));
      testing::write_sim_trace(paths.back(), ranks[r]);
    }
    ++runs_;
    return paths;
  }
  Outcome simulate_files(const std::vector<std::string>& paths, SimConfig config = {},
                         bool keep_names = false) {
    SimOptions options;
    options.config = config;
    options.keep_names = keep_names;
    options.max_rounds = 100000;
    Outcome run;
    auto sim = Simulation::open(paths, options);
    if (!sim.ok()) {
      run.status = sim.status();
      return run;
    }
    run.sim = std::move(*sim);
    run.status = run.sim->run();
    return run;
  }
  static SimConfig model() {
    SimConfig c;
    c.mode = SimMode::kModel;
    return c;
  }
  static int64_t path_sum(const CriticalPath& p) {
    int64_t sum = 0;
    for (int64_t v : p.by_kind_ns) sum += v;
    return sum;
  }
  static int64_t path_ns(const CriticalPath& p, PathKind k) {
    return p.by_kind_ns[static_cast<size_t>(k)];
  }

  TempDir dir_;
  int runs_ = 0;
};

TEST_F(SimulatorTest, ThreadsAndStreamsAreResources) {
  using namespace testing;
  Outcome run = simulate(
      {{cpu(1, {}, 10), gpu(2, {1}, 20, 7), gpu(3, {1}, 5, 7), gpu(4, {1}, 8, 8), cpu(5, {1}, 3)}});
  ASSERT_TRUE(run.status.ok()) << run.status.message();
  ASSERT_TRUE(run.result().completed);
  EXPECT_EQ(run.start_us(0, 1), 0);
  EXPECT_EQ(run.start_us(0, 2), 10);  // stream 7: 2 first (smaller id), then 3
  EXPECT_EQ(run.start_us(0, 3), 30);
  EXPECT_EQ(run.node(0, 3).reason, StartReason::kResource);
  EXPECT_EQ(run.start_us(0, 4), 10);  // stream 8 runs alongside
  EXPECT_EQ(run.start_us(0, 5), 10);  // the CPU thread is free
  EXPECT_EQ(run.result().ranks[0].predicted_us, 35.0);
  EXPECT_EQ(run.result().ranks[0].state, "done");
  const CriticalPath& cp = run.result().critical_path;
  EXPECT_EQ(cp.total_ns, 35000);
  EXPECT_EQ(cp.end_node, 3u);
  EXPECT_EQ(cp.nodes, 3u);  // 3 <- (stream) 2 <- 1
  EXPECT_EQ(path_ns(cp, PathKind::kCpu), 10000);
  EXPECT_EQ(path_ns(cp, PathKind::kGpu), 25000);
  EXPECT_EQ(path_sum(cp), cp.total_ns);
}

TEST_F(SimulatorTest, ComputeScaleScalesComputeOnly) {
  using namespace testing;
  SimConfig c;
  c.compute_scale = 0.5;
  Outcome run = simulate({{cpu(1, {}, 10), gpu(2, {1}, 21)}}, c);
  ASSERT_TRUE(run.result().completed);
  EXPECT_EQ(run.end_us(0, 2), 15.5);
}

TEST_F(SimulatorTest, CollectiveStartsWhenTheLastMemberArrives) {
  using namespace testing;
  const int64_t mb = 1 << 20;
  Outcome run = simulate({{cpu(1, {}, 10), coll(2, {1}, kAllReduce, mb)},
                          {cpu(1, {}, 50), coll(2, {1}, kAllReduce, mb)}},
                         model());
  ASSERT_TRUE(run.status.ok()) << run.status.message();
  ASSERT_TRUE(run.result().completed);
  EXPECT_EQ(run.result().collectives, 1u);
  EXPECT_EQ(run.start_us(0, 2), 10);  // rank 0 arrives first and waits
  const int64_t cost = CostModel(NetworkConfig{}).collective_ns(kAllReduce, mb, 2);
  EXPECT_EQ(run.node(0, 2).end, 50000 + cost);
  EXPECT_EQ(run.node(1, 2).end, 50000 + cost);
  const SimComm& c = run.sim->ranks()[0]->comms()[run.node(0, 2).comm];
  EXPECT_EQ(c.transfer_start, 50000);
  EXPECT_EQ(c.remote_rank, 1u);
  // The critical path goes from rank 0's collective to rank 1, which arrived last.
  const CriticalPath& cp = run.result().critical_path;
  EXPECT_EQ(cp.total_ns, 50000 + cost);
  EXPECT_EQ(path_ns(cp, PathKind::kCollective), cost);
  EXPECT_EQ(path_ns(cp, PathKind::kCpu), 50000);
  EXPECT_EQ(cp.ranks, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(path_sum(cp), cp.total_ns);
}

TEST_F(SimulatorTest, ReplayTakesTheShortestRecordedDurationOrEachOwn) {
  using namespace testing;
  std::vector<std::vector<SimTraceNode>> ranks = {
      {cpu(1, {}, 10), coll(2, {1}, kAllReduce, 64, /*recorded_us=*/100)},
      {cpu(1, {}, 50), coll(2, {1}, kAllReduce, 64, /*recorded_us=*/60)}};
  Outcome min = simulate(ranks);
  ASSERT_TRUE(min.result().completed);
  EXPECT_EQ(min.end_us(0, 2), 110);
  EXPECT_EQ(min.end_us(1, 2), 110);
  SimConfig own;
  own.collective_replay = CollectiveReplay::kOwn;
  Outcome each = simulate(ranks, own);
  EXPECT_EQ(each.end_us(0, 2), 150);
  EXPECT_EQ(each.end_us(1, 2), 110);
}

TEST_F(SimulatorTest, CollectivesMatchByOrderWithinTheGroupNotById) {
  using namespace testing;
  // Rank 1 numbers its nodes differently; the k-th collective still matches the k-th.
  Outcome same = simulate(
      {{cpu(1, {}, 1), coll(2, {1}, kAllReduce, 1000, 5), coll(3, {2}, kAllGather, 2000, 7)},
       {cpu(10, {}, 1), coll(20, {10}, kAllReduce, 1000, 5), coll(30, {20}, kAllGather, 2000, 7)}});
  ASSERT_TRUE(same.result().completed);
  EXPECT_EQ(same.result().collectives, 2u);
  EXPECT_EQ(same.result().problems.entries().size(), 0u);
  EXPECT_EQ(same.end_us(1, 30), 13);
  // Issued in another order on rank 1: the members disagree, which is reported.
  Outcome swapped = simulate(
      {{cpu(1, {}, 1), coll(2, {1}, kAllReduce, 1000, 5), coll(3, {2}, kAllGather, 2000, 7)},
       {cpu(1, {}, 1), coll(2, {1}, kAllGather, 2000, 7), coll(3, {2}, kAllReduce, 1000, 5)}});
  ASSERT_TRUE(swapped.result().completed);
  const auto& p = swapped.result().problems.entries();
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p.begin()->first, StatKind::kSimCollectiveMembersDisagree);
  EXPECT_EQ(p.begin()->second.count, 2u);
}

TEST_F(SimulatorTest, ProcessGroupsFromTheMetadataNode) {
  using namespace testing;
  const std::string groups =
      R"([{"pg_name": "0", "ranks": [], "group_size": 4}, {"pg_name": "1", "ranks": [0, 1]}, )"
      R"({"pg_name": "2", "ranks": [2, 3]}])";
  auto rank = [&](uint64_t work_us, const std::string& pg) {
    return std::vector<SimTraceNode>{process_groups(1, groups), cpu(2, {1}, work_us),
                                     coll(3, {2}, kAllReduce, 4096, 0, pg),
                                     coll(4, {3}, kAllReduce, 4096, 0, "0")};
  };
  Outcome run = simulate({rank(10, "1"), rank(30, "1"), rank(100, "2"), rank(20, "2")}, model());
  ASSERT_TRUE(run.status.ok()) << run.status.message();
  ASSERT_TRUE(run.result().completed) << run.result().stall.size();
  CostModel cost{NetworkConfig{}};
  const int64_t pair = cost.collective_ns(kAllReduce, 4096, 2);
  const int64_t all = cost.collective_ns(kAllReduce, 4096, 4);
  EXPECT_EQ(run.node(0, 3).end, 30000 + pair);  // group 1 waits for rank 1 only
  EXPECT_EQ(run.node(1, 3).end, 30000 + pair);
  EXPECT_EQ(run.node(2, 3).end, 100000 + pair);  // group 2 for rank 2
  for (uint32_t r = 0; r < 4; ++r) EXPECT_EQ(run.node(r, 4).end, 100000 + pair + all) << r;
  EXPECT_EQ(run.result().problems.entries().size(), 0u);
}

TEST_F(SimulatorTest, PointToPointIsEagerAndMatchesBySourceAndTag) {
  using namespace testing;
  const int64_t mb = 1 << 20;
  Outcome run = simulate(
      {{cpu(1, {}, 10), send(2, {1}, /*dst=*/1, mb)}, {recv(1, {}, /*src=*/0, mb), cpu(2, {1}, 5)}},
      model());
  ASSERT_TRUE(run.status.ok()) << run.status.message();
  ASSERT_TRUE(run.result().completed);
  const int64_t cost = CostModel(NetworkConfig{}).p2p_ns(mb);
  EXPECT_EQ(run.node(0, 2).end, 10000 + cost);
  EXPECT_EQ(run.node(1, 1).start, 0);  // posted at once, completed when the message arrived
  EXPECT_EQ(run.node(1, 1).end, 10000 + cost);
  EXPECT_EQ(run.node(1, 2).end, 15000 + cost);
  EXPECT_EQ(run.result().messages, 1u);
  const CriticalPath& cp = run.result().critical_path;
  EXPECT_EQ(cp.total_ns, 15000 + cost);
  EXPECT_EQ(path_ns(cp, PathKind::kP2p), cost);
  EXPECT_EQ(path_sum(cp), cp.total_ns);
}

TEST_F(SimulatorTest, RingOfSendsFirstDoesNotDeadlock) {
  using namespace testing;
  std::vector<std::vector<SimTraceNode>> ranks;
  for (int64_t r = 0; r < 3; ++r) {
    ranks.push_back(
        {send(1, {}, (r + 1) % 3, 1000), recv(2, {1}, (r + 2) % 3, 1000), gpu(3, {2}, 7, 9)});
  }
  Outcome run = simulate(ranks, model());
  ASSERT_TRUE(run.status.ok());
  ASSERT_TRUE(run.result().completed);
  EXPECT_EQ(run.result().messages, 3u);
}

TEST_F(SimulatorTest, RecordedDelaysReproduceTheRecordedTimeline) {
  using namespace testing;
  // Thread 1: 1 [1000, 1010); 2 at 1015 (5 us of host time after 1); GPU 3 at 1030 (launch
  // latency); parent 4 at 1040 with 10 us exclusive: 2 before its child 5 [1042, 1045), 8 after;
  // 6 at 1053.
  auto at = [](SimTraceNode n, uint64_t start) {
    n.start = start;
    return n;
  };
  std::vector<SimTraceNode> trace = {at(cpu(1, {}, 10), 1000),  at(cpu(2, {1}, 5), 1015),
                                     at(gpu(3, {2}, 20), 1030), at(cpu(4, {2}, 10), 1040),
                                     at(cpu(5, {4}, 3), 1042),  at(cpu(6, {5}, 1), 1053)};
  Outcome run = simulate({trace});
  ASSERT_TRUE(run.result().completed);
  for (const SimTraceNode& n : trace) {
    EXPECT_EQ(run.start_us(0, n.id), static_cast<double>(n.start - 1000)) << n.id;
  }
  EXPECT_TRUE(run.node(0, 4).truncated);
  EXPECT_EQ(run.end_us(0, 4), 42);  // holds the thread until its child starts
  EXPECT_EQ(run.result().ranks[0].predicted_us, 54.0);
  EXPECT_EQ(path_sum(run.result().critical_path), run.result().critical_path.total_ns);

  SimConfig no_gaps;
  no_gaps.host_gaps = false;  // Chakra's replay: back to back, whole exclusive times
  Outcome packed = simulate({trace}, no_gaps);
  EXPECT_EQ(packed.start_us(0, 2), 10);
  EXPECT_EQ(packed.start_us(0, 5), 25);
  EXPECT_EQ(packed.result().ranks[0].predicted_us, 35.0);
}

TEST_F(SimulatorTest, RanksStartAtTheirRecordedOffsets) {
  using namespace testing;
  auto at = [](SimTraceNode n, uint64_t start) {
    n.start = start;
    return n;
  };
  std::vector<std::vector<SimTraceNode>> ranks = {
      {at(cpu(1, {}, 10), 5000), at(coll(2, {1}, kAllReduce, 64, 30), 5010)},
      {at(cpu(1, {}, 10), 5100), at(coll(2, {1}, kAllReduce, 64, 20), 5110)}};
  Outcome skew = simulate(ranks);
  ASSERT_TRUE(skew.result().completed);
  EXPECT_EQ(skew.start_us(1, 1), 100);
  EXPECT_EQ(skew.end_us(0, 2), 130);  // rank 0 waits for rank 1, then the shorter recording
  EXPECT_EQ(skew.result().ranks[0].predicted_us, 130.0);
  EXPECT_EQ(skew.result().ranks[1].predicted_us, 30.0);
  EXPECT_EQ(path_ns(skew.result().critical_path, PathKind::kRankStart), 100000);

  SimConfig aligned;
  aligned.rank_skew = false;
  Outcome together = simulate(ranks, aligned);
  EXPECT_EQ(together.result().ranks[0].predicted_us, 30.0);
  EXPECT_EQ(together.result().ranks[1].predicted_us, 30.0);
}

TEST_F(SimulatorTest, HorizonsFollowChainsOfWaits) {
  using namespace testing;
  // Rank 0 waits in "w" for rank 1, which waits in "s" for rank 2, which waits in "x" for rank 3
  // (busy until 100 us). Each collective lasts 5 us, so "w" completes at 115 and releases node 2
  // on rank 0's thread 1 at 115 us. Node 3 wants the same thread from 120 us (after node 4 on
  // thread 2): a rank 0 that ran ahead to 120 while waiting would start node 3 first. Its horizon
  // must come from the chain of waits (rank 1 and 2 have no event of their own).
  const std::string groups =
      R"([{"pg_name": "w", "ranks": [0, 1]}, {"pg_name": "s", "ranks": [1, 2]}, )"
      R"({"pg_name": "x", "ranks": [2, 3]}])";
  Outcome run = simulate(
      {{process_groups(1, groups), coll(10, {1}, kAllReduce, 8, 5, "w"), cpu(2, {10}, 10, 1),
        cpu(4, {1}, 120, 2), cpu(3, {4}, 10, 1)},
       {process_groups(1, groups), coll(10, {1}, kAllReduce, 8, 5, "s"),
        coll(11, {10}, kAllReduce, 8, 5, "w")},
       {process_groups(1, groups), coll(10, {1}, kAllReduce, 8, 5, "x"),
        coll(11, {10}, kAllReduce, 8, 5, "s")},
       {process_groups(1, groups), cpu(2, {1}, 100), coll(10, {2}, kAllReduce, 8, 5, "x")}});
  ASSERT_TRUE(run.status.ok()) << run.status.message();
  ASSERT_TRUE(run.result().completed);
  EXPECT_EQ(run.end_us(0, 10), 115);
  EXPECT_EQ(run.start_us(0, 2), 115);
  EXPECT_EQ(run.start_us(0, 3), 125);  // behind node 2 on thread 1
  EXPECT_TRUE(run.result().problems.entries().empty());
}

// --- stalls: reported, never a hang

TEST_F(SimulatorTest, CollectiveThatNeverMatchesIsReported) {
  using namespace testing;
  Outcome run = simulate({{cpu(1, {}, 10), coll(2, {1}, kAllReduce, 1024)},
                          {cpu(1, {}, 10), coll(7, {1}, kAllReduce, 1024)},
                          {cpu(1, {}, 10), cpu(2, {1}, 10)}});
  ASSERT_TRUE(run.status.ok()) << run.status.message();
  const SimResult& r = run.result();
  EXPECT_FALSE(r.completed);
  EXPECT_EQ(r.ranks[0].state, "waiting");
  EXPECT_EQ(r.ranks[1].state, "waiting");
  EXPECT_EQ(r.ranks[2].state, "done");
  ASSERT_EQ(r.stall.size(), 1u);
  EXPECT_THAT(r.stall[0], HasSubstr("collective #0 (all_reduce, 1024 bytes)"));
  EXPECT_THAT(r.stall[0], HasSubstr("rank 0 (node 2), rank 1 (node 7)"));
  EXPECT_THAT(r.stall[0], HasSubstr("rank 2 never reached it: finished its trace"));
  EXPECT_THAT(report_text(r, SimConfig{}), HasSubstr("STALLED"));
  EXPECT_THAT(report_json(r, SimConfig{}), HasSubstr("\"status\": \"stalled\""));
}

TEST_F(SimulatorTest, CrossOrderCollectivesDeadlockIsReported) {
  using namespace testing;
  const std::string groups =
      R"([{"pg_name": "a", "ranks": [0, 1]}, {"pg_name": "b", "ranks": [0, 1]}])";
  Outcome run = simulate({{process_groups(1, groups), coll(2, {1}, kAllReduce, 8, 0, "a"),
                           coll(3, {2}, kAllReduce, 8, 0, "b")},
                          {process_groups(1, groups), coll(2, {1}, kAllReduce, 8, 0, "b"),
                           coll(3, {2}, kAllReduce, 8, 0, "a")}});
  ASSERT_TRUE(run.status.ok());
  const SimResult& r = run.result();
  EXPECT_FALSE(r.completed);
  ASSERT_EQ(r.stall.size(), 2u);
  EXPECT_THAT(r.stall[0], HasSubstr("process group \"a\""));
  EXPECT_THAT(r.stall[0], HasSubstr("waiting: rank 0 (node 2)"));
  EXPECT_THAT(r.stall[0], HasSubstr("rank 1 never reached it: waits in communication: node 2"));
  EXPECT_THAT(r.stall[1], HasSubstr("process group \"b\""));
}

TEST_F(SimulatorTest, GroupWithARankNotSimulatedIsReported) {
  using namespace testing;
  const std::string groups = R"([{"pg_name": "1", "ranks": [0, 1, 5]}])";
  Outcome run = simulate({{process_groups(1, groups), coll(2, {1}, kAllReduce, 8, 0, "1")},
                          {process_groups(1, groups), coll(2, {1}, kAllReduce, 8, 0, "1")}});
  ASSERT_TRUE(run.status.ok());
  ASSERT_FALSE(run.result().completed);
  ASSERT_EQ(run.result().stall.size(), 1u);
  EXPECT_THAT(run.result().stall[0], HasSubstr("rank 5 is not simulated (2 ranks)"));
}

TEST_F(SimulatorTest, ReceiveWithoutSenderIsReported) {
  using namespace testing;
  Outcome run = simulate({{cpu(1, {}, 1)}, {recv(1, {}, /*src=*/0, 64)}});
  ASSERT_TRUE(run.status.ok());
  ASSERT_FALSE(run.result().completed);
  ASSERT_EQ(run.result().stall.size(), 1u);
  EXPECT_THAT(run.result().stall[0], HasSubstr("receive from rank 0 (tag 0)"));
  EXPECT_THAT(run.result().stall[0], HasSubstr("rank 1 (node 1)"));
}

TEST_F(SimulatorTest, MissingDependencyUsesTheFeedersStallReport) {
  using namespace testing;
  Outcome run = simulate({{cpu(1, {}, 1), cpu(2, {1, 99}, 1), cpu(3, {2}, 1)}});
  ASSERT_TRUE(run.status.ok());
  ASSERT_FALSE(run.result().completed);
  EXPECT_EQ(run.result().ranks[0].state, "stalled");
  ASSERT_EQ(run.result().stall.size(), 1u);
  EXPECT_THAT(run.result().stall[0], HasSubstr("rank 0 (stalled)"));
  EXPECT_THAT(run.result().stall[0], HasSubstr("id 99, which is not in the trace"));
}

TEST_F(SimulatorTest, MissingTraceFilesAreNamed) {
  testing::write_sim_trace(dir_.file("x.0.et"), {testing::cpu(1, {}, 1)});
  auto sim = Simulation::open(expand_trace_paths(dir_.file("x.{rank}.et"), 3), SimOptions{});
  ASSERT_FALSE(sim.ok());
  EXPECT_THAT(sim.status().message(), HasSubstr("2 of 3 rank traces missing"));
  EXPECT_THAT(sim.status().message(), HasSubstr("rank 1 (" + dir_.file("x.1.et") + ")"));
  EXPECT_THAT(sim.status().message(), HasSubstr("rank 2"));
}

TEST(SimulatorPathsTest, ExpandsTemplatesAndPrefixes) {
  EXPECT_EQ(expand_trace_paths("d/t.{rank}.et", 2),
            (std::vector<std::string>{"d/t.0.et", "d/t.1.et"}));
  EXPECT_EQ(expand_trace_paths("d/w", 2), (std::vector<std::string>{"d/w.0.et", "d/w.1.et"}));
}

TEST_F(SimulatorTest, MalformedTraceIsAnError) {
  const std::string path = dir_.file("bad.0.et");
  testing::write_sim_trace(path, {testing::cpu(1, {}, 1)});
  std::string bytes = testing::read_text(path);
  bytes += std::string("\x05\x08\x02\x12\x09", 5);  // a record whose name runs past its end
  testing::write_text(path, bytes);
  auto sim = Simulation::open({path}, SimOptions{});
  Status s = sim.ok() ? (*sim)->run() : sim.status();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("bad.0.et"));
}

TEST_F(SimulatorTest, TimelineIsChromeTraceJson) {
  using namespace testing;
  Outcome run = simulate({{cpu(1, {}, 10), coll(2, {1}, kAllReduce, 64, 4)},
                          {cpu(1, {}, 30), coll(2, {1}, kAllReduce, 64, 4)}},
                         SimConfig{}, /*keep_names=*/true);
  ASSERT_TRUE(run.result().completed);
  std::string json;
  append_timeline_json(run.sim->ranks(), json);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  int complete = 0, names = 0;
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    std::string_view ph = e["ph"].get_string().value();
    if (ph == "X") {
      ++complete;
      if (e["args"]["id"].get_uint64().value() == 2 && e["pid"].get_uint64().value() == 0) {
        EXPECT_EQ(e["name"].get_string().value(), "n2");
        EXPECT_EQ(e["ts"].get_double().value(), 10.0);
        EXPECT_EQ(e["dur"].get_double().value(), 24.0);
        EXPECT_EQ(e["args"]["wait_us"].get_double().value(), 20.0);
        EXPECT_EQ(e["args"]["transfer_us"].get_double().value(), 4.0);
      }
    } else if (ph == "M") {
      ++names;
    }
  }
  EXPECT_EQ(complete, 4);
  EXPECT_EQ(names, 2 * 2 + 2 * 2 * 2);  // per rank: name + order, per resource: name + order
  const std::string path = dir_.file("timeline.json");
  ASSERT_TRUE(write_timeline(run.sim->ranks(), path).ok());
  EXPECT_EQ(testing::read_text(path), json);
}

// ---------------------------------------------------------------------------------------------
// Properties on random traces: what a sequential event-driven simulation guarantees must hold for
// the parallel rounds, whatever the thread count.

// Ranks split into two process groups ("lo", "hi") plus the world ("w"). Every rank follows the
// same pattern of communication steps (a collective on its half, on the world, or a ring of
// point-to-point messages), each step chained after the previous, with compute nodes of random
// durations (different on every rank) in between, some sharing the collectives' stream. The two
// halves drift apart between world collectives: ranks wait in communication for different times
// while others still run, which is what the horizons must get right.
std::vector<std::vector<SimTraceNode>> random_traces(uint32_t ranks, uint32_t seed) {
  using namespace testing;
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  std::string lo, hi;
  for (uint32_t r = 0; r < ranks; ++r) {
    std::string& g = r < ranks / 2 ? lo : hi;
    g += (g.empty() ? "" : ", ") + std::to_string(r);
  }
  const std::string groups = "[{\"pg_name\": \"lo\", \"ranks\": [" + lo +
                             "]}, {\"pg_name\": \"hi\", \"ranks\": [" + hi +
                             "]}, {\"pg_name\": \"w\", \"ranks\": []}]";
  // Each half does its own number of collectives on its half before each step all ranks share
  // (a world collective or a ring of messages): the halves fall out of step.
  enum Step { kSub, kWorld, kRing };
  std::vector<Step> shared;
  for (int k = 0; k < 5; ++k) shared.push_back(pick(3) == 0 ? kRing : kWorld);
  std::vector<Step> pattern[2];
  for (auto& half : pattern) {
    for (Step step : shared) {
      for (int extra = pick(3); extra > 0; --extra) half.push_back(kSub);
      half.push_back(step);
    }
  }
  std::vector<int64_t> sizes;
  for (int k = 0; k < 32; ++k) sizes.push_back(int64_t{1024} << pick(10));
  std::vector<std::vector<SimTraceNode>> out(ranks);
  for (uint32_t r = 0; r < ranks; ++r) {
    auto& t = out[r];
    t.push_back(process_groups(1, groups));
    uint64_t id = 2;
    std::vector<uint64_t> ids = {1};
    uint64_t last_comm = 1;
    auto random_deps = [&]() {
      std::vector<uint64_t> deps;
      for (int d = 1 + pick(2); d > 0; --d) {
        const uint64_t dep = ids[ids.size() - 1 - pick(std::min<int>(6, ids.size()))];
        if (std::find(deps.begin(), deps.end(), dep) == deps.end()) deps.push_back(dep);
      }
      return deps;
    };
    auto comm = [&](SimTraceNode n) {
      n.deps.push_back(last_comm);  // communication in the pattern's order
      t.push_back(std::move(n));
      last_comm = id;
      ids.push_back(id++);
    };
    const std::vector<Step>& steps = pattern[r < ranks / 2 ? 0 : 1];
    int occurrence[3] = {0, 0, 0};  // the same sizes for the same collective on every member
    for (size_t k = 0; k < steps.size(); ++k) {
      const int64_t size = sizes[(8 * steps[k] + occurrence[steps[k]]++) % sizes.size()];
      // The "lo" half computes only after its last communication completed, so a rank of it
      // that waits has nothing else to do (no next event); the "hi" half overlaps.
      const bool synchronous = r < ranks / 2;
      for (int i = 3 + pick(5); i > 0; --i) {
        const int what = pick(5);
        std::vector<uint64_t> deps = random_deps();
        if (synchronous && std::find(deps.begin(), deps.end(), last_comm) == deps.end()) {
          deps.push_back(last_comm);
        }
        // Now and then a long op, which may outlast communication the rank waits in.
        const auto us = static_cast<uint64_t>(pick(8) == 0 ? 200 + pick(1500) : 1 + pick(60));
        if (what < 2) {
          t.push_back(cpu(id, deps, us, 1 + pick(2)));
        } else {
          t.push_back(gpu(id, deps, us, what == 4 ? 9 : 7 + pick(2)));
        }
        ids.push_back(id++);
      }
      const auto recorded = static_cast<uint64_t>(1 + pick(30));
      switch (steps[k]) {
        case kSub:
          comm(coll(id, random_deps(), kAllReduce, size, recorded, r < ranks / 2 ? "lo" : "hi"));
          break;
        case kWorld:
          comm(coll(id, random_deps(), kAllGather, size, recorded, "w"));
          break;
        case kRing:
          comm(send(id, random_deps(), (r + 1) % ranks, size));
          comm(recv(id, random_deps(), (r + ranks - 1) % ranks, size));
          break;
      }
    }
  }
  return out;
}

void expect_sequential_semantics(const Outcome& run,
                                 const std::vector<std::vector<SimTraceNode>>& traces) {
  const SimResult& res = run.result();
  ASSERT_TRUE(res.completed);
  EXPECT_TRUE(res.problems.entries().empty()) << stat_key(res.problems.entries().begin()->first);
  for (uint32_t r = 0; r < traces.size(); ++r) {
    const RankSimulator& rank = *run.sim->ranks()[r];
    std::map<uint32_t, std::vector<const SimNode*>> by_resource;
    for (const SimTraceNode& t : traces[r]) {
      const SimNode& n = run.node(r, t.id);
      ASSERT_NE(n.end, kSimNever);
      for (uint64_t d : t.deps) {
        EXPECT_GE(n.start, run.node(r, d).end) << "rank " << r << " node " << t.id << " dep " << d;
      }
      EXPECT_GE(n.start, n.eligible);
      by_resource[n.resource].push_back(&n);
    }
    for (auto& [res_index, nodes] : by_resource) {
      // In start order; a zero-length node (a send in replay) first among equal starts.
      std::sort(nodes.begin(), nodes.end(), [](const SimNode* a, const SimNode* b) {
        return std::tie(a->start, a->end) < std::tie(b->start, b->end);
      });
      for (size_t k = 0; k < nodes.size(); ++k) {
        const SimNode& n = *nodes[k];
        if (k > 0) {
          EXPECT_GE(n.start, nodes[k - 1]->end)
              << "overlap on a resource, rank " << r << ": node " << n.id << " (kind "
              << int(n.kind) << ") after node " << nodes[k - 1]->id << " (kind "
              << int(nodes[k - 1]->kind) << ", " << nodes[k - 1]->start << " - "
              << nodes[k - 1]->end << ")";
        }
        // Work-conserving: from its eligible time to its start the resource was busy.
        if (n.start > n.eligible) {
          EXPECT_EQ(n.reason, StartReason::kResource);
          ASSERT_GT(k, 0u);
          EXPECT_EQ(nodes[k - 1]->end, n.start) << "rank " << r << " node " << n.id;
          int64_t covered = n.start;
          for (size_t j = k; j-- > 0 && covered > n.eligible;) {
            if (nodes[j]->end >= covered) covered = std::min(covered, nodes[j]->start);
          }
          EXPECT_LE(covered, n.eligible) << "idle resource while node " << n.id << " waited";
        }
        // Priority: no node that was waiting with a smaller (eligible, id) started later.
        for (size_t j = k + 1; j < nodes.size(); ++j) {
          const SimNode& later = *nodes[j];
          if (later.eligible < n.start && later.start > n.start) {
            EXPECT_FALSE(std::tie(later.eligible, later.id) < std::tie(n.eligible, n.id))
                << "rank " << r << ": node " << later.id << " (kind " << int(later.kind)
                << ", eligible " << later.eligible << ", start " << later.start
                << ") waited behind " << n.id << " (kind " << int(n.kind) << ", eligible "
                << n.eligible << ", " << n.start << " - " << n.end << ")";
          }
        }
      }
    }
    (void)rank;
  }
  // Every member of the k-th collective of a group ends together, after every member arrived
  // (replay "min" and the model give all members the same duration).
  std::map<std::pair<std::string, uint64_t>, std::set<int64_t>> ends;
  std::map<std::pair<std::string, uint64_t>, int64_t> last_arrival;
  for (uint32_t r = 0; r < traces.size(); ++r) {
    std::map<std::string, uint64_t> index;
    for (const SimTraceNode& t : traces[r]) {
      if (t.type != pb::COMM_COLL_NODE) continue;
      const SimNode& n = run.node(r, t.id);
      const auto key = std::make_pair(t.pg_name, index[t.pg_name]++);
      ends[key].insert(n.end);
      last_arrival[key] = std::max(last_arrival[key], n.start);
    }
  }
  EXPECT_GT(ends.size(), 0u);
  for (const auto& [key, e] : ends) {
    EXPECT_EQ(e.size(), 1u) << "collective " << key.second << " of " << key.first;
    EXPECT_GE(*e.begin(), last_arrival[key]);
  }
  int64_t sum = 0;
  for (int64_t v : res.critical_path.by_kind_ns) sum += v;
  EXPECT_EQ(sum, res.critical_path.total_ns);
}

class SimulatorPropertyTest : public SimulatorTest,
                              public ::testing::WithParamInterface<uint32_t> {};

TEST_P(SimulatorPropertyTest, ParallelRoundsKeepSequentialSemantics) {
  const auto traces = random_traces(6, GetParam());
  for (SimMode mode : {SimMode::kReplay, SimMode::kModel}) {
    SimConfig config;
    config.mode = mode;
    config.network.latency_us = 1 + GetParam() % 3;
    Outcome run = simulate(traces, config);
    ASSERT_TRUE(run.status.ok()) << run.status.message();
    SCOPED_TRACE(to_string(mode));
    expect_sequential_semantics(run, traces);
  }
}

TEST_P(SimulatorPropertyTest, SameResultWhateverTheThreadCount) {
  const auto traces = random_traces(8, GetParam());
  SimConfig config;
  config.mode = SimMode::kModel;
  const std::vector<std::string> paths = write(traces);
  std::string reference_report, reference_timeline;
  for (size_t threads : {1, 2, 4}) {
    oneapi::tbb::global_control limit(oneapi::tbb::global_control::max_allowed_parallelism,
                                      threads);
    Outcome run = simulate_files(paths, config, /*keep_names=*/true);
    ASSERT_TRUE(run.status.ok());
    const std::string report = report_json(run.result(), config);
    std::string timeline;
    append_timeline_json(run.sim->ranks(), timeline);
    if (threads == 1) {
      reference_report = report;
      reference_timeline = timeline;
    } else {
      EXPECT_EQ(report, reference_report) << threads << " threads";
      EXPECT_EQ(timeline, reference_timeline) << threads << " threads";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, SimulatorPropertyTest, ::testing::Values(1u, 2u, 3u, 17u, 42u));

}  // namespace
}  // namespace chakraflow
