// EtIndex reads records of a plain .et by offset through a few cached blocks: lookups that
// interleave regions of the file (as a simulator walks its CPU ops and the GPU ops they launch,
// far apart in the file) read each byte about once.
#include "stages/feed/et_index.h"

#include <gtest/gtest.h>

#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "tests/feed/feeder_test_util.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

// A chain of `n` nodes; names of `name_bytes` make the file span many blocks.
std::vector<testing::TraceNode> chain(uint64_t n, size_t name_bytes = 0) {
  std::vector<testing::TraceNode> nodes;
  for (uint64_t id = 1; id <= n; ++id) {
    testing::TraceNode t;
    t.id = id;
    t.duration = id % 97;
    if (id > 1) t.data_deps = {id - 1};
    if (name_bytes > 0) t.name = std::string(name_bytes, static_cast<char>('a' + id % 26));
    nodes.push_back(t);
  }
  return nodes;
}

// The bytes the index's scan keeps for the walk: the first 16 blocks of 256 KB.
constexpr double kSeededBytes = 16 * 262144.0;

// A chain of 100,000 nodes with 100-byte names (11.6 MB: many blocks beyond the ones the scan
// keeps) written to a file, and its index, for each test.
class EtIndexOfChain : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_trace(path_, chain(n, 100));
    file_bytes = static_cast<double>(std::filesystem::file_size(path_));
    ASSERT_GT(file_bytes, 10e6);
    auto built = EtIndex::build(path_);
    ASSERT_TRUE(built.ok()) << built.status().message();
    index_ = std::move(*built);
    ASSERT_EQ(index_->size(), n);
    ASSERT_FALSE(index_->records_in_memory());
  }
  const EtIndex& x() const { return *index_; }

  const uint64_t n = 100000;
  double file_bytes = 0;

 private:
  testing::TempDir dir_;
  std::string path_ = dir_.file("chain.et");
  std::unique_ptr<EtIndex> index_;
};

TEST_F(EtIndexOfChain, InterleavedRegionsReadEachByteAboutOnce) {
  const EtIndex& x = this->x();
  EXPECT_EQ(x.io_stats().bytes_read, 0u);

  // Four cursors a quarter of the file apart, advancing in turn, and a fifth one a few records
  // behind the first: every block read once (a single 256 KB block would be read again at each
  // switch of region), but the block where a quarter starts, which may be evicted before the
  // previous quarter's cursor reaches it (slack: 4 blocks). The blocks the scan kept are not used
  // by the first cursor before the other three need blocks: most are read again.
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
  EXPECT_GE(static_cast<double>(io.bytes_read), 0.95 * (file_bytes - kSeededBytes));
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

// One walk in file order: a read per block past the ones the scan kept, and none for the records
// across a block's end (the scan kept them: read on their own, they cost a read each).
TEST_F(EtIndexOfChain, ASequentialWalkReadsEachBlockOnce) {
  const EtIndex& x = this->x();
  std::string record;
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_TRUE(x.read_record(i, &record).ok());
    ChakraProtoMsg::Node node;
    ASSERT_TRUE(node.ParseFromString(record));
    ASSERT_EQ(node.id(), x.id(i));
  }
  const double blocks = std::ceil(file_bytes / 262144.0);
  const EtIndex::IoStats io = x.io_stats();
  EXPECT_LE(static_cast<double>(io.reads), blocks - 16) << io.reads << " reads, " << blocks;
  EXPECT_LE(static_cast<double>(io.bytes_read), file_bytes - kSeededBytes + 262144.0);
}

// A cursor that leaves every other record behind, and a second one that reads them much later
// (ASTRA-sim: the GPU ops queued behind the CPU ops that launched them, more blocks behind than
// the index caches): the records left behind are kept as their blocks leave, so every block is
// read once, not twice; and they are let go once read.
TEST_F(EtIndexOfChain, RecordsLeftBehindAreReadOnce) {
  const EtIndex& x = this->x();

  const uint32_t lag = 60000;  // records: about 7 MB of file, more than the 4 MB of blocks
  std::string record;
  auto read = [&](uint32_t i) {
    ASSERT_TRUE(x.read_record(i, &record).ok());
    ChakraProtoMsg::Node node;
    ASSERT_TRUE(node.ParseFromString(record));
    ASSERT_EQ(node.id(), x.id(i));
  };
  for (uint32_t i = 0; i < n + lag; i += 2) {
    if (i < n) read(i);
    if (i >= lag) read(i - lag + 1);
  }
  const EtIndex::IoStats io = x.io_stats();
  const double slack = 4 * 262144.0;
  EXPECT_LE(static_cast<double>(io.bytes_read), 1.02 * (file_bytes - kSeededBytes) + slack)
      << io.reads << " reads of " << io.bytes_read << " bytes for a file of " << file_bytes;
  // About half of `lag` records were waiting at once, and were held: no more than that.
  EXPECT_GT(io.rescued_peak_bytes, 0.3 * lag * 60);
  EXPECT_LT(io.rescued_peak_bytes, 0.7 * lag * 140);
  // Read again, the records come from the file (nothing else is held for them).
  const uint64_t before = io.bytes_read;
  read(1);
  EXPECT_GT(x.io_stats().bytes_read, before);
}

