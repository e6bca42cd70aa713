// The jsonizer: a Chakra .et file as JSON text (Chakra's `chakra_jsonizer`).
//
// Each message is written in the proto3 JSON mapping exactly as Python protobuf's
// `json_format.MessageToJson` writes it (the format of Chakra's jsonizer): lowerCamelCase keys in
// field-number order, fields at their default value left out (members of a oneof kept), 64-bit
// integers as strings, enums by name, bytes in base64, doubles as Python's float repr (Infinity /
// NaN as strings), non-ASCII escaped as \uXXXX.
//
// Two layouts:
//  - default: one valid JSON document,
//      {"globalMetadata": {...}, "nodes": [{...}, {...}, ...]}
//    with one node per line;
//  - concatenated (Chakra's layout, reference/chakra_spec.md §3): each message as
//    MessageToJson(msg, indent=2), written back to back with no separator. This is not one valid
//    JSON document; it is byte-identical to what chakra_jsonizer writes.
// Both read the input as a stream (bounded memory) and keep every field Chakra's schema defines.
// A 0-length record is written as an all-default node ({}), where Chakra's Python reader stops.
//
// Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "stages/common/status.h"
#include "stages/et/et_io.h"

namespace ChakraProtoMsg {
class GlobalMetadata;
class Node;
}  // namespace ChakraProtoMsg

namespace chakraflow {

struct JsonizeOptions {
  bool concatenated = false;  // Chakra's back-to-back MessageToJson objects
};

struct JsonizeReport {
  uint64_t nodes = 0;
  uint64_t bytes_written = 0;
  // The file has no GlobalMetadata record (it is empty or starts with a Node): every record was
  // written as a node, and the output has no "globalMetadata".
  bool metadata_missing = false;
};

// Appends MessageToJson(message) to `out`: with indent = 2 Python's layout, with indent < 0 a
// single line with Python's default separators (", " and ": ").
void append_message_json(std::string& out, const ChakraProtoMsg::GlobalMetadata& message,
                         int indent);
void append_message_json(std::string& out, const ChakraProtoMsg::Node& message, int indent);

// A .et read the way the jsonizer (and the Python module's read_et) reads it: the GlobalMetadata
// when the first record is one (a file that starts with a Node, or has no record, has none: the
// feeder's rule), then every node in file order, each checked to carry a NodeType of the schema.
// Streaming (one record at a time). Errors name the file, the record and its byte.
class EtNodeReader {
 public:
  EtNodeReader(EtNodeReader&&) noexcept;
  EtNodeReader& operator=(EtNodeReader&&) noexcept;
  ~EtNodeReader();

  static StatusOr<EtNodeReader> open(const std::string& path);

  bool has_metadata() const { return has_metadata_; }
  // The GlobalMetadata; all-default when has_metadata() is false.
  const ChakraProtoMsg::GlobalMetadata& metadata() const { return *metadata_; }
  // The next node (cleared first); false at the end of the file.
  StatusOr<bool> next(ChakraProtoMsg::Node* node);

 private:
  explicit EtNodeReader(EtReader reader);

  EtReader reader_;
  std::unique_ptr<ChakraProtoMsg::GlobalMetadata> metadata_;
  std::unique_ptr<ChakraProtoMsg::Node> first_node_;  // a first record that is a node, not read yet
  bool has_metadata_ = false;
};

// Reads `input_path` (.et, gzip'd or not) and writes `output_path` (gzip'd when it ends in .gz),
// atomically. Errors name the file and the record.
Status jsonize_file(const std::string& input_path, const std::string& output_path,
                    const JsonizeOptions& options, JsonizeReport* report);

}  // namespace chakraflow
