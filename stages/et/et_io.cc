#include "stages/et/et_io.h"

#include <fcntl.h>
#include <google/protobuf/message_lite.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

namespace chakraflow {
namespace {

// Per open file (a simulation opens one per rank): small, grown only for a larger record.
constexpr size_t kReadChunk = 64 << 10;
// protobuf refuses messages of 2 GiB and more; Chakra's readers take a 32-bit length.
constexpr uint64_t kMaxRecordBytes = std::numeric_limits<int32_t>::max();

gzFile as_gz(void* p) {
  return static_cast<gzFile>(p);
}

// gzerror()'s message. zlib starts it with the name it opened the file by, "<fd:N>" for a
// descriptor: it names the path instead, as when zlib opened the file by its name.
std::string gz_error_text(gzFile gz, int fd, const std::string& path, int* errnum) {
  std::string text = gzerror(gz, errnum);
  const std::string by_fd = fmt::format("<fd:{}>: ", fd);
  if (text.starts_with(by_fd)) text = path + ": " + text.substr(by_fd.size());
  return text;
}

}  // namespace

bool first_record_is_node(std::string_view record) {
  auto p = reinterpret_cast<const uint8_t*>(record.data());
  const uint8_t* const end = p + record.size();
  auto varint = [&](uint64_t* out) {
    *out = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p == end) return false;
      const uint8_t b = *p++;
      *out |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  };
  while (p < end) {
    uint64_t tag = 0, length = 0;
    if (!varint(&tag)) return false;
    const uint64_t field = tag >> 3;
    if ((field != 1 && field != 2) || (tag & 7) != 2) return true;
    if (!varint(&length) || length > static_cast<uint64_t>(end - p)) return false;
    p += length;
  }
  return false;
}

void append_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

EtFile::EtFile(EtFile&& other) noexcept {
  *this = std::move(other);
}

EtFile& EtFile::operator=(EtFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    regular_ = other.regular_;
    directory_ = other.directory_;
    gzip_ = other.gzip_;
  }
  return *this;
}

