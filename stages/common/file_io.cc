#include "stages/common/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#if CHAKRAFLOW_HAVE_ISAL
#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "stages/common/ordered_batches.h"
#include "stages/common/prefault.h"

namespace chakraflow {
namespace {

std::string errno_text() {
  return std::strerror(errno);
}

// What a process may hold in memory of one input: its physical memory (more could never be
// parsed). An endless stream stops there with an error instead of taking the machine down.
uint64_t input_memory_bound() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return uint64_t{64} << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

// A text (JSON, YAML) never holds a NUL byte: one in a stream's first bytes (/dev/zero) is not a
// text, and reading on would never end.
Status check_text_chunk(const std::string& path, const char* data, size_t n, uint64_t offset,
                        bool decompressed) {
  const void* nul = std::memchr(data, 0, n);
  if (nul == nullptr) return Status();
  const uint64_t at = offset + static_cast<uint64_t>(static_cast<const char*>(nul) - data);
  return Status::errorf("{}: {}byte {}: a NUL byte: not a text file (JSON or YAML)", path,
                        decompressed ? "decompressed " : "", at);
}

Status too_large(const std::string& path, uint64_t at, bool decompressed) {
  return Status::errorf(
      "{}: {}byte {}: the input is larger than this machine's memory ({:.1f} GB): an endless "
      "stream?",
      path, decompressed ? "decompressed " : "", at, input_memory_bound() / 1e9);
}

// A growable byte buffer that is not written before it is filled: anonymous memory mapped, grown
// by mremap, its pages populated a stretch at a time just before they are filled (no fault per
// page as the inflater writes them, and the kernel's zeroing of a stretch still in the cache when
// the inflater overwrites it).
class MappedBuffer {
 public:
  MappedBuffer() = default;
  ~MappedBuffer() {
    if (data_ != nullptr) ::munmap(data_, capacity_);
  }
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;

  char* data() const { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  void set_size(size_t n) { size_ = n; }
  // At least `n` bytes (rounded up to pages); false when the memory cannot be had.
  bool reserve(size_t n) {
    if (n <= capacity_) return true;
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    n = (n + page - 1) / page * page;
    void* p = data_ == nullptr
                  ? ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                  : ::mremap(data_, capacity_, n, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) return false;
    data_ = static_cast<char*>(p);
    capacity_ = n;
    return true;
  }
  // The pages of [from, from + n) (within the capacity) faulted in for writing, in one call.
  void populate(size_t from, size_t n) const {
    if (from < capacity_) prefault_for_writing(data_ + from, std::min(n, capacity_ - from));
  }
  // The mapping, for munmap by its new owner (`*len` bytes).
  char* release(size_t* len) {
    *len = capacity_;
    size_ = capacity_ = 0;
    return std::exchange(data_, nullptr);
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// One gzip member at a time, over ISA-L's igzip where the build has it (about 3x as fast as zlib
// on traces: docs/performance.md), else zlib. The installed feeder library is compiled without
// it, so that its users link zlib only.
class Inflater {
 public:
  enum Result { kMore, kMemberEnd, kError };
#if CHAKRAFLOW_HAVE_ISAL
  // `raw`: raw deflate data (a block of GzipBlockIndex), not gzip members.
  explicit Inflater(bool raw = false) : s_(std::make_unique<inflate_state>()), raw_(raw) {
    start();
  }
  void start() {
    isal_inflate_init(s_.get());
    s_->crc_flag = raw_ ? ISAL_DEFLATE : ISAL_GZIP;
  }
  void input(const char* p, uint32_t n) {
    s_->next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(p));
    s_->avail_in = n;
  }
  uint32_t avail_in() const {
    return s_->avail_in;
  }
  const char* next_in() const {
    return reinterpret_cast<const char*>(s_->next_in);
  }
  void output(char* p, uint32_t n) {
    s_->next_out = reinterpret_cast<uint8_t*>(p);
    s_->avail_out = n;
  }
  uint32_t avail_out() const {
    return s_->avail_out;
  }
  Result step() {
    rc_ = isal_inflate(s_.get());
    if (rc_ != ISAL_DECOMP_OK) return kError;
    return s_->block_state == ISAL_BLOCK_FINISH ? kMemberEnd : kMore;
  }
  // Starts the next member where the last one ended.
  void next_member() {
    const uint8_t* next = s_->next_in;
    const uint32_t avail = s_->avail_in;
    start();
    s_->next_in = const_cast<uint8_t*>(next);
    s_->avail_in = avail;
  }
  const char* error() const {
    switch (rc_) {
      case ISAL_INVALID_BLOCK:
        return "invalid deflate block";
      case ISAL_INVALID_SYMBOL:
        return "invalid deflate symbol";
      case ISAL_INVALID_LOOKBACK:
        return "invalid distance too far back";
      case ISAL_INVALID_WRAPPER:
        return "incorrect header check";
      case ISAL_UNSUPPORTED_METHOD:
        return "unknown compression method";
      case ISAL_INCORRECT_CHECKSUM:
        return "incorrect data check";
      default:
        return "inflate failed";
    }
  }

 private:
  // The decoding tables and the 32 KB history: about 48 KB, not for the stack.
  std::unique_ptr<inflate_state> s_;
  bool raw_;
  int rc_ = ISAL_DECOMP_OK;
#else
  explicit Inflater(bool raw = false) {
    ok_ = inflateInit2(&zs_, raw ? -15 : 15 + 32) == Z_OK;
  }
  ~Inflater() {
    if (ok_) inflateEnd(&zs_);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  void input(const char* p, uint32_t n) {
    zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(p));
    zs_.avail_in = n;
  }
  uint32_t avail_in() const {
    return zs_.avail_in;
  }
  const char* next_in() const {
    return reinterpret_cast<const char*>(zs_.next_in);
  }
  void output(char* p, uint32_t n) {
    zs_.next_out = reinterpret_cast<Bytef*>(p);
    zs_.avail_out = n;
  }
  uint32_t avail_out() const {
    return zs_.avail_out;
  }
  Result step() {
    if (!ok_) return kError;
    rc_ = inflate(&zs_, Z_NO_FLUSH);
    if (rc_ == Z_STREAM_END) return kMemberEnd;
    return rc_ == Z_OK || rc_ == Z_BUF_ERROR ? kMore : kError;
  }
  void start() {
    ok_ = inflateReset(&zs_) == Z_OK;
  }
  void next_member() {
    start();
  }
  const char* error() const {
    if (!ok_) return "cannot initialise zlib";
    return zs_.msg ? zs_.msg : "inflate failed";
  }

 private:
  z_stream zs_{};
  bool ok_ = false;
  int rc_ = Z_OK;
#endif
};

// The CRC-32 of gzip, continued over `text`.
uint32_t text_crc(uint32_t crc, std::string_view text) {
#if CHAKRAFLOW_HAVE_ISAL
  return crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(text.data()), text.size());
#else
  return static_cast<uint32_t>(
      crc32(crc, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())));
#endif
}

// Inflates one block of a .gz output (raw deflate ended by a full flush, GzipBlockIndex): true
// when its `n` compressed bytes give exactly `len` bytes of text.
bool inflate_block(Inflater& inflater, const char* in, uint32_t n, char* out, uint32_t len) {
  inflater.start();
  inflater.input(in, n);
  inflater.output(out, len);
  bool ok = inflater.step() == Inflater::kMore && inflater.avail_out() == 0;
  // The block's full flush (an empty stored block) may be left to read: it gives no text.
  char spare[64];
  while (ok && inflater.avail_in() > 0) {
    const uint32_t before = inflater.avail_in();
    inflater.output(spare, sizeof spare);
    ok = inflater.step() == Inflater::kMore && inflater.avail_out() == sizeof spare &&
         inflater.avail_in() < before;
  }
  return ok;
}

// ---- The block index of a .gz output ----------------------------------------------------------
// OutputFile writes a .gz output as one gzip member whose text is compressed in blocks of B bytes
// (the last one shorter), each on its own (no dictionary) and ended by a full flush, followed by
// an empty gzip member whose header's extra field (subfield "Cf") indexes the blocks, all numbers
// little-endian: the version (1 byte), B (4), the text's bytes T (8), the blocks n (4), each
// block's compressed bytes (4 each), the compressed bytes of the first member's final empty block
// (4), then the index member's own size (4), read from the file's end (just before the member's
// empty deflate data and trailer, its last 10 bytes). Any gzip reader reads the two members as the
// text; ours inflate the blocks concurrently where the index accounts for every byte of the file,
// else in one pass. One extra field holds the sizes of 16,376 blocks (4 GB of text at 256 KB): a
// longer output has no index member.
constexpr char kGzipHeader[10] = {'\x1f', '\x8b', 8, 0, 0, 0, 0, 0, 0, 3};       // no time, Unix
constexpr char kGzipIndexHeader[10] = {'\x1f', '\x8b', 8, 4, 0, 0, 0, 0, 0, 3};  // FEXTRA
constexpr char kGzipIndexId[2] = {'C', 'f'};
constexpr char kGzipIndexVersion = 1;
// The extra field's bytes but the block sizes: subfield id and length, version, B, T, n, the
// final block's size, the member's size.
constexpr size_t kGzipIndexFixedBytes = 4 + 1 + 4 + 8 + 4 + 4 + 4;
// The index member's bytes but its extra field: header, XLEN, empty deflate data, trailer.
constexpr size_t kGzipIndexMemberFixedBytes = 10 + 2 + 2 + 8;
// An empty final block of fixed Huffman codes: the index member's deflate data.
constexpr char kGzipEmptyFinalBlock[2] = {3, 0};
// The most an index member takes, and so what a reader reads of a file's end to find it.
constexpr size_t kGzipIndexMaxMemberBytes = kGzipIndexMemberFixedBytes + 65535;

uint64_t read_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int k = 0; k < bytes; ++k) v |= uint64_t{static_cast<unsigned char>(p[k])} << (8 * k);
  return v;
}

