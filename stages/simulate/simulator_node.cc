#include "stages/simulate/simulator_node.h"

#include <simdjson.h>

#include <algorithm>

namespace chakraflow {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };

// A forward-only reader over protobuf wire bytes; `ok` turns false at the first malformed byte.
struct Wire {
  const uint8_t* p;
  const uint8_t* end;
  const uint8_t* begin;
  bool ok = true;

  explicit Wire(std::string_view bytes)
      : p(reinterpret_cast<const uint8_t*>(bytes.data())),
        end(reinterpret_cast<const uint8_t*>(bytes.data()) + bytes.size()),
        begin(p) {}

  bool more() const { return ok && p < end; }
  uint64_t offset() const { return static_cast<uint64_t>(p - begin); }

  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64 && p < end; shift += 7) {
      const uint8_t b = *p++;
      value |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (b < 0x80) return value;
    }
    ok = false;
    return 0;
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    if (!ok || n > static_cast<uint64_t>(end - p)) {
      ok = false;
      return {};
    }
    std::string_view out(reinterpret_cast<const char*>(p), n);
    p += n;
    return out;
  }
  uint64_t fixed(int width) {
    if (end - p < width) {
      ok = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < width; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    p += width;
    return v;
  }
  void skip(uint32_t wire_type) {
    switch (wire_type) {
      case kVarint:
        varint();
        break;
      case kFixed64:
        fixed(8);
        break;
      case kLen:
        bytes();
        break;
      case kFixed32:
        fixed(4);
        break;
      default:
        ok = false;  // groups are not used by the Chakra schema
    }
  }
};

int64_t zigzag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// One AttributeProto: its name, and its value if it is an integer, a bool or a string.
struct Attribute {
  std::string_view name;
  std::optional<int64_t> integer;
  std::string_view string;
};

bool scan_attribute(std::string_view bytes, Attribute* out) {
  Wire w(bytes);
  while (w.more()) {
    const uint64_t tag = w.varint();
    const auto field = static_cast<uint32_t>(tag >> 3);
    const auto wt = static_cast<uint32_t>(tag & 7);
    if (!w.ok) break;
    if (field == 1 && wt == kLen) {
      out->name = w.bytes();
    } else if (field == 29 && wt == kLen) {
      out->string = w.bytes();
    } else if (wt == kVarint &&
               (field == 7 || field == 9 || field == 11 || field == 13 || field == 27)) {
      out->integer = static_cast<int64_t>(w.varint());
      if (field == 7) out->integer = static_cast<int32_t>(*out->integer);  // int32 sign
    } else if (wt == kVarint && (field == 15 || field == 17)) {
      out->integer = zigzag(w.varint());
    } else if (wt == kFixed32 && (field == 19 || field == 23)) {
      const auto v = static_cast<uint32_t>(w.fixed(4));
      out->integer = field == 23 ? static_cast<int64_t>(static_cast<int32_t>(v)) : v;
    } else if (wt == kFixed64 && (field == 21 || field == 25)) {
      out->integer = static_cast<int64_t>(w.fixed(8));
    } else {
      w.skip(wt);
    }
  }
  return w.ok;
}

// Python's str() of a one-string list -> the string. Returns false if it is not one.
bool unwrap_python_string_list(std::string_view s, std::string* out) {
  auto trim = [](std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\n')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\n')) v.remove_suffix(1);
    return v;
  };
  s = trim(s);
  if (s.size() < 4 || s.front() != '[' || s.back() != ']') return false;
  s = trim(s.substr(1, s.size() - 2));
  if (s.size() < 2 || (s.front() != '\'' && s.front() != '"') || s.back() != s.front()) {
    return false;
  }
  s = s.substr(1, s.size() - 2);
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char c = s[++i];
      switch (c) {
        case 'n':
          *out += '\n';
          break;
        case 't':
          *out += '\t';
          break;
        case 'r':
          *out += '\r';
          break;
        default:
          *out += c;  // \\, \', \"
      }
    } else {
      *out += s[i];
    }
  }
  return true;
}

constexpr int32_t kMetadataNode = 1;  // ChakraProtoMsg::METADATA_NODE

// The attributes the simulator reads. Most nodes carry a dozen others (rf_id, op_schema, ...):
// dispatch on the length first, so that those cost one or two comparisons.
void apply_attribute(const Attribute& a, SimNodeFields* out) {
  const std::string_view n = a.name;
  if (n.size() == 7 && n == "pg_name") {
    out->pg_name = a.string;
    return;
  }
  if (!a.integer) return;
  const int64_t v = *a.integer;
  switch (n.size()) {
    case 3:
      if (n == "tid") out->tid = v;
      break;
    case 6:
      if (n == "stream") out->stream = v;
      break;
    case 8:
      if (n == "comm_src")
        out->comm_src = v;
      else if (n == "comm_dst")
        out->comm_dst = v;
      else if (n == "comm_tag")
        out->comm_tag = v;
      break;
    case 9:
      if (n == "is_cpu_op")
        out->is_cpu_op = v != 0;
      else if (n == "comm_type")
        out->comm_type = v;
      else if (n == "comm_size")
        out->comm_size = v;
      break;
    default:
      break;
  }
}

}  // namespace

