// `chakraflow run`: the YAML configuration (errors with line and column), rank lists and
// discovery, and whole batches: every rank converted, a failing rank isolated and reported,
// --resume, summary.json.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "pipeline/commands.h"
#include "pipeline/mpi_world.h"
#include "pipeline/run_config.h"
#include "proto/et_def.pb.h"
#include "stages/common/file_io.h"
#include "stages/common/stat_kinds.h"
#include "stages/et/et_io.h"
#include "stages/generate/synthetic_trace.h"
#include "tests/testing/generated_ranks.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

namespace fs = std::filesystem;
using testing::run_command;
using testing::TempDir;

const std::string kBin = CHAKRAFLOW_BINARY;

TEST(RunConfig, ParsesEveryKey) {
  auto cfg = parse_run_config("dir/c.yaml", R"(
inputs:
  host: traces/rank{rank}/host_et.json.gz
  device: traces/rank{rank}/kineto.json.gz
  ranks: 0-3,8
stages: [link, convert]
link: {mode: sequence, compat: chakra, format: legacy, gap_threshold_us: 250, annotation: ProfilerStep, min_match_rate: 75}
convert: {compat: chakra}
outputs: {dir: out, prefix: tr, keep_et_plus: true, summary: s.json}
run: {memory_budget_mb: 512, max_ranks_in_flight: 3, threads: 2}
)");
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->ranks, (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_EQ(cfg->host_path(8), "dir/traces/rank8/host_et.json.gz");
  EXPECT_EQ(cfg->et_path(2), "dir/out/tr.2.et");
  EXPECT_EQ(cfg->summary_path(), "dir/out/s.json");
  EXPECT_EQ(cfg->link.mode, MatchMode::kSequence);
  EXPECT_EQ(cfg->link.compat, Compat::kChakra);
  EXPECT_EQ(cfg->link.format, OutputFormat::kLegacy);
  EXPECT_EQ(cfg->link.gap_threshold, 250000);
  EXPECT_EQ(cfg->link.annotation, "ProfilerStep");
  EXPECT_DOUBLE_EQ(cfg->link.min_match_rate, 0.75);
  EXPECT_EQ(cfg->convert.compat, Compat::kChakra);
  EXPECT_TRUE(cfg->keep_et_plus);
  EXPECT_EQ(cfg->memory_budget_bytes, uint64_t{512} << 20);
  EXPECT_EQ(cfg->max_ranks_in_flight, 3);
  EXPECT_EQ(cfg->threads, 2);
  EXPECT_EQ(cfg->stages, (std::vector<RunStage>{RunStage::kLink, RunStage::kConvert}));
}

// The batch configurations shipped in configs/ parse; the ASTRA-sim one sets what
// docs/astra-sim.md says it sets.
TEST(RunConfig, ShippedConfigsParse) {
  const std::string dir = std::string(CHAKRAFLOW_SOURCE_DIR) + "/configs/";
  for (const std::string name :
       {"demo.yaml", "dlrm_8rank.yaml", "captured.yaml", "astra_sim.yaml"}) {
    auto cfg = load_run_config(dir + name);
    ASSERT_TRUE(cfg.ok()) << name << ": " << cfg.status().message();
  }
  auto astra = load_run_config(dir + "astra_sim.yaml");
  ASSERT_TRUE(astra.ok());
  EXPECT_TRUE(astra->convert.metadata_as_compute);
  EXPECT_EQ(astra->convert.pg_name_offset, 1);  // ASTRA-sim asserts on a group named "0"
  EXPECT_TRUE(astra->comm_groups);
  EXPECT_FALSE(astra->has(RunStage::kSimulate));
}

// main() loads a run's configuration to size malloc; run takes that one instead of loading again.
TEST(RunConfig, ALoadedConfigIsTakenOnceForItsPath) {
  RunConfig cfg;
  cfg.path = "a.yaml";
  cfg.prefix = "kept";
  keep_loaded_run_config(cfg);
  EXPECT_FALSE(take_loaded_run_config("b.yaml"));  // another file: not this one (and dropped)
  EXPECT_FALSE(take_loaded_run_config("a.yaml"));
  keep_loaded_run_config(cfg);
  auto taken = take_loaded_run_config("a.yaml");
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->prefix, "kept");
  EXPECT_FALSE(take_loaded_run_config("a.yaml"));
  // Discovered ranks are not discovered again.
  cfg.discover_ranks = true;
  cfg.host_pattern = "nowhere/rank{rank}/host.json";
  cfg.ranks = {0, 3};
  ASSERT_TRUE(discover_ranks(cfg).ok());
  EXPECT_EQ(cfg.ranks, (std::vector<int>{0, 3}));
  EXPECT_EQ(cfg.simulation_path(),
            fs::path(cfg.summary_path()).replace_filename("simulation.json").string());
}

