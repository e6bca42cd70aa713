// Reading and writing Chakra .et files (reference/chakra_spec.md §3).
//
// A .et file is a sequence of records with no header: a base-128 varint byte length N, then N
// bytes of a serialized protobuf message. Record 1 is a ChakraProtoMsg.GlobalMetadata, every
// further record a ChakraProtoMsg.Node. A 0-length record is a valid all-default message (id 0),
// as Chakra's C++ reader has it (its Python reader stops there instead); two in a row among the
// nodes are an error (the same node twice: input such as /dev/zero, which would never end).
//
// EtFile is a .et file opened for reading, once: what reads it (EtReader, then the feeders' index
// reading its records again by offset) shares the one descriptor.
//
// EtReader streams: it holds one buffer of compressed and one of decompressed input plus the
// current record, so memory is bounded by the largest record, not the file. gzip'd files are
// detected by their magic bytes (1f 8b), whatever their name, and a gzip'd regular file is
// inflated by ISA-L where the build has it (GzipFileReader), a stream by zlib. Errors name the file
// and the byte offset of the record in the decompressed stream.
//
// EtWriter writes through OutputFile: a temporary file renamed on commit(), gzip'd when the name
// ends in ".gz". Output bytes depend only on the messages written.
//
// Neither class is thread-safe; use one per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "stages/common/file_io.h"
#include "stages/common/status.h"

namespace google::protobuf {
class MessageLite;
}

namespace chakraflow {

class EtFile {
 public:
  EtFile(EtFile&& other) noexcept;
  EtFile& operator=(EtFile&& other) noexcept;
  ~EtFile();

  // Opens `path` for reading. Error: "<path>: cannot open: <reason>".
  static StatusOr<EtFile> open(const std::string& path);
  // Another descriptor of the same open file (dup(2), no second open). The two share the file
  // offset, which reading by offset (pread) does not use.
  StatusOr<EtFile> duplicate() const;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  bool regular() const { return regular_; }      // a regular file: its bytes can be read by offset
  bool directory() const { return directory_; }  // not a .et file; EtReader refuses it
  // A regular file that starts with the gzip magic (stages/common/file_io.h: has_gzip_magic).
  bool gzip() const { return gzip_; }
  // Gives up the descriptor (the caller closes it).
  int release();

 private:
  EtFile() = default;
  std::string path_;
  int fd_ = -1;
  bool regular_ = false;
  bool directory_ = false;
  bool gzip_ = false;
};

class EtReader {
 public:
  EtReader(EtReader&&) noexcept;
  EtReader& operator=(EtReader&&) noexcept;
  ~EtReader();

  static StatusOr<EtReader> open(const std::string& path);
  // Reads `file`, which it takes, from its current offset (the start, for a file just opened).
  static StatusOr<EtReader> open(EtFile file);

  // Reads the next record into `message` (cleared first). Returns false at a clean end of file
  // (no byte left where a record would start); an error for a truncated record, a length that does
  // not fit, or bytes that do not parse as `message`'s type.
  StatusOr<bool> next(google::protobuf::MessageLite* message);

  // The next record's raw bytes without parsing them (a view valid until the next call).
  StatusOr<bool> next_raw(std::string_view* record);

  const std::string& path() const { return path_; }
  // Index of the next record (0 = the GlobalMetadata) and its byte offset in the decompressed
  // stream.
  uint64_t record_index() const { return record_index_; }
  uint64_t offset() const { return offset_; }
  // Largest record read so far, in bytes.
  uint64_t max_record_bytes() const { return max_record_bytes_; }

 private:
  EtReader() = default;
  // Makes at least `n` bytes available at buf_pos_, unless the input ends first. Returns the number
  // of bytes available (possibly fewer than n), or an error.
  StatusOr<size_t> fill(size_t n);
  // Closes the descriptor (and the zlib stream on it).
  void close();

  std::string path_;
  void* gz_ = nullptr;  // gzFile: reads plain files and streams (gzip'd or not)
  // A gzip'd regular file's reader (ISA-L's inflate where the build has it), in place of gz_.
  std::unique_ptr<GzipFileReader> gzip_;
  int fd_ = -1;  // the descriptor (gzclose closes gz_'s; the destructor gzip_'s)
  std::string buf_;
  size_t buf_pos_ = 0;
  size_t buf_end_ = 0;
  bool eof_ = false;
  uint64_t record_index_ = 0;
  uint64_t offset_ = 0;
  uint64_t max_record_bytes_ = 0;
  int empty_in_a_row_ = 0;  // empty Node records just read
};

class EtWriter {
 public:
  static StatusOr<EtWriter> open(const std::string& path);

  // Appends one record (length varint + the message's bytes).
  void write(const google::protobuf::MessageLite& message);
  // Appends one record whose bytes are already serialized.
  void write_raw(std::string_view serialized);
  // Appends one record encoded in place: room for at most `n` bytes (its length varint, then its
  // bytes), then keep_record with what was written.
  char* record_room(size_t n) { return out_.room(n); }
  void keep_record(size_t written) {
    out_.keep(written);
    ++records_;
  }
  // Appends `records` records already framed (each its length varint, then its bytes).
  void append_records(std::string_view framed, uint64_t records) {
    out_.write(framed);
    records_ += records;
  }
  // A .et.gz's blocks compressed through `workers` (OutputFile::compress_on).
  void compress_on(const OrderedBatches* workers) { out_.compress_on(workers); }
  // Flushes and renames the file into place. Errors name the file.
  Status commit();

  uint64_t records_written() const { return records_; }
  uint64_t bytes_written() const { return out_.bytes_written(); }
  const std::string& path() const { return out_.path(); }

 private:
  explicit EtWriter(OutputFile out) : out_(std::move(out)) {}
  OutputFile out_;
  std::string scratch_;
  uint64_t records_ = 0;
};

// True when the first record of a .et file is a Node, not a GlobalMetadata: the file has no
// metadata record. A GlobalMetadata has only fields 1 (version) and 2 (attr), both
// length-delimited; a record with any other field is a Node. Malformed bytes: false (the
// record's parse reports them).
bool first_record_is_node(std::string_view record);

// Appends `value` as a base-128 varint.
void append_varint(std::string& out, uint64_t value);

}  // namespace chakraflow
