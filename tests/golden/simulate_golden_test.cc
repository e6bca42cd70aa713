// The simulator on real traces (../shared/data):
// - DLRM on 8 ranks: link (legacy device traces, by operator order) + convert + simulate in replay
//   mode; every rank's predicted step is within 5% of the step its device trace measured (the
//   ProfilerStep span);
// - the 8-rank all-reduce microbenchmark in model mode: the alpha-beta time, which doubles its
//   bandwidth term when the bandwidth is halved; the send/recv ring microbenchmark likewise;
// - `chakraflow simulate` end to end: reports, exit codes, a missing rank, a collective that never
//   matches, a bad configuration.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numeric>

#include <fmt/format.h>

#include "stages/simulate/simulator.h"
#include "stages/simulate/simulator_cost.h"
#include "tests/simulate/simulator_test_util.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

const char* const kDlrm = "pairs/dlrm_8rank";
const char* const kAllReduce = "chakra_et/microbench_synthetic/all_reduce_8npus_1MB";
const char* const kRing = "chakra_et/microbench_synthetic/custom_ring_allreduce_8npus_1MB";
constexpr uint32_t kRanks = 8;

std::string data_path(const std::string& relative) {
  return (testing::shared_data_dir() / relative).string();
}

std::string shell_quote(const std::string& s) {
  return "'" + s + "'";
}

// The step the device trace measured: the ProfilerStep annotation's span, or first-to-last event.
double device_step_us(const std::string& kineto) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = testing::load_json(parser, kineto);
  double first = INFINITY, last = -INFINITY;
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    std::string_view name, ph;
    double ts = 0, dur = 0;
    if (e["ph"].get_string().get(ph) || ph != "X" || e["ts"].get_double().get(ts)) continue;
    if (e["dur"].get_double().get(dur)) dur = 0;
    if (!e["name"].get_string().get(name) && name.rfind("ProfilerStep", 0) == 0) return dur;
    first = std::min(first, ts);
    last = std::max(last, ts + dur);
  }
  return last - first;
}

struct SimRun {
  std::unique_ptr<Simulation> sim;
  Status status;
};

SimRun simulate(const std::vector<std::string>& paths, const SimConfig& config) {
  SimOptions options;
  options.config = config;
  options.max_rounds = 1000000;
  SimRun run;
  auto sim = Simulation::open(paths, options);
  if (!sim.ok()) {
    run.status = sim.status();
    return run;
  }
  run.sim = std::move(*sim);
  run.status = run.sim->run();
  return run;
}

