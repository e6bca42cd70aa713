#include "stages/link/host_et_loader.h"

#include <algorithm>
#include <memory>

#include "stages/common/file_io.h"
#include "stages/common/json_util.h"
#include "stages/common/move_to_targets.h"

namespace chakraflow {
namespace {

namespace od = simdjson::ondemand;

// The key of the nodes array, as a JSON string literal (keys are compared with their quotes).
constexpr std::string_view kNodesKey = "\"nodes\"";

class HostParser {
 public:
  HostParser(HostTrace& trace, HostFieldVisitor* visitor, size_t window_bytes)
      : t_(trace),
        text_(trace.text),
        visitor_(visitor),
        keep_nodes_(visitor == nullptr || visitor->keep_nodes()),
        window_bytes_(window_bytes) {}

  Status parse() {
    if (text_.empty())
      return Status::errorf("{}: empty file, expected a host execution trace", t_.path);
    od::parser parser;
    // Nodes take 500 to 1,000 bytes of JSON: reserving for 256 avoids growing by copying (the
    // untouched tail of the reservation costs no memory).
    if (keep_nodes_) t_.nodes.reserve(text_.size() / 256);
    if (window_bytes_ > 0 && text_.size() > 2 * window_bytes_ &&
        (visitor_ == nullptr || visitor_->can_take_back())) {
      NodeWindows windows(*this);
      t_.parse_windows =
          json::read_array_in_windows(parser, t_.text.mutable_data(), t_.text.size(),
                                      t_.text.capacity(), kNodesKey, window_bytes_, windows);
      if (t_.parse_windows > 0) return Status();
      // Not a text the windows can read, or a bad one: the whole document's parse reports it.
      t_.nodes.clear();
      t_.top_level.clear();
      t_.schema.clear();
      t_.arena.clear();
      if (visitor_ != nullptr) visitor_->drop_all();
      last_offset_ = 0;
    }
    od::document doc;
    auto err = json::iterate_document(parser, t_.text, &doc, &t_.invalid_utf8_bytes);
    if (err) {
      last_offset_ = json::locate_document_error(text_, err);
      return fail(err, "cannot parse JSON");
    }
    od::object root;
    // A cut-off file fails here at byte 0: parse_*_text restates it at the end of the input.
    if ((err = doc.get_object().get(root))) return fail(err, "top level is not a JSON object");
    bool saw_nodes = false;
    for (auto field_result : root) {
      od::field field;
      if ((err = std::move(field_result).get(field))) return fail(err, "invalid top-level field");
      std::string_view key_literal = json::string_literal(field.key().raw(), end());
      if (key_literal == kNodesKey) {
        CF_RETURN_IF_ERROR(check_new_key(key_literal));
        saw_nodes = true;
        t_.top_level.push_back({key_literal, {}, true});
        od::value nodes_value = field.value();
        const char* at = nullptr;
        if (nodes_value.current_location().get(at) == simdjson::SUCCESS) {
          last_offset_ = json::offset_in(text_, at);
        }
        od::array nodes;
        if ((err = nodes_value.get_array().get(nodes))) {
          return fail(err, "\"nodes\" is not an array");
        }
        CF_RETURN_IF_ERROR(parse_nodes(doc, nodes));
        continue;
      }
      CF_RETURN_IF_ERROR(read_top_field(field, key_literal));
    }
    if (!saw_nodes)
      return Status::errorf("{}: no \"nodes\" array: not a host execution trace", t_.path);
    // Trailing content after the root object is an error (e.g. two documents concatenated).
    const char* trailing = nullptr;
    if (doc.current_location().get(trailing) == simdjson::SUCCESS) {
      return Status::errorf("{}: byte {}: unexpected content after the top-level object", t_.path,
                            json::current_offset(doc, text_));
    }
    return Status();
  }

  // After the parser is gone (its structural index is as large as the text): layout, id order.
  Status finish() {
    t_.layout = detect_layout();
    sort_nodes_by_id();
    for (size_t i = 1; i < t_.nodes.size(); ++i) {
      if (t_.nodes[i].id == t_.nodes[i - 1].id) {
        return Status::errorf("{}: duplicate node id {} (nodes at byte {} and byte {})", t_.path,
                              t_.nodes[i].id, t_.nodes[i - 1].byte_offset, t_.nodes[i].byte_offset);
      }
    }
    return Status();
  }

 private:
  const char* end() const { return text_.data() + text_.size(); }

