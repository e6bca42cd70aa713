#include "stages/convert/jsonizer.h"

#include <charconv>
#include <cmath>
#include <string_view>
#include <vector>

#include "proto/et_def.pb.h"
#include "stages/common/file_io.h"
#include "stages/convert/python_repr.h"
#include "stages/et/et_io.h"

namespace chakraflow {
namespace {

namespace pb = ChakraProtoMsg;

// Writes JSON the way Python's json.dumps(obj, indent=...) lays it out, with ensure_ascii.
class PyJson {
 public:
  PyJson(std::string& out, int indent) : out_(out), indent_(indent) {}

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }

  // A key inside an object; the value follows.
  void key(std::string_view k) {
    element();
    literal(k);
    out_ += ": ";
    pending_value_ = true;
  }

  void string(std::string_view s) {
    value_prefix();
    literal(s);
  }

  void raw(std::string_view token) {
    value_prefix();
    out_.append(token);
  }

  template <typename Int>
  void integer(Int v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof(buf), v);
    raw(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
  }
  // 64-bit integers are JSON strings in the proto3 mapping.
  template <typename Int>
  void integer_string(Int v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof(buf), v);
    string(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
  }
  void boolean(bool b) { raw(b ? "true" : "false"); }

  void double_value(double d) {
    if (std::isnan(d)) return string("NaN");
    if (std::isinf(d)) return string(d < 0 ? "-Infinity" : "Infinity");
    value_prefix();
    pyrepr::append_float(out_, d);
  }

  // Python protobuf writes a float field as the shortest decimal that reads back as the same
  // 32-bit float (type_checkers.ToShortestFloat), then as a Python float.
  void float_value(float f) {
    if (std::isnan(f) || std::isinf(f)) return double_value(f);
    double rounded = f;
    for (int precision = 6; precision <= 17; ++precision) {
      char buf[64];
      auto r = std::to_chars(buf, buf + sizeof(buf), static_cast<double>(f),
                             std::chars_format::general, precision);
      double candidate = 0;
      std::from_chars(buf, r.ptr, candidate);
      if (static_cast<float>(candidate) == f) {
        rounded = candidate;
        break;
      }
    }
    double_value(rounded);
  }

  void bytes_base64(std::string_view b) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string enc;
    enc.reserve((b.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= b.size(); i += 3) {
      uint32_t v = (static_cast<uint8_t>(b[i]) << 16) | (static_cast<uint8_t>(b[i + 1]) << 8) |
                   static_cast<uint8_t>(b[i + 2]);
      enc.push_back(kAlphabet[(v >> 18) & 63]);
      enc.push_back(kAlphabet[(v >> 12) & 63]);
      enc.push_back(kAlphabet[(v >> 6) & 63]);
      enc.push_back(kAlphabet[v & 63]);
    }
    if (i < b.size()) {
      uint32_t v = static_cast<uint8_t>(b[i]) << 16;
      if (i + 1 < b.size()) v |= static_cast<uint8_t>(b[i + 1]) << 8;
      enc.push_back(kAlphabet[(v >> 18) & 63]);
      enc.push_back(kAlphabet[(v >> 12) & 63]);
      enc.push_back(i + 1 < b.size() ? kAlphabet[(v >> 6) & 63] : '=');
      enc.push_back('=');
    }
    string(enc);
  }

 private:
  // A JSON string literal as json.dumps(ensure_ascii=True) writes it.
  void literal(std::string_view s) {
    out_.push_back('"');
    for (size_t i = 0; i < s.size();) {
      auto c = static_cast<unsigned char>(s[i]);
      if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
        out_.push_back(static_cast<char>(c));
        ++i;
        continue;
      }
      switch (c) {
        case '"':
          out_ += "\\\"";
          ++i;
          continue;
        case '\\':
          out_ += "\\\\";
          ++i;
          continue;
        case '\n':
          out_ += "\\n";
          ++i;
          continue;
        case '\r':
          out_ += "\\r";
          ++i;
          continue;
        case '\t':
          out_ += "\\t";
          ++i;
          continue;
        case '\b':
          out_ += "\\b";
          ++i;
          continue;
        case '\f':
          out_ += "\\f";
          ++i;
          continue;
        default:
          break;
      }
      bool valid = true;
      // Python protobuf refuses invalid UTF-8; such bytes are written as U+FFFD.
      char32_t cp = pyrepr::decode_utf8(s, &i, &valid);
      if (!valid) cp = 0xFFFD;
      if (cp >= 0x10000) {
        cp -= 0x10000;
        hex_escape(0xD800 + (cp >> 10));
        hex_escape(0xDC00 + (cp & 0x3FF));
      } else {
        hex_escape(cp);
      }
    }
    out_.push_back('"');
  }

