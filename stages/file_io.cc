#include "stages/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace chakraflow {
namespace {

std::string errno_text() {
  return std::strerror(errno);
}

bool is_gzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

StatusOr<std::string> gunzip(const std::string& path, const std::string& compressed) {
  // ISIZE (last 4 bytes) is the size of the last member modulo 2^32: a hint, not a bound. In a
  // truncated or corrupt file it is any 4 bytes; deflate expands at most 1032:1.
  size_t hint = compressed.size() * 4;
  if (compressed.size() >= 18) {
    uint32_t isize;
    std::memcpy(&isize, compressed.data() + compressed.size() - 4, 4);
    if (isize > compressed.size()) hint = std::min<size_t>(isize, compressed.size() * 1032);
  }
  std::string out;
  out.reserve(hint + kInputPadding);
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return Status::errorf("{}: cannot initialise zlib", path);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  zs.avail_in = static_cast<uInt>(0);
  size_t consumed = 0;
  const size_t total = compressed.size();
  int rc = Z_OK;
  while (true) {
    if (zs.avail_in == 0 && consumed < total) {
      size_t chunk = std::min<size_t>(total - consumed, 1u << 30);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data() + consumed));
      zs.avail_in = static_cast<uInt>(chunk);
      consumed += chunk;
    }
    if (out.size() == out.capacity() || out.capacity() - out.size() < 4096) {
      out.reserve(std::max<size_t>(out.capacity() * 2, 1 << 16));
    }
    // Resizing writes zeros: only over what this inflate call may fill, so that memory follows
    // the data and not the reservation.
    size_t old_size = out.size();
    size_t room = std::min<size_t>(out.capacity() - old_size, 1u << 24);
    out.resize(old_size + room);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + old_size);
    zs.avail_out = static_cast<uInt>(room);
    size_t offered = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(old_size + (offered - zs.avail_out));
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members are legal: continue with the next one if any input is left.
      size_t left = zs.avail_in + (total - consumed);
      if (left == 0) break;
      if (inflateReset(&zs) != Z_OK) break;
      continue;
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && consumed >= total) {
      inflateEnd(&zs);
      return Status::errorf("{}: truncated gzip stream after {} decompressed bytes", path,
                            out.size());
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      uint64_t at = consumed - zs.avail_in;
      inflateEnd(&zs);
      return Status::errorf("{}: corrupt gzip data near compressed byte {}: {}", path, at,
                            zs.msg ? zs.msg : "inflate failed");
    }
  }
  inflateEnd(&zs);
  if (out.capacity() < out.size() + kInputPadding) out.reserve(out.size() + kInputPadding);
  return out;
}

std::string make_temp_path(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return fmt::format("{}.tmp.{}.{}", path, static_cast<long>(::getpid()), counter.fetch_add(1));
}

}  // namespace

bool has_gz_suffix(std::string_view path) {
  return path.size() >= 3 && path.substr(path.size() - 3) == ".gz";
}

StatusOr<std::string> read_input_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::errorf("{}: cannot open: {}", path, errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Status::errorf("{}: cannot stat: {}", path, errno_text());
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::errorf("{}: is a directory, expected a file", path);
  }
  std::string bytes;
  bytes.reserve(static_cast<size_t>(st.st_size) + kInputPadding);
  bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return Status::errorf("{}: read failed at byte {}: {}", path, done, errno_text());
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  if (is_gzip(bytes)) return gunzip(path, bytes);
  return bytes;
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
    writable_ = other.writable_;
    other.data_ = nullptr;
    other.size_ = other.capacity_ = 0;
  }
  return *this;
}

char* InputText::mutable_data() {
  if (!writable_ && map_ != nullptr) {
    ::mprotect(map_, map_len_, PROT_READ | PROT_WRITE);
    writable_ = true;
  }
  return data_;
}

StatusOr<InputText> InputText::read(const std::string& path) {
  constexpr off_t kMapAtLeast = off_t{1} << 20;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    struct stat st {};
    unsigned char magic[2] = {0, 0};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= kMapAtLeast &&
        ::pread(fd, magic, 2, 0) == 2 && !(magic[0] == 0x1f && magic[1] == 0x8b)) {
      const size_t size = static_cast<size_t>(st.st_size);
      const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
      const size_t file_len = (size + page - 1) / page * page;
      const size_t len = (size + kInputPadding + page - 1) / page * page;
      // Reserve the whole range (the padding past the file's last page reads as zeros), then map
      // the file over its start.
      void* base = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (base != MAP_FAILED) {
        void* file =
            ::mmap(base, file_len, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, 0);
        if (file != MAP_FAILED) {
          ::close(fd);
          InputText text;
          text.map_ = base;
          text.map_len_ = len;
          text.data_ = static_cast<char*>(base);
          text.size_ = size;
          text.capacity_ = len;
          text.writable_ = false;
          return text;
        }
        ::munmap(base, len);
      }
    }
    ::close(fd);
  }
  // Small, compressed or special files, or mapping failed: read them.
  CF_ASSIGN_OR_RETURN(std::string bytes, read_input_file(path));
  return InputText(std::move(bytes));
}