TEST(RunConfig, ErrorsNameLineAndColumn) {
  struct Case {
    const char* text;
    const char* expect;
  } cases[] = {
      {"inputs:\n  host: a{rank}\n  device: b{rank}\n  rankz: 0-3\n",
       "c.yaml:4:3: unknown key 'rankz' in 'inputs'"},
      {"inputs:\n  host: a{rank}\n  device: b{rank}\nextra: 1\n",
       "c.yaml:4:1: unknown key 'extra'"},
      {"inputs:\n  host: a{rank}\n  device: b{rank}\nrun:\n  threads: many\n",
       "c.yaml:5:12: 'threads' must be an integer"},
      {"inputs:\n  host: a{rank}\n  device: b{rank}\n  ranks: 7-3\n",
       "c.yaml:4:10: '7-3' is not a rank range"},
      {"inputs:\n  host: a\n  device: b{rank}\n", "c.yaml:2:9: 'host' must contain {rank}"},
      {"inputs:\n  host: a{rank}\n  device: b{rank}\nstages: [convert]\n", "must begin with link"},
      {"inputs:\n  host: a{rank}\n  device: b{rank}\nstages: [link, simulate]\n",
       "cannot be skipped"},
      {"inputs:\n  host: a{rank}\n  device: b{rank}\nlink: {mode: fast}\n", "unknown mode 'fast'"},
      {"inputs: [1, 2\n", "c.yaml:2:1: invalid YAML"},
      {"stages: [link]\n", "missing 'inputs'"},
      {"- a\n- b\n", "must be a mapping"},
  };
  for (const auto& c : cases) {
    auto cfg = parse_run_config("c.yaml", c.text);
    ASSERT_FALSE(cfg.ok()) << c.text;
    EXPECT_NE(cfg.status().message().find(c.expect), std::string::npos) << cfg.status().message();
  }
}

TEST(RunConfig, RankListsAndDiscovery) {
  auto r = parse_rank_list("3, 0-2,10-11");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<int>{0, 1, 2, 3, 10, 11}));
  // A rank named twice is an error, not silently dropped.
  auto twice = parse_rank_list("0-1,1,0");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("rank 0 is listed twice"), std::string::npos)
      << twice.status().message();
  EXPECT_FALSE(parse_rank_list("a-b").ok());
  EXPECT_FALSE(parse_rank_list("1,,2").ok());
  // The smallest rank named twice, whatever the order of the ranges.
  for (const auto& [list, rank] : std::vector<std::pair<std::string, int>>{
           {"0-10,5-6,3-4", 3}, {"7,20-30,6-7", 7}, {"0-1000000,0-1000,0-0000100", 0}}) {
    auto dup = parse_rank_list(list);
    ASSERT_FALSE(dup.ok()) << list;
    EXPECT_NE(dup.status().message().find("rank " + std::to_string(rank) + " is listed twice"),
              std::string::npos)
        << dup.status().message();
  }
  EXPECT_EQ(*parse_rank_list("9,4-5,0-1"), (std::vector<int>{0, 1, 4, 5, 9}));

  // A range of a million ranks, as a configuration's 'ranks' (fuzz.sh found it took 11 s under
  // ASan through a std::set): every rank, in order.
  auto million = parse_run_config(
      "c.yaml", "inputs:\n  host: h{rank}\n  device: d{rank}\n  ranks: 0-1000000,1400000\n");
  ASSERT_TRUE(million.ok()) << million.status().message();
  ASSERT_EQ(million->ranks.size(), 1000002u);
  EXPECT_EQ(million->ranks[999999], 999999);
  EXPECT_EQ(million->ranks.back(), 1400000);
  EXPECT_FALSE(parse_run_config("c.yaml",
                                "inputs:\n  host: h{rank}\n  device: d{rank}\n  ranks: 0-2000000\n")
                   .ok());

  TempDir dir;
  for (int rank : {0, 2, 11}) {
    fs::create_directories(dir.path() / ("t/rank" + std::to_string(rank)));
    testing::write_text(dir.file("t/rank" + std::to_string(rank) + "/host.json"), "{}");
  }
  testing::write_text(dir.file("t/rank2/other.json"), "{}");
  std::string yaml = dir.file("c.yaml");
  testing::write_text(yaml,
                      "inputs:\n  host: t/rank{rank}/host.json\n  device: t/rank{rank}/dev.json\n");
  auto cfg = load_run_config(yaml);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  ASSERT_TRUE(discover_ranks(*cfg).ok());
  EXPECT_EQ(cfg->ranks, (std::vector<int>{0, 2, 11}));
}

// A generated 3-rank set in `dir` as traces/rank{rank}/host_et.json and kineto.json; with
// `cut_rank`, that rank's device trace truncated.
void write_generated_ranks(const TempDir& dir, int cut_rank = -1) {
  auto in_rank = [&dir](int r, const char* name) {
    return dir.file("traces/rank" + std::to_string(r) + "/" + name);
  };
  testing::write_generated_ranks(
      3, [&](int r) { return in_rank(r, "host_et.json"); },
      [&](int r) { return in_rank(r, "kineto.json"); }, cut_rank);
}

// A generated 3-rank set, one rank's device trace truncated.
class RunBatch : public ::testing::Test {
 protected:
  void SetUp() override {
    write_generated_ranks(dir_, /*cut_rank=*/1);
    testing::write_text(
        dir_.file("run.yaml"),
        "inputs:\n  host: traces/rank{rank}/host_et.json\n  device: traces/rank{rank}/kineto.json\n"
        "  ranks: 0-2\nstages: [link, convert]\noutputs: {dir: out, prefix: trace}\n"
        "run: {memory_budget_mb: 64}\n");
  }
  TempDir dir_;
};