  // Id order, file order among equal ids (reported as duplicates next). PyTorch writes children
  // before their parents: the (id, position) keys are sorted, and then the nodes moved in place.
  void sort_nodes_by_id() {
    std::vector<HostNode>& nodes = t_.nodes;
    auto by_id = [](const HostNode& a, const HostNode& b) { return a.id < b.id; };
    if (std::is_sorted(nodes.begin(), nodes.end(), by_id)) return;
    std::vector<std::pair<uint64_t, uint32_t>> keys(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) keys[i] = {nodes[i].id, static_cast<uint32_t>(i)};
    std::stable_sort(keys.begin(), keys.end());  // a merge sort: no bad cases
    std::vector<uint32_t> target(nodes.size());
    for (uint32_t k = 0; k < keys.size(); ++k) target[keys[k].second] = k;
    move_to_targets(nodes, target, nodes.size());
  }

  // The iterator cannot be asked where it is once it has failed: errors name the start of the
  // element being read (last_offset_), which is where the user should look.
  Status fail(simdjson::error_code err, std::string_view what) {
    const char* hint = (err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || err == simdjson::TAPE_ERROR)
                           ? " (the file is truncated or malformed after this point)"
                           : "";
    return Status::errorf("{}: byte {}: {}: {}{}", t_.path, last_offset_, what,
                          simdjson::error_message(err), hint);
  }
  uint64_t last_offset_ = 0;

  HostLayout detect_layout() const {
    if (t_.schema.rfind("1.0.1", 0) == 0) return HostLayout::kFlat;
    if (!t_.schema.empty()) return HostLayout::kAttrs;
    for (const HostNode& n : t_.nodes) {
      if (n.parent_key == ParentKey::kParent) return HostLayout::kFlat;
      if (n.parent_key == ParentKey::kCtrlDeps) return HostLayout::kAttrs;
    }
    return HostLayout::kAttrs;
  }

  // A field of the root object other than "nodes".
  // A key the top level already has: two "nodes" arrays (or two of anything) would be written
  // twice, and read by the next stage as it pleases.
  Status check_new_key(std::string_view key_literal) const {
    for (const TopLevelField& f : t_.top_level) {
      if (f.key_raw == key_literal) {
        return Status::errorf("{}: byte {}: top-level key {} appears twice (first at byte {})",
                              t_.path, json::offset_in(text_, key_literal.data()), key_literal,
                              json::offset_in(text_, f.key_raw.data()));
      }
    }
    return Status();
  }

  Status read_top_field(od::field& field, std::string_view key_literal) {
    CF_RETURN_IF_ERROR(check_new_key(key_literal));
    std::string_view raw;
    if (auto err = json::raw_value(field.value(), &raw)) {
      return fail(err, fmt::format("invalid value of top-level key {}", key_literal));
    }
    if (key_literal == "\"schema\"") {
      auto s = json::unescape_literal(raw, t_.arena);
      if (!s || raw.front() != '"') {
        return Status::errorf("{}: byte {}: \"schema\" is not a string", t_.path,
                              json::offset_in(text_, raw.data()));
      }
      t_.schema = std::string(*s);
    }
    t_.top_level.push_back({key_literal, raw, false});
    return Status();
  }

  Status parse_nodes(od::document& doc, od::array nodes) {
    size_t index = 0;
    for (auto element : nodes) {
      od::value value;
      simdjson::error_code err;
      if ((err = std::move(element).get(value)))
        return fail(err, fmt::format("invalid node #{}", index));
      const char* start = nullptr;
      if ((err = value.current_location().get(start))) {
        return fail(err, fmt::format("invalid node #{}", index));
      }
      CF_RETURN_IF_ERROR(read_node(doc, value, start, index));
      ++index;
    }
    return Status();
  }

  // The node that starts at `start`, the index-th of the array.
  Status read_node(od::document& doc, od::value& value, const char* start, size_t index) {
    last_offset_ = json::offset_in(text_, start);
    od::object obj;
    if (auto err = value.get_object().get(obj)) {
      return fail(err, fmt::format("node #{} is not an object", index));
    }
    // Read where it stays when it is kept (no copy of it), taken back if it fails.
    HostNode& node = keep_nodes_ ? t_.nodes.emplace_back() : *std::construct_at(&scratch_);
    node.byte_offset = last_offset_;
    node.file_index = static_cast<uint32_t>(index);
    node.raw = std::string_view(start, 0);  // spans are taken from here
    Status read = parse_node(doc, obj, start, index, node);
    if (!read.ok() && keep_nodes_) t_.nodes.pop_back();
    return read;
  }

