// OutputFile's .gz outputs: one gzip member that zlib reads back whole, then an empty member that
// indexes its blocks, written in whole blocks, the same bytes for the same content however it was
// written; read back in blocks through workers, or in one pass where the index does not add up.
// Compiled twice: into common_test (ISA-L's deflate, where the build has it) and into
// gzip_zlib_test with file_io.cc built without ISA-L (zlib's deflate: a build without libisal, and
// the installed feeder library).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stages/common/file_io.h"
#include "stages/common/ordered_batches.h"
#include "tests/testing/threaded_batches.h"

#ifndef CHAKRAFLOW_GZIP_SUITE
#define CHAKRAFLOW_GZIP_SUITE GzipOutput
#endif

namespace chakraflow {
namespace {

namespace fs = std::filesystem;

// A directory of its own under the system's temporary one, removed with its files.
class Scratch {
 public:
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "gzip_output_XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data()) ? pattern : std::string();
  }
  ~Scratch() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  std::string file(const std::string& name) const { return dir_ + "/" + name; }
  bool ok() const { return !dir_.empty(); }

 private:
  std::string dir_;
};

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Several MB of JSON-like lines that compress well, with stretches of random bytes that do not:
// one line in 256 followed by one (`random_every` 256), or most of the text (16).
std::string sample_text(size_t bytes, uint64_t random_every = 256) {
  std::string text;
  uint64_t seed = 7;
  auto next = [&seed] { return seed = seed * 6364136223846793005ULL + 1442695040888963407ULL; };
  while (text.size() < bytes) {
    if (next() % random_every == 0) {
      for (int k = 0; k < 1000; ++k) text.push_back(static_cast<char>(next() >> 56));
    } else {
      text += "{\"id\": " + std::to_string(next() % 100000) +
              ", \"name\": \"aten::mm\", \"ts\": " + std::to_string(next() % 1000000) + "},\n";
    }
  }
  text.resize(bytes);
  return text;
}

// Writes `text` to `path` through OutputFile in pieces whose sizes follow `seed` (0: one piece),
// some through write(), some encoded in place through room()/keep().
Status write_in_pieces(const std::string& path, const std::string& text, uint64_t seed) {
  CF_ASSIGN_OR_RETURN(OutputFile out, OutputFile::open(path));
  size_t at = 0;
  while (at < text.size()) {
    seed = seed * 2862933555777941757ULL + 3037000493ULL;
    size_t n = seed == 3037000493ULL ? text.size() : (seed >> 33) % 400000;
    n = std::min(n, text.size() - at);
    if ((seed >> 20) % 2 == 0) {
      out.write(std::string_view(text).substr(at, n));
    } else {
      std::memcpy(out.room(n + 64), text.data() + at, n);
      out.keep(n);
    }
    at += n;
  }
  return out.commit();
}

// Inflates one gzip member with zlib; `rest`: the bytes after the member.
bool zlib_gunzip(const std::string& gz, std::string* text, size_t* rest) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return false;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  std::vector<char> buf(1 << 20);
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf.data());
    z.avail_out = static_cast<uInt>(buf.size());
    rc = inflate(&z, Z_NO_FLUSH);
    text->append(buf.data(), buf.size() - z.avail_out);
  }
  *rest = z.avail_in;
  inflateEnd(&z);
  return rc == Z_STREAM_END;
}

// Inflates the first member of a .gz output with zlib, then the index member after it (empty):
// true when both are whole and nothing follows them.
bool zlib_gunzip_output(const std::string& gz, std::string* text) {
  size_t rest = 0;
  if (!zlib_gunzip(gz, text, &rest) || rest == 0) return false;
  std::string index_text;
  size_t after_index = 1;
  const bool index_ok = zlib_gunzip(gz.substr(gz.size() - rest), &index_text, &after_index);
  return index_ok && index_text.empty() && after_index == 0;
}