struct GzipBlockIndex {
  uint64_t text_bytes = 0;      // T
  uint64_t block_text = 0;      // B
  std::vector<uint64_t> begin;  // each block's first compressed byte, then the final block's
  uint64_t end_bytes = 0;       // the final empty block's compressed bytes
  uint64_t index_bytes = 0;     // the index member's
};

// The index of a file of `file_size` bytes ending with `tail`, when its last member is an index
// that accounts for every byte of the first member (header, blocks, final block, trailer).
std::optional<GzipBlockIndex> parse_block_index(std::string_view tail, uint64_t file_size) {
  constexpr size_t kLeast = kGzipIndexMemberFixedBytes + kGzipIndexFixedBytes;
  if (tail.size() < kLeast || file_size < tail.size()) return std::nullopt;
  const char* end = tail.data() + tail.size();
  if (std::memcmp(end - 10, kGzipEmptyFinalBlock, 2) != 0 || read_le(end - 8, 8) != 0) {
    return std::nullopt;
  }
  GzipBlockIndex index;
  index.index_bytes = read_le(end - 14, 4);
  if (index.index_bytes < kLeast || index.index_bytes > tail.size()) return std::nullopt;
  const char* m = end - index.index_bytes;
  const uint64_t xlen = index.index_bytes - kGzipIndexMemberFixedBytes;
  if (std::memcmp(m, kGzipIndexHeader, 10) != 0 || read_le(m + 10, 2) != xlen ||
      std::memcmp(m + 12, kGzipIndexId, 2) != 0 || read_le(m + 14, 2) != xlen - 4 ||
      m[16] != kGzipIndexVersion) {
    return std::nullopt;
  }
  const char* f = m + 17;
  index.block_text = read_le(f, 4);
  index.text_bytes = read_le(f + 4, 8);
  const uint64_t blocks = read_le(f + 12, 4);
  if (xlen - kGzipIndexFixedBytes != 4 * blocks || index.block_text == 0 ||
      blocks != (index.text_bytes + index.block_text - 1) / index.block_text) {
    return std::nullopt;
  }
  index.begin.reserve(blocks + 1);
  uint64_t at = sizeof kGzipHeader;
  for (uint64_t b = 0; b < blocks; ++b) {
    index.begin.push_back(at);
    at += read_le(f + 16 + 4 * b, 4);
  }
  index.begin.push_back(at);
  index.end_bytes = read_le(f + 16 + 4 * blocks, 4);
  if (at + index.end_bytes + 8 + index.index_bytes != file_size) return std::nullopt;
  return index;
}

// The block index of the regular file open as `fd`, of `size` bytes (read from its end).
std::optional<GzipBlockIndex> read_block_index(int fd, uint64_t size) {
  std::string tail(std::min<uint64_t>(size, kGzipIndexMaxMemberBytes), '\0');
  const off_t at = static_cast<off_t>(size - tail.size());
  if (::pread(fd, tail.data(), tail.size(), at) != static_cast<ssize_t>(tail.size())) {
    return std::nullopt;
  }
  return parse_block_index(tail, size);
}

// Inflates the blocks of `gz` (a whole file, `index` its block index) into `out`, padded by
// kInputPadding, several at once through `workers`, each task's stretch of `out` populated by the
// task. False where the file is not what its index says (a block that does not inflate to its
// share of the text, a text whose CRC or size is not the member's): the caller reads it in one
// pass then, which names the problem.
bool gunzip_blocks(std::string_view gz, const GzipBlockIndex& index, const OrderedBatches& workers,
                   MappedBuffer& out) {
  if (std::memcmp(gz.data(), kGzipHeader, sizeof kGzipHeader) != 0) return false;
  const uint64_t total = index.text_bytes;
  const uint64_t block = index.block_text;
  const size_t blocks = index.begin.size() - 1;
  const char* trailer = gz.data() + index.begin[blocks] + index.end_bytes;
  if (read_le(trailer + 4, 4) != (total & 0xffffffffu)) return false;
  if (total > input_memory_bound() || !out.reserve(total + kInputPadding)) return false;
  // A task inflates 4 MB of text at 256 KB blocks: few tasks, each one long enough to populate
  // its pages in one call.
  constexpr size_t kBlocksPerTask = 16;
  std::vector<uint32_t> crcs(blocks);
  std::atomic<bool> failed{false};
  workers.for_each(range_count(blocks, kBlocksPerTask), [&](size_t task) {
    const size_t first = task * kBlocksPerTask;
    const size_t last = std::min(blocks, first + kBlocksPerTask);
    if (first >= last || failed.load(std::memory_order_relaxed)) return;
    out.populate(first * block, std::min(total, last * block) - first * block);
    Inflater inflater(/*raw=*/true);
    for (size_t b = first; b < last; ++b) {
      const uint64_t from = b * block;
      const auto len = static_cast<uint32_t>(std::min(block, total - from));
      const auto n = static_cast<uint32_t>(index.begin[b + 1] - index.begin[b]);
      if (!inflate_block(inflater, gz.data() + index.begin[b], n, out.data() + from, len)) {
        failed.store(true, std::memory_order_relaxed);
        return;
      }
      crcs[b] = text_crc(0, std::string_view(out.data() + from, len));
    }
  });
  if (failed.load()) return false;
  // The member's final block: empty, and its end.
  Inflater inflater(/*raw=*/true);
  char spare[64];
  inflater.input(gz.data() + index.begin[blocks], static_cast<uint32_t>(index.end_bytes));
  inflater.output(spare, sizeof spare);
  if (inflater.step() != Inflater::kMemberEnd || inflater.avail_out() != sizeof spare) {
    return false;
  }
  uint32_t crc = 0;
  for (size_t b = 0; b < blocks; ++b) {
    const uint64_t len = std::min(block, total - b * block);
    crc = static_cast<uint32_t>(crc32_combine(crc, crcs[b], static_cast<z_off_t>(len)));
  }
  if (crc != read_le(trailer, 4)) return false;
  out.set_size(total);
  std::memset(out.data() + total, 0, kInputPadding);
  return true;
}

