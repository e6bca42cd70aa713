// gloo collectives on real traces (../shared/data/pt211_h200/gloo_4rank: 4 ranks of DDP over gloo
// with CUDA tensors, plus in the forward an all_reduce on the subgroup {0,1} or {2,3}). PyTorch
// 2.11 writes no record_param_comms for gloo; `chakraflow run` makes each gloo:all_reduce a
// communication node on the gloo thread that ran it, on its process group (placed across ranks),
// and the replay of every rank gives its recorded step.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "proto/et_def.pb.h"
#include "stages/common/stat_kinds.h"
#include "stages/et/et_io.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

namespace fs = std::filesystem;
namespace pb = ChakraProtoMsg;

struct CommNode {
  uint64_t id;
  int64_t size = 0, tid = 0;
  std::string pg_name;
  bool is_cpu_op = true, has_stream = false;
};

std::vector<CommNode> comm_nodes(const std::string& et) {
  std::vector<CommNode> out;
  auto reader = EtReader::open(et);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return out;
  pb::GlobalMetadata md;
  EXPECT_TRUE(reader->next(&md).value());
  pb::Node n;
  while (reader->next(&n).value()) {
    if (n.type() != pb::COMM_COLL_NODE) continue;
    CommNode c{n.id()};
    for (const auto& a : n.attr()) {
      if (a.name() == "comm_size") c.size = a.int64_val();
      if (a.name() == "tid") c.tid = a.int64_val();
      if (a.name() == "pg_name") c.pg_name = a.string_val();
      if (a.name() == "is_cpu_op") c.is_cpu_op = a.bool_val();
      if (a.name() == "stream") c.has_stream = true;
    }
    EXPECT_NE(n.name().find("gloo:all_reduce"), std::string::npos) << n.name();
    out.push_back(c);
  }
  return out;
}

TEST(GlooGolden, CollectivesAreCommunicationOnTheirGroupsAndTheReplayGivesTheStep) {
  CF_REQUIRE_SHARED_DATA("pt211_h200/gloo_4rank");
  const fs::path data = testing::shared_data_dir() / "pt211_h200/gloo_4rank";
  testing::TempDir dir;
  testing::write_text(
      dir.file("gloo.yaml"),
      "inputs:\n  host: " + (data / "rank{rank}/host_et.json.gz").string() +
          "\n  device: " + (data / "rank{rank}/kineto.json.gz").string() +
          "\nstages: [link, convert, simulate]\noutputs: {dir: out, prefix: gloo}\n");
  std::string log;
  ASSERT_EQ(
      testing::run_command(std::string(CHAKRAFLOW_BINARY) + " run " + dir.file("gloo.yaml"), &log),
      0)
      << log;

  for (int r = 0; r < 4; ++r) {
    const auto comm = comm_nodes(dir.file("out/gloo." + std::to_string(r) + ".et"));
    ASSERT_EQ(comm.size(), 13u) << "rank " << r;
    // The forward's all_reduce of an [8, 512] float tensor on the rank's pair, then DDP's twelve
    // buckets of about 4 MB on the default group.
    EXPECT_EQ(comm[0].size, 8 * 512 * 4) << "rank " << r;
    EXPECT_EQ(comm[0].pg_name, r < 2 ? "1" : "2") << "rank " << r;
    for (size_t k = 1; k < comm.size(); ++k) {
      EXPECT_GT(comm[k].size, 4000000) << "rank " << r << " collective " << k;
      EXPECT_EQ(comm[k].pg_name, "0") << "rank " << r << " collective " << k;
    }
    for (const CommNode& c : comm) {
      // On gloo's thread (the ET gives the caller's: 1 or 5 in this capture), no stream, and not
      // a CPU op for ASTRA-sim.
      EXPECT_NE(c.tid, 1) << "node " << c.id;
      EXPECT_NE(c.tid, 5) << "node " << c.id;
      EXPECT_FALSE(c.is_cpu_op) << "node " << c.id;
      EXPECT_FALSE(c.has_stream) << "node " << c.id;
    }
  }

  simdjson::dom::parser p1, p2, p3;
  simdjson::dom::element sim = testing::load_json(p1, dir.file("out/simulation.json"));
  size_t ranks = 0;
  for (simdjson::dom::element row : sim["ranks"].get_array()) {
    const double error = double(row["error_pct"]);
    EXPECT_LE(std::fabs(error), 2.0) << "rank " << int64_t(row["rank"]) << ": " << error << "%";
    ++ranks;
  }
  EXPECT_EQ(ranks, 4u);
  simdjson::dom::element groups = testing::load_json(p2, dir.file("out/gloo.comm_group.json"));
  EXPECT_EQ(simdjson::to_string(groups), R"({"0":[0,1,2,3],"1":[0,1],"2":[2,3]})");
  // Every guess the conversions made was settled across ranks.
  simdjson::dom::element summary = testing::load_json(p3, dir.file("out/summary.json"));
  for (simdjson::dom::element row : summary["ranks"].get_array()) {
    simdjson::dom::element count;
    EXPECT_NE(row["warnings"][stat_key(StatKind::kCommCpuCollectiveGroupGuessed)].get(count),
              simdjson::SUCCESS);
  }
  EXPECT_NE(log.find("52 of 52 placed"), std::string::npos) << log;
}

TEST(GlooGolden, OneRankAloneGuessesTheDefaultGroupAndSaysSo) {
  CF_REQUIRE_SHARED_DATA("pt211_h200/gloo_4rank");
  const fs::path rank = testing::shared_data_dir() / "pt211_h200/gloo_4rank/rank0";
  testing::TempDir dir;
  const std::string bin = CHAKRAFLOW_BINARY;
  std::string log;
  ASSERT_EQ(testing::run_command(
                bin + " link --chakra-host-trace " + (rank / "host_et.json.gz").string() +
                    " --chakra-device-trace " + (rank / "kineto.json.gz").string() +
                    " --output-file " + dir.file("et_plus.json"),
                &log),
            0)
      << log;
  ASSERT_EQ(testing::run_command(bin + " convert --input " + dir.file("et_plus.json") +
                                     " --output " + dir.file("t.et"),
                                 &log),
            0)
      << log;
  EXPECT_NE(log.find(stat_key(StatKind::kCommCpuCollectiveGroupGuessed)), std::string::npos) << log;
  const auto comm = comm_nodes(dir.file("t.et"));
  ASSERT_EQ(comm.size(), 13u);
  for (const CommNode& c : comm) EXPECT_EQ(c.pg_name, "0");
  // --compat chakra keeps Chakra's output: no communication node.
  ASSERT_EQ(testing::run_command(bin + " convert --compat chakra --input " +
                                     dir.file("et_plus.json") + " --output " + dir.file("c.et"),
                                 &log),
            0)
      << log;
  EXPECT_TRUE(comm_nodes(dir.file("c.et")).empty());
}

}  // namespace
}  // namespace chakraflow