EtFile::~EtFile() {
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<EtFile> EtFile::open(const std::string& path) {
  EtFile file;
  file.path_ = path;
  file.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (file.fd_ < 0 || ::fstat(file.fd_, &st) != 0) {
    return Status::errorf("{}: cannot open: {}", path, std::strerror(errno));
  }
  file.regular_ = S_ISREG(st.st_mode);
  file.directory_ = S_ISDIR(st.st_mode);
  if (file.regular_) {
    char magic[2];
    ssize_t n;
    do {
      n = ::pread(file.fd_, magic, 2, 0);
    } while (n < 0 && errno == EINTR);
    file.gzip_ = n == 2 && has_gzip_magic(std::string_view(magic, 2));
  }
  return file;
}

StatusOr<EtFile> EtFile::duplicate() const {
  EtFile copy;
  copy.fd_ = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  if (copy.fd_ < 0) {
    return Status::errorf("{}: cannot duplicate its descriptor: {}", path_, std::strerror(errno));
  }
  copy.path_ = path_;
  copy.regular_ = regular_;
  copy.directory_ = directory_;
  copy.gzip_ = gzip_;
  return copy;
}

int EtFile::release() {
  return std::exchange(fd_, -1);
}

EtReader::EtReader(EtReader&& other) noexcept {
  *this = std::move(other);
}

EtReader& EtReader::operator=(EtReader&& other) noexcept {
  if (this != &other) {
    close();
    path_ = std::move(other.path_);
    gz_ = other.gz_;
    other.gz_ = nullptr;
    gzip_ = std::move(other.gzip_);
    fd_ = std::exchange(other.fd_, -1);
    buf_ = std::move(other.buf_);
    buf_pos_ = other.buf_pos_;
    buf_end_ = other.buf_end_;
    eof_ = other.eof_;
    record_index_ = other.record_index_;
    offset_ = other.offset_;
    max_record_bytes_ = other.max_record_bytes_;
    empty_in_a_row_ = other.empty_in_a_row_;
  }
  return *this;
}

EtReader::~EtReader() {
  close();
}

void EtReader::close() {
  if (gz_ != nullptr) {
    gzclose(as_gz(gz_));  // closes fd_
  } else if (fd_ >= 0) {
    ::close(fd_);
  }
  gz_ = nullptr;
  gzip_.reset();
  fd_ = -1;
}

StatusOr<EtReader> EtReader::open(const std::string& path) {
  CF_ASSIGN_OR_RETURN(EtFile file, EtFile::open(path));
  return open(std::move(file));
}

StatusOr<EtReader> EtReader::open(EtFile file) {
  if (file.directory()) return Status::errorf("{}: is a directory, not a .et file", file.path());
  if (file.gzip()) {
    EtReader reader;
    reader.path_ = file.path();
    reader.fd_ = file.release();
    reader.gzip_ = std::make_unique<GzipFileReader>(reader.fd_);
    reader.buf_.resize(kReadChunk);
    return reader;
  }
  gzFile gz = gzdopen(file.fd(), "rb");
  if (gz == nullptr) {
    return Status::errorf("{}: cannot open: {}", file.path(), std::strerror(errno));
  }
  gzbuffer(gz, 64 << 10);
  EtReader reader;
  reader.path_ = file.path();
  reader.fd_ = file.release();  // gzclose closes it
  reader.gz_ = gz;
  reader.buf_.resize(kReadChunk);
  return reader;
}

StatusOr<size_t> EtReader::fill(size_t n) {
  size_t avail = buf_end_ - buf_pos_;
  if (avail >= n || eof_) return avail;
  // Move what is left to the front, grow to hold n bytes, then read until n are there or EOF.
  if (buf_pos_ > 0) {
    std::memmove(buf_.data(), buf_.data() + buf_pos_, avail);
    buf_pos_ = 0;
    buf_end_ = avail;
  }
  while (buf_end_ < n) {
    // Grow with the data that arrives, not to the length a record announces: a corrupt length
    // prefix in a tiny file must not allocate gigabytes before the truncation is found.
    if (buf_end_ == buf_.size()) buf_.resize(std::min(n, std::max(buf_.size() * 2, kReadChunk)));
    size_t room = std::min<size_t>(buf_.size() - buf_end_, 1u << 30);
    if (gzip_ != nullptr) {
      const GzipFileReader::Result r = gzip_->read(buf_.data() + buf_end_, room);
      if (!r.ok && r.read_errno != 0) {
        return Status::errorf("{}: read error near byte {}: {}", path_, offset_ + buf_end_,
                              std::strerror(r.read_errno));
      }
      if (!r.ok) {
        return Status::errorf("{}: corrupt or truncated gzip data after {} decompressed bytes: {}",
                              path_, offset_ + buf_end_ + r.got, r.message);
      }
      if (r.got == 0) {
        eof_ = true;
        break;
      }
      buf_end_ += r.got;
      continue;
    }
    int got = gzread(as_gz(gz_), buf_.data() + buf_end_, static_cast<unsigned>(room));
    if (got < 0) {
      const int read_errno = errno;
      int errnum = 0;
      const std::string msg = gz_error_text(as_gz(gz_), fd_, path_, &errnum);
      return Status::errorf("{}: read error near byte {}: {}", path_, offset_ + buf_end_,
                            errnum == Z_ERRNO ? std::strerror(read_errno) : msg);
    }
    if (got == 0) {
      int errnum = 0;
      const std::string msg = gz_error_text(as_gz(gz_), fd_, path_, &errnum);
      if (errnum != Z_OK && errnum != Z_STREAM_END) {
        return Status::errorf("{}: corrupt or truncated gzip data after {} decompressed bytes: {}",
                              path_, offset_ + buf_end_, msg);
      }
      eof_ = true;
      break;
    }
    buf_end_ += static_cast<size_t>(got);
  }
  return buf_end_ - buf_pos_;
}

StatusOr<bool> EtReader::next_raw(std::string_view* record) {
  CF_ASSIGN_OR_RETURN(size_t avail, fill(10));
  if (avail == 0) return false;
  // The length varint.
  uint64_t length = 0;
  size_t used = 0;
  for (int shift = 0;; shift += 7) {
    if (used >= avail) {
      return Status::errorf("{}: record #{} at byte {}: truncated length prefix", path_,
                            record_index_, offset_);
    }
    if (shift >= 64) {
      return Status::errorf("{}: record #{} at byte {}: malformed length prefix", path_,
                            record_index_, offset_);
    }
    auto b = static_cast<unsigned char>(buf_[buf_pos_ + used++]);
    length |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) break;
  }
  if (length > kMaxRecordBytes) {
    return Status::errorf(
        "{}: record #{} at byte {}: length {} is too large (not a .et file, or corrupt)", path_,
        record_index_, offset_, length);
  }
  CF_ASSIGN_OR_RETURN(avail, fill(used + length));
  if (avail < used + length) {
    return Status::errorf("{}: record #{} at byte {}: truncated: {} bytes announced, {} left",
                          path_, record_index_, offset_, length, avail - used);
  }
  // An empty record is an all-default message (a node with id 0): one is valid, a second in a row
  // is the same node again. Input that keeps giving them (/dev/zero) would never end.
  if (length == 0 && record_index_ > 0) {
    if (++empty_in_a_row_ >= 2) {
      return Status::errorf(
          "{}: record #{} at byte {}: a second empty record in a row (an all-default node, id 0, "
          "again): not a .et trace",
          path_, record_index_, offset_);
    }
  } else {
    empty_in_a_row_ = 0;
  }
  *record = std::string_view(buf_.data() + buf_pos_ + used, length);
  buf_pos_ += used + length;
  offset_ += used + length;
  ++record_index_;
  if (length > max_record_bytes_) max_record_bytes_ = length;
  return true;
}

StatusOr<bool> EtReader::next(google::protobuf::MessageLite* message) {
  const uint64_t at = offset_;
  const uint64_t index = record_index_;
  std::string_view record;
  CF_ASSIGN_OR_RETURN(bool have, next_raw(&record));
  if (!have) return false;
  message->Clear();
  if (!message->ParseFromArray(record.data(), static_cast<int>(record.size()))) {
    return Status::errorf("{}: record #{} at byte {} ({} bytes) does not parse as {}", path_, index,
                          at, record.size(), message->GetTypeName());
  }
  return true;
}

StatusOr<EtWriter> EtWriter::open(const std::string& path) {
  CF_ASSIGN_OR_RETURN(OutputFile out, OutputFile::open(path));
  return EtWriter(std::move(out));
}

void EtWriter::write(const google::protobuf::MessageLite& message) {
  const size_t size = message.ByteSizeLong();
  scratch_.clear();
  append_varint(scratch_, size);
  const size_t prefix = scratch_.size();
  scratch_.resize(prefix + size);
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(scratch_.data() + prefix));
  out_.write(scratch_);
  ++records_;
}

void EtWriter::write_raw(std::string_view serialized) {
  scratch_.clear();
  append_varint(scratch_, serialized.size());
  out_.write(scratch_);
  out_.write(serialized);
  ++records_;
}

Status EtWriter::commit() {
  return out_.commit();
}

}  // namespace chakraflow