// Inflates a gzip file (one member or several, concatenated) into `out`, padded by kInputPadding.
// No byte of the output is written twice (MappedBuffer).
Status gunzip(const std::string& path, std::string_view compressed, bool check_text,
              MappedBuffer& out) {
  const uint64_t bound = input_memory_bound();
  // ISIZE (last 4 bytes) is the size of the last member modulo 2^32: a hint, not a bound. In a
  // truncated or corrupt file it is any 4 bytes; deflate expands at most 1032:1.
  size_t hint = compressed.size() * 4;
  if (compressed.size() >= 18) {
    uint32_t isize;
    std::memcpy(&isize, compressed.data() + compressed.size() - 4, 4);
    if (isize > compressed.size()) hint = std::min<size_t>(isize, compressed.size() * 1032);
  }
  // Address space only: the pages are populated as the inflater reaches them (a corrupt ISIZE
  // takes no memory).
  if (!out.reserve(hint + kInputPadding)) return too_large(path, hint, true);
  Inflater inflater;
  const size_t total = compressed.size();
  size_t consumed = 0;  // input offered to the inflater (it takes 32-bit lengths)
  while (true) {
    if (inflater.avail_in() == 0 && consumed < total) {
      const size_t chunk = std::min<size_t>(total - consumed, 1u << 30);
      inflater.input(compressed.data() + consumed, static_cast<uint32_t>(chunk));
      consumed += chunk;
    }
    if (out.capacity() - out.size() < 4096 + kInputPadding &&
        !out.reserve(std::max<size_t>(out.capacity() * 2, 1 << 16))) {
      return too_large(path, out.size(), true);
    }
    // At most 1 MB a step: the text check follows the output closely, and the inflater's
    // checksum of each step's output reads it from the cache.
    const size_t old_size = out.size();
    const size_t room = std::min<size_t>(out.capacity() - kInputPadding - old_size, 1u << 20);
    out.populate(old_size, room);
    inflater.output(out.data() + old_size, static_cast<uint32_t>(room));
    const Inflater::Result result = inflater.step();
    out.set_size(old_size + (room - inflater.avail_out()));
    // A stream's content is a text; any input stops at the machine's memory (a small file of
    // compressed zeros expands 1032:1).
    if (check_text) {
      CF_RETURN_IF_ERROR(
          check_text_chunk(path, out.data() + old_size, out.size() - old_size, old_size, true));
    }
    if (out.size() >= bound) return too_large(path, out.size(), true);
    if (result == Inflater::kError) {
      return Status::errorf("{}: corrupt gzip data near compressed byte {}: {}", path,
                            consumed - inflater.avail_in(), inflater.error());
    }
    if (result == Inflater::kMemberEnd) {
      // Concatenated gzip members are legal: go on with the next one if any input is left.
      if (inflater.avail_in() + (total - consumed) == 0) break;
      inflater.next_member();
      continue;
    }
    // Every byte offered and room left over: the stream ends early.
    if (inflater.avail_in() == 0 && consumed >= total && inflater.avail_out() > 0) {
      return Status::errorf("{}: truncated gzip stream after {} decompressed bytes", path,
                            out.size());
    }
  }
  // The padding reads as zeros, as past a string's or a mapped file's end.
  std::memset(out.data() + out.size(), 0, kInputPadding);
  return Status();
}

// ---- Temporary files removed on SIGINT / SIGTERM / SIGHUP ----------------------------------
// Each slot holds a malloc'd path or null. Registration takes a free slot with a CAS; the handler
// takes every path with an exchange (so that a path is removed, or freed, by one party only) and
// unlinks it. A slot is released only after its file was renamed or removed, so that the handler
// sees every temporary file that may exist.
constexpr int kSignalSlots = 4096;
std::atomic<char*> g_remove_on_signal[kSignalSlots];
std::atomic<int> g_slot_hint{0};

extern "C" void cleanup_and_die(int sig) {
  const int saved = errno;
  for (auto& slot : g_remove_on_signal) {
    char* p = slot.exchange(nullptr);
    if (p != nullptr) ::unlink(p);  // not freed: the process ends now
  }
  errno = saved;
  // SA_RESETHAND restored the default action: the signal, pending while the handler runs, ends
  // the process once it returns (status 128 + sig for the shell).
  ::raise(sig);
}

// ---- Stale temporary files --------------------------------------------------------------------

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// For a directory entry "<target>.tmp.<pid>.<n>" (optionally followed by further
// ".tmp.<pid>.<n>" parts: the temporary file of a temporary output), the target's name and the
// first pid; nullopt for any other name.
std::optional<std::pair<std::string, long>> parse_temp_name(const std::string& name) {
  // Reads ".tmp.<pid>.<n>" at `rest`'s front; the pid, and `rest` past it, or -1.
  auto part = [](std::string_view& rest) -> long {
    constexpr std::string_view kTmp = ".tmp.";
    if (rest.substr(0, kTmp.size()) != kTmp) return -1;
    std::string_view r = rest.substr(kTmp.size());
    const size_t dot = r.find('.');
    if (dot == std::string_view::npos || dot > 9 || !all_digits(r.substr(0, dot))) return -1;
    const long pid = std::strtol(std::string(r.substr(0, dot)).c_str(), nullptr, 10);
    r.remove_prefix(dot + 1);
    size_t digits = 0;
    while (digits < r.size() && r[digits] >= '0' && r[digits] <= '9') ++digits;
    if (digits == 0) return -1;
    rest = r.substr(digits);
    return pid;
  };
  // The first ".tmp." from which the rest of the name is parts only: the target is what precedes.
  for (size_t at = name.find(".tmp."); at != std::string::npos && at > 0;
       at = name.find(".tmp.", at + 1)) {
    std::string_view rest = std::string_view(name).substr(at);
    const long pid = part(rest);
    if (pid <= 0) continue;
    bool only_parts = true;
    while (only_parts && !rest.empty()) only_parts = part(rest) >= 0;
    if (only_parts) return std::make_pair(name.substr(0, at), pid);
  }
  return std::nullopt;
}

bool process_is_gone(long pid) {
  if (pid == static_cast<long>(::getpid())) return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// Per directory (listed once per process): target name -> stale temporary files for it.
std::mutex g_stale_mutex;
std::map<std::string, std::multimap<std::string, std::string>> g_stale_by_dir;

// Where a symlink chain ends (the path itself when it is not a symlink). The target need not
// exist. Relative links are resolved against the link's directory; gives up after 40 links.
std::string final_target(const std::string& path) {
  std::string current = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return current;
    std::string link(static_cast<size_t>(PATH_MAX), '\0');
    const ssize_t n = ::readlink(current.c_str(), link.data(), link.size());
    if (n <= 0) return current;
    link.resize(static_cast<size_t>(n));
    if (link.front() == '/') {
      current = link;
    } else {
      const std::filesystem::path dir = std::filesystem::path(current).parent_path();
      current = (dir / link).string();
    }
  }
  return current;
}