TEST(CHAKRAFLOW_GZIP_SUITE, ZlibReadsTheMemberAndItsIndexWrittenInWholeBlocks) {
  Scratch dir;
  ASSERT_TRUE(dir.ok());
  // Mostly random: many compressed blocks, and a compressor that hands on short pieces shows.
  const std::string text = sample_text(5u << 20, 16);
  const std::string path = dir.file("out.json.gz");
  auto opened = OutputFile::open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  OutputFile out = std::move(*opened);
  for (size_t at = 0; at < text.size(); at += 70001) {
    out.write(std::string_view(text).substr(at, 70001));
  }
  ASSERT_TRUE(out.commit().ok());
  EXPECT_EQ(out.bytes_written(), text.size());  // the bytes before compression
  const std::string gz = contents(path);
  ASSERT_GT(gz.size(), 18u);
  EXPECT_LT(gz.size(), text.size());  // compressed
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  EXPECT_EQ(gz.substr(4, 4), std::string(4, '\0'));  // no time in the header
  std::string back;
  ASSERT_TRUE(zlib_gunzip_output(gz, &back));  // the text's member, then the (empty) index
  EXPECT_TRUE(back == text);
  // The compressed bytes went out in whole blocks: one write() per block, the last one short.
  const size_t block = OutputFile::kBlockBytes;
  EXPECT_GE(gz.size(), 2 * block);
  EXPECT_EQ(out.write_calls(), (gz.size() + block - 1) / block);
  // And read back by the trace readers.
  auto read = read_input_file(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_TRUE(*read == text);
}

// The same content gives the same bytes, whatever pieces the writer handed it in.
TEST(CHAKRAFLOW_GZIP_SUITE, SameContentSameBytesWhateverThePieces) {
  Scratch dir;
  ASSERT_TRUE(dir.ok());
  const std::string text = sample_text(3u << 20);
  std::string first;
  for (uint64_t seed : {0, 1, 2, 3}) {
    const std::string path = dir.file("p" + std::to_string(seed) + ".et.gz");
    const Status s = write_in_pieces(path, text, seed);
    ASSERT_TRUE(s.ok()) << s.message();
    const std::string gz = contents(path);
    if (seed == 0) {
      first = gz;
      EXPECT_LT(gz.size(), text.size() / 2);  // compressed
      std::string back;
      size_t rest = 1;
      ASSERT_TRUE(zlib_gunzip(gz, &back, &rest));
      EXPECT_TRUE(back == text);
      continue;
    }
    EXPECT_TRUE(gz == first) << "pieces of seed " << seed << " gave other bytes";
  }
}

// Compressed several blocks at once: the same bytes as on the writing thread.
TEST(CHAKRAFLOW_GZIP_SUITE, SameBytesWhenBlocksAreCompressedConcurrently) {
  Scratch dir;
  ASSERT_TRUE(dir.ok());
  const std::string text = sample_text(4u << 20);
  ASSERT_TRUE(write_in_pieces(dir.file("alone.gz"), text, 1).ok());
  const testing::ThreadedBatches workers(4);
  for (uint64_t seed : {0, 2}) {
    const std::string path = dir.file("workers" + std::to_string(seed) + ".gz");
    {
      auto opened = OutputFile::open(path);
      ASSERT_TRUE(opened.ok());
      OutputFile out = std::move(*opened);
      out.compress_on(&workers);
      size_t at = 0;
      for (uint64_t k = seed; at < text.size(); ++k) {
        // Pieces of up to 3 MB: many blocks in one write.
        const size_t n = std::min<size_t>(text.size() - at, (k * 7919 % 12 + 1) * 250000);
        out.write(std::string_view(text).substr(at, n));
        at += n;
      }
      ASSERT_TRUE(out.commit().ok());
    }
    EXPECT_TRUE(contents(path) == contents(dir.file("alone.gz"))) << "seed " << seed;
  }
  std::string back;
  ASSERT_TRUE(zlib_gunzip_output(contents(dir.file("workers0.gz")), &back));
  EXPECT_TRUE(back == text);
}

// Nothing written: still a valid (empty) member and its index; a discarded output leaves nothing.
TEST(CHAKRAFLOW_GZIP_SUITE, EmptyAndDiscardedOutputs) {
  Scratch dir;
  ASSERT_TRUE(dir.ok());
  {
    auto out = OutputFile::open(dir.file("empty.gz"));
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE(out->commit().ok());
  }
  std::string back;
  ASSERT_TRUE(zlib_gunzip_output(contents(dir.file("empty.gz")), &back));
  EXPECT_TRUE(back.empty());
  EXPECT_EQ(indexed_gzip_text_size(dir.file("empty.gz")), std::optional<uint64_t>(0));
  {
    auto out = OutputFile::open(dir.file("gone.gz"));
    ASSERT_TRUE(out.ok());
    out->write(sample_text(1u << 20));
    out->discard();
  }
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir.file(""))) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1u);  // empty.gz only: no temporary file left behind
}

// What zlib's gz* functions (the feeder's reader, and most tools) read of a file: every member.
std::string gzread_all(const std::string& path) {
  std::string text;
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return text;
  std::vector<char> buf(1 << 20);
  int n = 0;
  while ((n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()))) > 0)
    text.append(buf.data(), n);
  gzclose(f);
  return text;
}

