#include "stages/convert/et_plus_nodes.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <memory>
#include <type_traits>
#include <unordered_map>

#include "stages/common/file_io.h"
#include "stages/link/host_et_loader.h"
#include "stages/common/json_util.h"
#include "stages/common/move_to_targets.h"

namespace chakraflow {
namespace {

namespace od = simdjson::ondemand;

// Schema versions Chakra 1.0.0's converter parses (it also lists 1.1.1-chakra.1.0.0, then
// crashes on it: spec §2.2).
bool chakra_parses_schema(std::string_view schema) {
  return schema == "1.0.2-chakra.0.0.4" || schema == "1.0.3-chakra.0.0.4" ||
         schema == "1.1.0-chakra.0.0.4" || schema == "1.1.1-chakra.0.0.4";
}

bool known_schema(std::string_view schema) {
  for (std::string_view prefix : {"1.0.1", "1.0.2", "1.0.3", "1.0.4", "1.1.0", "1.1.1"}) {
    if (schema.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

// Whether `token` is a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?. from_chars
// alone also takes "00", ".5", "1." and "inf", which the loader's parser rejects.
bool is_json_number(std::string_view token) {
  size_t i = 0;
  auto digits = [&] {
    const size_t start = i;
    while (i < token.size() && token[i] >= '0' && token[i] <= '9') ++i;
    return i - start;
  };
  if (i < token.size() && token[i] == '-') ++i;
  if (i < token.size() && token[i] == '0') {
    ++i;
  } else if (digits() == 0) {
    return false;
  }
  if (i < token.size() && token[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  }
  if (i < token.size() && (token[i] == 'e' || token[i] == 'E')) {
    ++i;
    if (i < token.size() && (token[i] == '+' || token[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == token.size();
}

// An integer JSON token (integral doubles such as 3.0 accepted).
bool parse_int_token(std::string_view token, int64_t* out) {
  if (json::small_int_token(token, out)) return true;  // nearly every one
  if (!is_json_number(token)) return false;
  auto r = std::from_chars(token.data(), token.data() + token.size(), *out);
  if (r.ec == std::errc() && r.ptr == token.data() + token.size()) return true;
  double d = 0;
  auto rd = std::from_chars(token.data(), token.data() + token.size(), d);
  if (rd.ec != std::errc() || rd.ptr != token.data() + token.size() || !std::isfinite(d) ||
      d != std::floor(d) || std::fabs(d) > 9.2e18) {
    return false;
  }
  *out = static_cast<int64_t>(d);
  return true;
}

bool parse_uint_token(std::string_view token, uint64_t* out) {
  if (!is_json_number(token)) return false;
  auto r = std::from_chars(token.data(), token.data() + token.size(), *out);
  if (r.ec == std::errc() && r.ptr == token.data() + token.size()) return true;
  int64_t i = 0;
  if (!parse_int_token(token, &i) || i < 0) return false;
  *out = static_cast<uint64_t>(i);
  return true;
}

// Protobuf strings must be UTF-8, but an escaped lone surrogate ("\udc80") unescapes to bytes
// that are not (the loader repairs only raw bytes). Returns `s`, or a copy in `arena` with the bad
// bytes replaced by '?', counted in `stats`.
// `where()` names the place for the report (called only for a string that needs repair).
template <class Where>
std::string_view valid_utf8(std::string_view s, std::deque<std::string>& arena, LinkStats& stats,
                            const Where& where) {
  if (simdjson::validate_utf8(s.data(), s.size())) return s;
  std::string& copy = arena.emplace_back(s);
  json::repair_utf8(copy);
  stats.add(StatKind::kEtPlusStringNotUtf8, std::string(where()));
  return copy;
}

// The attributes a node may set (Chakra applies every attr with setattr; these are the ones the
// conversion reads).
struct AttrValues {
  std::optional<int64_t> rf_id, fw_parent, seq_id, scope, tid, fw_tid;
  std::optional<std::string_view> op_schema, pg_name, collective_name;
};

// Reads the converter's fields of every node: either riding on the loader's pass
// (HostFieldVisitor, load_et_plus and load_host_for_linked_nodes) or by re-reading each node of a
// loaded HostTrace (read_all). Nodes are appended to EtPlusTrace::nodes in the order they are
// read. With `link_fields`, the loader keeps its nodes and the reader also sets their link fields
// (HostFieldVisitor::keep_nodes), from the same values, as the loader reads them.
class NodeReader final : public HostFieldVisitor {
 public:
  explicit NodeReader(EtPlusTrace& out, bool link_fields = false)
      : t_(out), link_fields_(link_fields), stats_at_start_(out.stats) {}

  // A node cut by a window's end is read again from its start (the loader's windows): what its
  // fields left is taken back. Only field() runs before a cut (end_node runs once the node's
  // object is complete), and it appends to sync_dep_ids and to the arena (harmless) and defers
  // its data-problem counts to end_node.
  bool can_take_back() const override { return true; }
  void drop_node() override {
    t_.sync_dep_ids.resize(sync_deps_at_node_start_);
    // In place: an assignment from a temporary zeroes one and copies it (two string operations
    // of 224 bytes per node).
    static_assert(std::is_trivially_destructible_v<EtPlusNode>);
    std::construct_at(&cur_);
    for (std::string_view& raw : raw_io_) raw = {};
    pg_name_ = {};
    ctrl_deps_.reset();
    parent_.reset();
    attrs_ = AttrValues();
    has_cat_ = false;
    pending_stats_.clear();
  }
  void drop_all() override {
    drop_node();
    t_.nodes.clear();
    t_.sync_dep_ids.clear();
    t_.comm_names.clear();
    t_.arena.clear();
    t_.stats = stats_at_start_;
    sync_deps_at_node_start_ = 0;
  }

  bool keep_nodes() const override { return link_fields_; }

  // `capacity`: the nodes the trace will hold (link_nodes adds the GPU ops' nodes in place).
  Status read_all(const HostTrace& host, size_t capacity) {
    t_.nodes.reserve(std::max(capacity, host.nodes.size()));
    for (const HostNode& h : host.nodes) CF_RETURN_IF_ERROR(read_node(h));
    return Status();
  }

  // Re-reads one node of a loaded HostTrace (its raw text) and appends it to EtPlusTrace::nodes.
  Status read_node(const HostNode& h) {
    od::document doc;
    simdjson::padded_string_view view(h.raw.data(), h.raw.size(), h.raw.size() + kInputPadding);
    od::object obj;
    if (parser_.iterate(view).get(doc) || doc.get_object().get(obj)) {
      return node_error(h, "not a JSON object");
    }
    for (auto field_result : obj) {
      od::field f;
      std::string_view key;
      if (std::move(field_result).get(f) || json::unescaped_key(f, &key)) {
        return node_error(h, "malformed field");
      }
      if (json::equals(key, "id") || json::equals(key, "name")) continue;  // the loader's
      CF_RETURN_IF_ERROR(read_field(h, nullptr, key, f.value()));
    }
    return end_node(h);
  }

  Status field(HostNode& h, std::string_view key, od::value& v) override {
    return read_field(h, link_fields_ ? &h : nullptr, key, v);
  }

  // `link`: where the loader's fields go (keep_nodes), or nullptr.
  Status read_field(const HostNode& h, HostNode* link, std::string_view key, od::value& v) {
    EtPlusNode& n = cur_;
    auto bad = [&](std::string_view what) {
      return node_error(h, fmt::format("\"{}\" {}", key, what));
    };
    // The most frequent keys first (the branches exclude each other).
    if (json::equals(key, "attrs")) {
      CF_RETURN_IF_ERROR(read_attrs(v, h, link, attrs_));
    } else if (json::equals(key, "ctrl_deps") || json::equals(key, "parent")) {
      if (is_null(v)) return Status();
      const std::string_view token = json::token(v);
      uint64_t id = 0;
      if (!json::get_uint64(v, &id)) return bad("is not a node id");
      (json::equals(key, "ctrl_deps") ? ctrl_deps_ : parent_) = id;
      if (link != nullptr) {  // the last of the two keys wins, as in the loader
        link->parent = id;
        link->parent_key = json::equals(key, "parent") ? ParentKey::kParent : ParentKey::kCtrlDeps;
        const auto begin = static_cast<uint32_t>(token.data() - link->raw.data());
        link->parent_value = Span{begin, begin + static_cast<uint32_t>(token.size())};
      }
    } else if (json::equals(key, "inputs") || json::equals(key, "outputs")) {
      const int base = json::equals(key, "inputs") ? kInValues : kOutValues;
      od::json_type type;
      if (v.type().get(type)) return bad("is malformed");
      if (type == od::json_type::object) {
        od::object io;
        if (v.get_object().get(io)) return bad("is malformed");
        for (auto io_field_result : io) {
          if (io_field_result.error()) return bad("is malformed");
          od::field& io_field = io_field_result.value_unsafe();
          std::string_view io_key = json::raw_key(io_field);  // as for attrs' keys
          if (!json::equals(io_key, "values") && !json::equals(io_key, "shapes") &&
              !json::equals(io_key, "types") && json::unescaped_key(io_field, &io_key))
            return bad("is malformed");
          int f = json::equals(io_key, "values")   ? 0
                  : json::equals(io_key, "shapes") ? 1
                  : json::equals(io_key, "types")  ? 2
                                                   : -1;
          if (f < 0) continue;  // "strides" (schema 1.1.1) is not converted, as in Chakra
          if (json::raw_value(io_field.value(), &raw_io_[base + f])) return bad("is malformed");
        }
      } else {
        // Flat layout (schema 1.0.1): the values list itself.
        if (json::raw_value(v, &raw_io_[base])) return bad("is malformed");
      }
    } else if (json::equals(key, "input_shapes") || json::equals(key, "input_types") ||
               json::equals(key, "output_shapes") || json::equals(key, "output_types")) {
      int f = json::equals(key, "input_shapes")    ? kInShapes
              : json::equals(key, "input_types")   ? kInTypes
              : json::equals(key, "output_shapes") ? kOutShapes
                                                   : kOutTypes;
      if (json::raw_value(v, &raw_io_[f])) return bad("is malformed");
    } else if (json::equals(key, "exclusive_dur")) {
      if (is_null(v)) return Status();
      if (v.get_double().get(n.exclusive_dur)) return bad("is not a number");
    } else if (json::equals(key, "inclusive_dur")) {
      if (is_null(v)) return Status();
      if (v.get_double().get(n.inclusive_dur)) return bad("is not a number");
    } else if (json::equals(key, "ts")) {
      if (is_null(v)) return Status();
      if (v.get_double().get(n.ts)) return bad("is not a number");
      n.has_ts = true;
    } else if (json::equals(key, "inter_thread_dep")) {
      if (is_null(v)) return Status();
      int64_t dep = 0;
      if (!json::get_int64(v, &dep)) return bad("is not a node id");
      n.inter_thread_dep = dep > 0 ? static_cast<uint64_t>(dep) : 0;
    } else if (json::equals(key, "sync_dep")) {
      if (is_null(v)) return Status();
      od::array deps;
      if (v.get_array().get(deps)) return bad("is not a list of node ids");
      n.sync_dep_begin = static_cast<uint32_t>(t_.sync_dep_ids.size());
      for (auto dep_result : deps) {
        od::value dep_value;
        uint64_t dep = 0;
        if (std::move(dep_result).get(dep_value) || !json::get_uint64(dep_value, &dep)) {
          return bad("is not a list of node ids");
        }
        t_.sync_dep_ids.push_back(dep);
      }
      n.sync_dep_count = static_cast<uint32_t>(t_.sync_dep_ids.size()) - n.sync_dep_begin;
    } else if (json::equals(key, "cat")) {
      has_cat_ = !is_null(v);
    } else if (json::equals(key, "stream")) {
      n.stream_given = true;
      if (is_null(v)) {
        n.has_stream = false;
      } else if (!json::get_int64(v, &n.stream)) {
        return bad("is not an integer");
      }
    } else if (json::equals(key, "device")) {
      if (!is_null(v) && !json::get_int64(v, &n.device)) return bad("is not an integer");
    } else if (json::equals(key, "pg_name")) {
      if (is_null(v)) return Status();
      std::string_view str;
      if (!read_string(v, &str)) return bad("is not a string");
      pg_name_ = str;
    } else if (json::equals(key, "rf_id") || json::equals(key, "fw_parent") ||
               json::equals(key, "seq_id") || json::equals(key, "scope") ||
               json::equals(key, "tid") || json::equals(key, "fw_tid")) {
      // Flat layout: attributes at node level.
      if (is_null(v)) return Status();
      int64_t value = 0;
      if (!json::get_int64(v, &value)) return bad("is not an integer");
      set_int_attr(attrs_, key, value);
      if (link != nullptr) set_link_int_attr(*link, key, value);
    } else if (json::equals(key, "op_schema")) {
      std::string_view str;
      if (!read_string(v, &str)) return bad("is not a string");
      attrs_.op_schema = str;
      if (link != nullptr) link->op_schema = str;
    }
    return Status();
  }

  Status end_node(const HostNode& h) override {
    EtPlusNode& n = cur_;
    for (auto& [kind, example] : pending_stats_) t_.stats.add(kind, std::move(example));
    pending_stats_.clear();
    n.id = h.id;
    n.name = h.name;
    n.byte_offset = h.byte_offset;
    // Attributes override node-level fields (Chakra applies them last, with setattr).
    n.rf_id = attrs_.rf_id.value_or(0);
    n.fw_parent = attrs_.fw_parent.value_or(0);
    n.seq_id = attrs_.seq_id.value_or(-1);
    n.scope = attrs_.scope.value_or(0);
    n.tid = attrs_.tid.value_or(0);
    n.fw_tid = attrs_.fw_tid.value_or(0);
    n.op_schema = attrs_.op_schema.value_or(std::string_view());
    if (attrs_.pg_name) pg_name_ = *attrs_.pg_name;
    n.pg_name_from_attr = attrs_.pg_name.has_value();
    // The strings written to the .et. One that lies in the node's text, as written (no escape),
    // is valid: the loader's parse checked that text (or repaired it); only an unescaped copy
    // (which an escaped lone surrogate makes invalid) needs the check.
    auto where = [&n] { return fmt::format("node {}", n.id); };
    auto checked = [&](std::string_view s) {
      const bool in_text =
          s.data() >= h.raw.data() && s.data() + s.size() <= h.raw.data() + h.raw.size();
      return in_text ? s : valid_utf8(s, t_.arena, t_.stats, where);
    };
    n.name = checked(n.name);
    const std::string_view op_schema = n.op_schema;
    n.op_schema = checked(n.op_schema);
    n.op_schema_repaired = n.op_schema.data() != op_schema.data();
    const std::string_view pg_name = checked(pg_name_);
    n.pg_name_repaired = pg_name.data() != pg_name_.data();
    t_.set_comm_names(n, pg_name, attrs_.collective_name.value_or(std::string_view()));

    if (n.name.find("process_group:init") != std::string_view::npos) {
      n.kind = OpKind::kMetadata;
    } else {
      n.kind = has_cat_ ? OpKind::kGpu : OpKind::kCpu;
    }
    if (ctrl_deps_) {
      n.parent_id = *ctrl_deps_;
      n.has_parent_id = true;
      n.parent_from_ctrl_deps = true;
    } else if (parent_) {
      n.parent_id = *parent_;
      n.has_parent_id = true;
    }
    // The IOInfo lists, where they lie in the node's text (the writer renders them). A missing
    // list is written as [] (Chakra would stop with a KeyError) and counted.
    bool missing = false;
    for (int f = 0; f < kIoFieldCount; ++f) {
      const std::string_view raw = raw_io_[f];
      if (raw.empty()) {
        n.io_at[f] = EtPlusNode::kIoMissing;
        n.io_len[f] = 0;
        missing = true;
        continue;
      }
      if (raw.data() < h.raw.data() || raw.data() + raw.size() > h.raw.data() + h.raw.size() ||
          h.raw.size() >= EtPlusNode::kIoMissing) {
        return node_error(h, "inputs/outputs outside the node's text (internal error)");
      }
      n.io_at[f] = static_cast<uint32_t>(raw.data() - h.raw.data());
      n.io_len[f] = static_cast<uint32_t>(raw.size());
    }
    if (missing) {
      t_.stats.add(StatKind::kEtPlusNodeWithoutIo, fmt::format("node {}", n.id));
    }
    n.io_missing = missing;
    t_.nodes.push_back(n);
    // The next node starts from scratch.
    sync_deps_at_node_start_ = t_.sync_dep_ids.size();
    drop_node();
    return Status();
  }

 private:
  Status node_error(const HostNode& h, std::string_view what) const {
    return Status::errorf("{}: byte {}: node id {}: {}", t_.path, h.byte_offset, h.id, what);
  }

  // The loader's reading of an integer attribute that the converter read as `value`.
  static void set_link_int_attr(HostNode& link, std::string_view name, int64_t value) {
    if (json::equals(name, "seq_id")) {
      link.seq_id = value;
    } else if (uint64_t* slot = host_id_attr(link, name)) {
      *slot = value < 0 ? 0 : static_cast<uint64_t>(value);
    }
  }

  // A JSON string value (unescaped), as a view into the trace text or t_.arena.
  bool read_string(od::value& v, std::string_view* out) {
    const std::string_view literal = json::token(v);
    if (literal.size() < 2 || literal.front() != '"' || literal.back() != '"') return false;
    // Consume the value: the parser skips a value left unread without checking what follows
    // (`"op_schema": "a": 1` would pass for a key and its value).
    od::raw_json_string consumed;
    if (v.get_raw_json_string().get(consumed)) return false;
    auto s = json::unescape_literal(literal, t_.arena);
    if (!s) return false;
    *out = *s;
    return true;
  }

  static bool is_null(od::value& v) {
    od::json_type type;
    return v.type().get(type) == simdjson::SUCCESS && type == od::json_type::null;
  }

  static void set_int_attr(AttrValues& a, std::string_view name, int64_t value) {
    if (json::equals(name, "rf_id")) {
      a.rf_id = value;
    } else if (json::equals(name, "fw_parent")) {
      a.fw_parent = value;
    } else if (json::equals(name, "seq_id")) {
      a.seq_id = value;
    } else if (json::equals(name, "scope")) {
      a.scope = value;
    } else if (json::equals(name, "tid")) {
      a.tid = value;
    } else if (json::equals(name, "fw_tid")) {
      a.fw_tid = value;
    }
  }

  // With `link`, the loader's reading too: it takes an attr's value only after its name.
  Status read_attrs(od::value& v, const HostNode& h, HostNode* link, AttrValues& attrs) {
    od::array list;
    if (v.get_array().get(list)) return node_error(h, "\"attrs\" is not a list");
    for (auto entry_result : list) {
      od::object entry;
      if (entry_result.get_object().get(entry)) {
        return node_error(h, "an entry of \"attrs\" is not an object");
      }
      std::string_view name, value_raw;
      bool have_name = false, have_value = false, name_first = false;
      for (auto field_result : entry) {
        if (field_result.error()) return node_error(h, "malformed \"attrs\" entry");
        od::field& field = field_result.value_unsafe();
        // The keys PyTorch writes are taken as they are; only another key is looked at for an
        // escape ("n\u0061me" is "name").
        std::string_view key = json::raw_key(field);
        if (!json::equals(key, "name") && !json::equals(key, "value") &&
            !json::equals(key, "type") && json::unescaped_key(field, &key)) {
          return node_error(h, "malformed \"attrs\" entry");
        }
        // A second "name" or "value" would replace the first unchecked (the on-demand parser only
        // validates what it reads), and the loader's own pass reads the first.
        if ((json::equals(key, "name") && have_name) ||
            (json::equals(key, "value") && have_value)) {
          return node_error(h, fmt::format("an \"attrs\" entry has \"{}\" twice", key));
        }
        if (json::equals(key, "name")) {
          if (!read_string(field.value(), &name)) {
            return node_error(h, "an \"attrs\" name is not a string");
          }
          have_name = true;
        } else if (json::equals(key, "value")) {
          if (json::raw_value(field.value(), &value_raw)) {
            return node_error(h, "malformed \"attrs\" value");
          }
          have_value = true;
          name_first = have_name;
        }
      }
      if (!have_name || value_raw.empty()) continue;
      if (json::equals(name, "rf_id") || json::equals(name, "fw_parent") ||
          json::equals(name, "seq_id") || json::equals(name, "scope") ||
          json::equals(name, "tid") || json::equals(name, "fw_tid")) {
        int64_t value = 0;
        if (value_raw == "null") continue;
        if (!parse_int_token(value_raw, &value)) {
          return node_error(h, fmt::format("attr \"{}\" = {} is not an int64", name, value_raw));
        }
        set_int_attr(attrs, name, value);
        if (link != nullptr && name_first) set_link_int_attr(*link, name, value);
      } else if (json::equals(name, "op_schema") || json::equals(name, "pg_name") ||
                 json::equals(name, "collective_name")) {
        if (link != nullptr && name_first && json::equals(name, "op_schema") &&
            value_raw.front() != '"') {
          return node_error(h, "\"op_schema\" is not a string");  // the loader's error
        }
        if (value_raw.front() != '"') {
          pending_stats_.emplace_back(
              json::equals(name, "op_schema") ? StatKind::kEtPlusOpSchemaNotString
              : json::equals(name, "pg_name") ? StatKind::kEtPlusPgNameNotString
                                              : StatKind::kEtPlusCollectiveNameNotString,
              fmt::format("node {}", h.id));
          continue;
        }
        auto s = json::unescape_literal(value_raw, t_.arena);
        if (!s) return node_error(h, fmt::format("attr \"{}\" holds an invalid escape", name));
        (json::equals(name, "op_schema") ? attrs.op_schema
         : json::equals(name, "pg_name") ? attrs.pg_name
                                         : attrs.collective_name) = *s;
        if (link != nullptr && name_first && json::equals(name, "op_schema")) link->op_schema = *s;
      }
    }
    return Status();
  }

  EtPlusTrace& t_;
  bool link_fields_ = false;
  od::parser parser_;  // read_all only
  // The node being read.
  EtPlusNode cur_;
  std::string_view raw_io_[kIoFieldCount];
  std::string_view pg_name_;  // the node-level pg_name, until end_node
  std::optional<uint64_t> ctrl_deps_, parent_;
  AttrValues attrs_;
  bool has_cat_ = false;
  // Data problems of the node being read, counted at its end_node (a node cut by a window's end
  // is read twice).
  std::vector<std::pair<StatKind, std::string>> pending_stats_;
  size_t sync_deps_at_node_start_ = 0;
  LinkStats stats_at_start_;  // for drop_all
};

std::optional<uint64_t> top_level_uint(std::string_view raw) {
  uint64_t v = 0;
  if (!parse_uint_token(raw, &v)) return std::nullopt;
  return v;
}

void read_metadata(const HostTrace& host, EtPlusTrace& t) {
  for (const TopLevelField& f : host.top_level) {
    if (f.is_nodes || f.key_raw.size() < 2) continue;
    std::string_view key = f.key_raw.substr(1, f.key_raw.size() - 2);
    auto as_string = [&]() -> std::optional<std::string> {
      if (f.value_raw.empty() || f.value_raw.front() != '"') return std::nullopt;
      auto s = json::unescape_literal(f.value_raw, t.arena);
      if (!s) return std::nullopt;
      return std::string(valid_utf8(*s, t.arena, t.stats, [key] { return key; }));
    };
    if (json::equals(key, "schema")) {
      t.metadata.schema = as_string();
    } else if (json::equals(key, "time")) {
      t.metadata.time = as_string();
    } else if (json::equals(key, "pid")) {
      t.metadata.pid = top_level_uint(f.value_raw);
    } else if (json::equals(key, "start_ts")) {
      t.metadata.start_ts = top_level_uint(f.value_raw);
    } else if (json::equals(key, "finish_ts")) {
      t.metadata.finish_ts = top_level_uint(f.value_raw);
    }
  }
  auto note_missing = [&](const char* key, bool present) {
    if (!present) {
      t.stats.add(StatKind::kEtPlusMetadataKeyMissing, key);
    }
  };
  note_missing("schema", t.metadata.schema.has_value());
  note_missing("pid", t.metadata.pid.has_value());
  note_missing("time", t.metadata.time.has_value());
  note_missing("start_ts", t.metadata.start_ts.has_value());
  note_missing("finish_ts", t.metadata.finish_ts.has_value());
}

// Chakra's schema-1.0.1 ET+ keeps `parent` in the old id space (see the header). New ids were
// given in old-id order, so the old ids of the nodes increase with their new ids, and on each
// thread the open ops form a stack: every entry but the top is known by the `parent` value of the
// entry above it. A node whose `parent` names no known entry is the first child of the top entry,
// which the value then identifies.
void recover_renumbered_parents(EtPlusTrace& t, uint32_t process_root) {
  const size_t n = t.nodes.size();
  constexpr uint64_t kUnknown = 0;
  std::vector<uint64_t> old_id(n, kUnknown);
  std::unordered_map<uint64_t, uint32_t> by_old_id;
  std::unordered_map<int64_t, std::vector<uint32_t>> stacks;  // by tid
  old_id[process_root] = t.nodes[process_root].parent_id;
  by_old_id[old_id[process_root]] = process_root;
  t.nodes[process_root].parent = kNoNode;
  for (uint32_t i = 0; i < n; ++i) {
    EtPlusNode& node = t.nodes[i];
    if (i == process_root || !node.has_parent_id || node.parent_from_ctrl_deps) continue;
    auto& stack = stacks[node.tid];
    uint32_t parent = kNoNode;
    if (auto it = by_old_id.find(node.parent_id); it != by_old_id.end()) {
      parent = it->second;
    } else if (!stack.empty() && old_id[stack.back()] == kUnknown &&
               node.parent_id > t.nodes[stack.back()].parent_id) {
      parent = stack.back();
      old_id[parent] = node.parent_id;
      by_old_id[node.parent_id] = parent;
    }
    if (parent != kNoNode) {
      while (!stack.empty() && stack.back() != parent) stack.pop_back();
    } else {
      t.stats.add(StatKind::kEtPlusOldParentNotRecovered,
                  fmt::format("node {} (parent {})", node.id, node.parent_id));
    }
    node.parent = parent;
    stack.push_back(i);
  }
  // Old ids must increase with new ids; anything else means the input was not what we assumed.
  uint64_t last = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (old_id[i] == kUnknown) continue;
    if (old_id[i] <= last) {
      t.stats.add(StatKind::kEtPlusOldParentIdsInconsistent, fmt::format("node {}", t.nodes[i].id));
      for (EtPlusNode& node : t.nodes) {
        if (node.has_parent_id && !node.parent_from_ctrl_deps) {
          uint32_t p = t.index_of(node.parent_id);
          node.parent = p == static_cast<uint32_t>(&node - t.nodes.data()) ? kNoNode : p;
        }
      }
      return;
    }
    last = old_id[i];
  }
  t.parents_renumbered = true;
}

void resolve_parents(EtPlusTrace& t) {
  uint32_t process_root = kNoNode;
  bool any_flat_parent = false;
  for (uint32_t i = 0; i < t.nodes.size(); ++i) {
    EtPlusNode& node = t.nodes[i];
    if (node.has_parent_id) {
      uint32_t p = t.index_of(node.parent_id);
      node.parent = p == i ? kNoNode : p;
      any_flat_parent |= !node.parent_from_ctrl_deps;
    }
    if (process_root == kNoNode && is_process_root_name(node.name)) process_root = i;
  }
  if (any_flat_parent && process_root != kNoNode) {
    const EtPlusNode& root = t.nodes[process_root];
    if (root.has_parent_id && !root.parent_from_ctrl_deps && root.parent_id != root.id) {
      recover_renumbered_parents(t, process_root);
    }
  }
}

}  // namespace

bool is_thread_root_name(std::string_view name) {
  return json::equals(name, "[pytorch|profiler|execution_trace|thread]") ||
         json::equals(name, "[pytorch|profiler|execution_graph|thread]");
}

bool is_process_root_name(std::string_view name) {
  return json::equals(name, "[pytorch|profiler|execution_trace|process]") ||
         json::equals(name, "[pytorch|profiler|execution_graph|process]");
}

std::string_view EtPlusTrace::raw_io(const EtPlusNode& n, IoField f) const {
  if (n.io_len[f] == 0 || n.io_at[f] == EtPlusNode::kIoMissing || host == nullptr) return {};
  return std::string_view(host->text.data() + n.byte_offset + n.io_at[f], n.io_len[f]);
}

uint32_t EtPlusTrace::index_of(uint64_t id) const {
  // Ids are usually dense (a linked rank's are): try the node where a dense id would be.
  if (!nodes.empty() && id >= nodes.front().id && id - nodes.front().id < nodes.size()) {
    const size_t guess = static_cast<size_t>(id - nodes.front().id);
    if (nodes[guess].id == id) return static_cast<uint32_t>(guess);
  }
  auto it = std::lower_bound(nodes.begin(), nodes.end(), id,
                             [](const EtPlusNode& n, uint64_t v) { return n.id < v; });
  if (it == nodes.end() || it->id != id) return kNoNode;
  return static_cast<uint32_t>(it - nodes.begin());
}

namespace {

// Where the file order of the nodes comes from.
enum class FileOrder : uint8_t {
  kByteOffset,    // the nodes' byte offsets in the file read
  kFilePosition,  // EtPlusNode::file_position, already set (read_linked_nodes)
  kIndex,         // file_position is each node's index (read_linked_nodes, ids in order)
};

// What follows reading the nodes (in id order): metadata, schema checks, file order, parents.
void finish_trace(const HostTrace& host, const ConvertOptions& options, FileOrder order,
                  EtPlusTrace& t) {
  t.host = &host;
  t.schema = host.schema;
  read_metadata(host, t);
  if (options.compat == Compat::kChakra && !chakra_parses_schema(t.schema)) {
    t.stats.add(StatKind::kEtPlusSchemaRejectedByChakra, t.schema);
  } else if (!known_schema(t.schema)) {
    t.stats.add(StatKind::kEtPlusSchemaUnknown, t.schema);
  }
  // File order: the order of the "nodes" array, which Chakra's conversion loop follows.
  t.file_order.resize(t.nodes.size());
  if (order == FileOrder::kByteOffset) {
    // The bytes the loader repaired are the converter's input's (an ET+ written from a linked
    // rank has them repaired already: the link reported them).
    t.stats.add_count(StatKind::kEtPlusInvalidUtf8Bytes, host.invalid_utf8_bytes);
    for (uint32_t i = 0; i < t.nodes.size(); ++i) t.file_order[i] = i;
    std::sort(t.file_order.begin(), t.file_order.end(), [&](uint32_t a, uint32_t b) {
      return t.nodes[a].byte_offset < t.nodes[b].byte_offset;
    });
    for (uint32_t k = 0; k < t.file_order.size(); ++k) t.nodes[t.file_order[k]].file_position = k;
  } else if (order == FileOrder::kFilePosition) {
    for (uint32_t i = 0; i < t.nodes.size(); ++i) t.file_order[t.nodes[i].file_position] = i;
  } else {
    for (uint32_t i = 0; i < t.nodes.size(); ++i) t.file_order[i] = i;
  }
  resolve_parents(t);
  if (t.parents_renumbered) {
    t.stats.add(StatKind::kEtPlusOldParentIdsMapped, t.path);
  }
}

}  // namespace

LinkedDeviceFacts linked_device_facts(const DeviceTrace& device, const LinkedTrace& linked) {
  LinkedDeviceFacts f;
  f.host_op.resize(linked.ops.size());
  for (size_t i = 0; i < linked.ops.size(); ++i) {
    const DeviceEventIdx e = linked.ops[i].device_event;
    if (e.valid()) f.host_op[i] = {device[e].dur, device[e].ts};
  }
  // Each distinct string copied once, and checked for UTF-8 once.
  std::unordered_map<std::string_view, bool> interned;  // copy -> valid UTF-8
  auto intern = [&](std::string_view s, bool* utf8) -> std::string_view {
    auto it = interned.find(s);
    if (it == interned.end()) {
      std::string_view copy = f.arena.emplace_back(s);
      it = interned.emplace(copy, simdjson::validate_utf8(copy.data(), copy.size())).first;
    }
    *utf8 = it->second;
    return it->first;
  };
  f.gpu_op.reserve(linked.gpu_events.size());
  for (DeviceEventIdx idx : linked.gpu_events) {
    const DeviceEvent& g = device[idx];
    LinkedDeviceFacts::GpuOp op;
    op.name = intern(g.name, &op.name_utf8);
    const std::string_view pg_name = device.pg_name(g);
    if (!pg_name.empty() && g.name.find("ncclDevKernel") != std::string_view::npos) {
      op.pg_name = intern(pg_name, &op.pg_name_utf8);
    }
    op.dur = g.dur;
    op.ts = g.ts;
    op.has_stream = g.has(kHasStream);
    if (op.has_stream) op.stream = g.stream;
    f.gpu_op.push_back(op);
  }
  return f;
}

StatusOr<EtPlusTrace> read_linked_nodes(const HostTrace& host, const DeviceTrace& device,
                                        const LinkedTrace& linked, const LinkOptions& link_options,
                                        const ConvertOptions& options) {
  return read_linked_nodes(host, linked_device_facts(device, linked), linked, link_options,
                           options);
}

namespace {

// Where the nodes as read lie in the EtPlusTrace given to link_nodes.
enum class ReadOrder : uint8_t {
  kById,       // as host.nodes (read_all)
  kFileOrder,  // in file order: HostNode::file_index (HostNodeFields)
};

// Moves the nodes as read (in `order`) to their output positions (`slot`, by host node, in id
// order) in `nodes` grown to `total`, in place (no second vector of nodes is alive).
void place_nodes(const HostTrace& host, ReadOrder order, const std::vector<uint32_t>& slot,
                 size_t total, std::vector<EtPlusNode>& nodes) {
  const size_t n = nodes.size();
  std::vector<uint32_t> target(n);  // by position as read
  for (uint32_t i = 0; i < n; ++i) {
    target[order == ReadOrder::kById ? i : host.nodes[i].file_index] = slot[i];
  }
  move_to_targets(nodes, target, total);
}

// read_linked_nodes, from the nodes as read (`t.nodes`, with their sync deps, strings
// and data problems in `t`).
StatusOr<EtPlusTrace> link_nodes(const HostTrace& host, EtPlusTrace t, ReadOrder order,
                                 LinkedDeviceFacts device, const LinkedTrace& linked,
                                 const LinkOptions& link_options, const ConvertOptions& options) {
  if (t.nodes.size() != host.nodes.size()) {
    return Status::errorf("{}: internal error: {} nodes read for {} host nodes", host.path,
                          t.nodes.size(), host.nodes.size());
  }
  t.path = host.path;
  t.device_arena = std::move(device.arena);  // the GPU names and pg_names
  // Each host node's output position; its GPU ops' nodes follow it.
  std::vector<uint32_t> slot(host.nodes.size());
  size_t total = 0;
  for (uint32_t i = 0; i < host.nodes.size(); ++i) {
    slot[i] = static_cast<uint32_t>(total);
    total += 1 + (linked.ops[i].gpu_end - linked.ops[i].gpu_begin);
  }
  place_nodes(host, order, slot, total, t.nodes);
  const bool default_mode = link_options.compat == Compat::kDefault;
  uint32_t position = 0;     // in the ET+ the writer would write
  size_t gpu_sync_next = 0;  // cursor in linked.gpu_sync_deps (sorted by GPU position)
  // The keys the writer appends after the node's own: they replace what the node had.
  auto set_timing = [&](EtPlusNode& n, TimeNs inclusive, TimeNs exclusive, TimeNs ts,
                        const LinkedHostOp& owner) {
    n.inclusive_dur = json::micros_value(inclusive);
    n.exclusive_dur = json::micros_value(exclusive);
    n.ts = json::micros_value(ts);
    n.has_ts = true;
    // A null inter_thread_dep leaves the node's own value.
    if (owner.inter_thread_dep.valid()) {
      n.inter_thread_dep = linked.ops[owner.inter_thread_dep.value].new_id;
    }
  };
  auto begin_sync = [&](EtPlusNode& n) {
    n.sync_dep_begin = static_cast<uint32_t>(t.sync_dep_ids.size());
  };
  auto end_sync = [&](EtPlusNode& n) {
    n.sync_dep_count = static_cast<uint32_t>(t.sync_dep_ids.size()) - n.sync_dep_begin;
  };
  // Whether the ids come out strictly ascending in position order (they do: dense in the
  // writer's order), as they are set.
  bool ids_ascending = true;
  uint64_t last_id = 0;
  auto in_id_order = [&](uint64_t id) {
    ids_ascending &= position == 1 || id > last_id;
    last_id = id;
  };
  EtPlusNode as_read;
  for (uint32_t i = 0; i < host.nodes.size(); ++i) {
    const HostNode& h = host.nodes[i];
    const LinkedHostOp& op = linked.ops[i];
    // The GPU nodes are copies of the host node's text, before the host node's own changes.
    if (op.gpu_begin < op.gpu_end) as_read = t.nodes[slot[i]];
    {
      EtPlusNode& n = t.nodes[slot[i]];
      n.id = op.new_id;
      n.file_position = position++;
      in_id_order(n.id);
      // The writer replaces the value of the key the loader took the parent from; `ctrl_deps`
      // wins over `parent` when a node has both.
      const bool remapped = h.parent_key == ParentKey::kCtrlDeps ||
                            (h.parent_key == ParentKey::kParent && default_mode);
      if (op.parent_state != ParentState::kNone && remapped &&
          (h.parent_key == ParentKey::kCtrlDeps || !n.parent_from_ctrl_deps)) {
        n.parent_id = op.new_parent;
        n.has_parent_id = true;
      }
      if (op.device_event.valid()) {
        const LinkedDeviceFacts::Timing& e = device.host_op[i];
        set_timing(n, e.dur, op.exclusive, e.ts, op);
      }
      const std::span<const uint64_t> sync = linked.sync_deps[i];
      if (!sync.empty()) {
        begin_sync(n);
        t.sync_dep_ids.insert(t.sync_dep_ids.end(), sync.begin(), sync.end());
        end_sync(n);
      }
    }
    for (uint32_t k = op.gpu_begin; k < op.gpu_end; ++k) {
      const LinkedDeviceFacts::GpuOp& g = device.gpu_op[k];
      EtPlusNode& n = t.nodes[slot[i] + 1 + (k - op.gpu_begin)];
      n = as_read;
      n.id = linked.gpu_new_id(op, k - op.gpu_begin);
      n.file_position = position++;
      in_id_order(n.id);
      auto where = [&n] { return fmt::format("node {}", n.id); };
      n.name = g.name_utf8 ? g.name : valid_utf8(g.name, t.arena, t.stats, where);
      n.kind = n.name.find("process_group:init") != std::string_view::npos ? OpKind::kMetadata
                                                                           : OpKind::kGpu;
      if (n.op_schema_repaired) t.stats.add(StatKind::kEtPlusStringNotUtf8, where());
      // The writer's keys: ctrl_deps (the host node), timing, cat, stream, pg_name, sync_dep.
      n.parent_id = op.new_id;
      n.has_parent_id = true;
      n.parent_from_ctrl_deps = true;
      set_timing(n, g.dur, g.dur, g.ts, op);
      n.stream_given = true;
      if (g.has_stream) {
        n.stream = g.stream;
      } else {
        n.has_stream = false;
      }
      if (!n.pg_name_from_attr && !g.pg_name.empty()) {
        t.set_comm_names(
            n, g.pg_name_utf8 ? g.pg_name : valid_utf8(g.pg_name, t.arena, t.stats, where),
            t.collective_name(n));
      } else if (n.pg_name_repaired) {
        t.stats.add(StatKind::kEtPlusStringNotUtf8, where());
      }
      const auto& gpu_sync = linked.gpu_sync_deps;
      if (gpu_sync_next < gpu_sync.size() && gpu_sync[gpu_sync_next].gpu_position == k) {
        begin_sync(n);
        for (; gpu_sync_next < gpu_sync.size() && gpu_sync[gpu_sync_next].gpu_position == k;
             ++gpu_sync_next) {
          t.sync_dep_ids.push_back(gpu_sync[gpu_sync_next].dep_id);
        }
        end_sync(n);
      }
      if (n.io_missing) t.stats.add(StatKind::kEtPlusNodeWithoutIo, where());
    }
  }
  // Ids are dense in the writer's order (stages/link/id_assignment.h): checked as they were set (no
  // pass over the nodes for it); sorted if not.
  if (ids_ascending) {
    finish_trace(host, options, FileOrder::kIndex, t);
    return t;
  }
  std::vector<EtPlusNode>& nodes = t.nodes;
  auto by_id = [](const EtPlusNode& a, const EtPlusNode& b) { return a.id < b.id; };
  std::stable_sort(nodes.begin(), nodes.end(), by_id);
  for (size_t i = 1; i < nodes.size(); ++i) {
    if (nodes[i].id == nodes[i - 1].id) {
      return Status::errorf("{}: linked rank: duplicate node id {}", host.path, nodes[i].id);
    }
  }
  finish_trace(host, options, FileOrder::kFilePosition, t);
  return t;
}

}  // namespace

StatusOr<EtPlusTrace> read_linked_nodes(const HostTrace& host, LinkedDeviceFacts device,
                                        const LinkedTrace& linked, const LinkOptions& link_options,
                                        const ConvertOptions& options) {
  EtPlusTrace t;
  t.path = host.path;
  NodeReader reader(t);
  CF_RETURN_IF_ERROR(reader.read_all(host, linked.node_count));
  return link_nodes(host, std::move(t), ReadOrder::kById, std::move(device), linked, link_options,
                    options);
}

struct HostNodeFields::Impl {
  explicit Impl(std::string path) : reader(trace, /*link_fields=*/true) {
    // As load_et_plus: reserve rather than grow by copying (a .gz file's size is a lower bound).
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec) {
      // Room for the GPU ops' nodes too, which link_nodes adds in place (the untouched part of
      // a reservation costs no memory).
      trace.nodes.reserve(static_cast<size_t>(size / 300));
    }
    trace.path = std::move(path);
  }
  EtPlusTrace trace;
  NodeReader reader;
};

HostNodeFields::HostNodeFields(std::string path) : impl_(std::make_unique<Impl>(std::move(path))) {}
HostNodeFields::HostNodeFields(HostNodeFields&&) noexcept = default;
HostNodeFields& HostNodeFields::operator=(HostNodeFields&&) noexcept = default;
HostNodeFields::~HostNodeFields() = default;

Status HostNodeFields::field(HostNode& node, std::string_view key, od::value& value) {
  return impl_->reader.field(node, key, value);
}
Status HostNodeFields::end_node(const HostNode& node) {
  return impl_->reader.end_node(node);
}
bool HostNodeFields::can_take_back() const {
  return impl_->reader.can_take_back();
}
void HostNodeFields::drop_node() {
  impl_->reader.drop_node();
}
void HostNodeFields::drop_all() {
  impl_->reader.drop_all();
}

StatusOr<EtPlusTrace> read_linked_nodes(const HostTrace& host, HostNodeFields fields,
                                        LinkedDeviceFacts device, const LinkedTrace& linked,
                                        const LinkOptions& link_options,
                                        const ConvertOptions& options) {
  return link_nodes(host, std::move(fields.impl_->trace), ReadOrder::kFileOrder, std::move(device),
                    linked, link_options, options);
}

StatusOr<EtPlusTrace> read_et_plus_nodes(const HostTrace& host, const ConvertOptions& options) {
  EtPlusTrace t;
  t.path = host.path;
  NodeReader reader(t);
  CF_RETURN_IF_ERROR(reader.read_all(host, host.nodes.size()));
  finish_trace(host, options, FileOrder::kByteOffset, t);
  return t;
}

StatusOr<EtPlusFile> load_et_plus(const std::string& path, const ConvertOptions& options,
                                  size_t window_bytes) {
  EtPlusFile file;
  file.trace.path = path;
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec) {
    // Nodes take 500 to 1,000 bytes of JSON: reserve for the smaller, rather than grow by copying.
    file.trace.nodes.reserve(static_cast<size_t>(size / 500));
  }
  NodeReader reader(file.trace);
  CF_ASSIGN_OR_RETURN(HostTrace host, load_host_trace(path, &reader, window_bytes));
  // The nodes came in file order: id order already for ET+ (no sort), children before
  // parents in a host ET.
  std::vector<EtPlusNode>& nodes = file.trace.nodes;
  auto by_id = [](const EtPlusNode& a, const EtPlusNode& b) { return a.id < b.id; };
  if (!std::is_sorted(nodes.begin(), nodes.end(), by_id)) {
    std::stable_sort(nodes.begin(), nodes.end(), by_id);
  }
  for (size_t i = 1; i < nodes.size(); ++i) {
    if (nodes[i].id == nodes[i - 1].id) {
      return Status::errorf("{}: duplicate node id {} (nodes at byte {} and byte {})", path,
                            nodes[i].id, nodes[i - 1].byte_offset, nodes[i].byte_offset);
    }
  }
  file.host = std::make_unique<HostTrace>(std::move(host));
  finish_trace(*file.host, options, FileOrder::kByteOffset, file.trace);
  return file;
}

}  // namespace chakraflow