// The descriptor an output names without a file system entry of its own: "-" and /dev/stdout
// (1), /dev/stderr (2), /dev/fd/N and /proc/self/fd/N (N); -1 for any other path. Writing through
// it keeps the descriptor's offset and append mode (a shell's `>>`).
int stream_descriptor(const std::string& path) {
  if (path == "-" || path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (path.rfind(prefix, 0) == 0 && all_digits(std::string_view(path).substr(prefix.size()))) {
      return std::atoi(path.c_str() + prefix.size());
    }
  }
  return -1;
}

}  // namespace

std::string make_temp_path(const std::string& output) {
  static std::atomic<uint64_t> counter{0};
  return fmt::format("{}.tmp.{}.{}", output, static_cast<long>(::getpid()), counter.fetch_add(1));
}

void install_cleanup_on_signals() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction sa {};
      sa.sa_handler = cleanup_and_die;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESETHAND;
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

RemoveOnSignal::RemoveOnSignal(const std::string& path) {
  char* copy = ::strdup(path.c_str());
  if (copy == nullptr) return;
  const int start = g_slot_hint.load(std::memory_order_relaxed);
  for (int k = 0; k < kSignalSlots; ++k) {
    const int i = (start + k) % kSignalSlots;
    char* expected = nullptr;
    if (g_remove_on_signal[i].compare_exchange_strong(expected, copy)) {
      slot_ = i;
      g_slot_hint.store((i + 1) % kSignalSlots, std::memory_order_relaxed);
      return;
    }
  }
  std::free(copy);  // 4,096 files open at once: the next run's stale-file sweep removes this one
}

void RemoveOnSignal::release() {
  if (slot_ < 0) return;
  std::free(g_remove_on_signal[slot_].exchange(nullptr));
  slot_ = -1;
}

void remove_stale_temps(const std::string& output) {
  const std::filesystem::path p(output);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  const std::string name = p.filename().string();
  if (name.empty()) return;
  std::vector<std::string> stale;
  {
    std::lock_guard<std::mutex> lock(g_stale_mutex);
    auto [it, fresh] = g_stale_by_dir.try_emplace(dir);
    if (fresh) {
      if (DIR* d = ::opendir(dir.c_str())) {
        while (const dirent* e = ::readdir(d)) {
          const std::string entry = e->d_name;
          if (entry.find(".tmp.") == std::string::npos) continue;
          auto parsed = parse_temp_name(entry);
          if (!parsed || !process_is_gone(parsed->second)) continue;
          it->second.emplace(parsed->first, entry);
        }
        ::closedir(d);
      }
    }
    auto [first, last] = it->second.equal_range(name);
    for (auto e = first; e != last; ++e) stale.push_back(dir + "/" + e->second);
    it->second.erase(first, last);
  }
  for (const std::string& path : stale) {
    struct stat st {};
    // Only regular files: a directory or a FIFO of that name is not one of ours.
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(path.c_str());
  }
}

Status check_output_is_not_input(const std::string& output,
                                 const std::vector<std::string>& inputs) {
  if (output.empty() || output == "-") return Status();
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return Status();  // not there yet
  // A device or a FIFO may well be read and written (e.g. /dev/null); only files are replaced.
  if (!S_ISREG(out.st_mode)) return Status();
  for (const std::string& input : inputs) {
    struct stat in {};
    if (input.empty() || ::stat(input.c_str(), &in) != 0) continue;
    if (in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
      return Status::errorf(
          "{}: the output is the input {} (the same file): refusing to overwrite an input", output,
          input);
    }
  }
  return Status();
}

bool has_gz_suffix(std::string_view path) {
  return path.size() >= 3 && path.substr(path.size() - 3) == ".gz";
}

namespace {

// `path` opened for reading, and its fstat in *st.
StatusOr<int> open_for_reading(const std::string& path, struct stat* st) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::errorf("{}: cannot open: {}", path, errno_text());
  if (::fstat(fd, st) != 0) {
    std::string why = errno_text();
    ::close(fd);
    return Status::errorf("{}: cannot stat: {}", path, why);
  }
  return fd;
}

// Reads the open file `fd` (whose fstat is `st`) as read_input_file does, and closes it. A FIFO
// is opened once only: its writer's bytes are gone once the last reader closes it. A gzip'd file
// is inflated into `decompressed` when given (the string returned is then empty), else returned.
StatusOr<std::string> read_open_file(int fd, const struct stat& st, const std::string& path,
                                     MappedBuffer* decompressed = nullptr) {
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::errorf("{}: is a directory, expected a file", path);
  }
  // A regular file is read to its size; a pipe, FIFO or device (size 0) to its end, in chunks,
  // stopping on what no text holds and at the machine's memory.
  const bool stream = !S_ISREG(st.st_mode);
  const uint64_t bound = input_memory_bound();
  std::string bytes;
  const size_t expected = stream ? size_t{1} << 16 : static_cast<size_t>(st.st_size);
  bytes.reserve(expected + kInputPadding);
  bytes.resize(expected);
  size_t done = 0;
  while (true) {
    if (done == bytes.size()) {
      if (!stream) break;
      if (bytes.size() >= bound) {
        ::close(fd);
        return too_large(path, done, false);
      }
      bytes.reserve(std::min<uint64_t>(bytes.size() * 2, bound) + kInputPadding);
      bytes.resize(std::min<uint64_t>(bytes.size() * 2, bound));
    }
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return Status::errorf("{}: read failed at byte {}: {}", path, done, errno_text());
    }
    if (n == 0) break;
    // A gzip'd stream is checked as it is decompressed.
    const bool compressed =
        has_gzip_magic(std::string_view(bytes.data(), done + static_cast<size_t>(n)));
    if (stream && !compressed) {
      Status text =
          check_text_chunk(path, bytes.data() + done, static_cast<size_t>(n), done, false);
      if (!text.ok()) {
        ::close(fd);
        return text;
      }
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  if (!has_gzip_magic(bytes)) return bytes;
  MappedBuffer local;
  MappedBuffer& text = decompressed != nullptr ? *decompressed : local;
  CF_RETURN_IF_ERROR(gunzip(path, bytes, stream, text));
  if (decompressed != nullptr) return std::string();
  std::string copy;
  copy.reserve(text.size() + kInputPadding);
  copy.assign(text.data(), text.size());
  return copy;
}

}  // namespace

std::optional<uint64_t> indexed_gzip_text_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  const auto size = static_cast<uint64_t>(st.st_size);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  const std::optional<uint64_t> text = indexed_gzip_text_size(fd, size);
  ::close(fd);
  return text;
}

std::optional<uint64_t> indexed_gzip_text_size(int fd, uint64_t size) {
  const std::optional<GzipBlockIndex> index = read_block_index(fd, size);
  if (!index) return std::nullopt;
  return index->text_bytes;
}

struct GzipFileReader::Impl {
  int fd = -1;
  Inflater inflater;  // gzip members
  std::unique_ptr<char[]> in = std::make_unique_for_overwrite<char[]>(kInBytes);
  bool input_ended = false;
  bool member_ended = false;  // the last member read ended where the input did, so far
  // Compressed bytes per read: small, as a simulation holds one reader per rank (EtReader).
  static constexpr size_t kInBytes = size_t{64} << 10;

  // More compressed bytes for the inflater; false at the input's end.
  bool refill(int* read_errno) {
    ssize_t got;
    do {
      got = ::read(fd, in.get(), kInBytes);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
      *read_errno = errno;
      return false;
    }
    if (got == 0) {
      input_ended = true;
      return false;
    }
    inflater.input(in.get(), static_cast<uint32_t>(got));
    return true;
  }
};

