// Predicting the unprofiled step on real traces (../shared/data/pt211_h200/suite: five workloads
// on an H200 with PyTorch 2.11, each captured as an ET + Kineto step and, in another process, a
// Kineto-only step, each process with its step_time.json). A capture folder as
// scripts/capture_traces.py writes one: rank0/host_et.json.gz and kineto.json.gz (the ET step),
// kineto_timing.json.gz (the Kineto-only step), step_time.json (the timing process's: the same
// process as the timing trace), linked, converted and simulated by `chakraflow run`.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

namespace fs = std::filesystem;

const char* const kWorkloads[] = {"gpt2_b1", "gpt2_b4", "gpt2_b16", "mlp_b64", "resnet_b16"};

struct Prediction {
  double predicted_us = 0, recorded_us = 0, median_us = 0, min_us = 0, error_pct = 0;
};

// Runs the capture folder of `workload` (symbolic links to the shared files) with or without its
// timing trace; the rank's row of simulation.json.
Prediction run_capture(const std::string& workload, bool timing, const testing::TempDir& dir,
                       std::string* log) {
  const fs::path suite = testing::shared_data_dir() / "pt211_h200/suite" / workload;
  const fs::path rank = dir.path() / workload / "rank0";
  fs::create_directories(rank);
  std::error_code ec;
  fs::create_symlink(suite / "et/host_et.json.gz", rank / "host_et.json.gz", ec);
  fs::create_symlink(suite / "et/kineto.json.gz", rank / "kineto.json.gz", ec);
  fs::create_symlink(suite / "kineto_only/kineto.json.gz", rank / "kineto_timing.json.gz", ec);
  fs::create_symlink(suite / "kineto_only/step_time.json", rank / "step_time.json", ec);
  const std::string config = (dir.path() / workload / (timing ? "t.yaml" : "e.yaml")).string();
  testing::write_text(config, std::string("inputs:\n  host: rank{rank}/host_et.json.gz\n"
                                          "  device: rank{rank}/kineto.json.gz\n") +
                                  (timing ? "  timing: rank{rank}/kineto_timing.json.gz\n" : "") +
                                  "stages: [link, convert, simulate]\noutputs: {dir: " +
                                  (timing ? "out_t" : "out_e") + ", prefix: trace}\n");
  EXPECT_EQ(testing::run_command(std::string(CHAKRAFLOW_BINARY) + " run " + config, log), 0)
      << *log;
  simdjson::dom::parser p;
  simdjson::dom::element sim = testing::load_json(
      p, (dir.path() / workload / (timing ? "out_t" : "out_e") / "simulation.json").string());
  simdjson::dom::element row = sim["ranks"].at(0);
  Prediction out;
  out.predicted_us = double(row["predicted_us"]);
  out.recorded_us = double(row["recorded_us"]);
  out.median_us = double(row["measured_unprofiled_us"]["median"]);
  out.min_us = double(row["measured_unprofiled_us"]["min"]);
  out.error_pct = double(row["unprofiled_error_pct"]);
  return out;
}

TEST(PredictGolden, TheUnprofiledStepFromATimingTrace) {
  CF_REQUIRE_SHARED_DATA("pt211_h200/suite");
  testing::TempDir dir;
  std::vector<double> errors;
  for (const char* w : kWorkloads) {
    std::string log;
    const Prediction p = run_capture(w, /*timing=*/true, dir, &log);
    std::fprintf(stderr,
                 "%-10s predicted %8.0f us, recorded %8.0f, unprofiled %.0f-%.0f: %+.1f%%\n", w,
                 p.predicted_us, p.recorded_us, p.min_us, p.median_us, p.error_pct);
    EXPECT_LT(p.predicted_us, p.recorded_us) << w;  // the overhead is gone
    // gpt2_b4's Kineto-only recording ran its ops 30% slower than gpt2_b1's same ops
    // (docs/simulation.md): its prediction is 24% over; every other workload is within 10%.
    EXPECT_LE(std::fabs(p.error_pct), std::string(w) == "gpt2_b4" ? 30.0 : 10.0) << w;
    errors.push_back(std::fabs(p.error_pct));
  }
  std::sort(errors.begin(), errors.end());
  EXPECT_LE(errors[errors.size() / 2], 5.0) << "median |error|";
}

TEST(PredictGolden, WithoutATimingTraceEveryPredictionIsCloserThanTheRecordedStep) {
  CF_REQUIRE_SHARED_DATA("pt211_h200/suite");
  testing::TempDir dir;
  for (const char* w : kWorkloads) {
    std::string log;
    const Prediction p = run_capture(w, /*timing=*/false, dir, &log);
    const double real = p.median_us;
    EXPECT_LT(std::fabs(p.predicted_us - real), std::fabs(p.recorded_us - real))
        << w << ": predicted " << p.predicted_us << ", recorded " << p.recorded_us;
  }
}

