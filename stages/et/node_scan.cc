#include "stages/et/node_scan.h"

#if defined(__BMI2__)
#include <immintrin.h>
#endif

#include <cstring>
#include <iterator>

#include <fmt/format.h>

#include "proto/et_def.pb.h"
#include "stages/et/wire_format.h"

namespace chakraflow {
namespace {

using wire::kEndGroup;
using wire::kFixed32;
using wire::kLen;
using wire::kStartGroup;
using wire::kVarint;
using wire::read_varint;
using wire::skip_field;

// Decodes the packed varints in [p, end) into dst (room for end - p values); `limit` (>= end) is
// how far the record's bytes may be read. Returns the end of dst, or nullptr if a varint runs past
// `end`. With BMI2, 8 bytes are loaded at a time and every varint ending in them is extracted
// with pext: no load depends on the length of the varint before it.
NodeId* decode_packed(const uint8_t* p, const uint8_t* end, const uint8_t* limit, NodeId* dst) {
#if defined(__BMI2__)
  while (p < end && limit - p >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    uint64_t stops = ~word & 0x8080808080808080ull;  // the last byte of each varint
    const auto avail = static_cast<uint64_t>(end - p);
    if (avail < 8) stops &= (uint64_t{1} << (avail * 8)) - 1;
    if (stops == 0) break;  // a varint of 9 or 10 bytes, or one running past `end`
    unsigned start = 0;     // bit where the current varint starts
    do {
      const unsigned stop = __builtin_ctzll(stops) + 1;  // bit past the varint
      const uint64_t bits = stop == 64 ? word : word & ((uint64_t{1} << stop) - 1);
      *dst++ = _pext_u64(bits >> start, 0x7f7f7f7f7f7f7f7full);
      start = stop;
      stops &= stops - 1;
    } while (stops != 0);
    p += start / 8;
  }
#else
  (void)limit;
#endif
  while (p < end) {
    if (!read_varint(p, end, dst)) return nullptr;
    ++dst;
  }
  return dst;
}

// The fields of Node (proto/et_def.proto) by number, with their wire type; ctrl_deps and
// data_deps may also be packed. Protobuf would keep a field of another type as an unknown field
// and the node would read as id 0, or nameless: that is another schema, or a corrupt record.
struct FieldSpec {
  const char* name;
  uint32_t wire_type;
};
constexpr FieldSpec kNodeFields[] = {{"", kVarint},
                                     {"id", kVarint},
                                     {"name", kLen},
                                     {"type", kVarint},
                                     {"ctrl_deps", kVarint},
                                     {"data_deps", kVarint},
                                     {"start_time_micros", kVarint},
                                     {"duration_micros", kVarint},
                                     {"inputs", kLen},
                                     {"outputs", kLen},
                                     {"attr", kLen}};

}  // namespace

Status scan_node(std::string_view raw, NodeHeader* header, std::vector<NodeId>* data_deps,
                 std::vector<NodeId>* ctrl_deps) {
  auto p = reinterpret_cast<const uint8_t*>(raw.data());
  const uint8_t* const begin = p;
  const uint8_t* const end = p + raw.size();
  *header = NodeHeader{};
  auto fail = [&](std::string_view what) {
    return Status::errorf("malformed Node: {} at byte {} of the record", what, p - begin);
  };
  while (p < end) {
    uint64_t tag;
    if (!read_varint(p, end, &tag)) return fail("truncated field tag");
    auto field = static_cast<uint32_t>(tag >> 3);
    auto wt = static_cast<uint32_t>(tag & 7);
    if (field == 0) return fail("field number 0");
    if (field < std::size(kNodeFields) && wt != kNodeFields[field].wire_type &&
        !(wt == kLen && (field == 4 || field == 5))) {
      return fail(fmt::format("field {} ({}) has wire type {}, not {}", field,
                              kNodeFields[field].name, wt, kNodeFields[field].wire_type));
    }
    if (wt == kVarint) {
      uint64_t v;
      if (!read_varint(p, end, &v)) return fail("truncated varint");
      switch (field) {
        case 1:
          header->id = v;
          break;
        case 3:
          // A type the schema does not know would be fed as if it were one (the simulator takes
          // it for a compute node): not a trace this schema describes.
          if (v > static_cast<uint64_t>(INT32_MAX) ||
              !ChakraProtoMsg::NodeType_IsValid(static_cast<int>(v))) {
            return fail(fmt::format("field 3 (type) is {}, not a NodeType of the schema", v));
          }
          header->type = static_cast<int32_t>(v);
          break;
        case 4:
          if (ctrl_deps) ctrl_deps->push_back(v);
          break;
        case 5:
          data_deps->push_back(v);
          break;
        case 7:
          header->duration_micros = v;
          break;
        default:
          break;
      }
    } else if (wt == kLen && (field == 4 || field == 5)) {
      uint64_t len;
      if (!read_varint(p, end, &len) || len > static_cast<uint64_t>(end - p)) {
        return fail("dependency list longer than the record");
      }
      const uint8_t* list_end = p + len;
      std::vector<NodeId>* out = field == 5 ? data_deps : ctrl_deps;
      if (out == nullptr) {
        p = list_end;
        continue;
      }
      // At most one id per byte: decode straight into the vector, then trim.
      const size_t before = out->size();
      out->resize(before + len);
      NodeId* dst = decode_packed(p, list_end, end, out->data() + before);
      if (dst == nullptr) return fail("truncated packed dependency");
      out->resize(static_cast<size_t>(dst - out->data()));
      p = list_end;
    } else if (!skip_field(p, end, wt, field)) {
      return fail(wt == kStartGroup                  ? "group not closed, or nested too deeply"
                  : wt == kEndGroup || wt > kFixed32 ? "bad wire type"
                                                     : "truncated field");
    }
  }
  return Status();
}

}  // namespace chakraflow
