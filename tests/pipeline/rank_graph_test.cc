// The rank pipeline's flow graph (pipeline/rank_graph.h): the shape each plan declares, the same
// bytes through every route to a .et, failures kept to their rank.
#include "pipeline/rank_graph.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <set>

#include "stages/generate/synthetic_trace.h"
#include "tests/testing/generated_ranks.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// The edges of a dot text, "from -> to" each.
std::set<std::string> edges(const std::string& dot) {
  std::set<std::string> out;
  size_t at = 0;
  while ((at = dot.find(" -> ", at)) != std::string::npos) {
    size_t begin = dot.rfind('\n', at) + 1;
    size_t end = dot.find_first_of(" ;", at + 4);
    out.insert(std::string(dot.substr(begin + 2, at - begin - 2)) + " -> " +
               dot.substr(at + 4, end - at - 4));
    at = end;
  }
  return out;
}

TEST(RankGraph, EachPlanDeclaresItsNodes) {
  RankPlan link_only;
  auto e = edges(rank_graph_dot(link_only));
  EXPECT_TRUE(e.count("join -> assign_ids"));
  EXPECT_TRUE(e.count("add_sync -> write_et_plus"));
  // The ids are numbered beside the sync stage; its dependencies join them after.
  EXPECT_TRUE(e.count("assign_ids -> ids_and_sync"));
  EXPECT_TRUE(e.count("sync -> ids_and_sync"));
  EXPECT_TRUE(e.count("ids_and_sync -> add_sync"));
  EXPECT_FALSE(e.count("sync -> join"));
  // The host-device map runs beside launchers and sync, from the two loaded traces.
  EXPECT_TRUE(e.count("load_host -> host_and_device"));
  EXPECT_TRUE(e.count("device_out -> host_and_device"));
  EXPECT_TRUE(e.count("host_and_device -> map"));
  EXPECT_TRUE(e.count("map -> join"));
  EXPECT_TRUE(e.count("write_et_plus -> finish"));
  EXPECT_TRUE(e.count("launchers -> device_and_launchers"));
  EXPECT_FALSE(e.count("select_nodes -> encode_dependencies"));
  EXPECT_EQ(rank_graph_dot(link_only).find("load_host [label="), std::string::npos);

  // The converter's stages, one node each, after the nodes completed in memory.
  const std::set<std::string> converter = {"select_nodes -> encode_dependencies",
                                           "encode_dependencies -> drop_dangling",
                                           "drop_dangling -> write_et", "write_et -> finish"};
  RankPlan in_memory;
  in_memory.write_et_plus = false;
  in_memory.convert = true;
  const std::string in_memory_dot = rank_graph_dot(in_memory);
  e = edges(in_memory_dot);
  EXPECT_TRUE(e.count("add_sync -> release_device"));
  EXPECT_TRUE(e.count("release_device -> complete_nodes"));
  EXPECT_TRUE(e.count("complete_nodes -> select_nodes"));
  for (const std::string& edge : converter) EXPECT_TRUE(e.count(edge)) << edge;
  EXPECT_FALSE(e.count("add_sync -> write_et_plus"));
  EXPECT_FALSE(e.count("read_et_plus -> select_nodes"));
  // The host loader makes the converter's nodes: the picture says so.
  EXPECT_NE(in_memory_dot.find("load_host [label="), std::string::npos);

  RankPlan legacy = in_memory;  // converted through a temporary ET+ file
  legacy.format = OutputFormat::kLegacy;
  e = edges(rank_graph_dot(legacy));
  EXPECT_TRUE(e.count("add_sync -> write_et_plus"));
  EXPECT_TRUE(e.count("write_et_plus -> read_et_plus"));
  EXPECT_TRUE(e.count("read_et_plus -> select_nodes"));
  EXPECT_FALSE(e.count("release_device -> complete_nodes"));
  EXPECT_EQ(rank_graph_dot(legacy).find("load_host [label="), std::string::npos);

  RankPlan from_et_plus;
  from_et_plus.input = RankInput::kEtPlus;
  from_et_plus.write_et_plus = false;
  from_et_plus.convert = true;
  e = edges(rank_graph_dot(from_et_plus));
  std::set<std::string> expected = {"source -> limiter", "limiter -> start",
                                    "start -> read_et_plus", "read_et_plus -> select_nodes",
                                    "finish -> limiter"};
  expected.insert(converter.begin(), converter.end());
  EXPECT_EQ(e, expected);
}