  void hex_escape(char32_t cp) {
    static constexpr char kHex[] = "0123456789abcdef";
    out_ += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out_.push_back(kHex[(cp >> shift) & 15]);
  }

  void open(char c) {
    value_prefix();
    out_.push_back(c);
    counts_.push_back(0);
  }
  void close(char c) {
    bool any = counts_.back() > 0;
    counts_.pop_back();
    if (any && indent_ >= 0) newline(counts_.size());
    out_.push_back(c);
  }
  // Separator and indentation before an element of the current container.
  void element() {
    if (counts_.empty()) return;
    if (counts_.back() > 0) out_.push_back(',');
    if (indent_ >= 0) {
      newline(counts_.size());
    } else if (counts_.back() > 0) {
      out_.push_back(' ');
    }
    ++counts_.back();
  }
  // A value: right after its key, or an array element.
  void value_prefix() {
    if (pending_value_) {
      pending_value_ = false;
      return;
    }
    element();
  }
  void newline(size_t depth) {
    out_.push_back('\n');
    out_.append(depth * static_cast<size_t>(indent_), ' ');
  }

  std::string& out_;
  int indent_;
  std::vector<uint32_t> counts_;
  bool pending_value_ = false;
};

template <typename List, typename Fn>
void write_list(PyJson& j, std::string_view key, const List& list, Fn each) {
  j.key(key);
  j.begin_object();
  if (list.values_size() > 0) {
    j.key("values");
    j.begin_array();
    for (const auto& v : list.values()) each(v);
    j.end_array();
  }
  j.end_object();
}

// Writes the value of `a` when it is a single value; false when it is not (a list, or none).
bool write_attr_scalar(PyJson& j, const pb::AttributeProto& a) {
  using A = pb::AttributeProto;
  switch (a.value_case()) {
    case A::kDoubleVal:
      j.key("doubleVal");
      j.double_value(a.double_val());
      return true;
    case A::kFloatVal:
      j.key("floatVal");
      j.float_value(a.float_val());
      return true;
    case A::kInt32Val:
      j.key("int32Val");
      j.integer(a.int32_val());
      return true;
    case A::kInt64Val:
      j.key("int64Val");
      j.integer_string(a.int64_val());
      return true;
    case A::kUint32Val:
      j.key("uint32Val");
      j.integer(a.uint32_val());
      return true;
    case A::kUint64Val:
      j.key("uint64Val");
      j.integer_string(a.uint64_val());
      return true;
    case A::kSint32Val:
      j.key("sint32Val");
      j.integer(a.sint32_val());
      return true;
    case A::kSint64Val:
      j.key("sint64Val");
      j.integer_string(a.sint64_val());
      return true;
    case A::kFixed32Val:
      j.key("fixed32Val");
      j.integer(a.fixed32_val());
      return true;
    case A::kFixed64Val:
      j.key("fixed64Val");
      j.integer_string(a.fixed64_val());
      return true;
    case A::kSfixed32Val:
      j.key("sfixed32Val");
      j.integer(a.sfixed32_val());
      return true;
    case A::kSfixed64Val:
      j.key("sfixed64Val");
      j.integer_string(a.sfixed64_val());
      return true;
    case A::kBoolVal:
      j.key("boolVal");
      j.boolean(a.bool_val());
      return true;
    case A::kStringVal:
      j.key("stringVal");
      j.string(a.string_val());
      return true;
    case A::kBytesVal:
      j.key("bytesVal");
      j.bytes_base64(a.bytes_val());
      return true;
    default:
      return false;
  }
}

