// A file in memory (memfd) for fuzz targets whose stage reads by path: one per process, rewritten
// for each input, opened by the stage as /proc/self/fd/N. No disk I/O, nothing left behind.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace chakraflow::fuzz {

class MemFile {
 public:
  explicit MemFile(const char* name) : fd_(memfd_create(name, 0)) {
    if (fd_ < 0) __builtin_trap();
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  // Replaces the content with `size` bytes at `data`.
  void assign(const void* data, size_t size) {
    if (ftruncate(fd_, 0) != 0) __builtin_trap();
    const auto* p = static_cast<const char*>(data);
    for (size_t done = 0; done < size;) {
      ssize_t n = pwrite(fd_, p + done, size - done, static_cast<off_t>(done));
      if (n <= 0) __builtin_trap();
      done += static_cast<size_t>(n);
    }
  }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

}  // namespace chakraflow::fuzz
