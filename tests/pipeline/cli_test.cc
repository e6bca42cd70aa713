// End-to-end tests of the chakraflow binary: flags, exit codes, error messages and atomic outputs.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/testing/test_util.h"
#include "tests/testing/trace_builder.h"

namespace chakraflow {
namespace {

using testing::run_command;
using testing::TempDir;

const std::string kBin = CHAKRAFLOW_BINARY;

struct Pair {
  std::string host, device;
};

Pair write_pair(const TempDir& dir) {
  Pair p{dir.file("host.json"), dir.file("device.json")};
  testing::write_text(p.host,
                      testing::HostBuilder().roots({{2, 1}}).node(3, "aten::mm", 2, 1, 1).json());
  testing::write_text(p.device, testing::KinetoBuilder()
                                    .cpu_op("aten::mm", 9, 10, 20, 1)
                                    .runtime("cudaLaunchKernel", 9, 12, 1, 4)
                                    .gpu("gemm", 15, 3, 4)
                                    .json());
  return p;
}

TEST(Cli, LinksAndWritesGzipWhenAsked) {
  TempDir dir;
  Pair p = write_pair(dir);
  std::string out;
  int rc = run_command(kBin + " link --chakra-host-trace " + p.host + " --chakra-device-trace " +
                           p.device + " --output-file " + dir.file("et.json.gz") + " --rank 3",
                       &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("GPU ops linked:    1 / 1"), std::string::npos) << out;
  std::string text = testing::read_text(dir.file("et.json.gz"));
  EXPECT_NE(text.find("\"gemm\""), std::string::npos);
}

TEST(Cli, ChakraExecutableNameAcceptsChakraFlags) {
  TempDir dir;
  Pair p = write_pair(dir);
  std::string alias = std::filesystem::path(kBin).parent_path() / "chakra_trace_link";
  std::string out;
  int rc =
      run_command(alias + " --rank 0 --chakra-host-trace " + p.host + " --chakra-device-trace " +
                      p.device + " --output-file " + dir.file("et.json") + " --log-level ERROR",
                  &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_TRUE(out.empty()) << out;  // ERROR level: nothing printed on success
  EXPECT_TRUE(std::filesystem::exists(dir.file("et.json")));
}

TEST(Cli, UsageErrorsExitTwo) {
  std::string out;
  EXPECT_EQ(run_command(kBin + " link --chakra-host-trace x.json", &out), 2);
  EXPECT_NE(out.find("missing --chakra-device-trace, --output-file"), std::string::npos) << out;
  EXPECT_EQ(run_command(kBin + " link --bogus 1", &out), 2);
  EXPECT_NE(out.find("unknown option '--bogus'"), std::string::npos) << out;
  EXPECT_EQ(run_command(kBin + " frobnicate", &out), 2);
  EXPECT_EQ(run_command(kBin + " link --help", &out), 0);
  EXPECT_NE(out.find("--gap-threshold-us"), std::string::npos);
}

TEST(Cli, BadInputFailsWithLocationAndLeavesNoOutput) {
  TempDir dir;
  Pair p = write_pair(dir);
  std::string full = testing::read_text(p.device);
  testing::write_text(dir.file("truncated.json"), full.substr(0, full.size() / 2));
  testing::write_text(dir.file("empty.json"), "");
  struct Case {
    std::string host, device, expect;
  } cases[] = {
      {p.host, dir.file("truncated.json"), "truncated.json: byte"},
      {dir.file("empty.json"), p.device, "empty.json: empty file"},
      {p.host, dir.file("missing.json"), "missing.json: cannot open"},
  };
  for (const auto& c : cases) {
    std::string out;
    int rc = run_command(kBin + " link --chakra-host-trace " + c.host + " --chakra-device-trace " +
                             c.device + " --output-file " + dir.file("out.json"),
                         &out);
    EXPECT_EQ(rc, 1) << out;
    EXPECT_NE(out.find(c.expect), std::string::npos) << out;
    EXPECT_FALSE(std::filesystem::exists(dir.file("out.json")));
  }
  // Nothing else was left behind (no temporary files).
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 4u);
}

}  // namespace
}  // namespace chakraflow
