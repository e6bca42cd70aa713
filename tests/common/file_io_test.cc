#include "stages/common/file_io.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "stages/link/host_et_loader.h"
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
// every size, across the buffer's flushes, two larger than the buffer (written and encoded in
// place: both handed on in slices), room asked for and only partly kept, and a moved OutputFile,
// in plain and gzip files.
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
      const size_t size = piece == 1500 || piece == 1501 ? (3u << 20) : next() % 5000;
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
    // Each write() to the file but the last is one whole block at a multiple of it: as many
    // writes as blocks (a write that crossed a block boundary, or fell short of one, adds one).
    if (std::string_view(name).ends_with(".bin")) {
      const size_t block = OutputFile::kBlockBytes;
      EXPECT_EQ(out.write_calls(), (expected.size() + block - 1) / block);
    }
  }
}

// A pipe is written as a stream, in the same blocks (pieces of every size, some larger than a
// block, the buffered bytes and a piece's start written together): the reader gets every byte in
// order.
TEST(FileIo, AStreamGetsEveryByteInOrder) {
  TempDir dir;
  const std::string fifo = dir.file("out.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  std::string expected;
  uint64_t seed = 11;
  for (size_t piece = 0; expected.size() < (3u << 20); ++piece) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    const size_t size = piece % 7 == 3 ? (700u << 10) : (seed >> 40) % 3000;
    for (size_t k = 0; k < size; ++k) expected.push_back(static_cast<char>((seed >> 8) + k * 31));
    expected.push_back('\n');
  }
  std::string read_back;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    read_back.assign(std::istreambuf_iterator<char>(in), {});
  });
  auto opened = OutputFile::open(fifo);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  OutputFile out = std::move(*opened);
  EXPECT_TRUE(out.streaming());
  for (size_t at = 0; at < expected.size();) {
    const size_t end = expected.find('\n', at) + 1;
    out.write(std::string_view(expected).substr(at, end - at));
    at = end;
  }
  ASSERT_TRUE(out.commit().ok());
  reader.join();
  EXPECT_EQ(read_back.size(), expected.size());
  EXPECT_TRUE(read_back == expected);
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

// An existing file is replaced whole (by swapping the names where the filesystem can): the new
// content under the name, the old file's mode kept, a reader of the old file undisturbed, a
// symlink kept with its target replaced, and nothing else left in the directory, large or small.
TEST(FileIo, ReplacingAFileLeavesOnlyTheNewContent) {
  TempDir dir;
  const std::string path = dir.file("result.json");
  testing::write_text(path, "old content");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  std::ifstream reader(path);
  for (int round = 0; round < 2; ++round) {
    auto out = OutputFile::open(path);
    ASSERT_TRUE(out.ok());
    out->write(round == 0 ? "new" : "newer");
    ASSERT_TRUE(out->commit().ok());
  }
  EXPECT_EQ(testing::read_text(path), "newer");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  std::string held;
  std::getline(reader, held);
  EXPECT_EQ(held, "old content");

  const std::string link = dir.file("link.json");
  std::filesystem::create_symlink(path, link);
  ASSERT_TRUE(write_file_atomically(link, "through the link").ok());
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(testing::read_text(path), "through the link");
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 2u);

  // A large old file (its pages dropped on a thread of their own): gone from the directory at
  // once, still whole for a reader that holds it.
  const std::string big = dir.file("big.json");
  testing::write_text(big, std::string(17 << 20, 'o'));
  std::ifstream big_reader(big, std::ios::binary);
  ASSERT_TRUE(write_file_atomically(big, "small now").ok());
  EXPECT_EQ(testing::read_text(big), "small now");
  entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 3u);
  big_reader.seekg(0, std::ios::end);
  EXPECT_EQ(static_cast<size_t>(big_reader.tellg()), size_t{17} << 20);
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

// A gzip'd text is inflated into memory of its own: padded with zeros, writable, and grown past
// the size the last member's trailer gives (here 5 bytes, for 300,005 bytes in all).
// What a file's text takes in memory, told without reading it: a plain file's size; a gzip'd
// file's inflated size (its ISIZE trailer) when larger than the file; 0 for no regular file.
TEST(FileIo, InputTextSizeIsTheInflatedSize) {
  TempDir dir;
  const std::string text(1 << 20, 'x');
  const std::string plain = dir.file("plain.json");
  {
    std::ofstream out(plain, std::ios::binary);
    out << text;
  }
  EXPECT_EQ(input_text_size(plain), text.size());
  const std::string gz = dir.file("text.json.gz");
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  gzclose(f);
  ASSERT_LT(std::filesystem::file_size(gz), text.size() / 10);
  EXPECT_EQ(input_text_size(gz), text.size());
  // A gzip'd file whose trailer says less than its own size: its size.
  const std::string tiny = dir.file("tiny.json.gz");
  f = gzopen(tiny.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, "{}", 2), 2);
  gzclose(f);
  EXPECT_EQ(input_text_size(tiny), std::filesystem::file_size(tiny));
  EXPECT_EQ(input_text_size(dir.file("absent.json")), 0u);
  EXPECT_EQ(input_text_size(dir.path().string()), 0u);
}