// A configuration named by its file name alone (run from its own folder, as `c.yaml` or
// `./c.yaml`) resolves its patterns against that folder, discovery included.
TEST(RunConfig, RunsFromItsOwnFolder) {
  TempDir dir;
  write_generated_ranks(dir);
  testing::write_text(dir.file("traces/c.yaml"),
                      "inputs:\n  host: rank{rank}/host_et.json\n  device: rank{rank}/kineto.json\n"
                      "stages: [link, convert]\noutputs: {dir: out, prefix: trace}\n");
  for (const char* name : {"c.yaml", "./c.yaml"}) {
    fs::remove_all(dir.file("traces/out"));
    std::string out;
    int rc = run_command("cd " + dir.file("traces") + " && " + kBin + " run " + name, &out);
    ASSERT_EQ(rc, 0) << name << ": " << out;
    for (int r = 0; r < 3; ++r) {
      EXPECT_TRUE(fs::exists(dir.file("traces/out/trace." + std::to_string(r) + ".et")))
          << name << ": rank " << r;
    }
  }
}

// The same bytes whatever the thread count: `link` of a generated rank large enough for several
// ET+ batches, `convert` of that ET+ (read in shards past one thread), and `run` of three ranks
// keeping their ET+, at 1, 2 and 16 threads.
TEST(RunThreads, OutputsAreTheSameBytesAtAnyThreadCount) {
  TempDir dir;
  testing::write_generated_ranks(
      3, [&](int r) { return dir.file("t/rank" + std::to_string(r) + "/host_et.json"); },
      [&](int r) { return dir.file("t/rank" + std::to_string(r) + "/kineto.json"); }, -1, 1.0);
  std::map<std::string, std::string> first;
  for (int threads : {1, 2, 16}) {
    const std::string n = std::to_string(threads);
    std::string out;
    ASSERT_EQ(
        run_command(kBin + " link --threads " + n + " --host " + dir.file("t/rank0/host_et.json") +
                        " --device " + dir.file("t/rank0/kineto.json") + " --output-file " +
                        dir.file("link" + n + ".json"),
                    &out),
        0)
        << out;
    // The ET+ linked at one thread, converted at each count.
    ASSERT_EQ(run_command(kBin + " convert --quiet --threads " + n + " --input " +
                              dir.file("link1.json") + " --output " + dir.file("conv" + n + ".et"),
                          &out),
              0)
        << out;
    testing::write_text(dir.file("run" + n + ".yaml"),
                        "inputs:\n  host: t/rank{rank}/host_et.json\n  device: "
                        "t/rank{rank}/kineto.json\nstages: [link, convert]\noutputs: {dir: out" +
                            n + ", prefix: trace, keep_et_plus: true}\nrun: {threads: " + n +
                            "}\n");
    ASSERT_EQ(run_command(kBin + " run --quiet " + dir.file("run" + n + ".yaml"), &out), 0) << out;
    std::map<std::string, std::string> files;
    files["link"] = testing::read_text(dir.file("link" + n + ".json"));
    files["convert"] = testing::read_text(dir.file("conv" + n + ".et"));
    const fs::path root = dir.file("out" + n);
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      const std::string name = fs::relative(entry.path(), root).string();
      if (entry.is_regular_file() && name != "summary.json") {
        files[name] = testing::read_text(entry.path().string());
      }
    }
    ASSERT_GE(files.size(), 8u);  // link, convert, 3 x (ET+, .et), the group file
    if (threads == 1) {
      first = std::move(files);
      continue;
    }
    for (const auto& [name, bytes] : first) {
      EXPECT_TRUE(files[name] == bytes) << name << " differs at " << threads << " threads";
    }
  }
}