OutputFile::~OutputFile() {
  discard();
}

OutputFile::OutputFile(OutputFile&& other) noexcept {
  *this = std::move(other);
}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    discard();
    path_ = std::move(other.path_);
    temp_path_ = std::move(other.temp_path_);
    file_ = std::exchange(other.file_, nullptr);
    gz_ = std::exchange(other.gz_, nullptr);
    buffer_ = std::move(other.buffer_);
    capacity_ = std::exchange(other.capacity_, 0);
    used_ = std::exchange(other.used_, 0);
    bytes_written_ = other.bytes_written_;
    failed_ = other.failed_;
    other.temp_path_.clear();
  }
  return *this;
}

StatusOr<OutputFile> OutputFile::open(const std::string& path) {
  return open(path, has_gz_suffix(path));
}

StatusOr<OutputFile> OutputFile::open(const std::string& path, bool gzip) {
  if (path.empty()) return Status::error("output path is empty");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::errorf("{}: is a directory, expected an output file name", path);
  }
  OutputFile out;
  out.path_ = path;
  out.temp_path_ = make_temp_path(path);
  int fd = ::open(out.temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::string why = errno_text();
    out.temp_path_.clear();
    return Status::errorf("{}: cannot create output: {}", path, why);
  }
  if (gzip) {
    out.gz_ = gzdopen(fd, "wb1");
    if (out.gz_ == nullptr) {
      ::close(fd);
      return Status::errorf("{}: cannot start gzip stream", path);
    }
    gzbuffer(static_cast<gzFile>(out.gz_), 1 << 18);
  } else {
    out.file_ = ::fdopen(fd, "wb");
    if (out.file_ == nullptr) {
      ::close(fd);
      return Status::errorf("{}: cannot open output stream", path);
    }
  }
  out.capacity_ = kFlushSize + 4096;
  out.buffer_ = std::make_unique_for_overwrite<char[]>(out.capacity_);
  return out;
}

void OutputFile::write(std::string_view bytes) {
  if (used_ + bytes.size() > kFlushSize) flush_buffer();
  if (bytes.size() > kFlushSize) {
    bytes_written_ += bytes.size();
    if (gz_) {
      failed_ |= gzwrite(static_cast<gzFile>(gz_), bytes.data(),
                         static_cast<unsigned>(bytes.size())) != static_cast<int>(bytes.size());
    } else if (file_) {
      failed_ |= std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size();
    }
    return;
  }
  if (bytes.empty()) return;
  std::memcpy(room(bytes.size()), bytes.data(), bytes.size());
  used_ += bytes.size();
}

void OutputFile::make_room(size_t n) {
  flush_buffer();
  if (capacity_ >= n) return;
  // A record larger than the buffer: a buffer that holds it (nothing is buffered now).
  capacity_ = n;
  buffer_ = std::make_unique_for_overwrite<char[]>(capacity_);
}

void OutputFile::flush_buffer() {
  if (used_ == 0) return;
  bytes_written_ += used_;
  if (gz_) {
    failed_ |= gzwrite(static_cast<gzFile>(gz_), buffer_.get(), static_cast<unsigned>(used_)) !=
               static_cast<int>(used_);
  } else if (file_) {
    failed_ |= std::fwrite(buffer_.get(), 1, used_, file_) != used_;
  } else {
    failed_ = true;
  }
  used_ = 0;
}

Status OutputFile::commit() {
  if (temp_path_.empty()) return Status::errorf("{}: output already closed", path_);
  flush_buffer();
  bool close_failed = false;
  if (gz_) {
    close_failed = gzclose(static_cast<gzFile>(gz_)) != Z_OK;
    gz_ = nullptr;
  }
  if (file_) {
    close_failed = std::fflush(file_) != 0;
    close_failed |= std::fclose(file_) != 0;
    file_ = nullptr;
  }
  if (failed_ || close_failed) {
    discard();
    return Status::errorf("{}: write failed (disk full or I/O error)", path_);
  }
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    std::string why = errno_text();
    discard();
    return Status::errorf("{}: cannot rename temporary output into place: {}", path_, why);
  }
  temp_path_.clear();
  return Status();
}

void OutputFile::discard() {
  if (gz_) {
    gzclose(static_cast<gzFile>(gz_));
    gz_ = nullptr;
  }
  if (file_) {
    std::fclose(file_);
    file_ = nullptr;
  }
  if (!temp_path_.empty()) {
    ::unlink(temp_path_.c_str());
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