TEST(FileIo, InputTextInflatesGzipPastItsSizeHint) {
  TempDir dir;
  std::string path = dir.file("members.json.gz");
  const std::string big(300000, 'x');
  for (const std::string& part : {big, std::string("tail!")}) {
    gzFile f = gzopen(path.c_str(), "ab");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, part.data(), static_cast<unsigned>(part.size())),
              static_cast<int>(part.size()));
    gzclose(f);
  }
  auto text = InputText::read(path);
  ASSERT_TRUE(text.ok()) << text.status().message();
  ASSERT_EQ(text->size(), big.size() + 5);
  EXPECT_EQ(std::string_view(*text), big + "tail!");
  ASSERT_GE(text->capacity(), text->size() + kInputPadding);
  for (size_t i = 0; i < kInputPadding; ++i) ASSERT_EQ(text->data()[text->size() + i], '\0');
  text->mutable_data()[0] = 'y';
  EXPECT_EQ(text->data()[0], 'y');
  InputText moved = std::move(*text);
  EXPECT_EQ(moved.size(), big.size() + 5);
  EXPECT_EQ(moved.data()[1], 'x');

  // Corrupt deflate data is an error naming the file and the place, never a short text.
  std::string raw;
  {
    std::ifstream in(path, std::ios::binary);
    raw.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(raw.size(), 100u);
  raw[raw.size() / 3] ^= 0x55;
  raw[raw.size() / 3 + 1] ^= 0x55;
  std::string bad = dir.file("bad.json.gz");
  testing::write_text(bad, raw);
  auto corrupt = InputText::read(bad);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_NE(corrupt.status().message().find("bad.json.gz"), std::string::npos);
  EXPECT_NE(corrupt.status().message().find("gzip"), std::string::npos)
      << corrupt.status().message();
}

// A gzip'd file of 1 MB or more is inflated from its mapping (not read into memory first): the
// same text, padded, writable, over several members; corrupt or truncated, an error naming it.
TEST(FileIo, InputTextInflatesALargeGzipFromItsMapping) {
  TempDir dir;
  // Digits of a linear congruential sequence: about 2 MB compressed.
  std::string text;
  uint64_t x = 12345;
  for (int i = 0; i < 4 << 20; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    text.push_back(static_cast<char>('0' + (x >> 60) % 10));
  }
  const std::string path = dir.file("large.json.gz");
  for (const std::string_view part :
       {std::string_view(text).substr(0, 3 << 20), std::string_view(text).substr(3 << 20)}) {
    gzFile f = gzopen(path.c_str(), "ab");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, part.data(), static_cast<unsigned>(part.size())),
              static_cast<int>(part.size()));
    gzclose(f);
  }
  ASSERT_GE(std::filesystem::file_size(path), size_t{1} << 20);
  auto read = InputText::read(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), text.size());
  EXPECT_TRUE(std::string_view(*read) == text);
  for (size_t i = 0; i < kInputPadding; ++i) ASSERT_EQ(read->data()[read->size() + i], '\0');
  read->mutable_data()[0] = 'y';
  EXPECT_EQ(read->data()[0], 'y');
  EXPECT_EQ(testing::read_text(path).substr(0, 16), text.substr(0, 16));  // the file unchanged

  std::string raw;
  {
    std::ifstream in(path, std::ios::binary);
    raw.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::string corrupt = raw;
  for (size_t i = raw.size() / 2; i < raw.size() / 2 + 64; ++i) corrupt[i] ^= 0x5a;
  const std::string bad = dir.file("corrupt.json.gz");
  testing::write_text(bad, corrupt);
  auto broken = InputText::read(bad);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("corrupt.json.gz"), std::string::npos);
  EXPECT_NE(broken.status().message().find("gzip"), std::string::npos) << broken.status().message();
  const std::string cut = dir.file("cut.json.gz");
  testing::write_text(cut, raw.substr(0, raw.size() - 4096));
  auto truncated = InputText::read(cut);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("cut.json.gz"), std::string::npos);
  EXPECT_NE(truncated.status().message().find("truncated"), std::string::npos)
      << truncated.status().message();
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
  std::string text =
      std::string(R"({"schema": "1.1.1-chakra.0.0.4", "nodes": [{"id": 1, "name": ")") +
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
  // At a multiple of 2 MB (a file cached in 2 MB folios is mapped a folio per entry), writable
  // in the process's copy: the padding too.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(text->data()) % (size_t{2} << 20), 0u);
  InputText& copy = *text;
  copy.mutable_data()[0] = 'X';
  copy.mutable_data()[size + 1] = 'Y';
  EXPECT_EQ(text->data()[0], 'X');
  EXPECT_EQ(testing::read_text(dir.file("big.json")).front(), '{');
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