  // The nodes read a window at a time (the whole document's parse reports what they refuse).
  class NodeWindows final : public json::ArrayWindowReader {
   public:
    explicit NodeWindows(HostParser& p) : p_(p) {}
    bool root_field(od::field& field) override {
      // A second "nodes" array is left to the whole parse.
      const std::string_view key_literal = json::string_literal(field.key().raw(), p_.end());
      if (key_literal == kNodesKey) return false;
      return p_.read_top_field(field, key_literal).ok();
    }
    void before_elements() override { p_.t_.top_level.push_back({kNodesKey, {}, true}); }
    bool element(od::document& doc, od::value& value, const char* start) override {
      if (!p_.read_node(doc, value, start, index_).ok()) {
        if (p_.visitor_ != nullptr) p_.visitor_->drop_node();
        return false;
      }
      ++index_;
      return true;
    }

   private:
    HostParser& p_;
    size_t index_ = 0;
  };

  Status node_error(const HostNode& n, size_t index, std::string_view what) {
    return Status::errorf("{}: byte {}: node #{}{}: {}", t_.path, n.byte_offset, index,
                          n.id ? fmt::format(" (id {})", n.id) : std::string(), what);
  }

  Span span_of(const char* obj_start, std::string_view token) {
    return Span{static_cast<uint32_t>(token.data() - obj_start),
                static_cast<uint32_t>(token.data() + token.size() - obj_start)};
  }

  Status parse_node(od::document& doc, od::object obj, const char* start, size_t index,
                    HostNode& n) {
    bool has_id = false;
    bool has_name = false;
    for (auto field_result : obj) {
      if (simdjson::error_code err = field_result.error()) {
        return fail(err, fmt::format("node #{}", index));
      }
      od::field& field = field_result.value_unsafe();
      const std::string_view key = json::raw_key(field);
      od::value& v = field.value();
      if (json::equals(key, "id")) {
        std::string_view token = json::token(v);
        if (!json::get_uint64(v, &n.id))
          return node_error(n, index, "\"id\" is not a non-negative integer");
        n.id_value = span_of(start, token);
        has_id = true;
      } else if (json::equals(key, "name")) {
        std::string_view literal;
        CF_RETURN_IF_ERROR(read_string(doc, v, n, index, "name", &n.name, &literal));
        n.name_value = span_of(start, literal);
        has_name = true;
      } else if (visitor_ != nullptr) {
        CF_RETURN_IF_ERROR(visitor_->field(n, key, v));
      } else if (json::equals(key, "ctrl_deps") || json::equals(key, "parent")) {
        std::string_view token = json::token(v);
        od::json_type type;
        if (v.type().get(type) == simdjson::SUCCESS && type == od::json_type::null) continue;
        if (!json::get_uint64(v, &n.parent)) {
          return node_error(n, index, fmt::format("\"{}\" is not a non-negative integer", key));
        }
        n.parent_key = json::equals(key, "parent") ? ParentKey::kParent : ParentKey::kCtrlDeps;
        n.parent_value = span_of(start, token);
      } else if (json::equals(key, "attrs")) {
        CF_RETURN_IF_ERROR(parse_attrs(doc, v, n, index));
      } else if (json::equals(key, "op_schema")) {
        CF_RETURN_IF_ERROR(read_string(doc, v, n, index, "op_schema", &n.op_schema, nullptr));
      } else if (is_int_attr(key)) {
        CF_RETURN_IF_ERROR(read_int_attr(v, key, n, index));
      }
      // Every other field (inputs, outputs, shapes, types ...) is passed through verbatim.
    }
    if (!has_id) return node_error(n, index, "missing required field \"id\"");
    if (!has_name) return node_error(n, index, "missing required field \"name\"");
    const char* after = nullptr;
    if (doc.current_location().get(after)) after = end();
    // current_location() points at the structural character that follows the object.
    while (after > start && after[-1] != '}') --after;
    n.raw = std::string_view(start, static_cast<size_t>(after - start));
    if (visitor_ != nullptr) return visitor_->end_node(n);
    return Status();
  }

  Status read_string(od::document& doc, od::value& v, const HostNode& n, size_t index,
                     std::string_view what, std::string_view* out, std::string_view* literal_out) {
    // The literal ends where the structural index says its token ends (no scan for the quote).
    const std::string_view literal = json::token(v);
    od::raw_json_string raw;
    auto err = v.get_raw_json_string().get(raw);
    if (err) {
      (void)doc;
      return node_error(n, index, fmt::format("\"{}\" is not a string", what));
    }
    auto s = json::unescape_literal(literal, t_.arena);
    if (!s) return node_error(n, index, fmt::format("\"{}\" holds an invalid escape", what));
    *out = *s;
    if (literal_out) *literal_out = literal;
    return Status();
  }