void put_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The block index: the text's size without reading it, the blocks inflated through workers (the
// same text as in one pass and as zlib reads it), and the pieces it is made of.
TEST(CHAKRAFLOW_GZIP_SUITE, ReadBackInBlocksThroughWorkers) {
  Scratch dir;
  ASSERT_TRUE(dir.ok());
  // Mostly random: over 1 MB compressed (a file InputText maps), 21 blocks.
  const std::string text = sample_text((5u << 20) + 12345, 16);
  const std::string path = dir.file("out.json.gz");
  ASSERT_TRUE(write_in_pieces(path, text, 2).ok());
  const std::string gz = contents(path);
  ASSERT_GT(gz.size(), size_t{1} << 20);
  EXPECT_EQ(indexed_gzip_text_size(path), std::optional<uint64_t>(text.size()));
  {  // through a descriptor the caller has open, its offset left where it was
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::lseek(fd, 2, SEEK_SET), 2);
    EXPECT_EQ(indexed_gzip_text_size(fd, gz.size()), std::optional<uint64_t>(text.size()));
    EXPECT_EQ(::lseek(fd, 0, SEEK_CUR), 2);
    ::close(fd);
  }
  EXPECT_EQ(input_text_size(path), text.size());  // not the index member's ISIZE (0)
  EXPECT_TRUE(gzread_all(path) == text);
  const testing::ThreadedBatches workers(4);
  auto in_blocks = InputText::read(path, &workers);
  ASSERT_TRUE(in_blocks.ok()) << in_blocks.status().message();
  EXPECT_TRUE(std::string_view(*in_blocks) == text);
  EXPECT_TRUE(in_blocks->inflated_in_blocks());
  EXPECT_EQ(std::string(in_blocks->data() + text.size(), kInputPadding),
            std::string(kInputPadding, '\0'));
  auto in_one_pass = InputText::read(path);
  ASSERT_TRUE(in_one_pass.ok()) << in_one_pass.status().message();
  EXPECT_TRUE(std::string_view(*in_one_pass) == text);
  EXPECT_FALSE(in_one_pass->inflated_in_blocks());
  // The index member: the file's last bytes, its own size just before its empty deflate data
  // (03 00) and a trailer of zeros.
  ASSERT_GT(gz.size(), 40u);
  EXPECT_EQ(gz.substr(gz.size() - 10), std::string("\x03\x00", 2) + std::string(8, '\0'));
  uint32_t member = 0;
  std::memcpy(&member, gz.data() + gz.size() - 14, 4);  // little-endian, as x86 and ARM
  const size_t blocks = (text.size() + OutputFile::kBlockBytes - 1) / OutputFile::kBlockBytes;
  EXPECT_EQ(member, 22u + 29u + 4u * blocks);
  EXPECT_EQ(gz.substr(gz.size() - member + 12, 2), "Cf");
}