// Writes the value of `a` when it is a list; false when it is not.
bool write_attr_list(PyJson& j, const pb::AttributeProto& a) {
  using A = pb::AttributeProto;
  switch (a.value_case()) {
    case A::kDoubleList:
      write_list(j, "doubleList", a.double_list(), [&](double v) { j.double_value(v); });
      return true;
    case A::kFloatList:
      write_list(j, "floatList", a.float_list(), [&](float v) { j.float_value(v); });
      return true;
    case A::kInt32List:
      write_list(j, "int32List", a.int32_list(), [&](int32_t v) { j.integer(v); });
      return true;
    case A::kInt64List:
      write_list(j, "int64List", a.int64_list(), [&](int64_t v) { j.integer_string(v); });
      return true;
    case A::kUint32List:
      write_list(j, "uint32List", a.uint32_list(), [&](uint32_t v) { j.integer(v); });
      return true;
    case A::kUint64List:
      write_list(j, "uint64List", a.uint64_list(), [&](uint64_t v) { j.integer_string(v); });
      return true;
    case A::kSint32List:
      write_list(j, "sint32List", a.sint32_list(), [&](int32_t v) { j.integer(v); });
      return true;
    case A::kSint64List:
      write_list(j, "sint64List", a.sint64_list(), [&](int64_t v) { j.integer_string(v); });
      return true;
    case A::kFixed32List:
      write_list(j, "fixed32List", a.fixed32_list(), [&](uint32_t v) { j.integer(v); });
      return true;
    case A::kFixed64List:
      write_list(j, "fixed64List", a.fixed64_list(), [&](uint64_t v) { j.integer_string(v); });
      return true;
    case A::kSfixed32List:
      write_list(j, "sfixed32List", a.sfixed32_list(), [&](int32_t v) { j.integer(v); });
      return true;
    case A::kSfixed64List:
      write_list(j, "sfixed64List", a.sfixed64_list(), [&](int64_t v) { j.integer_string(v); });
      return true;
    case A::kBoolList:
      write_list(j, "boolList", a.bool_list(), [&](bool v) { j.boolean(v); });
      return true;
    case A::kStringList:
      write_list(j, "stringList", a.string_list(), [&](const std::string& v) { j.string(v); });
      return true;
    case A::kBytesList:
      write_list(j, "bytesList", a.bytes_list(), [&](const std::string& v) { j.bytes_base64(v); });
      return true;
    default:
      return false;
  }
}

void write_attr(PyJson& j, const pb::AttributeProto& a) {
  j.begin_object();
  if (!a.name().empty()) {
    j.key("name");
    j.string(a.name());
  }
  if (!a.doc_string().empty()) {
    j.key("docString");
    j.string(a.doc_string());
  }
  if (!write_attr_scalar(j, a)) write_attr_list(j, a);
  j.end_object();
}

void write_attrs(PyJson& j, const google::protobuf::RepeatedPtrField<pb::AttributeProto>& attrs) {
  if (attrs.empty()) return;
  j.key("attr");
  j.begin_array();
  for (const auto& a : attrs) write_attr(j, a);
  j.end_array();
}

void write_io(PyJson& j, std::string_view key, const pb::IOInfo& io) {
  j.key(key);
  j.begin_object();
  if (!io.values().empty()) {
    j.key("values");
    j.string(io.values());
  }
  if (!io.shapes().empty()) {
    j.key("shapes");
    j.string(io.shapes());
  }
  if (!io.types().empty()) {
    j.key("types");
    j.string(io.types());
  }
  j.end_object();
}

void write_ids(PyJson& j, std::string_view key,
               const google::protobuf::RepeatedField<uint64_t>& ids) {
  if (ids.empty()) return;
  j.key(key);
  j.begin_array();
  for (uint64_t id : ids) j.integer_string(id);
  j.end_array();
}

}  // namespace

void append_message_json(std::string& out, const pb::GlobalMetadata& m, int indent) {
  PyJson j(out, indent);
  j.begin_object();
  if (!m.version().empty()) {
    j.key("version");
    j.string(m.version());
  }
  write_attrs(j, m.attr());
  j.end_object();
}