GzipFileReader::GzipFileReader(int fd) : impl_(std::make_unique<Impl>()) {
  impl_->fd = fd;
}
GzipFileReader::~GzipFileReader() = default;

GzipFileReader::Result GzipFileReader::read(char* dst, size_t n) {
  Impl& x = *impl_;
  Result r;
  while (r.got < n) {
    if (x.inflater.avail_in() == 0 && !x.input_ended) {
      if (!x.refill(&r.read_errno)) {
        if (r.read_errno != 0) {
          r.ok = false;
          return r;
        }
      } else if (x.member_ended) {
        x.member_ended = false;
        x.inflater.next_member();  // another member follows
      }
    }
    if (x.member_ended) return r;  // the last member ended where the input did: the text's end
    if (x.input_ended && x.inflater.avail_in() == 0 && r.got > 0) return r;
    const auto room = static_cast<uint32_t>(std::min<size_t>(n - r.got, 1u << 30));
    x.inflater.output(dst + r.got, room);
    const Inflater::Result step = x.inflater.step();
    const size_t produced = room - x.inflater.avail_out();
    r.got += produced;
    if (step == Inflater::kError) {
      r.ok = false;
      r.message = x.inflater.error();
      return r;
    }
    if (step == Inflater::kMemberEnd) {
      if (x.inflater.avail_in() > 0) {
        x.inflater.next_member();  // another member follows in the bytes read
      } else {
        x.member_ended = true;  // another may follow in the bytes not yet read
      }
      continue;
    }
    if (produced == 0 && x.input_ended && x.inflater.avail_in() == 0) {
      r.ok = false;
      r.message = "unexpected end of file";
      return r;
    }
  }
  return r;
}

struct GzipBlockReader::Impl {
  int fd = -1;
  std::string path;
  GzipBlockIndex index;
  Inflater inflater{/*raw=*/true};
  std::string compressed;
  uint64_t bytes_read = 0;
};

GzipBlockReader::GzipBlockReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GzipBlockReader::~GzipBlockReader() = default;

std::unique_ptr<GzipBlockReader> GzipBlockReader::open(int fd, std::string path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return nullptr;
  std::optional<GzipBlockIndex> index = read_block_index(fd, static_cast<uint64_t>(st.st_size));
  if (!index) return nullptr;
  auto impl = std::make_unique<Impl>();
  impl->fd = fd;
  impl->path = std::move(path);
  impl->index = std::move(*index);
  return std::unique_ptr<GzipBlockReader>(new GzipBlockReader(std::move(impl)));
}

uint64_t GzipBlockReader::text_bytes() const {
  return impl_->index.text_bytes;
}

uint64_t GzipBlockReader::block_text() const {
  return impl_->index.block_text;
}

uint64_t GzipBlockReader::bytes_read() const {
  return impl_->bytes_read;
}

Status GzipBlockReader::read_block(uint64_t block, std::string* out) {
  Impl& x = *impl_;
  const GzipBlockIndex& index = x.index;
  const uint64_t blocks = index.begin.size() - 1;
  if (block >= blocks) {
    return Status::errorf("{}: no block {} in the text's {} blocks", x.path, block, blocks);
  }
  const uint64_t from = index.begin[block];
  const auto n = static_cast<size_t>(index.begin[block + 1] - from);
  x.compressed.resize(n);
  size_t got = 0;
  while (got < n) {
    const ssize_t r =
        ::pread(x.fd, x.compressed.data() + got, n - got, static_cast<off_t>(from + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      return Status::errorf("{}: cannot read at byte {}: {}", x.path, from + got, errno_text());
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  x.bytes_read += got;
  const uint64_t text_from = block * index.block_text;
  const auto len = static_cast<uint32_t>(std::min(index.block_text, index.text_bytes - text_from));
  out->resize(len);
  if (got != n ||
      !inflate_block(x.inflater, x.compressed.data(), static_cast<uint32_t>(n), out->data(), len)) {
    return Status::errorf(
        "{}: the text's block {} (compressed bytes {} to {}) does not inflate to its {} bytes: "
        "the file is corrupt or changed after it was opened",
        x.path, block, from, from + n, len);
  }
  return Status();
}

uint64_t input_text_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size < 18) return size;  // no room for a gzip header and trailer
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return size;
  unsigned char head[2] = {0, 0};
  uint32_t isize = 0;
  const bool gzip = ::pread(fd, head, 2, 0) == 2 &&
                    has_gzip_magic(std::string_view(reinterpret_cast<const char*>(head), 2)) &&
                    ::pread(fd, &isize, 4, static_cast<off_t>(size - 4)) == 4;
  // A .gz output of ours: its last member, the index, is empty (ISIZE 0).
  const std::optional<GzipBlockIndex> index = gzip ? read_block_index(fd, size) : std::nullopt;
  ::close(fd);
  if (!gzip) return size;
  if (index) return index->text_bytes;
  return std::max<uint64_t>(size, isize);
}

StatusOr<std::string> read_input_file(const std::string& path) {
  struct stat st {};
  CF_ASSIGN_OR_RETURN(int fd, open_for_reading(path, &st));
  return read_open_file(fd, st, path);
}

InputText::InputText(std::string text) : owned_(std::move(text)) {
  if (owned_.capacity() < owned_.size() + kInputPadding) {
    owned_.reserve(owned_.size() + kInputPadding);
  }
  data_ = owned_.data();
  size_ = owned_.size();
  capacity_ = owned_.capacity();
}

InputText::~InputText() {
  release();
}

void InputText::release() {
  if (map_ != nullptr) ::munmap(map_, map_len_);
  map_ = nullptr;
  owned_ = std::string();
  data_ = nullptr;
  size_ = capacity_ = 0;
}

InputText::InputText(InputText&& other) noexcept {
  *this = std::move(other);
}

InputText& InputText::operator=(InputText&& other) noexcept {
  if (this != &other) {
    release();
    const bool owned = other.map_ == nullptr;
    owned_ = std::move(other.owned_);
    map_ = std::exchange(other.map_, nullptr);
    map_len_ = other.map_len_;
    data_ = owned ? owned_.data() : other.data_;
    size_ = other.size_;
    capacity_ = owned ? owned_.capacity() : other.capacity_;
    in_blocks_ = std::exchange(other.in_blocks_, false);
    other.data_ = nullptr;
    other.size_ = other.capacity_ = 0;
  }
  return *this;
}

char* InputText::mutable_data() {
  return data_;
}

namespace {

// A file mapping's pages mapped now, from the page cache, without being copied
// (MADV_POPULATE_READ; where the kernel lacks it, as they are read). With `workers`, in slices
// of at least kMapSliceBytes side by side (the kernel takes the mapping's lock for reading).
constexpr size_t kMapSliceBytes = size_t{8} << 20;
void map_pages_now(void* mapped, size_t bytes, const OrderedBatches* workers = nullptr) {
#ifdef MADV_POPULATE_READ
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t slices = workers != nullptr ? bytes / kMapSliceBytes : 0;
  if (slices < 2) {
    ::madvise(mapped, bytes, MADV_POPULATE_READ);
    return;
  }
  char* const base = static_cast<char*>(mapped);
  workers->for_each(slices, [&](size_t k) {
    const size_t from = bytes * k / slices / page * page;
    const size_t to = k + 1 == slices ? bytes : bytes * (k + 1) / slices / page * page;
    ::madvise(base + from, to - from, MADV_POPULATE_READ);
  });
#else
  (void)mapped;
  (void)bytes;
  (void)workers;
#endif
}

}  // namespace

StatusOr<InputText> InputText::read(const std::string& path, const OrderedBatches* workers) {
  constexpr off_t kMapAtLeast = off_t{1} << 20;
  struct stat st {};
  CF_ASSIGN_OR_RETURN(int fd, open_for_reading(path, &st));
  char magic[2] = {0, 0};
  const bool large =
      S_ISREG(st.st_mode) && st.st_size >= kMapAtLeast && ::pread(fd, magic, 2, 0) == 2;
  const bool gzipped = large && has_gzip_magic(std::string_view(magic, 2));
  if (large && !gzipped) {
    const size_t size = static_cast<size_t>(st.st_size);
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t file_len = (size + page - 1) / page * page;
    const size_t len = (size + kInputPadding + page - 1) / page * page;
    // Reserve the whole range (the padding past the file's last page reads as zeros), at a
    // multiple of 2 MB: a file the page cache holds in 2 MB folios is then mapped a folio per
    // page-table entry. The file is mapped over its start, writable (a written page is copied:
    // MAP_PRIVATE) and its pages mapped now without being copied (MADV_POPULATE_READ; where
    // the kernel lacks it, as they are read).
    constexpr size_t kAlign = size_t{2} << 20;
    void* reserved =
        ::mmap(nullptr, len + kAlign, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (reserved != MAP_FAILED) {
      char* const from = static_cast<char*>(reserved);
      char* const base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(from) + kAlign - 1) &
                                                 ~uintptr_t{kAlign - 1});
      if (base > from) ::munmap(from, static_cast<size_t>(base - from));
      if (base + len < from + len + kAlign) {
        ::munmap(base + len, static_cast<size_t>(from + len + kAlign - (base + len)));
      }
      void* file = ::mmap(base, file_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0);
      if (file != MAP_FAILED) {
        ::close(fd);
        map_pages_now(base, file_len, workers);
        InputText text;
        text.map_ = base;
        text.map_len_ = len;
        text.data_ = base;
        text.size_ = size;
        text.capacity_ = len;
        return text;
      }
      ::munmap(base, len);
    }
  }
  // A large gzip'd file: inflated from its pages in the page cache (mapped, not copied). Small
  // or special files, or where mapping fails: read (through the same descriptor). A gzip'd one
  // is inflated into a buffer the text takes over.
  MappedBuffer decompressed;
  bool inflated = false;
  bool in_blocks = false;
  if (gzipped) {
    const size_t size = static_cast<size_t>(st.st_size);
    void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped != MAP_FAILED) {
      ::close(fd);
      map_pages_now(mapped, size);
      const std::string_view gz(static_cast<const char*>(mapped), size);
      // A .gz output of ours is inflated in its blocks, several at once.
      std::optional<GzipBlockIndex> index;
      if (workers != nullptr) {
        index = parse_block_index(gz.substr(size - std::min(size, kGzipIndexMaxMemberBytes)), size);
      }
      in_blocks = index && gunzip_blocks(gz, *index, *workers, decompressed);
      const Status done = in_blocks ? Status() : gunzip(path, gz, false, decompressed);
      ::munmap(mapped, size);
      CF_RETURN_IF_ERROR(done);
      inflated = true;
    }
  }
  if (!inflated) {
    CF_ASSIGN_OR_RETURN(std::string bytes, read_open_file(fd, st, path, &decompressed));
    if (decompressed.data() == nullptr) return InputText(std::move(bytes));
  }
  InputText text;
  text.size_ = decompressed.size();
  text.capacity_ = decompressed.capacity();
  text.data_ = decompressed.release(&text.map_len_);
  text.map_ = text.data_;
  text.in_blocks_ = in_blocks;
  return text;
}