// A trace no larger than the blocks the scan keeps is read once, by the scan.
TEST(EtIndex, SmallTraceIsReadOnlyByTheScan) {
  testing::TempDir dir;
  const std::string path = dir.file("chain.et");
  testing::write_trace(path, chain(2000, 100));
  auto index = EtIndex::build(path);
  ASSERT_TRUE(index.ok()) << index.status().message();
  const EtIndex& x = **index;
  std::string record;
  for (uint32_t i = x.size(); i-- > 0;) {
    ASSERT_TRUE(x.read_record(i, &record).ok());
    ChakraProtoMsg::Node node;
    ASSERT_TRUE(node.ParseFromString(record));
    ASSERT_EQ(node.id(), x.id(i));
  }
  EXPECT_EQ(x.io_stats().bytes_read, 0u);
}

// A .et.gz of ours (EtWriter: its block index) is read by offset like a plain file, a block of
// its text inflated where a plain file's is read: the same records, in the pattern of
// InterleavedRegionsReadEachByteAboutOnce each compressed block read about once (the I/O counts
// compressed bytes), none of its records kept in memory.
TEST(EtIndex, IndexedGzipIsReadByOffsetInItsBlocks) {
  testing::TempDir dir;
  const uint64_t n = 100000;
  const std::vector<testing::TraceNode> nodes = chain(n, 100);
  testing::write_trace(dir.file("chain.et"), nodes);
  testing::write_trace(dir.file("chain.et.gz"), nodes);
  auto plain = EtIndex::build(dir.file("chain.et"));
  auto gz = EtIndex::build(dir.file("chain.et.gz"));
  ASSERT_TRUE(plain.ok() && gz.ok()) << gz.status().message();
  const EtIndex& x = **gz;
  ASSERT_FALSE(x.records_in_memory());
  ASSERT_EQ(x.size(), n);
  const auto gz_bytes = static_cast<double>(std::filesystem::file_size(dir.file("chain.et.gz")));
  const auto text_bytes = static_cast<double>(std::filesystem::file_size(dir.file("chain.et")));
  std::string record, expected;
  const uint32_t quarter = static_cast<uint32_t>(n / 4);
  for (uint32_t step = 0; step < quarter; ++step) {
    for (uint32_t region = 0; region < 4; ++region) {
      const uint32_t i = region * quarter + step;
      const Status read = x.read_record(i, &record);
      ASSERT_TRUE(read.ok()) << read.message();
      ASSERT_TRUE((*plain)->read_record(i, &expected).ok());
      ASSERT_EQ(record, expected) << "record " << i;
    }
  }
  // Every block inflated about once, as a plain file's is read (the blocks the scan kept are
  // mostly evicted before the first cursor uses them; 4 blocks of slack), a record across a
  // block's end put together from the blocks it spans, not read again.
  const EtIndex::IoStats io = x.io_stats();
  const double blocks = std::ceil(text_bytes / 262144.0);
  EXPECT_LE(static_cast<double>(io.reads), 1.02 * blocks + 4) << io.reads << " of " << blocks;
  EXPECT_GE(static_cast<double>(io.reads), 0.95 * (blocks - 16));
  EXPECT_LE(static_cast<double>(io.bytes_read), 1.1 * gz_bytes);
  EXPECT_GT(io.bytes_read, 0u);
  // Records across a block's end, whichever block is cached: the same bytes.
  for (uint32_t i = x.size(); i-- > 0;) {
    const Status read = x.read_record(i, &record);
    ASSERT_TRUE(read.ok()) << read.message();
    ASSERT_TRUE((*plain)->read_record(i, &expected).ok());
    ASSERT_EQ(record, expected) << "record " << i;
  }
}

// A .et.gz whose block index gives another size of text than the file holds (a valid gzip file
// otherwise) is refused, naming the file, rather than read by offset through a wrong index.
TEST(EtIndex, IndexedGzipWithAWrongTextSizeIsRefused) {
  testing::TempDir dir;
  const std::string path = dir.file("chain.et.gz");
  testing::write_trace(path, chain(3000, 100));
  std::string gz;
  {
    std::ifstream in(path, std::ios::binary);
    gz.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(gz.size(), 100u);
  uint32_t member = 0;
  std::memcpy(&member, gz.data() + gz.size() - 14, 4);
  // The text's size (8 bytes after the extra field's id, length, version and block size), one
  // less: still within its last block.
  const size_t text_at = gz.size() - member + 12 + 4 + 1 + 4;
  const auto low = static_cast<unsigned char>(gz[text_at]);
  ASSERT_GT(low, 0);
  gz[text_at] = static_cast<char>(low - 1);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << gz;
  auto index = EtIndex::build(path);
  ASSERT_FALSE(index.ok());
  EXPECT_NE(index.status().message().find("chain.et.gz: its block index gives"), std::string::npos)
      << index.status().message();
}

// Another gzip'd trace (no block index: zlib's own gzip) keeps its records in memory: nothing is
// read again.
TEST(EtIndex, OtherGzipRecordsAreInMemory) {
  testing::TempDir dir;
  testing::write_trace(dir.file("chain.et"), chain(1000));
  const std::string plain = testing::read_text(dir.file("chain.et"));
  const std::string path = dir.file("chain.et.gz");
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, plain.data(), static_cast<unsigned>(plain.size())),
            static_cast<int>(plain.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
  auto index = EtIndex::build(path);
  ASSERT_TRUE(index.ok()) << index.status().message();
  ASSERT_TRUE((*index)->records_in_memory());
  std::string record;
  ASSERT_TRUE((*index)->read_record(999, &record).ok());
  EXPECT_EQ((*index)->io_stats().bytes_read, 0u);
}

}  // namespace
}  // namespace chakraflow
