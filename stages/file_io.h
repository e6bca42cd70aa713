// File input and output shared by every loader and writer.
//
// read_input_file: reads a whole file, transparently gunzipping it when it starts with the gzip
// magic (whatever its name), into a buffer padded for simdjson. OutputFile: writes to a temporary
// file beside the destination and renames it on commit(), so that a failed or interrupted run never
// leaves a half-written output. Compresses with gzip when the destination name ends in ".gz". Not
// thread-safe; one writer per file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "stages/status.h"

namespace chakraflow {

// Extra capacity kept after the data so that simdjson can read past the end safely.
inline constexpr size_t kInputPadding = 64;

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

  // Errors name the file.
  static StatusOr<InputText> read(const std::string& path);

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Bytes readable from data(): at least size() + kInputPadding.
  size_t capacity() const { return capacity_; }
  bool mapped() const { return map_ != nullptr; }
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
  bool writable_ = true;
};

// True when `path` ends with ".gz".
bool has_gz_suffix(std::string_view path);

class OutputFile {
 public:
  OutputFile() = default;
  ~OutputFile();  // discards the temporary file unless commit() succeeded
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;

  // Opens a temporary file in the directory of `path`. `gzip` defaults to the name's suffix.
  static StatusOr<OutputFile> open(const std::string& path);
  static StatusOr<OutputFile> open(const std::string& path, bool gzip);

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
    if (used_ >= kFlushSize) flush_buffer();
  }
  // Flushes, closes and renames the temporary file to the destination.
  Status commit();
  // Removes the temporary file (also done by the destructor).
  void discard();

  const std::string& path() const { return path_; }
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  // 256 KB: with 1 MB, the buffer alone was 200 of the 3,700 pages a 10 MB rank faults in.
  static constexpr size_t kFlushSize = size_t{256} << 10;
  void flush_buffer();
  void make_room(size_t n);

  std::string path_;
  std::string temp_path_;
  FILE* file_ = nullptr;
  void* gz_ = nullptr;  // gzFile
  // The bytes not yet written out: used_ of capacity_ (not zeroed: room() hands out the rest).
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;
  size_t used_ = 0;
  uint64_t bytes_written_ = 0;
  bool failed_ = false;
};

// Convenience: writes `content` atomically to `path`.
Status write_file_atomically(const std::string& path, std::string_view content);

}  // namespace chakraflow