// --profile FILE: a Chrome trace with every stage of the rank graph for each rank (named, with
// its rank, inside the command's span, the workers' batches named after their stage), the
// outputs the same bytes as without it; link and convert write theirs; a profile that would be
// one of the command's files is refused before anything runs.
TEST(Profile, RunLinkAndConvertWriteWhereTheirTimeWent) {
  TempDir dir;
  testing::write_generated_ranks(
      2, [&](int r) { return dir.file("t/rank" + std::to_string(r) + "/host_et.json"); },
      [&](int r) { return dir.file("t/rank" + std::to_string(r) + "/kineto.json"); }, -1, 0.3);
  for (const char* name : {"plain", "timed"}) {
    testing::write_text(dir.file(std::string(name) + ".yaml"),
                        "inputs:\n  host: t/rank{rank}/host_et.json\n  device: "
                        "t/rank{rank}/kineto.json\nstages: [link, convert]\noutputs: {dir: " +
                            std::string(name) + ", prefix: trace}\nrun: {threads: 4}\n");
  }
  std::string out;
  ASSERT_EQ(run_command(kBin + " run --quiet " + dir.file("plain.yaml"), &out), 0) << out;
  ASSERT_EQ(run_command(kBin + " run --quiet " + dir.file("timed.yaml") + " --profile " +
                            dir.file("run_profile.json"),
                        &out),
            0)
      << out;
  for (int r = 0; r < 2; ++r) {
    const std::string et = "/trace." + std::to_string(r) + ".et";
    EXPECT_TRUE(testing::read_text(dir.file("plain" + et)) ==
                testing::read_text(dir.file("timed" + et)))
        << et;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc = testing::load_json(parser, dir.file("run_profile.json"));
  // The workers it ran with: the configuration's 4, or fewer cores.
  const int threads = std::stoi(std::string(std::string_view(doc["otherData"]["threads"])));
  EXPECT_TRUE(threads >= 1 && threads <= 4) << threads;
  EXPECT_EQ(std::string_view(doc["otherData"]["exit_code"]), "0");
  double run_begin = -1, run_end = -1;
  std::map<std::pair<std::string, int64_t>, int> stages;
  std::set<std::string> batches;
  std::vector<std::pair<double, double>> spans;
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    if (std::string_view(e["ph"]) != "X") continue;
    const std::string name{std::string_view(e["name"])};
    const double ts = e["ts"], dur = e["dur"];
    if (name == "run") {
      run_begin = ts;
      run_end = ts + dur;
      continue;
    }
    spans.emplace_back(ts, ts + dur);
    int64_t rank = -1;
    if (simdjson::dom::element args;
        e["args"].get(args) == simdjson::SUCCESS && args["rank"].get(rank) != simdjson::SUCCESS) {
      rank = -1;  // no rank
    }
    if (std::string_view(e["cat"]) == "stage") {
      ++stages[{name, rank}];
    } else {
      batches.insert(name);
    }
  }
  ASSERT_GE(run_begin, 0);
  for (const auto& [begin, end] : spans) {
    EXPECT_GE(begin, run_begin);
    EXPECT_LE(end, run_end);
  }
  for (int64_t r = 0; r < 2; ++r) {
    for (const char* stage : {"load host trace",
                              "load device trace",
                              "exclusive durations",
                              "gap dependencies",
                              "launcher correlation",
                              "sync dependencies",
                              "map host to device",
                              "assign ids",
                              "add sync dependencies",
                              "release device trace",
                              "complete nodes",
                              "select nodes",
                              "encode dependencies",
                              "drop dangling nodes",
                              "write .et",
                              "finish",
                              "read host text",
                              "parse host nodes",
                              "read device text",
                              "parse device events",
                              "device indices",
                              "number ops",
                              "place nodes",
                              "encode and write"}) {
      EXPECT_EQ((stages[{stage, r}]), 1) << stage << " of rank " << r;
    }
  }
  // Work the stages handed to the workers, named after them.
  EXPECT_TRUE(batches.count("write .et")) << fmt::format("{}", fmt::join(batches, ", "));

  // link and convert, one rank.
  const std::string host = dir.file("t/rank1/host_et.json");
  const std::string device = dir.file("t/rank1/kineto.json");
  ASSERT_EQ(
      run_command(kBin + " link --host " + host + " --device " + device + " --output " +
                      dir.file("et.json") + " --rank 1 --profile " + dir.file("link_profile.json"),
                  &out),
      0)
      << out;
  ASSERT_EQ(run_command(kBin + " convert --quiet --input " + dir.file("et.json") + " --output " +
                            dir.file("et.et") + " --profile " + dir.file("convert_profile.json"),
                        &out),
            0)
      << out;
  for (const auto& [file, expected] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"link_profile.json", {"link", "load host trace", "write ET+", "commit ET+"}},
           {"convert_profile.json", {"convert", "read ET+", "parse host nodes", "write .et"}}}) {
    const std::string text = testing::read_text(dir.file(file));
    for (const std::string& name : expected) {
      EXPECT_NE(text.find("\"name\": \"" + name + "\""), std::string::npos) << file << ": " << name;
    }
  }
  EXPECT_NE(testing::read_text(dir.file("link_profile.json")).find("\"rank\": 1"),
            std::string::npos);

  // The profile may not be an input or an output, nor lie in a folder that does not exist: said
  // before anything runs (a usage error, no output written).
  auto refused = [&](const std::string& args, const std::string& why, const std::string& output) {
    std::string said;
    EXPECT_EQ(run_command(kBin + " " + args, &said), 2) << said;
    EXPECT_NE(said.find(why), std::string::npos) << said;
    if (!output.empty()) {
      EXPECT_FALSE(fs::exists(output)) << output;
    }
  };
  const std::string link = "link --host " + host + " --device " + device + " --output ";
  refused(link + dir.file("et2.json") + " --profile " + dir.file("et2.json"), "--profile",
          dir.file("et2.json"));
  refused("convert --input " + dir.file("et.json") + " --output " + dir.file("et3.et") +
              " --profile " + dir.file("et.json"),
          "--profile", dir.file("et3.et"));
  refused("run --quiet " + dir.file("timed.yaml") + " --profile " + dir.file("timed.yaml"),
          "--profile", "");
  EXPECT_NE(testing::read_text(dir.file("timed.yaml")).find("stages: [link, convert]"),
            std::string::npos);  // the configuration, not replaced
  refused(link + dir.file("et4.json") + " --profile " + dir.file("no/such/p.json"),
          "no such folder", dir.file("et4.json"));
}