// What is left of a recorded step once the default costs are taken out of its pair (`link
// --profiler-overhead default`), as a share of it: the ET+'s profiler_overhead note.
double step_share_left(const fs::path& pair, const testing::TempDir& dir, const std::string& name) {
  const std::string out = dir.file(name + ".json");
  std::string log;
  EXPECT_EQ(
      testing::run_command(std::string(CHAKRAFLOW_BINARY) + " link --chakra-host-trace " +
                               (pair / "host_et.json.gz").string() + " --chakra-device-trace " +
                               (pair / "kineto.json.gz").string() +
                               " --profiler-overhead default --output-file " + out,
                           &log),
      0)
      << log;
  simdjson::dom::parser p;
  simdjson::dom::element note = testing::load_json(p, out)["profiler_overhead"];
  return double(note["step_us"]) / double(note["recorded_step_us"]);
}

// scripts/capture_traces.py brackets the backward pass with a `## backward ##` annotation on the
// thread that calls backward() (the DDP capture-script pair): its step loses the costs of what the
// autograd thread ran as the suite's steps do (those have no such annotation), not only the
// calling thread's own.
TEST(PredictGolden, AnAnnotatedBackwardLosesItsCostsLikeAnUnannotatedOne) {
  CF_REQUIRE_SHARED_DATA("pt211_h200/ddp_1rank_capture_script");
  CF_REQUIRE_SHARED_DATA("pt211_h200/suite");
  const fs::path data = testing::shared_data_dir() / "pt211_h200";
  testing::TempDir dir;
  double suite_most_left = 0;
  for (const char* w : {"mlp_b64", "gpt2_b1", "resnet_b16"}) {
    suite_most_left = std::max(suite_most_left, step_share_left(data / "suite" / w / "et", dir, w));
  }
  const double ddp_left = step_share_left(data / "ddp_1rank_capture_script", dir, "ddp");
  std::fprintf(stderr, "share of the step left: DDP capture %.3f, suite at most %.3f\n", ddp_left,
               suite_most_left);
  EXPECT_LE(ddp_left, suite_most_left + 0.05);
}

// A bad timing trace is a located error, and the rank leaves nothing behind.
TEST(PredictGolden, BadTimingTracesAreLocatedErrors) {
  CF_REQUIRE_SHARED_DATA("pt211_h200/suite");
  const fs::path suite = testing::shared_data_dir() / "pt211_h200/suite";
  testing::TempDir dir;
  const std::string host = (suite / "mlp_b64/et/host_et.json.gz").string();
  const std::string good =
      testing::read_text((suite / "mlp_b64/kineto_only/kineto.json.gz").string());
  // Another model's; a trace of two steps; a truncated one; one without CPU ops.
  testing::write_text(dir.file("two_steps.json"),
                      good.substr(0, good.rfind(']')) +
                          R"(, {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", )"
                          R"("pid": 1, "tid": 1, "ts": 9e12, "dur": 10}]})");
  testing::write_text(dir.file("truncated.json"), good.substr(0, good.size() / 2));
  testing::write_text(dir.file("no_cpu_ops.json"),
                      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, )"
                      R"("tid": 7, "ts": 1, "dur": 2, "args": {"correlation": 1}}]})");
  const std::pair<std::string, std::string> cases[] = {
      {(suite / "gpt2_b1/kineto_only/kineto.json.gz").string(), "match"},
      {dir.file("two_steps.json"), "2 recorded steps"},
      {dir.file("truncated.json"), "truncated.json"},
      {dir.file("no_cpu_ops.json"), "no CPU op"},
  };
  for (const auto& [timing, says] : cases) {
    std::string out;
    const int rc = testing::run_command(
        std::string(CHAKRAFLOW_BINARY) + " link --chakra-host-trace " + host + " --timing-trace " +
            timing + " --output-file " + dir.file("out.json"),
        &out);
    EXPECT_EQ(rc, 1) << timing << ": " << out;
    EXPECT_NE(out.find(says), std::string::npos) << timing << ": " << out;
    EXPECT_NE(out.find(fs::path(timing).filename().string()), std::string::npos) << out;
    EXPECT_FALSE(fs::exists(dir.file("out.json"))) << timing;
  }
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 3u) << "a temporary file was left behind";
}

}  // namespace
}  // namespace chakraflow