OutputFile::~OutputFile() {
  discard();
}

namespace {

// A block of a .gz output compressed on its own into raw deflate, without the text before it as a
// dictionary, so that a reader can inflate the blocks concurrently (GzipBlockIndex): ISA-L's igzip
// at level 3 where the build has it, else zlib's level 1. A block ends on a byte boundary (a full
// flush), so that the blocks' deflate streams follow each other in one member; `last` makes the
// final (empty) block. Appends to `out`.
//
// Level 3, not 1: Debian's ISA-L 2.30 at levels 1 and 2 compresses a text into other bytes in a
// few processes in 1,000 (a match against a block's first bytes missed; never with address
// randomisation off, so it depends on where the process was loaded), and a .gz output must be the
// same bytes for the same text. Level 3 gave the same bytes in every one of 2,900 processes; it
// compresses an ET+ about 3x as slowly as level 1 (still about 4x as fast as zlib's level 1) and
// 4% smaller (docs/performance.md, twelfth steps of #34, "The same gzip bytes in every process").
#if CHAKRAFLOW_HAVE_ISAL
bool deflate_block(std::string_view text, bool last, std::string& out) {
  // The level's hash tables: a few hundred KB, kept per thread for the next block.
  thread_local std::unique_ptr<uint8_t[]> level_buf;
  if (!level_buf) level_buf = std::make_unique_for_overwrite<uint8_t[]>(ISAL_DEF_LVL3_DEFAULT);
  isal_zstream s;
  isal_deflate_init(&s);
  s.gzip_flag = IGZIP_DEFLATE;
  s.level = 3;
  s.level_buf = level_buf.get();
  s.level_buf_size = ISAL_DEF_LVL3_DEFAULT;
  s.flush = last ? NO_FLUSH : FULL_FLUSH;
  s.end_of_stream = last ? 1 : 0;
  s.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(text.data()));
  s.avail_in = static_cast<uint32_t>(text.size());
  for (size_t room = text.size() + text.size() / 8 + 1024;; room *= 2) {
    const size_t at = out.size();
    out.resize(at + room);
    s.next_out = reinterpret_cast<uint8_t*>(out.data() + at);
    s.avail_out = static_cast<uint32_t>(room);
    if (isal_deflate(&s) != COMP_OK) return false;
    out.resize(out.size() - s.avail_out);
    const bool done = last ? s.internal_state.state == ZSTATE_END
                           : s.avail_in == 0 && s.internal_state.state == ZSTATE_NEW_HDR;
    if (done) return true;
    if (s.avail_out != 0) return false;  // no progress with room left: not expected
  }
}

#else
bool deflate_block(std::string_view text, bool last, std::string& out) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  bool ok = true;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  const int flush = last ? Z_FINISH : Z_FULL_FLUSH;
  for (size_t room = deflateBound(&z, static_cast<uLong>(text.size())) + 64; ok; room *= 2) {
    const size_t at = out.size();
    out.resize(at + room);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + at);
    z.avail_out = static_cast<uInt>(room);
    const int rc = deflate(&z, flush);
    out.resize(out.size() - z.avail_out);
    if (rc == Z_STREAM_ERROR) ok = false;
    if (!ok || (last ? rc == Z_STREAM_END : z.avail_in == 0 && z.avail_out != 0)) break;
  }
  deflateEnd(&z);
  return ok;
}
#endif

}  // namespace

// One gzip member over all the bytes of a .gz output, its text compressed in blocks of `block`
// bytes (deflate_block), several at once through the workers given (compress_on), written in
// order: the same bytes whatever the workers, for the same content however it was written. After
// it, an empty member that holds the blocks' index (GzipBlockIndex), for readers that inflate the
// blocks concurrently; any gzip reader reads the two members as the text. The compressed bytes
// are handed to `emit` in whole blocks of `block` bytes, the rest at the end. No time or name in
// the headers.
class OutputFile::Deflater {
 public:
  explicit Deflater(size_t block)
      : out_(std::make_unique_for_overwrite<char[]>(block)), block_(block) {}
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;

  void compress_on(const OrderedBatches* workers) { workers_ = workers; }