class RankGraphRun : public ::testing::Test {
 protected:
  void SetUp() override {
    // Rank 1 fails.
    testing::write_generated_ranks(
        3, [this](int r) { return host_path(r); }, [this](int r) { return device_path(r); },
        /*cut_rank=*/1);
  }
  std::string host_path(int r) const { return dir_.file("host" + std::to_string(r) + ".json"); }
  std::string device_path(int r) const { return dir_.file("dev" + std::to_string(r) + ".json"); }
  RankJob job(int r, const std::string& tag) const {
    RankJob j;
    j.host_path = host_path(r);
    j.device_path = device_path(r);
    j.et_plus_path = dir_.file(tag + std::to_string(r) + ".etp.json");
    j.et_path = dir_.file(tag + std::to_string(r) + ".et");
    j.link.rank = r;
    return j;
  }
  TempDir dir_;
};

// In memory, through the kept ET+, and `convert` of that ET+: the same .et bytes; the failing
// rank fails alone, with the device trace named, and leaves nothing behind.
TEST_F(RankGraphRun, EveryRouteWritesTheSameEtAndAFailureStaysWithItsRank) {
  RankPlan in_memory;
  in_memory.write_et_plus = false;
  in_memory.convert = true;
  RankPlan keep = in_memory;
  keep.write_et_plus = true;
  std::vector<RankJob> a, b;
  for (int r = 0; r < 3; ++r) {
    a.push_back(job(r, "a"));
    b.push_back(job(r, "b"));
  }
  std::mutex mutex;  // on_done may be called from two threads at once
  std::set<size_t> done;
  auto ra = run_rank_graph(in_memory, a, 2, [&](size_t seq, const RankJobResult&) {
    std::lock_guard<std::mutex> lock(mutex);
    done.insert(seq);
  });
  auto rb = run_rank_graph(keep, b, 1);
  ASSERT_EQ(ra.size(), 3u);
  EXPECT_EQ(done.size(), 3u);
  for (int r : {0, 2}) {
    ASSERT_TRUE(ra[r].status.ok()) << ra[r].status.message();
    ASSERT_TRUE(rb[r].status.ok()) << rb[r].status.message();
    EXPECT_FALSE(fs::exists(a[r].et_plus_path));  // in memory: no ET+ written
    EXPECT_GT(ra[r].convert.output_nodes, 0u);
    EXPECT_EQ(testing::read_text(a[r].et_path), testing::read_text(b[r].et_path));
    RankJob from_file;
    from_file.host_path = b[r].et_plus_path;
    from_file.et_path = dir_.file("c" + std::to_string(r) + ".et");
    RankPlan convert_only;
    convert_only.input = RankInput::kEtPlus;
    convert_only.write_et_plus = false;
    convert_only.convert = true;
    auto rc = run_rank_graph(convert_only, {from_file}, 1);
    ASSERT_TRUE(rc[0].status.ok()) << rc[0].status.message();
    EXPECT_EQ(testing::read_text(from_file.et_path), testing::read_text(a[r].et_path));
    EXPECT_EQ(ra[r].summary.et_plus_nodes, rb[r].summary.et_plus_nodes);
  }
  EXPECT_FALSE(ra[1].status.ok());
  EXPECT_NE(ra[1].status.message().find(device_path(1)), std::string::npos)
      << ra[1].status.message();
  EXPECT_FALSE(fs::exists(a[1].et_path));
  EXPECT_FALSE(fs::exists(b[1].et_plus_path));
}

// The legacy layout is converted through a temporary ET+ that is gone afterwards.
TEST_F(RankGraphRun, LegacyLayoutConvertsThroughATemporaryFileItRemoves) {
  RankPlan legacy;
  legacy.write_et_plus = false;
  legacy.convert = true;
  legacy.format = OutputFormat::kLegacy;
  RankJob j = job(0, "l");
  j.link.format = OutputFormat::kLegacy;
  auto r = run_rank_graph(legacy, {j}, 1);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.message();
  EXPECT_GT(r[0].output_bytes, 0u);  // the temporary ET+ was written
  EXPECT_GT(r[0].convert.output_nodes, 0u);
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir_.path())) {
    const std::string name = entry.path().filename().string();
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << name;
    ++files;
  }
  EXPECT_EQ(files, 7u);  // the 6 inputs and l0.et
}

}  // namespace
}  // namespace chakraflow