  static bool is_int_attr(std::string_view key) {
    return json::equals(key, "rf_id") || json::equals(key, "fw_parent") ||
           json::equals(key, "seq_id") || json::equals(key, "scope") || json::equals(key, "tid") ||
           json::equals(key, "fw_tid");
  }

  Status read_int_attr(od::value& v, std::string_view key, HostNode& n, size_t index) {
    od::json_type type;
    if (v.type().get(type) == simdjson::SUCCESS && type == od::json_type::null) return Status();
    int64_t value = 0;
    if (json::equals(key, "seq_id")) {
      if (!json::get_int64(v, &value)) return node_error(n, index, "\"seq_id\" is not an integer");
      n.seq_id = value;
      return Status();
    }
    uint64_t u = 0;
    if (!json::get_uint64(v, &u)) {
      // Negative ids appear in some traces for "none"; treat them as 0 rather than failing.
      if (json::get_int64(v, &value) && value < 0) {
        u = 0;
      } else {
        return node_error(n, index, fmt::format("\"{}\" is not an integer", key));
      }
    }
    if (uint64_t* slot = host_id_attr(n, key)) *slot = u;
    return Status();
  }

  Status parse_attrs(od::document& doc, od::value& v, HostNode& n, size_t index) {
    od::array attrs;
    if (v.get_array().get(attrs)) return node_error(n, index, "\"attrs\" is not an array");
    for (auto attr_result : attrs) {
      od::object attr;
      if (attr_result.get_object().get(attr)) {
        return node_error(n, index, "an entry of \"attrs\" is not an object");
      }
      std::string_view attr_name;
      bool have_name = false;
      for (auto field_result : attr) {
        if (field_result.error()) return node_error(n, index, "invalid \"attrs\" entry");
        od::field& field = field_result.value_unsafe();
        const std::string_view key = json::raw_key(field);
        od::value& value = field.value();
        if (json::equals(key, "name")) {
          std::string_view literal;
          CF_RETURN_IF_ERROR(
              read_string(doc, value, n, index, "attrs[].name", &attr_name, &literal));
          have_name = true;
        } else if (json::equals(key, "value") && have_name) {
          // PyTorch writes "name" before "value"; attrs in another order are passed through only.
          if (json::equals(attr_name, "op_schema")) {
            CF_RETURN_IF_ERROR(
                read_string(doc, value, n, index, "op_schema", &n.op_schema, nullptr));
          } else if (is_int_attr(attr_name)) {
            CF_RETURN_IF_ERROR(read_int_attr(value, attr_name, n, index));
          }
        }
      }
    }
    return Status();
  }

  HostTrace& t_;
  std::string_view text_;
  HostFieldVisitor* visitor_ = nullptr;
  bool keep_nodes_ = true;
  HostNode scratch_;  // the node being read when the nodes are not kept
  size_t window_bytes_;
};

}  // namespace

uint64_t* host_id_attr(HostNode& node, std::string_view key) {
  if (json::equals(key, "rf_id")) return &node.rf_id;
  if (json::equals(key, "fw_parent")) return &node.fw_parent;
  if (json::equals(key, "scope")) return &node.scope;
  if (json::equals(key, "tid")) return &node.tid;
  if (json::equals(key, "fw_tid")) return &node.fw_tid;
  return nullptr;
}

namespace {

StatusOr<HostTrace> parse_host_text(std::string path, InputText text, size_t window_bytes,
                                    HostFieldVisitor* fields) {
  HostTrace trace;
  trace.path = std::move(path);
  trace.text = std::move(text);
  HostParser parser(trace, fields, window_bytes);
  CF_RETURN_IF_ERROR(json::explain_truncation(parser.parse(), trace.path, trace.text));
  CF_RETURN_IF_ERROR(parser.finish());
  return trace;
}

}  // namespace

StatusOr<HostTrace> parse_host_trace(std::string path, std::string text, HostFieldVisitor* fields) {
  return parse_host_text(std::move(path), InputText(std::move(text)), kHostWindowBytes, fields);
}

StatusOr<HostTrace> parse_host_trace(std::string path, std::string text, size_t window_bytes,
                                     HostFieldVisitor* fields) {
  return parse_host_text(std::move(path), InputText(std::move(text)), window_bytes, fields);
}

StatusOr<HostTrace> load_host_trace(const std::string& path, HostFieldVisitor* fields,
                                    size_t window_bytes) {
  CF_ASSIGN_OR_RETURN(InputText text, InputText::read(path));
  return parse_host_text(path, std::move(text), window_bytes, fields);
}

}  // namespace chakraflow