  // Compresses `n` bytes: whole blocks, but for the last call before finish. `last` ends the
  // member and writes the index.
  template <typename Emit>
  bool compress(const char* p, size_t n, bool last, Emit&& emit) {
    if (!started_) {
      add({kGzipHeader, sizeof kGzipHeader}, emit);
      started_ = true;
    }
    const size_t blocks = n == 0 ? 0 : (n + block_ - 1) / block_;
    std::vector<uint32_t> crcs(blocks);
    size_t consumed = 0;
    const Status done = batches_or_in_turn(workers_).run(
        blocks,
        [&](size_t b, std::string& out) {
          const std::string_view text(p + b * block_, std::min(block_, n - b * block_));
          crcs[b] = text_crc(0, text);
          return deflate_block(text, false, out) ? Status() : Status::error("deflate failed");
        },
        [&](std::string& out) {
          const size_t len = std::min(block_, n - consumed * block_);
          crc_ =
              static_cast<uint32_t>(crc32_combine(crc_, crcs[consumed], static_cast<z_off_t>(len)));
          ++consumed;
          sizes_.push_back(static_cast<uint32_t>(out.size()));
          add(out, emit);
          return Status();
        });
    if (!done.ok()) return false;
    total_ += n;
    if (!last) return true;
    std::string end;
    if (!deflate_block({}, true, end)) return false;
    const auto end_bytes = static_cast<uint32_t>(end.size());
    for (uint32_t v : {crc_, static_cast<uint32_t>(total_)}) put_le(end, v, 4);
    append_block_index(end, end_bytes);
    add(end, emit);
    if (used_ > 0) emit(out_.get(), std::exchange(used_, 0));
    return true;
  }

 private:
  static void put_le(std::string& out, uint64_t v, int bytes) {
    for (int k = 0; k < bytes; ++k) out.push_back(static_cast<char>(v >> (8 * k)));
  }

  // The index member (GzipBlockIndex), unless the blocks are too many for one extra field.
  void append_block_index(std::string& out, uint32_t end_bytes) const {
    const size_t xlen = kGzipIndexFixedBytes + 4 * sizes_.size();
    if (xlen > 65535) return;
    out.append(kGzipIndexHeader, sizeof kGzipIndexHeader);
    put_le(out, xlen, 2);
    out.append(kGzipIndexId, 2);
    put_le(out, xlen - 4, 2);
    out.push_back(kGzipIndexVersion);
    put_le(out, block_, 4);
    put_le(out, total_, 8);
    put_le(out, sizes_.size(), 4);
    for (uint32_t size : sizes_) put_le(out, size, 4);
    put_le(out, end_bytes, 4);
    put_le(out, kGzipIndexMemberFixedBytes + xlen, 4);  // this member's size, read from the end
    out.append(kGzipEmptyFinalBlock, 2);
    out.append(8, '\0');  // CRC and size of no text
  }

  // Compressed bytes, handed on as they fill whole blocks.
  template <typename Emit>
  void add(std::string_view bytes, Emit& emit) {
    while (!bytes.empty()) {
      const size_t k = std::min(bytes.size(), block_ - used_);
      std::memcpy(out_.get() + used_, bytes.data(), k);
      used_ += k;
      bytes.remove_prefix(k);
      if (used_ == block_) emit(out_.get(), std::exchange(used_, 0));
    }
  }

  std::unique_ptr<char[]> out_;  // the compressed bytes not yet handed on: used_ of block_
  size_t block_;
  size_t used_ = 0;
  const OrderedBatches* workers_ = nullptr;
  bool started_ = false;
  uint32_t crc_ = 0;             // of the text so far
  uint64_t total_ = 0;           // the text's bytes so far
  std::vector<uint32_t> sizes_;  // each block's compressed bytes
};

OutputFile::OutputFile(OutputFile&& other) noexcept {
  *this = std::move(other);
}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    discard();
    path_ = std::move(other.path_);
    temp_path_ = std::move(other.temp_path_);
    target_path_ = std::move(other.target_path_);
    temp_guard_ = std::move(other.temp_guard_);
    streaming_ = other.streaming_;
    open_ = std::exchange(other.open_, false);
    file_ = std::exchange(other.file_, nullptr);
    gz_ = std::move(other.gz_);
    buffer_ = std::move(other.buffer_);
    capacity_ = std::exchange(other.capacity_, 0);
    used_ = std::exchange(other.used_, 0);
    bytes_written_ = other.bytes_written_;
    write_calls_ = other.write_calls_;
    failed_ = other.failed_;
    write_errno_ = other.write_errno_;
    other.temp_path_.clear();
  }
  return *this;
}

StatusOr<OutputFile> OutputFile::open(const std::string& path) {
  return open(path, has_gz_suffix(path));
}

StatusOr<OutputFile> OutputFile::open(const std::string& path, bool gzip) {
  if (path.empty()) return Status::error("the output path is empty");
  OutputFile out;
  out.path_ = path;
  int fd = -1;
  const int descriptor = stream_descriptor(path);
  struct stat st {};
  if (descriptor >= 0) {
    // Standard output and friends: a copy of the descriptor, so that closing it leaves theirs.
    fd = ::fcntl(descriptor, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) return Status::errorf("{}: cannot write: {}", path, errno_text());
    out.streaming_ = true;
  } else if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) {
      return Status::errorf("{}: is a directory, expected an output file name", path);
    }
    // A device, FIFO or socket (or a symlink to one) is written to, never replaced. A FIFO
    // blocks here until a reader opens it, as a shell's redirection does.
    fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return Status::errorf("{}: cannot open output: {}", path, errno_text());
    out.streaming_ = true;
  } else {
    // A regular file or a new one; a symlink's target is replaced, the link kept.
    out.target_path_ = final_target(path);
    remove_stale_temps(out.target_path_);
    out.temp_path_ = make_temp_path(out.target_path_);
    out.temp_guard_ = RemoveOnSignal(out.temp_path_);
    fd = ::open(out.temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      std::string why = errno_text();
      out.temp_guard_.release();
      out.temp_path_.clear();
      return Status::errorf("{}: cannot create output: {}", path, why);
    }
    // An existing file keeps its permissions (umask applies to a new one).
    if (::stat(out.target_path_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      ::fchmod(fd, st.st_mode & 07777);
    }
  }
  out.open_ = true;
  out.file_ = ::fdopen(fd, "wb");
  if (out.file_ == nullptr) {
    ::close(fd);
    return Status::errorf("{}: cannot open output stream", path);
  }
  // Our buffer is the buffer: each block put() hands on is one write().
  std::setvbuf(out.file_, nullptr, _IONBF, 0);
  if (gzip) {
    out.gz_ = std::make_unique<Deflater>(kBlockBytes);
  }
  out.capacity_ = kBlockBytes + 4096;
  out.buffer_ = std::make_unique_for_overwrite<char[]>(out.capacity_);
  return out;
}

void OutputFile::compress_on(const OrderedBatches* workers) {
  if (gz_ != nullptr) gz_->compress_on(workers);
}

void OutputFile::write(std::string_view bytes) {
  if (used_ + bytes.size() < kBlockBytes) {
    if (bytes.empty()) return;
    std::memcpy(room(bytes.size()), bytes.data(), bytes.size());
    used_ += bytes.size();
    return;
  }
  // The buffered bytes and the first of `bytes` make one block, whole blocks follow straight
  // from `bytes` (no copy), the rest is buffered.
  const size_t head = kBlockBytes - used_;
  if (gz_ != nullptr) {
    // The compressor takes every block in one piece: ISA-L's bytes depend on where its input's
    // pieces end, and a .gz output is the same bytes for the same content however it was written.
    std::memcpy(buffer_.get() + used_, bytes.data(), head);
    put(buffer_.get(), kBlockBytes, nullptr, 0);
  } else {
    put(buffer_.get(), used_, bytes.data(), head);
  }
  used_ = 0;
  bytes.remove_prefix(head);
  const size_t whole = bytes.size() - bytes.size() % kBlockBytes;
  put(bytes.data(), whole, nullptr, 0);
  bytes.remove_prefix(whole);
  if (!bytes.empty()) std::memcpy(buffer_.get(), bytes.data(), bytes.size());
  used_ = bytes.size();
}

