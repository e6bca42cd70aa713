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
    if (buffer_.size() >= kFlushSize) flush_buffer();
    buffer_.push_back(c);
  }
  // Flushes, closes and renames the temporary file to the destination.
  Status commit();
  // Removes the temporary file (also done by the destructor).
  void discard();

  const std::string& path() const { return path_; }
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  static constexpr size_t kFlushSize = 1 << 20;
  void flush_buffer();

  std::string path_;
  std::string temp_path_;
  FILE* file_ = nullptr;
  void* gz_ = nullptr;  // gzFile
  std::string buffer_;
  uint64_t bytes_written_ = 0;
  bool failed_ = false;
};

// Convenience: writes `content` atomically to `path`.
Status write_file_atomically(const std::string& path, std::string_view content);

}  // namespace chakraflow
