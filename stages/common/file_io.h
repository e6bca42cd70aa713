// File input and output shared by every loader and writer.
//
// read_input_file: reads a whole file, transparently gunzipping it when it starts with the gzip
// magic (whatever its name), into a buffer padded for simdjson. A pipe, FIFO or device is read to
// its end, but a text input that holds a NUL byte (e.g. /dev/zero) or outgrows the machine's memory
// stops with a located error.
//
// OutputFile: a regular (or not yet existing) destination is written to a temporary file beside it
// and renamed on commit(), so that a failed or interrupted run never leaves a half-written output;
// a symlink is followed and its target replaced that way. "-", /dev/stdout, /dev/stderr, /dev/fd/N,
// a FIFO, a device or a socket is written to as a stream (never replaced). Compresses with gzip
// when the destination name ends in ".gz". Not thread-safe; one writer per file.
//
// Temporary files are named "<output>.tmp.<pid>.<n>". install_cleanup_on_signals() makes SIGINT,
// SIGTERM and SIGHUP remove every temporary file of the process before it dies of the signal;
// opening an output removes the temporary files that dead processes (kill -9) left for it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stages/common/status.h"

namespace chakraflow {

class OrderedBatches;

// Extra capacity kept after the data so that simdjson can read past the end safely.
inline constexpr size_t kInputPadding = 64;

// True when `head`, the first bytes of a file, start with the gzip magic (1f 8b): how every
// reader tells a gzip'd input from a plain one, whatever its name.
inline bool has_gzip_magic(std::string_view head) {
  return head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
         static_cast<unsigned char>(head[1]) == 0x8b;
}

// The size of the text `path` holds, without reading it: a plain regular file's size; for a
// .gz output of ours the size its block index records (OutputFile); for another gzip'd one the
// larger of its size and its ISIZE trailer (the last member's size modulo 2^32). An estimate for
// choosing how to allocate, never a bound. 0 when it is no readable regular file.
uint64_t input_text_size(const std::string& path);
// The text's size a .gz output of ours records in its block index (OutputFile); nullopt for any
// other file.
std::optional<uint64_t> indexed_gzip_text_size(const std::string& path);
// The same for the open regular file `fd` of `size` bytes (read with pread: its offset is left).
std::optional<uint64_t> indexed_gzip_text_size(int fd, uint64_t size);

// The whole (decompressed) content of `path`. The returned string has capacity >= size() +
// kInputPadding. Errors name the file.
StatusOr<std::string> read_input_file(const std::string& path);

// The text of an input trace, padded for simdjson: plain files of 1 MB or more are mapped
// (read-only, private, populated: no copy of the page cache and no zeroed buffer to fill, which
// cost a tenth of a link's time), other files are read (and gunzipped) into memory. A mapped file
// must not be truncated while it is read. Move-only.
class InputText {
 public:
  InputText() = default;
  explicit InputText(std::string text);  // takes the string, padded
  ~InputText();
  InputText(InputText&& other) noexcept;
  InputText& operator=(InputText&& other) noexcept;
  InputText(const InputText&) = delete;
  InputText& operator=(const InputText&) = delete;

  // Errors name the file. A .gz output of ours (OutputFile: its block index) is inflated through
  // `workers` several blocks at once when given; any other gzip'd file in one pass.
  static StatusOr<InputText> read(const std::string& path, const OrderedBatches* workers = nullptr);

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Bytes readable from data(): at least size() + kInputPadding.
  size_t capacity() const { return capacity_; }
  bool mapped() const { return map_ != nullptr; }
  // True when the text was inflated in its blocks through workers (read's `workers`).
  bool inflated_in_blocks() const { return in_blocks_; }
  operator std::string_view() const { return {data_, size_}; }  // NOLINT: a text, implicitly
  // Writable bytes (a mapped file is copied page by page as they are written).
  char* mutable_data();

