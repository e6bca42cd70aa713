// The communicator groups a conversion reports (ConvertReport::comm_groups, what `chakraflow run`
// writes the group file from) equal what scan_comm_groups reads back from the written .et, on
// every real host ET in every mode that changes the groups' names or the metadata node's type.
#include <gtest/gtest.h>

#include <filesystem>

#include "pipeline/rank_graph.h"
#include "stages/convert/comm_groups.h"
#include "stages/convert/pytorch_converter.h"
#include "stages/generate/synthetic_trace.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

namespace fs = std::filesystem;

TEST(CommGroupsFromConversion, EqualWhatTheWrittenTraceHolds) {
  CF_REQUIRE_SHARED_DATA("host_et");
  testing::TempDir tmp;
  size_t declared = 0, traces = 0;
  for (const auto& entry : fs::directory_iterator(testing::shared_data_dir() / "host_et")) {
    const std::string input = (entry.path() / "host_et.json.gz").string();
    if (!fs::exists(input)) continue;
    ++traces;
    for (Compat compat : {Compat::kDefault, Compat::kChakra}) {
      for (int offset : {0, 1}) {
        ConvertOptions options;
        options.compat = compat;
        options.pg_name_offset = offset;
        options.metadata_as_compute = offset == 1;
        const std::string output = tmp.file("out.et");
        ConvertReport report;
        ASSERT_TRUE(convert_file(input, output, options, &report).ok()) << input;
        auto scanned = scan_comm_groups(output, 0, offset);
        ASSERT_TRUE(scanned.ok()) << scanned.status().message();
        EXPECT_EQ(report.comm_groups, *scanned) << input << " offset " << offset;
        declared += report.comm_groups.declared.size();
      }
    }
  }
  EXPECT_GE(traces, 7u);
  // The set declares process groups (its DDP and all-gather traces): the check compared something.
  EXPECT_GT(declared, 0u);
}

// A generated rank, linked: its collectives name their process group (pg_name).
TEST(CommGroupsFromConversion, EqualWhatTheWrittenTraceHoldsOnALinkedRank) {
  testing::TempDir tmp;
  SynthOptions synth;
  synth.ranks = 2;
  synth.scale = 0.02;
  auto [host, device, stats] = synthesize_rank_text(synth, 1);
  testing::write_text(tmp.file("host.json"), host);
  testing::write_text(tmp.file("device.json"), device);
  RankJob job;
  job.host_path = tmp.file("host.json");
  job.device_path = tmp.file("device.json");
  job.et_plus_path = tmp.file("et_plus.json");
  ASSERT_TRUE(run_link_job(job).status.ok());
  for (int offset : {0, 1}) {
    ConvertOptions options;
    options.pg_name_offset = offset;
    ConvertReport report;
    ASSERT_TRUE(convert_file(job.et_plus_path, tmp.file("out.et"), options, &report).ok());
    auto scanned = scan_comm_groups(tmp.file("out.et"), 0, offset);
    ASSERT_TRUE(scanned.ok()) << scanned.status().message();
    EXPECT_EQ(report.comm_groups, *scanned) << "offset " << offset;
    EXPECT_EQ(report.comm_groups.used, (std::set<std::string>{offset == 0 ? "0" : "1"}));
  }
}

}  // namespace
}  // namespace chakraflow