void append_message_json(std::string& out, const pb::Node& n, int indent) {
  PyJson j(out, indent);
  j.begin_object();
  if (n.id() != 0) {
    j.key("id");
    j.integer_string(n.id());
  }
  if (!n.name().empty()) {
    j.key("name");
    j.string(n.name());
  }
  if (n.type() != 0) {
    j.key("type");
    if (pb::NodeType_IsValid(n.type())) {
      j.string(pb::NodeType_Name(n.type()));
    } else {
      j.integer(static_cast<int>(n.type()));
    }
  }
  write_ids(j, "ctrlDeps", n.ctrl_deps());
  write_ids(j, "dataDeps", n.data_deps());
  if (n.start_time_micros() != 0) {
    j.key("startTimeMicros");
    j.integer_string(n.start_time_micros());
  }
  if (n.duration_micros() != 0) {
    j.key("durationMicros");
    j.integer_string(n.duration_micros());
  }
  if (n.has_inputs()) write_io(j, "inputs", n.inputs());
  if (n.has_outputs()) write_io(j, "outputs", n.outputs());
  write_attrs(j, n.attr());
  j.end_object();
}

EtNodeReader::EtNodeReader(EtReader reader)
    : reader_(std::move(reader)), metadata_(std::make_unique<pb::GlobalMetadata>()) {}
EtNodeReader::EtNodeReader(EtNodeReader&&) noexcept = default;
EtNodeReader& EtNodeReader::operator=(EtNodeReader&&) noexcept = default;
EtNodeReader::~EtNodeReader() = default;

StatusOr<EtNodeReader> EtNodeReader::open(const std::string& path) {
  CF_ASSIGN_OR_RETURN(EtReader reader, EtReader::open(path));
  EtNodeReader out(std::move(reader));
  std::string_view first;
  CF_ASSIGN_OR_RETURN(bool have_first, out.reader_.next_raw(&first));
  if (!have_first) return out;
  out.has_metadata_ = !first_record_is_node(first);
  google::protobuf::MessageLite* message = out.metadata_.get();
  if (!out.has_metadata_) {
    out.first_node_ = std::make_unique<pb::Node>();
    message = out.first_node_.get();
  }
  if (!message->ParseFromArray(first.data(), static_cast<int>(first.size()))) {
    return Status::errorf("{}: record #0 at byte 0 ({} bytes) does not parse as {}", path,
                          first.size(), message->GetTypeName());
  }
  return out;
}

StatusOr<bool> EtNodeReader::next(pb::Node* node) {
  uint64_t index = 0, at = 0;  // of the record
  if (first_node_) {
    node->Swap(first_node_.get());
    first_node_.reset();
  } else {
    index = reader_.record_index();
    at = reader_.offset();
    CF_ASSIGN_OR_RETURN(bool have, reader_.next(node));
    if (!have) return false;
  }
  // A type the schema does not know is an error, as for the feeder.
  if (!pb::NodeType_IsValid(node->type())) {
    return Status::errorf(
        "{}: record #{} at byte {}: node id {}: type {} is not a NodeType of "
        "the schema",
        reader_.path(), index, at, node->id(), static_cast<int>(node->type()));
  }
  return true;
}

Status jsonize_file(const std::string& input_path, const std::string& output_path,
                    const JsonizeOptions& options, JsonizeReport* report) {
  CF_ASSIGN_OR_RETURN(EtNodeReader reader, EtNodeReader::open(input_path));
  const bool metadata_missing = !reader.has_metadata();
  CF_ASSIGN_OR_RETURN(OutputFile out, OutputFile::open(output_path));
  std::string buf;
  const int indent = options.concatenated ? 2 : -1;
  if (options.concatenated) {
    if (!metadata_missing) append_message_json(buf, reader.metadata(), indent);
  } else {
    buf += "{\n";
    if (!metadata_missing) {
      buf += "  \"globalMetadata\": ";
      append_message_json(buf, reader.metadata(), indent);
      buf += ",\n";
    }
    buf += "  \"nodes\": [";
  }
  uint64_t nodes = 0;
  pb::Node node;
  while (true) {
    CF_ASSIGN_OR_RETURN(bool have, reader.next(&node));
    if (!have) break;
    if (!options.concatenated) buf += nodes == 0 ? "\n    " : ",\n    ";
    append_message_json(buf, node, indent);
    ++nodes;
    if (buf.size() >= (1 << 20)) {
      out.write(buf);
      buf.clear();
    }
  }
  if (!options.concatenated) buf += nodes == 0 ? "]\n}\n" : "\n  ]\n}\n";
  out.write(buf);
  CF_RETURN_IF_ERROR(out.commit());
  if (report != nullptr) {
    report->nodes = nodes;
    report->bytes_written = out.bytes_written();
    report->metadata_missing = metadata_missing;
  }
  return Status();
}

}  // namespace chakraflow