Status scan_sim_fields(std::string_view raw, SimNodeFields* out) {
  *out = SimNodeFields{};
  Wire w(raw);
  auto fail = [&](const char* what) {
    return Status::errorf("malformed Node: {} at byte {} of the record", what, w.offset());
  };
  while (w.more()) {
    const uint64_t tag = w.varint();
    const auto field = static_cast<uint32_t>(tag >> 3);
    const auto wt = static_cast<uint32_t>(tag & 7);
    if (!w.ok) break;
    if (wt == kVarint && field == 1) {
      out->id = w.varint();
    } else if (wt == kVarint && field == 3) {
      out->type = static_cast<int32_t>(w.varint());
    } else if (wt == kVarint && field == 6) {
      out->start_time_micros = w.varint();
    } else if (wt == kVarint && field == 7) {
      out->duration_micros = w.varint();
    } else if (wt == kLen && field == 2) {
      out->name = w.bytes();
    } else if (wt == kLen && field == 8 && out->type == kMetadataNode) {
      // Only the process-group node's inputs are read (writers put `type` before `inputs`).
      Wire io(w.bytes());
      while (io.more()) {
        const uint64_t io_tag = io.varint();
        if (!io.ok) break;
        if (io_tag == ((1u << 3) | kLen)) {
          out->inputs_values = io.bytes();
        } else {
          io.skip(static_cast<uint32_t>(io_tag & 7));
        }
      }
      if (!io.ok) return fail("malformed inputs");
    } else if (wt == kLen && field == 10) {
      Attribute a;
      if (!scan_attribute(w.bytes(), &a)) return fail("malformed attribute");
      apply_attribute(a, out);
    } else {
      w.skip(wt);
    }
  }
  if (!w.ok) return fail("truncated or bad field");
  return Status();
}

StatusOr<std::vector<ProcessGroupDef>> parse_process_groups(std::string_view inputs_values) {
  std::string json;
  if (!unwrap_python_string_list(inputs_values, &json)) {
    // The JSON spelling of the same list: ["[{...}]"].
    simdjson::dom::parser outer;
    simdjson::dom::array list;
    std::string_view inner;
    if (outer.parse(inputs_values.data(), inputs_values.size()).get_array().get(list) ||
        list.size() != 1 || list.at(0).get_string().get(inner)) {
      return Status::errorf(
          "process_group:init: inputs.values is neither a Python nor a JSON one-string list");
    }
    json.assign(inner);
  }
  simdjson::dom::parser parser;
  simdjson::dom::array groups;
  if (parser.parse(json).get_array().get(groups)) {
    return Status::errorf("process_group:init: the group list is not a JSON list: {:.80}", json);
  }
  std::vector<ProcessGroupDef> out;
  for (simdjson::dom::element g : groups) {
    simdjson::dom::object obj;
    if (g.get_object().get(obj))
      return Status::errorf("process_group:init: a group is not an object");
    ProcessGroupDef def;
    for (auto [key, value] : obj) {
      if (key == "pg_name") {
        std::string_view s;
        int64_t i = 0;
        if (!value.get_string().get(s))
          def.name.assign(s);
        else if (!value.get_int64().get(i))
          def.name = std::to_string(i);
      } else if (key == "pg_desc") {
        std::string_view s;
        if (!value.get_string().get(s)) def.desc.assign(s);
      } else if (key == "group_size") {
        int64_t i = 0;
        if (!value.get_int64().get(i)) def.group_size = i;
      } else if (key == "ranks") {
        simdjson::dom::array ranks;
        if (value.get_array().get(ranks)) {
          return Status::errorf("process_group:init: group \"{}\": ranks is not a list", def.name);
        }
        for (simdjson::dom::element r : ranks) {
          int64_t rank = 0;
          if (r.get_int64().get(rank) || rank < 0 || rank > UINT32_MAX) {
            return Status::errorf("process_group:init: group \"{}\": bad rank in ranks", def.name);
          }
          def.ranks.push_back(static_cast<uint32_t>(rank));
        }
      }
    }
    std::sort(def.ranks.begin(), def.ranks.end());
    def.ranks.erase(std::unique(def.ranks.begin(), def.ranks.end()), def.ranks.end());
    out.push_back(std::move(def));
  }
  return out;
}

}  // namespace chakraflow