TEST_F(RunBatch, AFailingRankIsReportedAndTheOthersFinish) {
  std::string out;
  int rc = run_command(kBin + " run " + dir_.file("run.yaml"), &out);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("rank 1: FAILED"), std::string::npos) << out;
  EXPECT_NE(out.find("kineto.json"), std::string::npos) << out;  // the message names the file
  EXPECT_TRUE(fs::exists(dir_.file("out/trace.0.et")));
  EXPECT_TRUE(fs::exists(dir_.file("out/trace.2.et")));
  EXPECT_FALSE(fs::exists(dir_.file("out/trace.1.et")));
  // Nothing half-written: only the outputs and the summary.
  size_t files = 0;
  for (auto& e : fs::directory_iterator(dir_.file("out"))) files += e.is_regular_file();
  EXPECT_EQ(files, 3u);
  simdjson::dom::parser p;
  simdjson::dom::element summary = testing::load_json(p, dir_.file("out/summary.json"));
  EXPECT_EQ(int64_t(summary["ranks_total"]), 3);
  EXPECT_EQ(int64_t(summary["ranks_failed"]), 1);
  auto ranks = summary["ranks"].get_array();
  EXPECT_EQ(std::string_view(ranks.at(1)["status"]), "failed");
  EXPECT_NE(std::string_view(ranks.at(1)["error"]).find("kineto.json"), std::string_view::npos);
  EXPECT_EQ(std::string_view(ranks.at(0)["status"]), "ok");
  // host_ops counts the ops the mode can link (with an rf_id here), not the thread and process
  // roots among the host nodes: all of them are linked.
  EXPECT_EQ(int64_t(ranks.at(0)["host_ops_linked"]), int64_t(ranks.at(0)["host_ops"]));
  EXPECT_LT(int64_t(ranks.at(0)["host_ops"]), int64_t(ranks.at(0)["host_nodes"]));
  EXPECT_GT(int64_t(ranks.at(0)["et_nodes"]), 0);
  // Warnings are keyed by the stable keys of the stats table, never by their wording.
  for (auto [key, count] : ranks.at(0)["warnings"].get_object()) {
    EXPECT_TRUE(stat_kind_from_key(key).has_value()) << key;
    EXPECT_GT(int64_t(count), 0) << key;
  }
}

// The process re-executes itself with malloc's huge pages for ranks whose inputs reach 16 MB
// (judged by the first rank's, a gzip'd one by what it inflates to), not for small ones, where
// zeroing 2 MB pages costs more than it saves; CHAKRAFLOW_HUGE_PAGES=0 keeps them off.
// summary.json says which.
TEST_F(RunBatch, HugePagesOnlyForBigRanks) {
  std::string version;
  run_command("CHAKRAFLOW_HUGE_PAGES=1 " + kBin + " --version", &version);
  if (version.find("malloc huge pages: on") == std::string::npos) {
    GTEST_SKIP() << "this build or machine never turns them on: " << version;
  }
  auto huge_pages = [&](const std::string& env) {
    std::string out;
    run_command(env + kBin + " run --quiet " + dir_.file("run.yaml"), &out);  // rank 1 fails
    simdjson::dom::parser p;
    simdjson::dom::element summary = testing::load_json(p, dir_.file("out/summary.json"));
    return bool(summary["malloc_huge_pages"]);
  };
  EXPECT_FALSE(huge_pages(""));  // 0.2 MB ranks
  // Rank 0's host ET grown past 16 MB with trailing whitespace: still the same trace.
  const std::string host0 = dir_.file("traces/rank0/host_et.json");
  testing::write_text(host0, testing::read_text(host0) + std::string(size_t{17} << 20, ' '));
  EXPECT_TRUE(huge_pages(""));
  EXPECT_FALSE(huge_pages("CHAKRAFLOW_HUGE_PAGES=0 "));
  // Gzip'd (a few KB on disk), it still inflates to 17 MB: judged by that.
  std::string out;
  ASSERT_EQ(
      run_command("gzip -c " + host0 + " > " + host0 + ".gz && mv " + host0 + ".gz " + host0, &out),
      0)
      << out;
  ASSERT_LT(fs::file_size(host0), size_t{1} << 20);
  EXPECT_TRUE(huge_pages(""));
}

