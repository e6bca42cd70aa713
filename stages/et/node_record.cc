#include "stages/et/node_record.h"

#include "proto/et_def.pb.h"
#include "stages/et/wire_format.h"

namespace chakraflow {

using wire::kLen;
using wire::kVarint;
using wire::read_varint;
using wire::skip_field;

Status NodeRecord::decode(std::string raw, NodeRecord* out) {
  if (raw.size() > UINT32_MAX) return Status::error("node record larger than 4 GiB");
  *out = NodeRecord();
  out->raw_ = std::move(raw);
  const auto* const begin = reinterpret_cast<const uint8_t*>(out->raw_.data());
  const uint8_t* p = begin;
  const uint8_t* const end = begin + out->raw_.size();
  auto fail = [&](const char* what) {
    return Status::errorf("malformed Node: {} at byte {} of the record", what, p - begin);
  };
  auto here = [&](const uint8_t* q) { return static_cast<uint32_t>(q - begin); };
  while (p < end) {
    uint64_t tag;
    if (!read_varint(p, end, &tag)) return fail("truncated field tag");
    const auto field = static_cast<uint32_t>(tag >> 3);
    const auto wt = static_cast<uint32_t>(tag & 7);
    if (field == 0) return fail("field number 0");
    if (wt == kVarint && (field == 1 || field == 3 || field == 7)) {
      uint64_t v;
      if (!read_varint(p, end, &v)) return fail("truncated varint");
      if (field == 1) out->id_ = v;
      if (field == 3) out->type_ = static_cast<int32_t>(v);
      if (field == 7) out->duration_micros_ = v;
      continue;
    }
    if (wt == kLen && (field == 2 || field == 8 || field == 9 || field == 10)) {
      uint64_t len;
      if (!read_varint(p, end, &len) || len > static_cast<uint64_t>(end - p)) {
        return fail("length-delimited field longer than the record");
      }
      const Span value{here(p), static_cast<uint32_t>(len)};
      if (field == 2) {
        out->name_ = value;
      } else if (field == 8 || field == 9) {
        out->has_io_[field - 8] = true;
      } else {
        // An AttributeProto: find its name (field 1; the last one wins, as when parsed).
        Attr attr{value, Span{}};
        const uint8_t* q = p;
        const uint8_t* const attr_end = p + len;
        while (q < attr_end) {
          uint64_t t;
          if (!read_varint(q, attr_end, &t)) return fail("truncated attribute");
          const auto f = static_cast<uint32_t>(t >> 3);
          const auto w = static_cast<uint32_t>(t & 7);
          if (f == 0) return fail("attribute field number 0");
          if (f == 1 && w == kLen) {
            uint64_t n;
            if (!read_varint(q, attr_end, &n) || n > static_cast<uint64_t>(attr_end - q)) {
              return fail("attribute name longer than the attribute");
            }
            attr.name = Span{here(q), static_cast<uint32_t>(n)};
            q += n;
          } else if (!skip_field(q, attr_end, w, f)) {
            return fail("malformed attribute");
          }
        }
        out->attrs_.push_back(attr);
      }
      p += len;
      continue;
    }
    if (!skip_field(p, end, wt, field)) return fail("truncated or malformed field");
  }
  return Status();
}

int NodeRecord::find_attr(std::string_view name) const {
  for (size_t i = 0; i < attrs_.size(); ++i) {
    if (span(attrs_[i].name) == name) return static_cast<int>(i);
  }
  return -1;
}

bool NodeRecord::parse_attr(size_t i, ChakraProtoMsg::AttributeProto* out) const {
  const std::string_view bytes = span(attrs_[i].bytes);
  return out->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

Status NodeRecord::parse(ChakraProtoMsg::Node* out) const {
  if (!out->ParseFromString(raw_)) {
    return Status::errorf("node {} ({} bytes) does not parse as a ChakraProtoMsg.Node", id_,
                          raw_.size());
  }
  return Status();
}

std::string NodeRecord::io_field(int which, int field, const std::string& fallback) const {
  if (which < 8 || which > 9 || !has_io_[which - 8]) return fallback;
  // Rare (the process-group METADATA node): decode the message, which also merges an IOInfo
  // that appears twice as protobuf does.
  ChakraProtoMsg::Node node;
  if (!node.ParseFromString(raw_)) return fallback;
  const ChakraProtoMsg::IOInfo& io = which == 8 ? node.inputs() : node.outputs();
  switch (field) {
    case 1:
      return io.values();
    case 2:
      return io.shapes();
    default:
      return io.types();
  }
}

}  // namespace chakraflow