// A .gz output read by offset in its text, block by block (what the feeders do with a .et.gz):
// each block's text, in any order; a block whose bytes changed is an error naming the file and
// the block; a file without an index has no such reader.
TEST(CHAKRAFLOW_GZIP_SUITE, BlocksReadOneByOneByTheirIndex) {
  Scratch dir;
  ASSERT_TRUE(dir.ok());
  const std::string text = sample_text((3u << 20) + 777, 16);
  const std::string path = dir.file("trace.et.gz");
  ASSERT_TRUE(write_in_pieces(path, text, 3).ok());
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  auto reader = GzipBlockReader::open(fd, path);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->text_bytes(), text.size());
  const uint64_t block = reader->block_text();
  EXPECT_EQ(block, OutputFile::kBlockBytes);
  const uint64_t blocks = (text.size() + block - 1) / block;
  std::string got;
  for (uint64_t b = blocks; b-- > 0;) {
    const Status s = reader->read_block(b, &got);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(got == std::string_view(text).substr(b * block, block)) << "block " << b;
  }
  EXPECT_LT(reader->bytes_read(), contents(path).size());  // the blocks' bytes, not the index
  EXPECT_FALSE(reader->read_block(blocks, &got).ok());
  ::close(fd);

  // A byte of block 5 changed.
  std::string gz = contents(path);
  const std::string corrupt_path = dir.file("corrupt.et.gz");
  gz[10 + 5 * (gz.size() / (blocks + 1))] ^= 0x21;
  std::ofstream(corrupt_path, std::ios::binary | std::ios::trunc) << gz;
  const int cfd = ::open(corrupt_path.c_str(), O_RDONLY);
  ASSERT_GE(cfd, 0);
  auto corrupt = GzipBlockReader::open(cfd, corrupt_path);
  ASSERT_NE(corrupt, nullptr);
  size_t failed = 0;
  for (uint64_t b = 0; b < blocks; ++b) {
    const Status s = corrupt->read_block(b, &got);
    if (s.ok()) {
      // The change may leave a block that inflates; then it is another text.
      if (got != std::string_view(text).substr(b * block, block)) ++failed;
      continue;
    }
    ++failed;
    EXPECT_NE(s.message().find("corrupt.et.gz"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("block " + std::to_string(b)), std::string::npos) << s.message();
  }
  EXPECT_GE(failed, 1u);
  ::close(cfd);

  // zlib's own gzip: no index.
  const std::string other = dir.file("other.gz");
  gzFile f = gzopen(other.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_GT(gzwrite(f, text.data(), 1000), 0);
  ASSERT_EQ(gzclose(f), Z_OK);
  const int ofd = ::open(other.c_str(), O_RDONLY);
  ASSERT_GE(ofd, 0);
  EXPECT_EQ(GzipBlockReader::open(ofd, other), nullptr);
  ::close(ofd);
}

// Everything a GzipFileReader gives of `path`, asked for in pieces of the sizes in `pieces` (in
// turn); `error`: its message where it failed.
std::string read_with_gzip_file_reader(const std::string& path, const std::vector<size_t>& pieces,
                                       std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return "cannot open";
  GzipFileReader reader(fd);
  std::string text;
  for (size_t k = 0;; ++k) {
    const size_t n = pieces[k % pieces.size()];
    const size_t at = text.size();
    text.resize(at + n);
    const GzipFileReader::Result r = reader.read(text.data() + at, n);
    text.resize(at + r.got);
    if (!r.ok) {
      *error = r.read_errno != 0 ? std::strerror(r.read_errno) : r.message;
      break;
    }
    if (r.got == 0) break;
  }
  ::close(fd);
  return text;
}

// The reader EtReader reads a .et.gz through: every member (our output's two, and members of
// another writer after them), in pieces of any size; a file cut short or corrupt is an error.
TEST(CHAKRAFLOW_GZIP_SUITE, GzipFileReaderReadsEveryMemberInPieces) {
  Scratch dir;
  ASSERT_TRUE(dir.ok());
  const std::string text = sample_text((3u << 20) + 99, 16);
  const std::string path = dir.file("trace.et.gz");
  ASSERT_TRUE(write_in_pieces(path, text, 1).ok());
  for (const std::vector<size_t>& pieces : std::vector<std::vector<size_t>>{
           {size_t{1} << 20}, {1, 7, 4096, 65536}, {size_t{5} << 20}}) {
    std::string error;
    EXPECT_TRUE(read_with_gzip_file_reader(path, pieces, &error) == text) << pieces[0];
    EXPECT_EQ(error, "");
  }
  // zlib's members after ours (an empty one, then a text).
  const std::string tail = "and a member of zlib's\n";
  gzFile f = gzopen(path.c_str(), "ab");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzclose(f), Z_OK);
  f = gzopen(path.c_str(), "ab");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, tail.data(), static_cast<unsigned>(tail.size())),
            static_cast<int>(tail.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
  std::string error;
  EXPECT_TRUE(read_with_gzip_file_reader(path, {size_t{1} << 20}, &error) == text + tail);
  EXPECT_EQ(error, "");
  // Cut short: the text up to about the cut, then an error.
  const std::string gz = contents(path);
  const std::string cut = dir.file("cut.et.gz");
  std::ofstream(cut, std::ios::binary | std::ios::trunc) << gz.substr(0, gz.size() / 2);
  const std::string part = read_with_gzip_file_reader(cut, {65536}, &error);
  EXPECT_NE(error, "");
  EXPECT_LT(part.size(), text.size());
  EXPECT_TRUE(std::string_view(text).substr(0, part.size()) == part);
  // A changed byte in the text's member: its CRC, if nothing before, finds it.
  std::string changed = gz;
  changed[gz.size() / 2] = static_cast<char>(changed[gz.size() / 2] ^ 0x10);
  const std::string bad = dir.file("bad.et.gz");
  std::ofstream(bad, std::ios::binary | std::ios::trunc) << changed;
  error.clear();
  read_with_gzip_file_reader(bad, {65536}, &error);
  EXPECT_NE(error, "");
}

