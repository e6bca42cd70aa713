// The small golden set kept in the repository (tests/golden/small/, README there): a 2-rank trace
// set and what link (both compat modes), convert + jsonize, feed and simulate give on it, byte for
// byte. It runs everywhere, ../shared/data or not, and covers every verb end to end. A change that
// is meant to change an output regenerates the expectations with scripts/regen_small_golden.sh.
#include <gtest/gtest.h>

#include <string>

#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

using testing::read_text;
using testing::run_command;
using testing::TempDir;

const std::string kBin = CHAKRAFLOW_BINARY;
const std::string kDir = std::string(CHAKRAFLOW_SOURCE_DIR) + "/tests/golden/small";

std::string expected(const std::string& name) {
  return read_text(kDir + "/expected/" + name);
}

class SmallGolden : public ::testing::Test {
 protected:
  // Links and converts both ranks into the temporary folder.
  void SetUp() override {
    for (int r = 0; r < 2; ++r) {
      const std::string rank = std::to_string(r);
      const std::string in = kDir + "/rank" + rank;
      std::string out;
      const std::string et_plus = dir_.file("et_plus." + rank + ".json");
      ASSERT_EQ(run_command(kBin + " link --host " + in + "/host_et.json --device " + in +
                                "/kineto.json --output-file " + et_plus + " --rank " + rank,
                            &out),
                0)
          << out;
      ASSERT_EQ(run_command(kBin + " convert --input " + dir_.file("et_plus." + rank + ".json") +
                                " --output " + dir_.file("trace." + rank + ".et") + " --quiet",
                            &out),
                0)
          << out;
    }
  }
  TempDir dir_;
};

TEST_F(SmallGolden, LinkWritesTheExpectedEtPlus) {
  for (const std::string rank : {"0", "1"}) {
    EXPECT_TRUE(read_text(dir_.file("et_plus." + rank + ".json")) ==
                expected("et_plus." + rank + ".json"))
        << "rank " << rank;
  }
}

TEST_F(SmallGolden, LinkCompatChakraWritesTheExpectedEtPlus) {
  for (const std::string rank : {"0", "1"}) {
    const std::string in = kDir + "/rank" + rank;
    const std::string out_path = dir_.file("chakra." + rank + ".json");
    std::string out;
    ASSERT_EQ(run_command(kBin + " link --host " + in + "/host_et.json --device " + in +
                              "/kineto.json --output-file " + out_path + " --rank " + rank +
                              " --compat chakra",
                          &out),
              0)
        << out;
    EXPECT_TRUE(read_text(out_path) == expected("et_plus.chakra." + rank + ".json"))
        << "rank " << rank;
  }
}

TEST_F(SmallGolden, ConvertWritesTheExpectedTrace) {
  for (const std::string rank : {"0", "1"}) {
    const std::string json = dir_.file("trace." + rank + ".json");
    std::string out;
    ASSERT_EQ(run_command(kBin + " jsonize --input " + dir_.file("trace." + rank + ".et") +
                              " --output " + json + " --quiet",
                          &out),
              0)
        << out;
    EXPECT_TRUE(read_text(json) == expected("trace." + rank + ".json")) << "rank " << rank;
  }
}

TEST_F(SmallGolden, FeedIssuesInTheExpectedOrder) {
  std::string out;
  ASSERT_EQ(run_command("cd " + dir_.path().string() + " && " + kBin +
                            " feed trace.0.et trace.1.et --quiet | grep '^rank '",
                        &out),
            0)
      << out;
  EXPECT_EQ(out, expected("feed.txt"));
}

TEST_F(SmallGolden, SimulateGivesTheExpectedReport) {
  std::string out;
  ASSERT_EQ(run_command("cd " + dir_.path().string() + " && " + kBin +
                            " simulate --traces 'trace.{rank}.et' --ranks 2"
                            " --report-json simulation.json",
                        &out),
            0)
      << out;
  EXPECT_EQ(read_text(dir_.file("simulation.json")), expected("simulation.json"));
}

}  // namespace
}  // namespace chakraflow