class DlrmSimulation : public ::testing::Test {
 protected:
  // Links and converts the 8 ranks once for the suite, with the chakraflow binary.
  static void SetUpTestSuite() {
    if (testing::shared_data_dir().empty() ||
        !std::filesystem::exists(testing::shared_data_dir() / kDlrm)) {
      return;
    }
    dir_ = new TempDir();
    for (uint32_t r = 0; r < kRanks; ++r) {
      const std::string in = data_path(fmt::format("{}/rank{}", kDlrm, r));
      const std::string et_plus = dir_->file(fmt::format("et_plus.{}.json", r));
      std::string out;
      int rc = testing::run_command(
          fmt::format("{} link --chakra-host-trace {} --chakra-device-trace {} --output-file {} "
                      "--rank {} --threads 2",
                      CHAKRAFLOW_BINARY, shell_quote(in + "/host_et.json.gz"),
                      shell_quote(in + "/kineto.legacy.json.gz"), shell_quote(et_plus), r),
          &out);
      ASSERT_EQ(rc, 0) << out;
      rc = testing::run_command(
          fmt::format("{} convert --input {} --output {} --quiet", CHAKRAFLOW_BINARY,
                      shell_quote(et_plus), shell_quote(dir_->file(fmt::format("dlrm.{}.et", r)))),
          &out);
      ASSERT_EQ(rc, 0) << out;
      measured_[r] = device_step_us(in + "/kineto.legacy.json.gz");
    }
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { CF_REQUIRE_SHARED_DATA(kDlrm); }
  static std::vector<std::string> paths() {
    return expand_trace_paths(dir_->file("dlrm.{rank}.et"), kRanks);
  }

  static TempDir* dir_;
  static double measured_[kRanks];
};
TempDir* DlrmSimulation::dir_ = nullptr;
double DlrmSimulation::measured_[kRanks] = {};

TEST_F(DlrmSimulation, ReplayPredictsEveryRanksStepWithin5Percent) {
  ASSERT_NE(dir_, nullptr);
  SimRun run = simulate(paths(), SimConfig{});
  ASSERT_TRUE(run.status.ok()) << run.status.message();
  const SimResult& res = run.sim->result();
  ASSERT_TRUE(res.completed) << report_text(res, SimConfig{});
  EXPECT_EQ(res.collectives, 8u);  // 5 all-to-alls (SendRecv kernels) and 3 all-reduces
  std::printf(
      "| rank | measured (device trace ProfilerStep) us | measured (.et step_time_us) us | "
      "predicted us | error vs ProfilerStep |\n|---|---|---|---|---|\n");
  for (uint32_t r = 0; r < kRanks; ++r) {
    const RankResult& rr = res.ranks[r];
    ASSERT_TRUE(rr.predicted_us && rr.measured_us) << r;
    const double error = (*rr.predicted_us - measured_[r]) / measured_[r];
    std::printf("| %u | %.0f | %.0f | %.0f | %+.2f%% |\n", r, measured_[r], *rr.measured_us,
                *rr.predicted_us, 100 * error);
    EXPECT_LT(std::abs(error), 0.05) << "rank " << r;
    // The converter's measured step (first to last linked node) is the device step, give or take
    // the few ops outside the host trace's window.
    EXPECT_LT(std::abs(*rr.measured_us - measured_[r]) / measured_[r], 0.02) << "rank " << r;
  }
  // The ranks began the step up to 7.5 ms apart and ended it together: the late ranks' shorter
  // steps come from the collectives synchronizing them.
  EXPECT_LT(*res.ranks[7].predicted_us, 0.7 * *res.ranks[1].predicted_us);
  EXPECT_EQ(res.critical_path.total_ns,
            std::accumulate(res.critical_path.by_kind_ns.begin(),
                            res.critical_path.by_kind_ns.end(), int64_t{0}));
}

TEST_F(DlrmSimulation, WithoutTheRecordedSynchronizationTheErrorIsLarge) {
  // What the method rests on (docs/simulation.md): each rank's own collective durations (which
  // include its wait) instead of the matched transfer, or no rank skew, miss the measured steps.
  ASSERT_NE(dir_, nullptr);
  SimConfig own;
  own.collective_replay = CollectiveReplay::kOwn;
  SimConfig no_skew;
  no_skew.rank_skew = false;
  for (const SimConfig& c : {own, no_skew}) {
    SimRun run = simulate(paths(), c);
    ASSERT_TRUE(run.status.ok());
    double worst = 0;
    for (uint32_t r = 0; r < kRanks; ++r) {
      const double p = *run.sim->result().ranks[r].predicted_us;
      worst = std::max(worst, std::abs(p - measured_[r]) / measured_[r]);
    }
    EXPECT_GT(worst, 0.10);
  }
}

TEST_F(DlrmSimulation, ModelModeRuns) {
  ASSERT_NE(dir_, nullptr);
  SimConfig c;
  c.mode = SimMode::kModel;
  SimRun run = simulate(paths(), c);
  ASSERT_TRUE(run.status.ok()) << run.status.message();
  ASSERT_TRUE(run.sim->result().completed);
  EXPECT_EQ(run.sim->result().collectives, 8u);
}

TEST_F(DlrmSimulation, CommandLineWritesTheReportAndTimeline) {
  ASSERT_NE(dir_, nullptr);
  const std::string report = dir_->file("report.json"), timeline = dir_->file("timeline.json");
  std::string out;
  const int rc = testing::run_command(
      fmt::format("{} simulate --traces {} --ranks 8 --report-json {} --timeline {}",
                  CHAKRAFLOW_BINARY, shell_quote(dir_->file("dlrm.{rank}.et")), shell_quote(report),
                  shell_quote(timeline)),
      &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("critical path:"));
  simdjson::dom::parser parser;
  simdjson::dom::element doc = testing::load_json(parser, report);
  EXPECT_EQ(doc["status"].get_string().value(), "completed");
  simdjson::dom::array ranks = doc["ranks"].get_array();
  ASSERT_EQ(ranks.size(), kRanks);
  for (simdjson::dom::element r : ranks) {
    const uint64_t rank = r["rank"].get_uint64().value();
    const double predicted = r["predicted_us"].get_double().value();
    EXPECT_GT(r["measured_us"].get_double().value(), 0);
    EXPECT_LT(std::abs(predicted - measured_[rank]) / measured_[rank], 0.05);
  }
  simdjson::dom::parser tparser;
  simdjson::dom::element tl = testing::load_json(tparser, timeline);
  size_t complete = 0;
  for (simdjson::dom::element e : tl["traceEvents"].get_array()) {
    complete += e["ph"].get_string().value() == "X";
  }
  EXPECT_EQ(complete, doc["nodes"].get_uint64().value());
}

// --- microbenchmarks (made by a generator: no process-group metadata, all ranks one group)

std::vector<std::string> microbench(const char* dir, const char* prefix) {
  return expand_trace_paths(data_path(fmt::format("{}/{}.{{rank}}.et", dir, prefix)), kRanks);
}

TEST(SimulateMicrobench, AllReduceFollowsTheAlphaBetaModel) {
  CF_REQUIRE_SHARED_DATA(kAllReduce);
  SimConfig c;
  c.mode = SimMode::kModel;
  c.network.bandwidth_gbps = 200;
  c.network.latency_us = 2;
  SimRun full = simulate(microbench(kAllReduce, "all_reduce"), c);
  ASSERT_TRUE(full.status.ok()) << full.status.message();
  ASSERT_TRUE(full.sim->result().completed);
  c.network.bandwidth_gbps = 100;
  SimRun half = simulate(microbench(kAllReduce, "all_reduce"), c);
  ASSERT_TRUE(half.sim->result().completed);
  // Ring all-reduce of 1 MiB over 8 ranks: 2 (p-1) alpha + 2 (p-1)/p S / B.
  const double latency_us = 2 * 7 * 2.0;
  const double bytes = 1 << 20;
  const double t_full = latency_us + 1.75 * bytes * 8 / 200e3;  // 200 Gb/s = 25e3 bytes/us
  const double t_half = latency_us + 1.75 * bytes * 8 / 100e3;
  for (uint32_t r = 0; r < kRanks; ++r) {
    const double p_full = *full.sim->result().ranks[r].predicted_us;
    const double p_half = *half.sim->result().ranks[r].predicted_us;
    EXPECT_NEAR(p_full, t_full, 0.001) << r;
    EXPECT_NEAR(p_half, t_half, 0.001) << r;
    // Halving the bandwidth doubles exactly the bandwidth term.
    EXPECT_NEAR(p_half - latency_us, 2 * (p_full - latency_us), 0.002) << r;
  }
  std::printf(
      "all_reduce 1 MiB x 8 ranks, ring, alpha 2 us: %.3f us at 200 Gb/s, %.3f us at "
      "100 Gb/s (bandwidth term %.3f -> %.3f us)\n",
      *full.sim->result().ranks[0].predicted_us, *half.sim->result().ranks[0].predicted_us,
      *full.sim->result().ranks[0].predicted_us - latency_us,
      *half.sim->result().ranks[0].predicted_us - latency_us);
}

TEST(SimulateMicrobench, SendRecvRingScalesWithBandwidth) {
  CF_REQUIRE_SHARED_DATA(kRing);
  SimConfig c;
  c.mode = SimMode::kModel;
  SimRun full = simulate(microbench(kRing, "custom_allreduce"), c);
  ASSERT_TRUE(full.status.ok()) << full.status.message();
  const SimResult& f = full.sim->result();
  ASSERT_TRUE(f.completed) << report_text(f, c);
  EXPECT_EQ(f.messages, 8u * 14u);  // 14 sends per rank, each received once
  c.network.bandwidth_gbps /= 2;
  SimRun half = simulate(microbench(kRing, "custom_allreduce"), c);
  ASSERT_TRUE(half.sim->result().completed);
  // Every rank's step is a chain of 14 message transfers and 7 reductions (7 us each, recorded):
  // 14 (alpha + S beta) + 49 us with S = 128 KiB, so halving the bandwidth adds 14 S beta.
  const double s_beta_us = 131072 * 8 / 100e3;
  for (uint32_t r = 0; r < kRanks; ++r) {
    const double p_full = *f.ranks[r].predicted_us;
    const double p_half = *half.sim->result().ranks[r].predicted_us;
    EXPECT_NEAR(p_full, 14 * (5 + s_beta_us) + 49, 0.01) << r;
    EXPECT_NEAR(p_half - p_full, 14 * s_beta_us, 0.01) << r;
  }
}

// --- the command line: reports and exit codes, never a hang

class SimulateCommand : public ::testing::Test {
 protected:
  void SetUp() override { CF_REQUIRE_SHARED_DATA(kAllReduce); }
  int run(const std::string& args, std::string* out) {
    return testing::run_command(fmt::format("{} simulate {}", CHAKRAFLOW_BINARY, args), out);
  }
  std::string traces() { return shell_quote(data_path(std::string(kAllReduce) + "/all_reduce")); }
  TempDir dir_;
};

TEST_F(SimulateCommand, ModelConfigAndJsonReport) {
  testing::write_text(dir_.file("sim.yaml"),
                      "mode: model\nnetwork:\n  bandwidth_gbps: 100\n  latency_us: 5\n");
  std::string out;
  ASSERT_EQ(run(fmt::format("--traces {} --ranks 8 --config {} --report-json {} --threads 2",
                            traces(), dir_.file("sim.yaml"), dir_.file("r.json")),
                &out),
            0)
      << out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = testing::load_json(parser, dir_.file("r.json"));
  EXPECT_EQ(doc["mode"].get_string().value(), "model");
  ASSERT_EQ(doc["ranks"].get_array().size(), 8u);
  const double expected = (70000 + 146801) / 1000.0;  // CostModelTest.RingAndTreeFormulas
  for (simdjson::dom::element r : doc["ranks"].get_array()) {
    EXPECT_NEAR(r["predicted_us"].get_double().value(), expected, 0.002);
    EXPECT_TRUE(r["measured_us"].is_null());  // the generator records no step
  }
}

TEST_F(SimulateCommand, MissingRankIsAnErrorNamingIt) {
  std::string out;
  EXPECT_EQ(run(fmt::format("--traces {} --ranks 9", traces()), &out), 1);
  EXPECT_THAT(out, HasSubstr("1 of 9 rank traces missing: rank 8"));
}

TEST_F(SimulateCommand, CollectiveThatNeverMatchesEndsWithAReport) {
  // Ranks 0-6 all-reduce; rank 7's trace has no collective.
  for (uint32_t r = 0; r < 7; ++r) {
    std::filesystem::copy_file(data_path(fmt::format("{}/all_reduce.{}.et", kAllReduce, r)),
                               dir_.file(fmt::format("t.{}.et", r)));
  }
  testing::write_sim_trace(dir_.file("t.7.et"), {testing::gpu(0, {}, 5)});
  std::string out;
  EXPECT_EQ(run(fmt::format("--traces {} --ranks 8 --report-json {}",
                            shell_quote(dir_.file("t.{rank}.et")), dir_.file("r.json")),
                &out),
            1);
  EXPECT_THAT(out, HasSubstr("STALLED"));
  // The generator numbers each rank's node differently: matching is by order, not id.
  EXPECT_THAT(out, HasSubstr("waiting: rank 0 (node 0), rank 1 (node 1), rank 2 (node 2)"));
  EXPECT_THAT(out, HasSubstr("rank 7 never reached it: finished its trace (1 nodes)"));
  simdjson::dom::parser parser;
  simdjson::dom::element doc = testing::load_json(parser, dir_.file("r.json"));
  EXPECT_EQ(doc["status"].get_string().value(), "stalled");
  EXPECT_EQ(doc["stall"].get_array().size(), 1u);
}

TEST_F(SimulateCommand, BadConfigurationNamesLineAndColumn) {
  testing::write_text(dir_.file("bad.yaml"), "mode: model\nnetwork:\n  bandwidth: 10\n");
  std::string out;
  EXPECT_EQ(
      run(fmt::format("--traces {} --ranks 8 --config {}", traces(), dir_.file("bad.yaml")), &out),
      1);
  EXPECT_THAT(out, HasSubstr("bad.yaml:3:3: unknown key \"bandwidth\" in network"));
  EXPECT_EQ(run("--ranks 8", &out), 2);  // usage: no --traces
}

}  // namespace
}  // namespace chakraflow