// The stale-file sweep removes "<output>.tmp.<pid>.<n>" (and the temporary file of a temporary
// output) of processes that are gone, and nothing else.
TEST(FileIo, StaleTempsOfDeadProcessesAreRemovedAndNothingElse) {
  testing::TempDir dir;
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);  // a pid no process has now
  const std::string gone = std::to_string(child), live = std::to_string(::getpid());
  const std::vector<std::string> stale = {"out.et.tmp." + gone + ".0",
                                          "out.et.tmp." + gone + ".12.tmp." + gone + ".3"};
  const std::vector<std::string> kept = {
      "out.et.tmp." + live + ".0",   // a live process's
      "out.et.tmp.notes",            // a user's file
      "out.et.tmp." + gone + ".x",   // not a counter
      "other.et.tmp." + gone + ".0"  // another output's: removed when that one is written
  };
  for (const auto& name : stale) testing::write_text(dir.file(name), "x");
  for (const auto& name : kept) testing::write_text(dir.file(name), "x");
  remove_stale_temps(dir.file("out.et"));
  for (const auto& name : stale) EXPECT_FALSE(std::filesystem::exists(dir.file(name))) << name;
  for (const auto& name : kept) EXPECT_TRUE(std::filesystem::exists(dir.file(name))) << name;
}

TEST(FileIo, AnOutputThatIsAnInputIsNamed) {
  testing::TempDir dir;
  testing::write_text(dir.file("in.json"), "{}");
  ASSERT_EQ(::link(dir.file("in.json").c_str(), dir.file("alias.json").c_str()), 0);
  Status same = check_output_is_not_input(dir.file("alias.json"), {dir.file("in.json")});
  ASSERT_FALSE(same.ok());
  EXPECT_NE(same.message().find("is the input " + dir.file("in.json")), std::string::npos)
      << same.message();
  EXPECT_TRUE(check_output_is_not_input(dir.file("new.json"), {dir.file("in.json")}).ok());
  EXPECT_TRUE(check_output_is_not_input("-", {dir.file("in.json")}).ok());
}

// SIGTERM removes the registered files and ends the process by the signal.
TEST(FileIo, ASignalRemovesRegisteredFilesThenEndsTheProcess) {
  testing::TempDir dir;
  const std::string temp = dir.file("out.et.tmp.1.0");
  const pid_t child = ::fork();
  if (child == 0) {
    ::signal(SIGTERM, SIG_DFL);
    install_cleanup_on_signals();
    auto out = OutputFile::open(dir.file("out.et"));
    RemoveOnSignal guard(temp);
    std::ofstream(temp) << "partial";
    out->write("partial");
    ::raise(SIGTERM);
    ::_exit(0);  // not reached
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_FALSE(std::filesystem::exists(temp));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "the OutputFile's temporary file stayed";
}

// A pipe is read to its end (its size is 0); a NUL byte in a stream stops the read.
TEST(FileIo, StreamsAreReadToTheirEndAndStopOnANulByte) {
  testing::TempDir dir;
  const std::string fifo = dir.file("in.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const std::string payload(200000, 'j');  // several pipe buffers
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << payload; });
  auto text = read_input_file(fifo);
  writer.join();
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, payload);
  std::thread nul_writer([&] { std::ofstream(fifo, std::ios::binary) << "{\"a\": 1}" << '\0'; });
  auto nul = read_input_file(fifo);
  nul_writer.join();
  ASSERT_FALSE(nul.ok());
  EXPECT_NE(nul.status().message().find("byte 8: a NUL byte"), std::string::npos)
      << nul.status().message();
}

}  // namespace
}  // namespace chakraflow
