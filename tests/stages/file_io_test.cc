#include "stages/file_io.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "stages/host_et_loader.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

using testing::TempDir;

TEST(FileIo, WritesPlainAndGzipAtomicallyAndReadsBack) {
  TempDir dir;
  std::string payload(300000, 'x');
  for (size_t i = 0; i < payload.size(); i += 7) payload[i] = static_cast<char>('a' + i % 26);
  for (const char* name : {"out.json", "out.json.gz"}) {
    std::string path = dir.file(name);
    ASSERT_TRUE(write_file_atomically(path, payload).ok());
    auto back = read_input_file(path);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(*back, payload);
    EXPECT_GE(back->capacity(), back->size() + kInputPadding);
  }
  // The .gz file really is compressed.
  EXPECT_LT(std::filesystem::file_size(dir.file("out.json.gz")), payload.size() / 2);
}

// The writers mix write(), write_byte() and room()/keep() (records encoded in place): pieces of
// every size, across the 1 MB flushes, one larger than the buffer, room asked for and only
// partly kept, and a moved OutputFile, in plain and gzip files.
TEST(FileIo, WritesInPlaceThroughRoomAcrossFlushes) {
  TempDir dir;
  for (const char* name : {"mixed.bin", "mixed.bin.gz"}) {
    std::string expected;
    auto opened = OutputFile::open(dir.file(name));
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    OutputFile out = std::move(*opened);
    uint64_t seed = 5;
    auto next = [&seed] { return seed = seed * 6364136223846793005ULL + 1442695040888963407ULL; };
    for (int piece = 0; piece < 3000; ++piece) {
      const size_t size = piece == 1500 ? (3u << 20) : next() % 5000;  // one of 3 MB
      std::string bytes(size, '\0');
      for (char& c : bytes) c = static_cast<char>(next() >> 56);
      switch (piece % 3) {
        case 0:
          out.write(bytes);
          break;
        case 1: {
          char* at = out.room(size + 100);  // more room than kept
          std::memcpy(at, bytes.data(), size);
          out.keep(size);
          break;
        }
        default:
          for (char c : bytes.substr(0, 50)) out.write_byte(c);
          bytes.resize(std::min<size_t>(size, 50));
      }
      expected += bytes;
      if (piece == 2000) {
        OutputFile moved = std::move(out);
        out = std::move(moved);
      }
    }
    EXPECT_LE(out.bytes_written(), expected.size());
    ASSERT_TRUE(out.commit().ok());
    auto back = read_input_file(dir.file(name));
    ASSERT_TRUE(back.ok()) << back.status().message();
    ASSERT_EQ(back->size(), expected.size()) << name;
    EXPECT_TRUE(*back == expected) << name;
  }
}

TEST(FileIo, DiscardedOutputLeavesDirectoryUnchanged) {
  TempDir dir;
  {
    auto out = OutputFile::open(dir.file("result.json"));
    ASSERT_TRUE(out.ok());
    out->write("{\"partial\":");
    // destroyed without commit
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(FileIo, CommitReplacesExistingFileOnlyOnSuccess) {
  TempDir dir;
  std::string path = dir.file("keep.json");
  testing::write_text(path, "old");
  {
    auto out = OutputFile::open(path);
    ASSERT_TRUE(out.ok());
    out->write("new");
    out->discard();
  }
  EXPECT_EQ(testing::read_text(path), "old");
  ASSERT_TRUE(write_file_atomically(path, "new").ok());
  EXPECT_EQ(testing::read_text(path), "new");
}

TEST(FileIo, ReadsConcatenatedGzipMembers) {
  TempDir dir;
  std::string path = dir.file("two.gz");
  for (const char* part : {"hello ", "world"}) {
    gzFile f = gzopen(path.c_str(), "ab");
    ASSERT_NE(f, nullptr);
    gzputs(f, part);
    gzclose(f);
  }
  auto back = read_input_file(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, "hello world");
}

TEST(FileIo, ErrorsNameTheFile) {
  TempDir dir;
  auto missing = read_input_file(dir.file("nope.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope.json"), std::string::npos);

  // A truncated gzip stream is an error, not a short read.
  std::string full = dir.file("full.gz");
  ASSERT_TRUE(write_file_atomically(full, std::string(100000, 'q') + "tail").ok());
  std::string bytes = testing::read_text(full);  // decompressed
  std::string raw;
  {
    FILE* f = std::fopen(full.c_str(), "rb");
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) raw.append(buf, n);
    std::fclose(f);
  }
  std::string cut = dir.file("cut.gz");
  testing::write_text(cut, raw.substr(0, raw.size() / 2));
  auto truncated = read_input_file(cut);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("cut.gz"), std::string::npos);
  EXPECT_NE(truncated.status().message().find("truncated"), std::string::npos);

  auto dir_as_output = OutputFile::open(dir.path().string());
  EXPECT_FALSE(dir_as_output.ok());
}

// A host ET padded with spaces to exactly `size` bytes.
std::string host_et_of_size(size_t size, std::string_view name) {
  std::string text = std::string(R"({"schema": "1.1.1-chakra.0.0.4", "nodes": [{"id": 1, "name": ")") +
                     std::string(name) + R"("}]})";
  text.append(size - text.size(), ' ');
  return text;
}

// Big plain inputs are mapped. A file whose size is a multiple of the page size has no slack in
// its last page: simdjson's padding must come from the reservation past it.
TEST(FileIo, MapsBigFilesWithPaddingPastTheLastPage) {
  testing::TempDir dir;
  const size_t size = size_t{1} << 20;
  testing::write_text(dir.file("big.json"), host_et_of_size(size, "aten::mm"));
  auto text = InputText::read(dir.file("big.json"));
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_TRUE(text->mapped());
  ASSERT_EQ(text->size(), size);
  ASSERT_GE(text->capacity(), size + kInputPadding);
  for (size_t i = size; i < size + kInputPadding; ++i) ASSERT_EQ(text->data()[i], 0) << i;
  auto host = load_host_trace(dir.file("big.json"));
  ASSERT_TRUE(host.ok()) << host.status().message();
  ASSERT_EQ(host->nodes.size(), 1u);
  EXPECT_EQ(host->nodes[0].name, "aten::mm");
  // Small and gzip'd files are read into memory.
  testing::write_text(dir.file("small.json"), host_et_of_size(4096, "x"));
  auto small = InputText::read(dir.file("small.json"));
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE(small->mapped());
}

// Invalid UTF-8 in a mapped file is repaired in the process's copy, never in the file.
TEST(FileIo, RepairsMappedTextWithoutTouchingTheFile) {
  testing::TempDir dir;
  // The name holds a byte (0xff) that is never valid in UTF-8.
  const std::string with_bad_byte = host_et_of_size(size_t{1} << 20, "bad\xff byte");
  testing::write_text(dir.file("bad.json"), with_bad_byte);
  auto host = load_host_trace(dir.file("bad.json"));
  ASSERT_TRUE(host.ok()) << host.status().message();
  EXPECT_TRUE(host->text.mapped());
  EXPECT_EQ(host->invalid_utf8_bytes, 1u);
  EXPECT_EQ(host->nodes[0].name, "bad? byte");
  EXPECT_EQ(testing::read_text(dir.file("bad.json")), with_bad_byte);
}

}  // namespace
}  // namespace chakraflow
