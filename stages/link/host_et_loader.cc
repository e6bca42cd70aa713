#include "stages/link/host_et_loader.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "stages/common/file_io.h"
#include "stages/common/json_util.h"
#include "stages/common/move_to_targets.h"
#include "stages/common/ordered_batches.h"
#include "stages/common/prefault.h"
#include "stages/common/profile.h"
#include "stages/common/radix_sort.h"
#include "stages/link/loader_shards.h"

namespace chakraflow {
namespace {

namespace od = simdjson::ondemand;

// The key of the nodes array, as a JSON string literal (keys are compared with their quotes).
constexpr std::string_view kNodesKey = "\"nodes\"";

class HostParser {
 public:
  HostParser(HostTrace& trace, HostNodeSink* sink, size_t window_bytes, ParseShards shards = {})
      : t_(trace),
        text_(trace.text),
        sink_(sink),
        keep_nodes_(sink == nullptr || sink->keep_nodes()),
        window_bytes_(window_bytes),
        shards_(shards) {}

  Status parse() {
    if (text_.empty())
      return Status::errorf("{}: empty file, expected a host execution trace", t_.path);
    // Nodes take 500 to 1,000 bytes of JSON: reserving for 256 avoids growing by copying (the
    // untouched tail of the reservation costs no memory).
    if (keep_nodes_) t_.nodes.reserve(text_.size() / 256);
    if (window_bytes_ > 0 && parse_in_shards()) return Status();
    od::parser parser;
    if (const size_t window = json::resolve_window_bytes(window_bytes_, text_.size());
        window > 0 && text_.size() > 2 * window) {
      NodeWindows windows(*this);
      t_.parse_windows =
          json::read_array_in_windows(parser, t_.text.mutable_data(), t_.text.size(),
                                      t_.text.capacity(), kNodesKey, window, windows);
      if (t_.parse_windows > 0) return Status();
      // Not a text the windows can read, or a bad one: the whole document's parse reports it.
      forget_nodes();
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

  // The nodes read in shards (ParseShards), when there is no sink or it makes shard sinks: true
  // when read. Shard 0 reads into this trace (and sink), the others into their own, appended in
  // order after (their nodes' positions moved by the nodes before).
  bool parse_in_shards() {
    const size_t count = shards_.for_text(text_.size());
    if (count < 2) return false;
    const size_t window = json::resolve_window_bytes(window_bytes_, text_.size() / count);
    // A sink takes the shards' nodes through shard sinks, appended in order.
    std::vector<std::unique_ptr<HostNodeSink>> sinks(count - 1);
    for (auto& sink : sinks) {
      if (sink_ != nullptr && !(sink = sink_->shard(text_.size() / count))) return false;
    }
    LoaderShards<HostTrace, HostParser, NodeWindows> shards(
        count, *this, [&](HostTrace& part, size_t k) {
          part.path = t_.path;
          if (keep_nodes_) part.nodes.reserve(text_.size() / count / 256);
          return std::unique_ptr<HostParser>(
              new HostParser(part, text_, window, sinks[k - 1].get()));
        });
    const size_t read =
        json::read_array_in_shards(t_.text.mutable_data(), t_.text.size(), t_.text.capacity(),
                                   kNodesKey, window, shards.readers(), *shards_.workers);
    if (read == 0) {
      forget_nodes();
      return false;
    }
    // The shards' nodes and their sinks' appended side by side: the two touch nothing in common.
    const profile::Span span("merge host shards");
    bool merged = true;
    shards_.workers->for_each(2, [&](size_t task) {
      if (task == 0) {
        merged = merge_shards(shards);
      } else if (sink_ != nullptr) {
        size_t more = 0;
        for (size_t k = 1; k < shards.count(); ++k) more += shards.elements(k);
        sink_->reserve_more(more, *shards_.workers);
        for (auto& sink : sinks) sink_->append(std::move(*sink));
      }
    });
    if (!merged) {
      forget_nodes();
      return false;
    }
    t_.parse_shards = read;
    return true;
  }

  // The shards' nodes and top-level fields after this trace's. False: a top-level key of the
  // last shard (after the array) repeats one before the array (the whole parse reports it).
  template <typename Shards>
  bool merge_shards(Shards& shards) {
    size_t more = 0;
    for (size_t k = 1; k < shards.count(); ++k) more += shards.part(k).nodes.size();
    reserve_prefaulted(t_.nodes, t_.nodes.size() + more, *shards_.workers);
    size_t first = shards.elements(0);
    for (size_t k = 1; k < shards.count(); ++k) {
      HostTrace& part = shards.part(k);
      for (const TopLevelField& f : part.top_level) {
        if (!check_new_key(f.key_raw).ok()) return false;
        t_.top_level.push_back(f);
      }
      if (!part.schema.empty()) t_.schema = std::move(part.schema);
      const size_t at = t_.nodes.size();
      t_.nodes.insert(t_.nodes.end(), part.nodes.begin(), part.nodes.end());
      for (size_t i = at; i < t_.nodes.size(); ++i) {
        t_.nodes[i].file_index += static_cast<uint32_t>(first);
      }
      if (!part.arena.empty()) t_.more_arenas.push_back(std::move(part.arena));
      first += shards.elements(k);
    }
    return true;
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
    // On the trace's workers when it was read in shards: the keys copied out in ranges, sorted
    // (ties in file order).
    const OrderedBatches* workers = shards_.own_workers();
    const size_t n = nodes.size();
    constexpr size_t kRange = 65536;
    std::vector<std::pair<uint64_t, uint32_t>> keys(n);
    const OrderedBatches& run = batches_or_in_turn(workers);
    for_each_range(run, n, run.range_size(kRange), [&](size_t, size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) keys[i] = {nodes[i].id, static_cast<uint32_t>(i)};
    });
    stable_radix_sort(
        keys, [](const auto& k) { return k.first; }, workers);
    std::vector<uint32_t> target(nodes.size());
    for (uint32_t k = 0; k < keys.size(); ++k) target[keys[k].second] = k;
    move_to_targets(nodes, target, nodes.size(), workers);
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
      if (!p_.read_node(doc, value, start, index_).ok()) return false;
      ++index_;
      return true;
    }
    // Elements read so far.
    size_t elements() const { return index_; }

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

  // The keys of the node being read that decide its parent (HostNode::parent_key).
  struct ParentKeys {
    std::optional<uint64_t> ctrl_deps, parent;
    Span ctrl_deps_value, parent_value;
  };

  Status parse_node(od::document& doc, od::object obj, const char* start, size_t index,
                    HostNode& n) {
    bool has_id = false;
    bool has_name = false;
    ParentKeys parents;
    HostNodeDetail& d = detail_;
    // In place: the node before leaves nothing (without a sink, only the integer attributes are
    // read).
    if (sink_ != nullptr) {
      std::construct_at(&d);
      sync_deps_.clear();
    } else {
      d.int_attr = kNoHostIntAttrs;
    }
    for (auto field_result : obj) {
      if (simdjson::error_code err = field_result.error()) {
        return fail(err, fmt::format("node #{}", index));
      }
      od::field& field = field_result.value_unsafe();
      const std::string_view key = json::raw_key(field);
      od::value& v = field.value();
      // The most frequent keys first (the branches exclude each other).
      if (json::equals(key, "id")) {
        std::string_view token = json::token(v);
        if (!json::get_uint64(v, &n.id))
          return node_error(n, index, "\"id\" is not a non-negative integer");
        n.id_value = span_of(start, token);
        has_id = true;
      } else if (json::equals(key, "name")) {
        std::string_view literal;
        CF_RETURN_IF_ERROR(read_string(v, n, index, "name", &n.name, &literal));
        n.name_value = span_of(start, literal);
        has_name = true;
      } else if (json::equals(key, "attrs")) {
        CF_RETURN_IF_ERROR(read_attrs(v, n, index));
      } else if (json::equals(key, "ctrl_deps") || json::equals(key, "parent")) {
        CF_RETURN_IF_ERROR(read_parent_key(key, v, start, n, index, parents));
      } else if (int attr = int_attr_of(key); attr >= 0) {
        // Schema 1.0.1: the attributes at node level.
        if (is_null(v)) continue;
        if (!json::get_int64(v, &d.int_attr[attr])) {
          return node_error(n, index, fmt::format("\"{}\" is not an integer", key));
        }
      } else if (sink_ != nullptr) {
        CF_RETURN_IF_ERROR(read_detail_field(key, v, start, n, index));
      }
      // Every other field is passed through verbatim.
    }
    if (!has_id) return node_error(n, index, "missing required field \"id\"");
    if (!has_name) return node_error(n, index, "missing required field \"name\"");
    return finish_node(doc, start, parents, n);
  }

  // "ctrl_deps" or "parent" (`key`): a node id, or null.
  Status read_parent_key(std::string_view key, od::value& v, const char* start, const HostNode& n,
                         size_t index, ParentKeys& parents) {
    if (is_null(v)) return Status();
    const std::string_view token = json::token(v);
    uint64_t id = 0;
    if (!json::get_uint64(v, &id)) {
      return node_error(n, index, fmt::format("\"{}\" is not a non-negative integer", key));
    }
    if (json::equals(key, "ctrl_deps")) {
      parents.ctrl_deps = id;
      parents.ctrl_deps_value = span_of(start, token);
    } else {
      parents.parent = id;
      parents.parent_value = span_of(start, token);
    }
    return Status();
  }

  // Once its fields are read: the node's text, its parent, rf_id and tid; handed to the sink.
  Status finish_node(od::document& doc, const char* start, const ParentKeys& parents, HostNode& n) {
    const HostNodeDetail& d = detail_;
    const char* after = nullptr;
    if (doc.current_location().get(after)) after = end();
    // current_location() points at the structural character that follows the object.
    while (after > start && after[-1] != '}') --after;
    n.raw = std::string_view(start, static_cast<size_t>(after - start));
    // `ctrl_deps` wins over `parent`: Chakra's ET+ of schema 1.0.1 gives its GPU nodes both, the
    // new id in ctrl_deps.
    if (parents.ctrl_deps) {
      n.parent = *parents.ctrl_deps;
      n.parent_key = ParentKey::kCtrlDeps;
      n.parent_value = parents.ctrl_deps_value;
    } else if (parents.parent) {
      n.parent = *parents.parent;
      n.parent_key = ParentKey::kParent;
      n.parent_value = parents.parent_value;
    }
    n.rf_id = id_value(d.int_attr[kRfId]);
    n.tid = id_value(d.int_attr[kTid]);
    if (sink_ == nullptr) return Status();
    detail_.sync_deps = sync_deps_;
    return sink_->node(n, detail_);
  }

  // A negative id (some traces write -1 for "none") is none.
  static uint64_t id_value(int64_t v) { return v < 0 ? 0 : static_cast<uint64_t>(v); }

  static int int_attr_of(std::string_view key) {
    if (json::equals(key, "rf_id")) return kRfId;
    if (json::equals(key, "tid")) return kTid;
    if (json::equals(key, "seq_id")) return kSeqId;
    if (json::equals(key, "fw_parent")) return kFwParent;
    if (json::equals(key, "scope")) return kScope;
    if (json::equals(key, "fw_tid")) return kFwTid;
    return -1;
  }

  static bool is_null(od::value& v) {
    od::json_type type;
    return v.type().get(type) == simdjson::SUCCESS && type == od::json_type::null;
  }

  // A key only the converter reads (HostNodeDetail).
  Status read_detail_field(std::string_view key, od::value& v, const char* start, const HostNode& n,
                           size_t index) {
    HostNodeDetail& d = detail_;
    auto bad = [&](std::string_view what) {
      return node_error(n, index, fmt::format("\"{}\" {}", key, what));
    };
    if (json::equals(key, "inputs") || json::equals(key, "outputs")) {
      return read_io(json::equals(key, "inputs") ? 0 : 3, v, start, bad);
    } else if (json::equals(key, "input_shapes") || json::equals(key, "input_types") ||
               json::equals(key, "output_shapes") || json::equals(key, "output_types")) {
      const int f = json::equals(key, "input_shapes")    ? 1
                    : json::equals(key, "input_types")   ? 2
                    : json::equals(key, "output_shapes") ? 4
                                                         : 5;
      std::string_view raw;
      if (json::raw_value(v, &raw)) return bad("is malformed");
      d.io[f] = span_of(start, raw);
    } else if (json::equals(key, "exclusive_dur") || json::equals(key, "inclusive_dur") ||
               json::equals(key, "ts")) {
      if (is_null(v)) return Status();
      double* out = json::equals(key, "ts")              ? &d.ts
                    : json::equals(key, "exclusive_dur") ? &d.exclusive_dur
                                                         : &d.inclusive_dur;
      if (v.get_double().get(*out)) return bad("is not a number");
      d.has_ts |= out == &d.ts;
    } else if (json::equals(key, "exec_tid")) {
      if (is_null(v)) return Status();
      if (!json::get_int64(v, &d.exec_tid)) return bad("is not an integer");
      d.has_exec_tid = true;
    } else if (json::equals(key, "inter_thread_dep")) {
      if (is_null(v)) return Status();
      int64_t dep = 0;
      if (!json::get_int64(v, &dep)) return bad("is not a node id");
      d.inter_thread_dep = id_value(dep);
    } else if (json::equals(key, "sync_dep")) {
      if (is_null(v)) return Status();
      od::array deps;
      if (v.get_array().get(deps)) return bad("is not a list of node ids");
      for (auto dep_result : deps) {
        od::value dep_value;
        uint64_t dep = 0;
        if (std::move(dep_result).get(dep_value) || !json::get_uint64(dep_value, &dep)) {
          return bad("is not a list of node ids");
        }
        sync_deps_.push_back(dep);
      }
    } else if (json::equals(key, "cat")) {
      d.has_cat = !is_null(v);
    } else if (json::equals(key, "stream")) {
      d.stream_given = true;
      if (is_null(v)) {
        d.has_stream = false;
      } else if (!json::get_int64(v, &d.stream)) {
        return bad("is not an integer");
      }
    } else if (json::equals(key, "device")) {
      if (!is_null(v) && !json::get_int64(v, &d.device)) return bad("is not an integer");
    } else if (json::equals(key, "pg_name")) {
      if (is_null(v) || d.pg_name_from_attr) return Status();
      return read_string(v, n, index, "pg_name", &d.pg_name, nullptr);
    } else if (json::equals(key, "op_schema")) {
      return read_string(v, n, index, "op_schema", &d.op_schema, nullptr);
    }
    return Status();
  }

  // "inputs" (`base` 0) or "outputs" (3): an object of values, shapes and types lists (their
  // text kept in HostNodeDetail::io), or, in schema 1.0.1, the values list itself. `bad` makes
  // the error naming the key.
  template <typename Bad>
  Status read_io(int base, od::value& v, const char* start, const Bad& bad) {
    HostNodeDetail& d = detail_;
    od::json_type type;
    if (v.type().get(type)) return bad("is malformed");
    if (type != od::json_type::object) {
      // Schema 1.0.1: the values list itself.
      std::string_view raw;
      if (json::raw_value(v, &raw)) return bad("is malformed");
      d.io[base] = span_of(start, raw);
      return Status();
    }
    od::object io;
    if (v.get_object().get(io)) return bad("is malformed");
    for (auto io_field_result : io) {
      if (io_field_result.error()) return bad("is malformed");
      od::field& io_field = io_field_result.value_unsafe();
      std::string_view io_key = json::raw_key(io_field);  // as for attrs' keys
      if (!json::equals(io_key, "values") && !json::equals(io_key, "shapes") &&
          !json::equals(io_key, "types") && json::unescaped_key(io_field, &io_key))
        return bad("is malformed");
      const int f = json::equals(io_key, "values")   ? 0
                    : json::equals(io_key, "shapes") ? 1
                    : json::equals(io_key, "types")  ? 2
                                                     : -1;
      if (f < 0) continue;  // "strides" (schema 1.1.1) is not converted, as in Chakra
      std::string_view raw;
      if (json::raw_value(io_field.value(), &raw)) return bad("is malformed");
      d.io[base + f] = span_of(start, raw);
    }
    return Status();
  }

  // "attrs": a list of {name, type, value}. Keys in any order; the integer attributes always,
  // the string ones for a sink.
  Status read_attrs(od::value& v, const HostNode& n, size_t index) {
    HostNodeDetail& d = detail_;
    od::array list;
    if (v.get_array().get(list)) return node_error(n, index, "\"attrs\" is not a list");
    for (auto entry_result : list) {
      od::object entry;
      if (entry_result.get_object().get(entry)) {
        return node_error(n, index, "an entry of \"attrs\" is not an object");
      }
      std::string_view name, value_raw;
      bool have_name = false, have_value = false;
      for (auto field_result : entry) {
        if (field_result.error()) return node_error(n, index, "malformed \"attrs\" entry");
        od::field& field = field_result.value_unsafe();
        // The keys PyTorch writes are taken as they are; only another key is looked at for an
        // escape ("n\u0061me" is "name").
        std::string_view key = json::raw_key(field);
        if (!json::equals(key, "name") && !json::equals(key, "value") &&
            !json::equals(key, "type") && json::unescaped_key(field, &key)) {
          return node_error(n, index, "malformed \"attrs\" entry");
        }
        // A second "name" or "value" would replace the first unchecked (the on-demand parser
        // only validates what it reads).
        if ((json::equals(key, "name") && have_name) ||
            (json::equals(key, "value") && have_value)) {
          return node_error(n, index, fmt::format("an \"attrs\" entry has \"{}\" twice", key));
        }
        if (json::equals(key, "name")) {
          CF_RETURN_IF_ERROR(read_attr_name(field.value(), n, index, &name));
          have_name = true;
        } else if (json::equals(key, "value")) {
          if (json::raw_value(field.value(), &value_raw)) {
            return node_error(n, index, "malformed \"attrs\" value");
          }
          have_value = true;
        }
      }
      if (!have_name || value_raw.empty()) continue;
      if (int attr = int_attr_of(name); attr >= 0) {
        if (value_raw == "null") continue;
        if (!json::parse_int_token(value_raw, &d.int_attr[attr])) {
          return node_error(n, index,
                            fmt::format("attr \"{}\" = {} is not an int64", name, value_raw));
        }
      } else if (sink_ != nullptr) {
        CF_RETURN_IF_ERROR(read_string_attr(name, value_raw, n, index));
      }
    }
    return Status();
  }

  Status read_string_attr(std::string_view name, std::string_view value_raw, const HostNode& n,
                          size_t index) {
    HostNodeDetail& d = detail_;
    std::string_view* out = nullptr;
    bool* not_string = nullptr;
    if (json::equals(name, "op_schema")) {
      out = &d.op_schema;
      not_string = &d.op_schema_not_string;
    } else if (json::equals(name, "pg_name")) {
      out = &d.pg_name;
      not_string = &d.pg_name_not_string;
    } else if (json::equals(name, "collective_name")) {
      out = &d.collective_name;
      not_string = &d.collective_name_not_string;
    } else {
      return Status();
    }
    if (value_raw.front() != '"') {
      *not_string = true;
      return Status();
    }
    auto s = json::unescape_literal(value_raw, t_.arena);
    if (!s) return node_error(n, index, fmt::format("attr \"{}\" holds an invalid escape", name));
    *out = *s;
    d.pg_name_from_attr |= out == &d.pg_name;
    return Status();
  }

  // An attribute's name: the literal of a name the loader reads has no escape and is taken as it
  // is (no scan of it for a backslash: seven per node); any other is unescaped.
  Status read_attr_name(od::value& v, const HostNode& n, size_t index, std::string_view* name) {
    const std::string_view literal = json::token(v);
    if (literal.size() >= 2 && is_read_attr_name(literal.substr(1, literal.size() - 2))) {
      od::raw_json_string raw;
      if (v.get_raw_json_string().get(raw)) {
        return node_error(n, index, "\"attrs[].name\" is not a string");
      }
      *name = literal.substr(1, literal.size() - 2);
      return Status();
    }
    return read_string(v, n, index, "attrs[].name", name, nullptr);
  }
  static bool is_read_attr_name(std::string_view body) {
    return int_attr_of(body) >= 0 || json::equals(body, "op_schema") ||
           json::equals(body, "pg_name") || json::equals(body, "collective_name");
  }

  // A JSON string (unescaped), as a view into the text or the trace's arena.
  Status read_string(od::value& v, const HostNode& n, size_t index, std::string_view what,
                     std::string_view* out, std::string_view* literal_out) {
    std::string_view literal;
    if (auto r = json::read_string(v, t_.arena, &literal, out); r != json::StringRead::kOk) {
      return node_error(n, index, fmt::format("\"{}\" {}", what, json::string_problem(r)));
    }
    if (literal_out) *literal_out = literal;
    return Status();
  }

  // A shard's parser: reads into `out` (its nodes and top-level fields) and `sink`, the text
  // being `text`.
  HostParser(HostTrace& out, std::string_view text, size_t window_bytes, HostNodeSink* sink)
      : t_(out),
        text_(text),
        sink_(sink),
        keep_nodes_(sink == nullptr || sink->keep_nodes()),
        window_bytes_(window_bytes) {}

  void forget_nodes() {
    t_.nodes.clear();
    t_.top_level.clear();
    t_.schema.clear();
    t_.arena.clear();
    t_.more_arenas.clear();
    if (sink_ != nullptr) sink_->restart();
    last_offset_ = 0;
  }

  HostTrace& t_;
  std::string_view text_;
  HostNodeSink* sink_ = nullptr;
  bool keep_nodes_ = true;
  HostNode scratch_;  // the node being read when the nodes are not kept
  // What the node being read gives a sink besides itself.
  HostNodeDetail detail_;
  std::vector<uint64_t> sync_deps_;
  size_t window_bytes_;
  ParseShards shards_;
};

StatusOr<HostTrace> parse_host_text(std::string path, InputText text, size_t window_bytes,
                                    HostNodeSink* sink, const ParseShards& shards = {}) {
  HostTrace trace;
  trace.path = std::move(path);
  trace.text = std::move(text);
  HostParser parser(trace, sink, window_bytes, shards);
  {
    const profile::Span span("parse host nodes");
    CF_RETURN_IF_ERROR(json::explain_truncation(parser.parse(), trace.path, trace.text));
  }
  const profile::Span span("host nodes by id");
  CF_RETURN_IF_ERROR(parser.finish());
  return trace;
}

}  // namespace

StatusOr<HostTrace> parse_host_trace(std::string path, std::string text, HostNodeSink* sink) {
  return parse_host_text(std::move(path), InputText(std::move(text)), kHostWindowBytes, sink);
}

StatusOr<HostTrace> parse_host_trace(std::string path, std::string text, size_t window_bytes,
                                     HostNodeSink* sink) {
  return parse_host_text(std::move(path), InputText(std::move(text)), window_bytes, sink);
}

StatusOr<HostTrace> load_host_trace(const std::string& path, HostNodeSink* sink,
                                    size_t window_bytes, const ParseShards& shards) {
  CF_ASSIGN_OR_RETURN(InputText text, [&] {
    const profile::Span span("read host text");
    return InputText::read(path, shards.own_workers());
  }());
  return parse_host_text(path, std::move(text), window_bytes, sink, shards);
}

StatusOr<HostTrace> parse_host_trace(std::string path, std::string text, size_t window_bytes,
                                     const ParseShards& shards, HostNodeSink* sink) {
  return parse_host_text(std::move(path), InputText(std::move(text)), window_bytes, sink, shards);
}

}  // namespace chakraflow