// A gzip'd file without our index (zlib's own writer) has no indexed size and is read in one pass.
TEST(CHAKRAFLOW_GZIP_SUITE, OtherGzipFilesAreReadInOnePass) {
  Scratch dir;
  ASSERT_TRUE(dir.ok());
  const std::string text = sample_text(3u << 20, 16);
  const std::string path = dir.file("zlib.json.gz");
  gzFile f = gzopen(path.c_str(), "wb1");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
  EXPECT_EQ(indexed_gzip_text_size(path), std::nullopt);
  EXPECT_EQ(input_text_size(path), text.size());  // its ISIZE
  const testing::ThreadedBatches workers(4);
  auto read = InputText::read(path, &workers);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_TRUE(std::string_view(*read) == text);
  EXPECT_FALSE(read->inflated_in_blocks());
}

// An index that does not add up is not used (the file is read in one pass: the same text); a
// block that does not inflate is reported as the one-pass reading reports it, naming the file.
TEST(CHAKRAFLOW_GZIP_SUITE, AnIndexThatDoesNotHoldIsNotTrusted) {
  Scratch dir;
  ASSERT_TRUE(dir.ok());
  const std::string text = sample_text(4u << 20, 16);
  const std::string path = dir.file("out.json.gz");
  ASSERT_TRUE(write_in_pieces(path, text, 0).ok());
  const std::string gz = contents(path);
  uint32_t member = 0;
  std::memcpy(&member, gz.data() + gz.size() - 14, 4);
  const size_t index_at = gz.size() - member;  // the index member's header
  const size_t sizes_at = index_at + 12 + 4 + 1 + 4 + 8 + 4;
  const testing::ThreadedBatches workers(4);
  // The text read through workers, when it was read in one pass (the index not trusted).
  auto read_back = [&](const std::string& bytes) -> StatusOr<std::string> {
    const std::string p = dir.file("tampered.json.gz");
    put_file(p, bytes);
    CF_ASSIGN_OR_RETURN(InputText t, InputText::read(p, &workers));
    if (t.inflated_in_blocks()) return Status::error("read in blocks");
    return std::string(t);
  };
  auto untouched = InputText::read(path, &workers);
  ASSERT_TRUE(untouched.ok());
  EXPECT_TRUE(untouched->inflated_in_blocks());
  // Two blocks' sizes moved by a byte each (the total still adds up): the blocks do not inflate
  // as indexed.
  std::string moved = gz;
  moved[sizes_at] = static_cast<char>(moved[sizes_at] + 1);
  moved[sizes_at + 4] = static_cast<char>(moved[sizes_at + 4] - 1);
  auto from_moved = read_back(moved);
  ASSERT_TRUE(from_moved.ok()) << from_moved.status().message();
  EXPECT_TRUE(*from_moved == text);
  // Another version of the index: not read as one.
  std::string version = gz;
  version[index_at + 16] = 2;
  put_file(dir.file("version.json.gz"), version);
  EXPECT_EQ(indexed_gzip_text_size(dir.file("version.json.gz")), std::nullopt);
  auto from_version = read_back(version);
  ASSERT_TRUE(from_version.ok()) << from_version.status().message();
  EXPECT_TRUE(*from_version == text);
  // The text's CRC in the first member's trailer changed: every block inflates, but the text is
  // not the member's.
  std::string crc = gz;
  const size_t trailer_at = index_at - 8;
  crc[trailer_at] = static_cast<char>(crc[trailer_at] ^ 1);
  auto from_crc = read_back(crc);
  ASSERT_FALSE(from_crc.ok());
  EXPECT_NE(from_crc.status().message().find("tampered.json.gz"), std::string::npos);
  EXPECT_NE(from_crc.status().message().find("corrupt gzip data"), std::string::npos)
      << from_crc.status().message();
  // A byte of a block's compressed data changed: corrupt, as in one pass.
  std::string corrupt = gz;
  corrupt[gz.size() / 3] = static_cast<char>(corrupt[gz.size() / 3] ^ 0x5a);
  auto from_corrupt = read_back(corrupt);
  ASSERT_FALSE(from_corrupt.ok());
  auto in_one_pass = InputText::read(dir.file("tampered.json.gz"));
  ASSERT_FALSE(in_one_pass.ok());
  EXPECT_EQ(from_corrupt.status().message(), in_one_pass.status().message());
  EXPECT_NE(from_corrupt.status().message().find("tampered.json.gz"), std::string::npos);
}

}  // namespace
}  // namespace chakraflow