 private:
  void release();
  std::string owned_;
  void* map_ = nullptr;
  size_t map_len_ = 0;
  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  bool in_blocks_ = false;
};

// A gzip'd file's text (every member, one after another) read in pieces from a descriptor's
// current offset, through ISA-L's inflate where the build has it, else zlib's (the installed
// feeder library): what EtReader reads a .et.gz through.
class GzipFileReader {
 public:
  explicit GzipFileReader(int fd);  // not taken: it must stay open while the reader reads it
  ~GzipFileReader();
  GzipFileReader(const GzipFileReader&) = delete;
  GzipFileReader& operator=(const GzipFileReader&) = delete;

  struct Result {
    size_t got = 0;       // bytes of text given; 0 at the text's end
    bool ok = true;       // false: a read failed (read_errno) or the data is bad (message)
    int read_errno = 0;   // the failed read's errno
    std::string message;  // the inflater's: corrupt data, or "unexpected end of file"
  };
  // Up to `n` bytes (n > 0) of text into `dst`; with a failure, `got` counts the text given
  // before it.
  Result read(char* dst, size_t n);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A .gz output of ours read by offset in its text: its block index (docs/compatibility.md,
// "Compressed outputs") says where each block of the text lies compressed, and each block inflates
// on its own. The feeders read a .et.gz this way instead of keeping its records in memory.
class GzipBlockReader {
 public:
  ~GzipBlockReader();
  GzipBlockReader(const GzipBlockReader&) = delete;
  GzipBlockReader& operator=(const GzipBlockReader&) = delete;

  // The block index of the regular file open as `fd` (not taken: it must stay open while the
  // reader reads it), `path` named in errors; null when the file has none.
  static std::unique_ptr<GzipBlockReader> open(int fd, std::string path);

  uint64_t text_bytes() const;
  // The text's bytes per block (every block but the last holds that many).
  uint64_t block_text() const;
  // Inflates block `block` of the text into `out` (its bytes: block_text() but for the last). An
  // error names the file and the block where it does not inflate to them (the file changed after
  // it was opened, or is corrupt).
  Status read_block(uint64_t block, std::string* out);
  // The compressed bytes read so far.
  uint64_t bytes_read() const;

 private:
  struct Impl;
  explicit GzipBlockReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// True when `path` ends with ".gz".
bool has_gz_suffix(std::string_view path);

// An error when `output` already exists and is the same file (inode) as one of `inputs`: an output
// must never replace an input. Inputs that do not exist are ignored (their readers report them).
Status check_output_is_not_input(const std::string& output, const std::vector<std::string>& inputs);

// Removes the temporary files "<output>.tmp.<pid>.<n>..." that processes no longer alive left
// beside `output` (a run killed with SIGKILL, a crash). Each directory is listed once per process.
// OutputFile::open calls it; a batch calls it for outputs it skips.
void remove_stale_temps(const std::string& output);

// From now on SIGINT, SIGTERM and SIGHUP (each only where its action is the default: a signal
// that `nohup` ignores stays ignored) remove every registered temporary file, then end the process
// by the same signal (the shell sees exit status 128 + n). Idempotent.
void install_cleanup_on_signals();

// A path removed by the signal handlers of install_cleanup_on_signals() while this object lives
// (OutputFile registers its temporary file; a batch registers files it writes by other means).
// Async-signal-safe on the handler's side. Move-only.
class RemoveOnSignal {
 public:
  RemoveOnSignal() = default;
  explicit RemoveOnSignal(const std::string& path);
  ~RemoveOnSignal() { release(); }
  RemoveOnSignal(RemoveOnSignal&& other) noexcept : slot_(std::exchange(other.slot_, -1)) {}
  RemoveOnSignal& operator=(RemoveOnSignal&& other) noexcept {
    if (this != &other) {
      release();
      slot_ = std::exchange(other.slot_, -1);
    }
    return *this;
  }
  RemoveOnSignal(const RemoveOnSignal&) = delete;
  RemoveOnSignal& operator=(const RemoveOnSignal&) = delete;
  // Forgets the path (after it was renamed or removed).
  void release();

 private:
  int slot_ = -1;
};

// "<output>.tmp.<pid>.<n>": a fresh temporary name beside `output`, for this process.
std::string make_temp_path(const std::string& output);

class OutputFile {
 public:
  OutputFile() = default;
  ~OutputFile();  // discards the temporary file unless commit() succeeded
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;

  // Opens a temporary file beside `path` (beside a symlink's final target), or `path` itself as a
  // stream when it is "-" (standard output) or not a regular file. `gzip` defaults to the name's
  // suffix. An empty path or a directory is an error.
  static StatusOr<OutputFile> open(const std::string& path);
  static StatusOr<OutputFile> open(const std::string& path, bool gzip);

  // A .gz output's blocks compressed several at once through `workers` (null: on the writing
  // thread); the same bytes either way. Nothing for a plain output. `workers` must outlive the
  // writes and commit().
  void compress_on(const OrderedBatches* workers);
  // Buffered; errors are reported by commit().
  void write(std::string_view bytes);
  void write_byte(char c) {
    *room(1) = c;
    keep(1);
  }
  // For writers that know a bound of what they write: room for `n` bytes at the end of the
  // buffer, to be written in place, then kept with keep(m), m <= n. Nothing else may be written
  // in between.
  char* room(size_t n) {
    if (capacity_ - used_ < n) make_room(n);
    return buffer_.get() + used_;
  }
  void keep(size_t m) {
    used_ += m;
    if (used_ >= kBlockBytes) flush_blocks();
  }
  // Flushes, closes and renames the temporary file to the destination (a stream is flushed and
  // closed).
  Status commit();
  // Removes the temporary file (also done by the destructor). A stream is closed: what was
  // written to it stays written.
  void discard();

  const std::string& path() const { return path_; }
  // True when the destination is written in place as a stream (see open()).
  bool streaming() const { return streaming_; }
  uint64_t bytes_written() const { return bytes_written_; }
  // The bytes of each write() to a file but its last, at a multiple of them in the file: 256 KB,
  // large enough for few writes, small enough not to weigh in a small rank's page faults
  // (docs/performance.md, "Sizes chosen by measurement").
  static constexpr size_t kBlockBytes = size_t{256} << 10;
  // The write() calls made so far (more than the blocks where a pipe took less than asked).
  uint64_t write_calls() const { return write_calls_; }

 private:
  // An old file replaced from this size on has its pages dropped beside the caller's next work.
  static constexpr uint64_t kReleaseBesideBytes = uint64_t{16} << 20;
  // Writes out the whole blocks of kBlockBytes bytes buffered (the rest stays), or all of it.
  void flush_blocks();
  void flush_buffer();
  // Writes `data` then `more` (compressed first for a .gz output) in blocks (see put's comment).
  void put(const char* data, size_t size, const char* more, size_t more_size);
  void write_blocks(const char* data, size_t size, const char* more, size_t more_size);
  void make_room(size_t n);
  void note_failure(bool ok);
  bool exchange_into_place();

  // The gzip member a .gz output is compressed into (file_io.cc).
  class Deflater;

  std::string path_;
  std::string temp_path_;    // empty for a stream
  std::string target_path_;  // what the temporary file is renamed to (a symlink's target)
  RemoveOnSignal temp_guard_;
  bool streaming_ = false;
  bool open_ = false;
  FILE* file_ = nullptr;
  std::unique_ptr<Deflater> gz_;  // for a .gz output
  // The bytes not yet written out: used_ of capacity_ (not zeroed: room() hands out the rest).
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;
  size_t used_ = 0;
  uint64_t bytes_written_ = 0;
  uint64_t write_calls_ = 0;
  bool failed_ = false;
  int write_errno_ = 0;
};

// Convenience: writes `content` atomically to `path`.
Status write_file_atomically(const std::string& path, std::string_view content);

}  // namespace chakraflow