// On at most two CPUs every thread allocates from malloc's main arena (a second arena is fresh
// pages for a lock two threads seldom contend for); a user's GLIBC_TUNABLES arena_max, and more
// CPUs, leave glibc's arenas. summary.json says which.
// (A sanitized build leaves malloc alone: its allocator has no arenas. GCC and clang say so
// differently, as in pipeline/main.cc.)
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CHAKRAFLOW_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CHAKRAFLOW_TEST_SANITIZED 1
#endif
TEST_F(RunBatch, OneMallocArenaOnAtMostTwoCpus) {
#ifdef CHAKRAFLOW_TEST_SANITIZED
  GTEST_SKIP() << "sanitized build: the sanitizer's allocator has no arenas";
#endif
  std::string out;
  if (run_command("command -v taskset", &out) != 0) GTEST_SKIP() << "no taskset on this machine";
  auto one_arena = [&](const std::string& prefix) {
    run_command(prefix + kBin + " run --quiet " + dir_.file("run.yaml"), &out);  // rank 1 fails
    simdjson::dom::parser p;
    simdjson::dom::element summary = testing::load_json(p, dir_.file("out/summary.json"));
    return bool(summary["malloc_one_arena"]);
  };
  EXPECT_TRUE(one_arena("taskset -c 0 "));
  EXPECT_FALSE(one_arena("GLIBC_TUNABLES=glibc.malloc.arena_max=8 taskset -c 0 "));
  if (std::thread::hardware_concurrency() >= 3) {
    EXPECT_FALSE(one_arena("taskset -c 0-2 "));
  }
}

TEST_F(RunBatch, ResumeSkipsRanksWhoseOutputsAreNewer) {
  std::string out;
  run_command(kBin + " run " + dir_.file("run.yaml"), &out);
  auto before = fs::last_write_time(dir_.file("out/trace.0.et"));
  int rc = run_command(kBin + " run " + dir_.file("run.yaml") + " --resume", &out);
  EXPECT_EQ(rc, 1) << out;  // rank 1 still fails
  EXPECT_NE(out.find("2 up to date"), std::string::npos) << out;
  EXPECT_EQ(fs::last_write_time(dir_.file("out/trace.0.et")), before);
  simdjson::dom::parser p;
  simdjson::dom::element summary = testing::load_json(p, dir_.file("out/summary.json"));
  EXPECT_EQ(int64_t(summary["ranks_skipped"]), 2);
}

// `mpirun -n 2`: needs a chakraflow built with MPI and Debian's OpenMPI (scripts/install_deps.sh
// installs it). OpenMPI refuses root without the two variables, and its own allocations at
// MPI_Finalize are reported as leaks by LeakSanitizer, so leak checks are off under mpirun.
std::string mpirun(int processes) {
  return fmt::format(
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS=detect_leaks=0 {} "
      "--oversubscribe -n {} ",
      CHAKRAFLOW_MPIEXEC, processes);
}

#define CF_REQUIRE_MPI()                                                                    \
  do {                                                                                      \
    if (!MpiWorld::available(kBin) || std::string(CHAKRAFLOW_MPIEXEC).empty()) {            \
      GTEST_SKIP() << "SKIPPED: chakraflow was built without MPI (install libopenmpi-dev)"; \
    }                                                                                       \
  } while (0)

// summary.json with the timings blanked ("seconds": 0.123 -> "seconds": _) and the process count
// dropped: what must not depend on how the ranks were spread.
std::string summary_without_timings(std::string text) {
  for (const char* key : {"\"seconds\": ", "\"link_seconds\": ", "\"convert_seconds\": "}) {
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
      size_t begin = at + std::strlen(key), end = begin;
      while (end < text.size() &&
             (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.'))
        ++end;
      text.replace(begin, end - begin, "_");
    }
  }
  size_t p = text.find("  \"processes\": ");
  if (p != std::string::npos) text.erase(p, text.find('\n', p) + 1 - p);
  return text;
}

// Under a launcher that announces two processes, a binary whose MPI plugin cannot be found
// refuses to run (each process would run every rank) and says where it looked; a plain run of the
// same binary does not look for the plugin at all.
TEST_F(RunBatch, UnderALauncherWithoutTheMpiPluginItRefusesAndSaysWhereItLooked) {
  std::string out;
  const std::string missing = dir_.file("no/libchakraflow_mpi.so");
  EXPECT_NE(run_command("OMPI_COMM_WORLD_SIZE=2 CHAKRAFLOW_MPI_PLUGIN=" + missing + " " + kBin +
                            " run --quiet " + dir_.file("run.yaml"),
                        &out),
            0)
      << out;
  EXPECT_NE(out.find("2 processes"), std::string::npos) << out;
  if (MpiWorld::available(kBin)) {
    EXPECT_NE(out.find("MPI plugin is missing"), std::string::npos) << out;
    EXPECT_NE(out.find(missing), std::string::npos) << out;
  } else {
    EXPECT_NE(out.find("built without MPI"), std::string::npos) << out;
  }
  EXPECT_FALSE(fs::exists(dir_.file("out/trace.0.et")));
  // Without a launcher the plugin is not needed (rank 1 is the fixture's broken one).
  EXPECT_EQ(run_command("CHAKRAFLOW_MPI_PLUGIN=" + missing + " " + kBin + " run --quiet " +
                            dir_.file("run.yaml"),
                        &out),
            1)
      << out;
  EXPECT_TRUE(fs::exists(dir_.file("out/trace.0.et")));
}

TEST(RunMpi, TwoProcessesWriteTheSameBytesAsOne) {
  CF_REQUIRE_MPI();
  TempDir dir;
  ASSERT_EQ(run_command(kBin + " synth --ranks 4 --scale 0.02 --out " + dir.file("traces")), 0);
  testing::write_text(
      dir.file("run.yaml"),
      "inputs:\n  host: traces/rank{rank}/host_et.json\n  device: traces/rank{rank}/kineto.json\n"
      "stages: [link, convert, simulate]\noutputs: {dir: out, prefix: trace}\n");
  std::string out;
  ASSERT_EQ(run_command(kBin + " run --quiet " + dir.file("run.yaml"), &out), 0) << out;
  fs::rename(dir.file("out"), dir.file("single"));
  ASSERT_EQ(run_command(mpirun(2) + kBin + " run " + dir.file("run.yaml") + " --profile " +
                            dir.file("profile.json"),
                        &out),
            0)
      << out;
  // Each process's profile in a file of its own, with the ranks it loaded: every rank once.
  std::vector<int> profiled;
  for (const char* file : {"profile.json", "profile.json.1"}) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc = testing::load_json(parser, dir.file(file));
    for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
      if (std::string_view(e["name"]) == "load host trace") {
        profiled.push_back(static_cast<int>(int64_t(e["args"]["rank"])));
      }
    }
  }
  std::sort(profiled.begin(), profiled.end());
  EXPECT_EQ(profiled, (std::vector<int>{0, 1, 2, 3}));
  // Both processes did work, and process 0 gathered everything.
  EXPECT_NE(out.find("[process 0/2] rank "), std::string::npos) << out;
  EXPECT_NE(out.find("[process 1/2] rank "), std::string::npos) << out;
  EXPECT_NE(out.find("4 ranks, 0 failed, 0 skipped"), std::string::npos) << out;
  std::vector<std::string> names;
  for (auto& e : fs::directory_iterator(dir.file("single"))) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names,
            (std::vector<std::string>{"simulation.json", "summary.json", "trace.0.et", "trace.1.et",
                                      "trace.2.et", "trace.3.et", "trace.comm_group.json"}));
  for (const std::string& name : names) {
    std::string a = testing::read_text(dir.file("single/" + name));
    std::string b = testing::read_text(dir.file("out/" + name));
    if (name == "summary.json") {
      EXPECT_NE(b.find("\"processes\": 2"), std::string::npos) << b;
      a = summary_without_timings(a);
      b = summary_without_timings(b);
    }
    EXPECT_TRUE(a == b) << name << " differs between 1 and 2 processes";
  }
}