void OutputFile::note_failure(bool ok) {
  if (ok || failed_) return;
  failed_ = true;
  write_errno_ = errno;  // the first failure's cause (ENOSPC, EPIPE, EIO ...)
}

void OutputFile::make_room(size_t n) {
  // A record larger than the room left: a buffer that holds what is buffered and it, so that
  // what is written out stays in whole blocks.
  const size_t capacity = std::max(capacity_, used_ + n);
  auto larger = std::make_unique_for_overwrite<char[]>(capacity);
  if (used_ > 0) std::memcpy(larger.get(), buffer_.get(), used_);
  buffer_ = std::move(larger);
  capacity_ = capacity;
}

void OutputFile::flush_blocks() {
  const size_t whole = used_ - used_ % kBlockBytes;
  put(buffer_.get(), whole, nullptr, 0);
  used_ -= whole;
  if (used_ > 0) std::memmove(buffer_.get(), buffer_.get() + whole, used_);
}

void OutputFile::flush_buffer() {
  if (used_ == 0) return;
  put(buffer_.get(), used_, nullptr, 0);
  used_ = 0;
}

void OutputFile::put(const char* data, size_t size, const char* more, size_t more_size) {
  bytes_written_ += size + more_size;
  if (gz_ == nullptr) return write_blocks(data, size, more, more_size);
  // A .gz output: the bytes compressed a block at a time (every call but commit's last hands on
  // whole blocks, in one piece: see write()), the compressed blocks written as they fill.
  const auto emit = [this](const char* p, size_t n) { write_blocks(p, n, nullptr, 0); };
  note_failure(gz_->compress(data, size, false, emit) &&
               gz_->compress(more, more_size, false, emit));
}

void OutputFile::write_blocks(const char* data, size_t size, const char* more, size_t more_size) {
  // Every write() but the last is one whole block of kBlockBytes bytes at a multiple of it in the
  // file: the kernel caches a file in folios as large as the write and aligned in the file, and
  // a reader maps a file of whole 256 KB folios with fewer steps than one of pieces (a write
  // across a block boundary leaves small folios on both sides). Blocks, not megabytes: a VM whose
  // host takes back the guest's free memory (free page reporting) must back each large folio
  // anew, and 128 MB written in 2 MB writes took 4 to 8 times the CPU of 256 KB writes there
  // (docs/performance.md).
  if (file_ == nullptr) return note_failure(false);
  const int fd = ::fileno(file_);
  // `data` then `more`, a block per writev().
  iovec parts[2] = {{const_cast<char*>(data), size}, {const_cast<char*>(more), more_size}};
  int first = size > 0 ? 0 : 1;
  while (first < 2 && parts[first].iov_len > 0) {
    iovec block[2];
    int count = 0;
    size_t room = kBlockBytes;
    for (int k = first; k < 2 && room > 0; ++k) {
      const size_t n = std::min(room, parts[k].iov_len);
      if (n == 0) continue;
      block[count++] = {parts[k].iov_base, n};
      room -= n;
    }
    const ssize_t wrote = ::writev(fd, block, count);
    ++write_calls_;
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return note_failure(false);
    // Past what was written (a short write is continued where it stopped).
    size_t done = static_cast<size_t>(wrote);
    for (int k = first; k < 2 && done > 0; ++k) {
      const size_t n = std::min(done, parts[k].iov_len);
      parts[k].iov_base = static_cast<char*>(parts[k].iov_base) + n;
      parts[k].iov_len -= n;
      done -= n;
    }
    while (first < 2 && parts[first].iov_len == 0) ++first;
  }
}

Status OutputFile::commit() {
  if (!open_) return Status::errorf("{}: output already closed", path_);
  flush_buffer();
  bool close_failed = false;
  int close_errno = 0;
  if (gz_) {
    // The member's end (its last compressed bytes and trailer).
    note_failure(gz_->compress(
        nullptr, 0, true, [this](const char* p, size_t n) { write_blocks(p, n, nullptr, 0); }));
    gz_.reset();
  }
  if (file_) {
    close_failed = std::fflush(file_) != 0;
    if (close_failed) close_errno = errno;
    close_failed |= std::fclose(file_) != 0;
    if (close_failed && close_errno == 0) close_errno = errno;
    file_ = nullptr;
  }
  open_ = false;
  if (failed_ || close_failed) {
    discard();
    const int errnum = failed_ ? write_errno_ : close_errno;
    const std::string why = errnum != 0 ? std::strerror(errnum) : "disk full or I/O error";
    return Status::errorf("{}: write failed ({})", path_, why);
  }
  if (streaming_) return Status();
  if (!exchange_into_place() && std::rename(temp_path_.c_str(), target_path_.c_str()) != 0) {
    std::string why = errno_text();
    discard();
    return Status::errorf("{}: cannot rename temporary output into place: {}", path_, why);
  }
  temp_guard_.release();
  temp_path_.clear();
  return Status();
}

// An existing regular file is replaced by swapping the two names atomically, then removing the
// old content under the temporary name. A rename() over an existing file makes ext4 (its
// auto_da_alloc default) allocate and start writing the new file's blocks inside the rename, on
// the caller's time (docs/performance.md), which the kernel's flusher otherwise does later.
// Readers see the old file or the new one, never none, as with rename(). False when not done (no
// file to replace, or a filesystem without the exchange): the caller renames.
bool OutputFile::exchange_into_place() {
  struct stat st {};
  if (::lstat(target_path_.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  // A large old file is held open across its removal, so that dropping its cached pages (the
  // last reference's job) happens on a thread of its own, beside what the caller does next, not
  // inside the unlink; its name is gone at once either way.
  const int old_content = static_cast<uint64_t>(st.st_size) >= kReleaseBesideBytes
                              ? ::open(target_path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
                              : -1;
  auto close_old = [old_content] {
    if (old_content >= 0) ::close(old_content);
  };
  if (::renameat2(AT_FDCWD, temp_path_.c_str(), AT_FDCWD, target_path_.c_str(), RENAME_EXCHANGE) !=
      0) {
    close_old();
    return false;
  }
  // What was swapped out must be the regular file seen above: anything else (replaced in
  // between) is swapped back, and rename() then fails on it or replaces a file, as it would have.
  if (::lstat(temp_path_.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    ::renameat2(AT_FDCWD, temp_path_.c_str(), AT_FDCWD, target_path_.c_str(), RENAME_EXCHANGE);
    close_old();
    return false;
  }
  ::unlink(temp_path_.c_str());
  if (old_content >= 0) {
    // A process that ends first closes it on the way out: nothing is left behind either way.
    try {
      std::thread(close_old).detach();
    } catch (const std::system_error&) {
      close_old();
    }
  }
  return true;
}

void OutputFile::discard() {
  gz_.reset();
  if (file_) {
    std::fclose(file_);
    file_ = nullptr;
  }
  open_ = false;
  if (!temp_path_.empty()) {
    ::unlink(temp_path_.c_str());
    temp_guard_.release();
    temp_path_.clear();
  }
  used_ = 0;
}

Status write_file_atomically(const std::string& path, std::string_view content) {
  CF_ASSIGN_OR_RETURN(OutputFile out, OutputFile::open(path));
  out.write(content);
  return out.commit();
}

}  // namespace chakraflow
