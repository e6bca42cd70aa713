// NodeRecord: one serialized ChakraProtoMsg::Node, kept as its bytes and decoded on demand. The
// compat feeders' nodes hold one instead of a parsed protobuf message (a parsed Node takes about
// 6x its serialized size).
//
// decode() walks the record's top level once: id, name, type, duration and where each attribute
// and the inputs / outputs lie. Attribute values are decoded only when asked for (one
// AttributeProto parsed from its bytes); parse() decodes the whole Node for callers that want the
// message. Values are what protobuf's parser gives: the last occurrence of a scalar field wins;
// for attributes, the first attribute of a name (as Chakra's feeders look them up).
// Internal (not installed). Immutable after decode(): safe to share between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stages/common/status.h"

namespace ChakraProtoMsg {
class AttributeProto;
class Node;
}  // namespace ChakraProtoMsg

namespace chakraflow {

class NodeRecord {
 public:
  // Takes `raw` (a Node's bytes). Error: the top level is not a well-formed Node.
  static Status decode(std::string raw, NodeRecord* out);

  uint64_t id() const { return id_; }
  int32_t type() const { return type_; }
  uint64_t duration_micros() const { return duration_micros_; }
  std::string_view name() const { return span(name_); }
  const std::string& raw() const { return raw_; }

  size_t attr_count() const { return attrs_.size(); }
  std::string_view attr_name(size_t i) const { return span(attrs_[i].name); }
  std::string_view attr_bytes(size_t i) const { return span(attrs_[i].bytes); }
  // Index of the first attribute named `name`, or -1.
  int find_attr(std::string_view name) const;
  // Decodes attribute `i` into `out`. False if its bytes do not parse.
  bool parse_attr(size_t i, ChakraProtoMsg::AttributeProto* out) const;
  // Decodes the whole record. The error names the node.
  Status parse(ChakraProtoMsg::Node* out) const;
  // The `values` / `shapes` / `types` of inputs (which = 8) or outputs (9); `fallback` when the
  // node has no such field.
  std::string io_field(int which, int field, const std::string& fallback) const;

 private:
  struct Span {
    uint32_t begin = 0;
    uint32_t size = 0;
  };
  struct Attr {
    Span bytes;
    Span name;
  };
  std::string_view span(Span s) const { return std::string_view(raw_).substr(s.begin, s.size); }

  std::string raw_;
  uint64_t id_ = 0;
  int32_t type_ = 0;
  uint64_t duration_micros_ = 0;
  Span name_;
  bool has_io_[2] = {false, false};
  std::vector<Attr> attrs_;
};

}  // namespace chakraflow