TEST_F(RunBatch, UnderMpiAFailingRankIsGatheredAndEveryProcessExitsNonZero) {
  CF_REQUIRE_MPI();
  std::string out;
  int rc = run_command(mpirun(2) + kBin + " run " + dir_.file("run.yaml"), &out);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("rank 1: FAILED"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(dir_.file("out/trace.0.et")));
  EXPECT_TRUE(fs::exists(dir_.file("out/trace.2.et")));
  simdjson::dom::parser p;
  simdjson::dom::element summary = testing::load_json(p, dir_.file("out/summary.json"));
  EXPECT_EQ(int64_t(summary["processes"]), 2);
  EXPECT_EQ(int64_t(summary["ranks_total"]), 3);
  EXPECT_EQ(int64_t(summary["ranks_failed"]), 1);
  EXPECT_EQ(std::string_view(summary["ranks"].get_array().at(1)["status"]), "failed");
}

TEST(RunDlrm, EightLegacyRanksInOneCommand) {
  CF_REQUIRE_SHARED_DATA("pairs/dlrm_8rank");
  TempDir dir;
  std::string data = (testing::shared_data_dir() / "pairs/dlrm_8rank").string();
  testing::write_text(dir.file("dlrm.yaml"),
                      "inputs:\n  host: " + data +
                          "/rank{rank}/host_et.json.gz\n  device: " + data +
                          "/rank{rank}/kineto.legacy.json.gz\n  ranks: 0-7\n"
                          "stages: [link, convert, simulate]\noutputs: {dir: out, prefix: dlrm}\n");
  std::string out;
  ASSERT_EQ(run_command(kBin + " run " + dir.file("dlrm.yaml") + " --quiet", &out), 0) << out;
  for (int r = 0; r < 8; ++r)
    EXPECT_GT(fs::file_size(dir.file("out/dlrm." + std::to_string(r) + ".et")), 100000u) << r;
  simdjson::dom::parser p;
  simdjson::dom::element summary = testing::load_json(p, dir.file("out/summary.json"));
  EXPECT_EQ(int64_t(summary["ranks_failed"]), 0);
  for (auto rank : summary["ranks"].get_array()) {
    EXPECT_EQ(std::string_view(rank["mode"]), "sequence");
    EXPECT_EQ(int64_t(rank["host_ops_linked"]), 1672);
  }
  // The simulation ran over all ranks and predicts each step within 5% of the measured one.
  simdjson::dom::parser p2;
  simdjson::dom::element sim = testing::load_json(p2, dir.file("out/simulation.json"));
  EXPECT_EQ(std::string_view(sim["status"]), "completed");
  size_t ranks = 0;
  for (auto rank : sim["ranks"].get_array()) {
    ++ranks;
    double predicted = double(rank["predicted_us"]), measured = double(rank["measured_us"]);
    EXPECT_GT(measured, 0);
    EXPECT_LT(std::abs(predicted - measured) / measured, 0.05) << int64_t(rank["rank"]);
  }
  EXPECT_EQ(ranks, 8u);
  // The DLRM traces record no process group: their collectives run on PyTorch's default group,
  // written for ASTRA-sim as group "0" of all eight ranks.
  EXPECT_EQ(testing::read_text(dir.file("out/dlrm.comm_group.json")),
            "{\n  \"0\": [0, 1, 2, 3, 4, 5, 6, 7]\n}\n");
}

