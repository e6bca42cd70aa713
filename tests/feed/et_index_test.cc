// EtIndex reads records of a plain .et by offset through a few cached blocks: lookups that
// interleave regions of the file (as a simulator walks its CPU ops and the GPU ops they launch,
// far apart in the file) read each byte about once.
#include "stages/feed/et_index.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/feed/feeder_test_util.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

// A chain of `n` nodes with names long enough that the file spans many blocks.
std::vector<testing::TraceNode> chain(uint64_t n) {
  std::vector<testing::TraceNode> nodes;
  for (uint64_t id = 1; id <= n; ++id) {
    testing::TraceNode t;
    t.id = id;
    t.duration = id % 97;
    if (id > 1) t.data_deps = {id - 1};
    nodes.push_back(t);
  }
  return nodes;
}

TEST(EtIndex, InterleavedRegionsReadEachByteAboutOnce) {
  testing::TempDir dir;
  const std::string path = dir.file("chain.et");
  const uint64_t n = 200000;
  testing::write_trace(path, chain(n));
  const double file_bytes = static_cast<double>(std::filesystem::file_size(path));
  ASSERT_GT(file_bytes, 2e6);  // several blocks

  auto index = EtIndex::build(path);
  ASSERT_TRUE(index.ok()) << index.status().message();
  const EtIndex& x = **index;
  ASSERT_EQ(x.size(), n);
  ASSERT_FALSE(x.records_in_memory());
  EXPECT_EQ(x.io_stats().bytes_read, 0u);

  // Four cursors a quarter of the file apart, advancing in turn, and a fifth one a few records
  // behind the first: every block read once (a single 256 KB block would be read again at each
  // switch of region), but the block where a quarter starts, which may be evicted before the
  // previous quarter's cursor reaches it (slack: 4 blocks).
  std::string record;
  const uint32_t quarter = static_cast<uint32_t>(n / 4);
  for (uint32_t step = 0; step < quarter; ++step) {
    for (uint32_t region = 0; region < 4; ++region) {
      const uint32_t i = region * quarter + step;
      ASSERT_TRUE(x.read_record(i, &record).ok());
      ChakraProtoMsg::Node node;
      ASSERT_TRUE(node.ParseFromString(record));
      ASSERT_EQ(node.id(), x.id(i));
    }
    if (step >= 50) {
      ASSERT_TRUE(x.read_record(step - 50, &record).ok());
    }
  }
  const EtIndex::IoStats io = x.io_stats();
  EXPECT_GE(static_cast<double>(io.bytes_read), 0.95 * file_bytes);
  const double slack = 4 * 262144.0;
  EXPECT_LE(static_cast<double>(io.bytes_read), 1.02 * file_bytes + slack)
      << io.reads << " reads of " << io.bytes_read << " bytes for a file of " << file_bytes;

  // A second pass in the same pattern reads it all again, no more.
  for (uint32_t step = 0; step < quarter; ++step) {
    for (uint32_t region = 0; region < 4; ++region) {
      ASSERT_TRUE(x.read_record(region * quarter + step, &record).ok());
    }
  }
  EXPECT_LE(static_cast<double>(x.io_stats().bytes_read), 2 * (1.02 * file_bytes + slack));
}

// A gzip'd trace keeps its records in memory: nothing is read again.
TEST(EtIndex, GzipRecordsAreInMemory) {
  testing::TempDir dir;
  const std::string path = dir.file("chain.et.gz");
  testing::write_trace(path, chain(1000));
  auto index = EtIndex::build(path);
  ASSERT_TRUE(index.ok()) << index.status().message();
  ASSERT_TRUE((*index)->records_in_memory());
  std::string record;
  ASSERT_TRUE((*index)->read_record(999, &record).ok());
  EXPECT_EQ((*index)->io_stats().bytes_read, 0u);
}

}  // namespace
}  // namespace chakraflow