// A generated set records its process groups (a `## process_group:init ##` node per rank):
// run writes them for ASTRA-sim; renumbered and with the metadata node as a compute node on
// request, the traces' pg_name attributes follow the renumbering.
TEST(RunGroups, GeneratedSetDefaultAndForOlderAstraSim) {
  TempDir dir;
  write_generated_ranks(dir);
  const std::string inputs =
      "inputs:\n  host: traces/rank{rank}/host_et.json\n  device: traces/rank{rank}/kineto.json\n"
      "stages: [link, convert]\n";
  testing::write_text(dir.file("plain.yaml"),
                      inputs + "outputs: {dir: plain, keep_et_plus: true}\n");
  testing::write_text(dir.file("older.yaml"),
                      inputs +
                          "outputs: {dir: older}\n"
                          "convert: {renumber_groups: true, metadata_node: compute}\n");
  std::string out;
  ASSERT_EQ(run_command(kBin + " run " + dir.file("plain.yaml") + " --quiet", &out), 0) << out;
  ASSERT_EQ(run_command(kBin + " run " + dir.file("older.yaml") + " --quiet", &out), 0) << out;
  EXPECT_EQ(testing::read_text(dir.file("plain/trace.comm_group.json")),
            "{\n  \"0\": [0, 1, 2]\n}\n");
  EXPECT_EQ(testing::read_text(dir.file("older/trace.comm_group.json")),
            "{\n  \"1\": [0, 1, 2]\n}\n");
  // --resume redoes rank 1 only: its groups come from its conversion, the skipped ranks' from
  // their .et files; the file is the same.
  fs::remove(dir.file("plain/trace.1.et"));
  fs::remove(dir.file("plain/trace.comm_group.json"));
  ASSERT_EQ(run_command(kBin + " run " + dir.file("plain.yaml") + " --resume", &out), 0) << out;
  EXPECT_NE(out.find("(1 to do here, 2 up to date)"), std::string::npos) << out;
  EXPECT_EQ(testing::read_text(dir.file("plain/trace.comm_group.json")),
            "{\n  \"0\": [0, 1, 2]\n}\n");
  for (int r = 0; r < 3; ++r) {
    for (const std::string variant : {"plain", "older"}) {
      auto reader = EtReader::open(dir.file(variant + "/trace." + std::to_string(r) + ".et"));
      ASSERT_TRUE(reader.ok());
      ChakraProtoMsg::GlobalMetadata meta;
      ASSERT_TRUE(*reader->next(&meta));
      ChakraProtoMsg::Node node;
      int metadata_nodes = 0, named_pg = 0;
      std::set<std::string> pg_names;
      while (*reader->next(&node)) {
        if (node.name().find("process_group:init") != std::string::npos) {
          metadata_nodes += node.type() == ChakraProtoMsg::METADATA_NODE;
          EXPECT_EQ(node.type(),
                    variant == "plain" ? ChakraProtoMsg::METADATA_NODE : ChakraProtoMsg::COMP_NODE);
        }
        for (const auto& a : node.attr()) {
          if (a.name() == "pg_name") {
            pg_names.insert(a.string_val());
            ++named_pg;
          }
        }
      }
      EXPECT_EQ(metadata_nodes, variant == "plain" ? 1 : 0) << variant << " rank " << r;
      EXPECT_GT(named_pg, 0) << variant << " rank " << r;
      EXPECT_EQ(pg_names, (std::set<std::string>{variant == "plain" ? "0" : "1"}));
    }
  }
  // `convert --comm-groups` on one rank: the world from the metadata's rank list.
  ASSERT_EQ(run_command(kBin + " convert --input " + dir.file("plain/et_plus/trace.1.json.gz") +
                            " --output " + dir.file("one.et") + " --comm-groups " +
                            dir.file("one.json") + " --rank 1 --quiet",
                        &out),
            0)
      << out;
  EXPECT_EQ(testing::read_text(dir.file("one.json")), "{\n  \"0\": [0, 1, 2]\n}\n");
  // The same trace bytes as run's.
  EXPECT_EQ(testing::read_text(dir.file("one.et")),
            testing::read_text(dir.file("plain/trace.1.et")));
  // A group file that would overwrite an input is refused.
  EXPECT_EQ(run_command(kBin + " convert --input " + dir.file("plain/et_plus/trace.1.json.gz") +
                            " --output " + dir.file("two.et") + " --comm-groups " +
                            dir.file("plain/et_plus/trace.1.json.gz") + " --quiet",
                        &out),
            2)
      << out;
}

}  // namespace
}  // namespace chakraflow
