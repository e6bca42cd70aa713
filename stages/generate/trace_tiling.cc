#include "stages/generate/trace_tiling.h"

#include <algorithm>
#include <charconv>
#include <deque>
#include <limits>

#include <fmt/format.h>

#include "stages/common/file_io.h"
#include "stages/common/json_util.h"
#include "stages/link/sequence_matching.h"  // is_process_annotation, is_thread_annotation

namespace chakraflow {
namespace {

namespace od = simdjson::ondemand;

constexpr std::string_view kProfilerStep = "ProfilerStep#";

// "ProfilerStep#N" exactly (N decimal, no sign): N, else -1.
int64_t profiler_step_number(std::string_view name) {
  if (!name.starts_with(kProfilerStep)) return -1;
  std::string_view digits = name.substr(kProfilerStep.size());
  if (digits.empty() || digits.size() > 15) return -1;
  int64_t n = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || n < 0) return -1;
  return n;
}

std::string_view key_of(std::string_view key_literal) {
  return key_literal.size() >= 2 ? key_literal.substr(1, key_literal.size() - 2)
                                 : std::string_view();
}

bool is_null(od::value& v) {
  od::json_type type;
  return v.type().get(type) == simdjson::SUCCESS && type == od::json_type::null;
}

// Shared by both parsers: the top level, error messages with byte offsets, record bookkeeping.
class TileParser {
 public:
  explicit TileParser(TileTemplate& t) : t_(t), text_(t.text) {}

 protected:
  const char* end() const { return text_.data() + text_.size(); }

  // The iterator cannot be asked where it is once it has failed: errors name the start of the
  // element being read (last_offset_), which is where the user should look.
  Status fail(simdjson::error_code err, std::string_view what) const {
    const char* hint = (err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT ||
                        err == simdjson::TAPE_ERROR || err == simdjson::UNCLOSED_STRING)
                           ? " (the file is truncated or malformed after this point)"
                           : "";
    return Status::errorf("{}: byte {}: {}: {}{}", t_.path, last_offset_, what,
                          simdjson::error_message(err), hint);
  }

  // Iterates the top-level object; `records_key` ("nodes" / "traceEvents") goes to
  // parse_record(value, start, index) for each element, every other key is kept raw.
  template <typename ParseRecord>
  Status parse_top_level(std::string_view what, std::string_view records_key,
                         ParseRecord&& parse_record) {
    if (text_.empty()) return Status::errorf("{}: empty file, expected {}", t_.path, what);
    // A document that ends inside a string or an object is cut short: the place to look is the
    // end of the file (simdjson's structural pass does not say where it stopped).
    auto at_end_if_cut = [this](simdjson::error_code err) {
      if (err == simdjson::UNCLOSED_STRING || err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT) {
        last_offset_ = text_.size();
      }
    };
    auto err = json::iterate_document(parser_, t_.text, &doc_, &t_.invalid_utf8_bytes);
    if (err) {
      at_end_if_cut(err);
      return fail(err, "cannot parse JSON");
    }
    od::object root;
    if ((err = doc_.get_object().get(root))) {
      at_end_if_cut(err);
      return fail(err, "top level is not a JSON object");
    }
    bool saw_records = false;
    for (auto field_result : root) {
      od::field field;
      if ((err = std::move(field_result).get(field))) return fail(err, "invalid top-level field");
      std::string_view key_literal = json::string_literal(field.key().raw(), end());
      std::string_view key = key_of(key_literal);
      if (key == records_key) {
        saw_records = true;
        t_.top_level.push_back({key_literal, {}, true});
        od::value records_value = field.value();
        const char* at = nullptr;
        if (records_value.current_location().get(at) == simdjson::SUCCESS) {
          last_offset_ = json::offset_in(text_, at);
        }
        od::array records;
        if ((err = records_value.get_array().get(records))) {
          return fail(err, fmt::format("\"{}\" is not an array", records_key));
        }
        size_t index = 0;
        for (auto element : records) {
          od::value value;
          if ((err = std::move(element).get(value))) {
            return fail(err, fmt::format("{}[{}]", records_key, index));
          }
          const char* start = nullptr;
          if ((err = value.current_location().get(start))) {
            return fail(err, fmt::format("{}[{}]", records_key, index));
          }
          last_offset_ = json::offset_in(text_, start);
          CF_RETURN_IF_ERROR(parse_record(value, start, index));
          ++index;
        }
        continue;
      }
      std::string_view raw;
      if ((err = json::raw_value(field.value(), &raw))) {
        return fail(err, fmt::format("invalid value of top-level key \"{}\"", key));
      }
      t_.top_level.push_back({key_literal, raw, false});
    }
    if (!saw_records) {
      return Status::errorf("{}: no \"{}\" array: not {}", t_.path, records_key, what);
    }
    const char* trailing = nullptr;
    if (doc_.current_location().get(trailing) == simdjson::SUCCESS) {
      return Status::errorf("{}: byte {}: unexpected content after the top-level object", t_.path,
                            json::current_offset(doc_, text_));
    }
    return Status();
  }

  // The end of the object that started at `start`, once its fields have been iterated.
  uint64_t record_end(const char* start) {
    const char* after = nullptr;
    if (doc_.current_location().get(after)) after = end();
    // current_location() points at the structural character that follows the object.
    while (after > start && after[-1] != '}') --after;
    return json::offset_in(text_, after);
  }

  void add_patch(std::string_view token, TilePatchKind kind, int64_t value) {
    t_.patches.push_back(
        {json::offset_in(text_, token.data()), static_cast<uint32_t>(token.size()), kind, value});
  }

  // A string value: its literal (with quotes) and its unescaped text. False when not a string.
  bool read_string(od::value& v, std::string_view* literal, std::string_view* text) {
    od::raw_json_string raw;
    if (v.get_raw_json_string().get(raw)) return false;
    *literal = json::string_literal(raw.raw(), end());
    auto s = json::unescape_literal(*literal, arena_);
    if (!s) return false;
    *text = *s;
    return true;
  }

  void note_step(int64_t n) {
    if (n < 0) return;
    t_.min_step = t_.min_step < 0 ? n : std::min(t_.min_step, n);
    t_.max_step = std::max(t_.max_step, n);
  }

  TileTemplate& t_;
  std::string_view text_;
  od::parser parser_;
  od::document doc_;  // iterates text_ with parser_
  std::deque<std::string> arena_;
  uint64_t last_offset_ = 0;
};

class HostTileParser : public TileParser {
 public:
  using TileParser::TileParser;

  Status parse() {
    CF_RETURN_IF_ERROR(parse_top_level("a host execution trace", "nodes",
                                       [this](od::value& v, const char* start, size_t index) {
                                         return parse_node(v, start, index);
                                       }));
    CF_RETURN_IF_ERROR(check_unique_ids());
    drop_references_to_kept_nodes();
    return Status();
  }

 private:
  struct NodeIds {
    uint64_t id = 0;
    uint64_t byte_offset = 0;
  };

  Status node_error(uint64_t offset, size_t index, uint64_t id, std::string_view what) const {
    return Status::errorf("{}: byte {}: node #{}{}: {}", t_.path, offset, index,
                          id ? fmt::format(" (id {})", id) : std::string(), what);
  }

  // A node-id or rf_id value: patched when it is a positive integer. `required` ids must be.
  Status read_id(od::value& v, std::string_view key, TilePatchKind kind, bool required,
                 uint64_t offset, size_t index, uint64_t node_id, uint64_t* out) {
    *out = 0;
    if (is_null(v)) {
      if (required) return node_error(offset, index, node_id, fmt::format("\"{}\" is null", key));
      return Status();
    }
    std::string_view token = json::token(v);
    uint64_t u = 0;
    if (!json::get_uint64(v, &u)) {
      int64_t i = 0;
      // Negative values mean "none" in some traces (the loader reads them as 0): keep them.
      if (!required && json::get_int64(v, &i) && i < 0) return Status();
      return node_error(offset, index, node_id,
                        fmt::format("\"{}\" is not a non-negative integer", key));
    }
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return node_error(offset, index, node_id, fmt::format("\"{}\" is beyond int64", key));
    }
    *out = u;
    if (u == 0 && !required) return Status();  // 0 = none
    add_patch(token, kind, static_cast<int64_t>(u));
    if (kind == TilePatchKind::kNodeId) t_.max_node_id = std::max(t_.max_node_id, u);
    if (kind == TilePatchKind::kRfId) t_.max_rf_id = std::max(t_.max_rf_id, u);
    return Status();
  }

  Status parse_node(od::value& value, const char* start, size_t index) {
    const uint64_t offset = json::offset_in(text_, start);
    od::object obj;
    if (value.get_object().get(obj)) {
      return node_error(offset, index, 0, "not a JSON object");
    }
    TileRecord record;
    record.begin = offset;
    record.first_patch = static_cast<uint32_t>(t_.patches.size());
    uint64_t id = 0;
    uint64_t parent = 0;
    bool has_id = false;
    bool has_parent = false;
    std::string_view name;
    for (auto field_result : obj) {
      od::field field;
      if (auto err = std::move(field_result).get(field)) {
        return fail(err, fmt::format("node #{}", index));
      }
      std::string_view key = key_of(json::string_literal(field.key().raw(), end()));
      od::value v = field.value();
      uint64_t ignored = 0;
      if (key == "id") {
        CF_RETURN_IF_ERROR(read_id(v, key, TilePatchKind::kNodeId, true, offset, index, id, &id));
        has_id = true;
      } else if (key == "parent" || key == "ctrl_deps") {
        if (is_null(v)) continue;
        CF_RETURN_IF_ERROR(
            read_id(v, key, TilePatchKind::kNodeId, false, offset, index, id, &parent));
        has_parent = true;
      } else if (key == "fw_parent") {
        // The id of the forward thread's innermost op when this op started (the observer's
        // op_stack top), i.e. a node id (checked on the DLRM and ResNet pairs): offset like one.
        CF_RETURN_IF_ERROR(
            read_id(v, key, TilePatchKind::kNodeId, false, offset, index, id, &ignored));
      } else if (key == "rf_id") {
        CF_RETURN_IF_ERROR(
            read_id(v, key, TilePatchKind::kRfId, false, offset, index, id, &ignored));
      } else if (key == "name") {
        std::string_view literal;
        if (!read_string(v, &literal, &name)) {
          return node_error(offset, index, id, "\"name\" is not a string");
        }
        int64_t step = profiler_step_number(name);
        if (step >= 0) {
          add_patch(literal, TilePatchKind::kStepName, step);
          note_step(step);
        }
      } else if (key == "attrs") {
        CF_RETURN_IF_ERROR(parse_attrs(v, offset, index, id));
      }
      // Every other field is copied verbatim.
    }
    if (!has_id) return node_error(offset, index, 0, "missing required field \"id\"");
    record.end = record_end(start);
    record.patch_count = static_cast<uint32_t>(t_.patches.size()) - record.first_patch;
    // Kept once: the process root (named so, or its own parent) and the thread roots. One root
    // per thread, whatever the number of iterations, as in a real multi-iteration trace: the
    // copies' top-level ops stay children of the original root. Copying the roots would give a
    // tid several roots, and the linker and the converter find a thread's root by tid (the first
    // one wins), so later copies would hang off a root of another copy anyway. Every other node,
    // "## process_group:init ##" included, is an op and is copied (redefining a process group
    // with the same ranks is harmless), so that each copy links exactly like the original.
    record.once =
        is_process_annotation(name) || (has_parent && parent == id) || is_thread_annotation(name);
    if (record.once) {
      kept_ids_.push_back(id);
      ++t_.kept_once;
    }
    ids_.push_back({id, offset});
    t_.records.push_back(record);
    return Status();
  }

  // attrs: [{"name": ..., "type": ..., "value": ...}, ...]: rf_id and fw_parent values.
  Status parse_attrs(od::value& v, uint64_t offset, size_t index, uint64_t id) {
    od::array attrs;
    if (v.get_array().get(attrs)) return node_error(offset, index, id, "\"attrs\" is not an array");
    for (auto attr_result : attrs) {
      od::object attr;
      if (attr_result.get_object().get(attr)) {
        return node_error(offset, index, id, "an entry of \"attrs\" is not an object");
      }
      std::string_view attr_name;
      // PyTorch writes "name" before "value"; keep the value's token in case it comes first.
      std::string_view value_token;
      uint64_t value = 0;
      bool value_is_id = false;
      for (auto field_result : attr) {
        od::field field;
        if (std::move(field_result).get(field)) {
          return node_error(offset, index, id, "invalid \"attrs\" entry");
        }
        std::string_view key = key_of(json::string_literal(field.key().raw(), end()));
        od::value fv = field.value();
        if (key == "name") {
          std::string_view literal;
          if (!read_string(fv, &literal, &attr_name)) {
            return node_error(offset, index, id, "\"attrs[].name\" is not a string");
          }
        } else if (key == "value") {
          if (is_null(fv)) continue;
          value_token = json::token(fv);
          value_is_id = json::get_uint64(fv, &value);
        }
      }
      if (!value_is_id || value == 0) continue;
      if (attr_name != "rf_id" && attr_name != "fw_parent") continue;
      if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return node_error(offset, index, id, fmt::format("attr \"{}\" is beyond int64", attr_name));
      }
      if (attr_name == "rf_id") {
        add_patch(value_token, TilePatchKind::kRfId, static_cast<int64_t>(value));
        t_.max_rf_id = std::max(t_.max_rf_id, value);
      } else {
        add_patch(value_token, TilePatchKind::kNodeId, static_cast<int64_t>(value));
        t_.max_node_id = std::max(t_.max_node_id, value);
      }
    }
    return Status();
  }

  Status check_unique_ids() {
    std::stable_sort(ids_.begin(), ids_.end(),
                     [](const NodeIds& a, const NodeIds& b) { return a.id < b.id; });
    for (size_t i = 1; i < ids_.size(); ++i) {
      if (ids_[i].id == ids_[i - 1].id) {
        return Status::errorf("{}: duplicate node id {} (nodes at byte {} and byte {})", t_.path,
                              ids_[i].id, ids_[i - 1].byte_offset, ids_[i].byte_offset);
      }
    }
    return Status();
  }

  // A reference to a node kept once points at that one node in every copy: not rewritten.
  void drop_references_to_kept_nodes() {
    std::sort(kept_ids_.begin(), kept_ids_.end());
    std::vector<TilePatch>& patches = t_.patches;
    uint32_t out = 0;
    for (TileRecord& r : t_.records) {
      uint32_t first = out;
      for (uint32_t i = r.first_patch; i < r.first_patch + r.patch_count; ++i) {
        const TilePatch& p = patches[i];
        if (p.kind == TilePatchKind::kNodeId &&
            std::binary_search(kept_ids_.begin(), kept_ids_.end(),
                               static_cast<uint64_t>(p.value))) {
          continue;
        }
        patches[out++] = p;
      }
      r.first_patch = first;
      r.patch_count = out - first;
    }
    patches.resize(out);
  }

  std::vector<NodeIds> ids_;
  std::vector<uint64_t> kept_ids_;
};

class DeviceTileParser : public TileParser {
 public:
  using TileParser::TileParser;

  Status parse() {
    return parse_top_level("a Kineto device trace", "traceEvents",
                           [this](od::value& v, const char* start, size_t index) {
                             return parse_event(v, start, index);
                           });
  }

 private:
  Status event_error(uint64_t offset, size_t index, std::string_view what) const {
    return Status::errorf("{}: byte {}: traceEvents[{}]: {}", t_.path, offset, index, what);
  }

  // An id that is rewritten when it is a positive integer (anything else is kept as it is).
  static bool positive_id(od::value& v, std::string_view* token, int64_t* out) {
    od::json_type type;
    if (v.type().get(type) || type != od::json_type::number) return false;
    *token = json::token(v);
    return json::get_int64(v, out) && *out > 0;
  }

  Status read_time(od::value& v, uint64_t offset, size_t index, std::string_view what,
                   std::string_view* token, TimeNs* ns, bool* quoted) {
    od::json_type type = od::json_type::null;
    bool fractional = false;
    *quoted = false;
    if (v.type().get(type) == simdjson::SUCCESS && type == od::json_type::string) {
      // Some exporters quote numbers; the copies keep the quotes.
      std::string_view literal, s;
      if (read_string(v, &literal, &s) && json::parse_micros_as_ns(s, ns, &fractional)) {
        *token = literal;
        *quoted = true;
        return Status();
      }
      return event_error(offset, index, fmt::format("\"{}\" is not a number", what));
    }
    if (type != od::json_type::number) {
      return event_error(offset, index, fmt::format("\"{}\" is not a number", what));
    }
    *token = json::token(v);
    if (!json::parse_micros_as_ns(*token, ns, &fractional)) {
      return event_error(offset, index,
                         fmt::format("\"{}\" ({}) is not a finite number", what, *token));
    }
    return Status();
  }

  Status parse_event(od::value& value, const char* start, size_t index) {
    const uint64_t offset = json::offset_in(text_, start);
    od::object obj;
    if (value.get_object().get(obj)) return event_error(offset, index, "not a JSON object");
    // Collected here and sorted: "id" may precede the "ph" that says whether it is a flow id.
    event_patches_.clear();
    EventTimes times;
    char ph = 0;
    std::string_view id_token;
    int64_t flow_id = 0;
    for (auto field_result : obj) {
      od::field field;
      if (std::move(field_result).get(field)) return event_error(offset, index, "invalid field");
      std::string_view key = key_of(json::string_literal(field.key().raw(), end()));
      od::value v = field.value();
      if (key == "ph") {
        std::string_view literal, s;
        if (!read_string(v, &literal, &s)) {
          return event_error(offset, index, "\"ph\" is not a string");
        }
        ph = s.empty() ? 0 : s[0];
      } else if (key == "ts") {
        std::string_view token;
        bool quoted = false;
        CF_RETURN_IF_ERROR(read_time(v, offset, index, "ts", &token, &times.ts, &quoted));
        patch(token, quoted ? TilePatchKind::kTsQuoted : TilePatchKind::kTs, times.ts);
        times.has_ts = true;
      } else if (key == "dur") {
        if (is_null(v)) continue;
        std::string_view token;
        bool quoted = false;
        CF_RETURN_IF_ERROR(read_time(v, offset, index, "dur", &token, &times.dur, &quoted));
      } else if (key == "name") {
        CF_RETURN_IF_ERROR(read_name(v, offset, index));
      } else if (key == "id") {
        if (!positive_id(v, &id_token, &flow_id)) id_token = {};
      } else if (key == "args") {
        CF_RETURN_IF_ERROR(read_args(v, offset, index));
      }
    }
    // Flow events ("s" start, "t" step, "f" finish) carry the correlation id of their launch.
    if (!id_token.empty() && (ph == 's' || ph == 'f' || ph == 't')) {
      patch(id_token, TilePatchKind::kCorrelation, flow_id);
      t_.max_correlation = std::max(t_.max_correlation, static_cast<uint64_t>(flow_id));
    }
    return add_record(start, offset, index, ph, times);
  }

  struct EventTimes {
    bool has_ts = false;
    TimeNs ts = 0;
    TimeNs dur = 0;
  };

  // An id (or time) of the event to rewrite in each copy, at `token`.
  void patch(std::string_view token, TilePatchKind kind, int64_t v) {
    event_patches_.push_back(
        {json::offset_in(text_, token.data()), static_cast<uint32_t>(token.size()), kind, v});
  }

  // "name": a ProfilerStep#N annotation's number is rewritten in each copy.
  Status read_name(od::value& v, uint64_t offset, size_t index) {
    od::json_type type;
    if (v.type().get(type) || type != od::json_type::string) return Status();
    std::string_view literal, name;
    if (!read_string(v, &literal, &name)) {
      return event_error(offset, index, "\"name\" holds an invalid escape");
    }
    int64_t step = profiler_step_number(name);
    if (step >= 0) {
      patch(literal, TilePatchKind::kStepName, step);
      note_step(step);
    }
    return Status();
  }

  // "args": the linking ids (correlation, External id, Record function id), rewritten in each
  // copy.
  Status read_args(od::value& v, uint64_t offset, size_t index) {
    od::object args;
    if (v.get_object().get(args)) return Status();
    for (auto arg_result : args) {
      od::field arg;
      if (std::move(arg_result).get(arg)) return event_error(offset, index, "invalid \"args\"");
      std::string_view arg_key = key_of(json::string_literal(arg.key().raw(), end()));
      od::value av = arg.value();
      std::string_view token;
      int64_t id = 0;
      if (arg_key == "correlation") {
        if (!positive_id(av, &token, &id)) continue;
        patch(token, TilePatchKind::kCorrelation, id);
        t_.max_correlation = std::max(t_.max_correlation, static_cast<uint64_t>(id));
      } else if (arg_key == "External id") {
        if (!positive_id(av, &token, &id)) continue;
        patch(token, TilePatchKind::kExternalId, id);
        t_.max_external_id = std::max(t_.max_external_id, static_cast<uint64_t>(id));
      } else if (arg_key == "Record function id") {
        if (!positive_id(av, &token, &id)) continue;
        patch(token, TilePatchKind::kRfId, id);
        t_.max_rf_id = std::max(t_.max_rf_id, static_cast<uint64_t>(id));
      }
    }
    return Status();
  }

  // The event's record, with its patches (sorted); its times extend the trace's.
  Status add_record(const char* start, uint64_t offset, size_t index, char ph,
                    const EventTimes& times) {
    const TimeNs ts = times.ts, dur = times.dur;
    constexpr TimeNs kTimeLimit = TimeNs{1} << 62;
    const auto in_range = [](TimeNs t) { return t > -kTimeLimit && t < kTimeLimit; };
    if (!in_range(ts) || !in_range(dur) || !in_range(ts + dur)) {
      return event_error(offset, index,
                         "\"ts\", \"dur\" or their sum is beyond +-2^62 ns (146 years)");
    }
    TileRecord record;
    record.begin = offset;
    record.first_patch = static_cast<uint32_t>(t_.patches.size());
    record.end = record_end(start);
    // Metadata (process / thread names) and events without a time describe the trace, not an
    // iteration: once.
    record.once = ph == 'M' || !times.has_ts;
    if (record.once) {
      ++t_.kept_once;
    } else {
      TimeNs end_time = ts + std::max<TimeNs>(dur, 0);
      if (!t_.has_times) {
        t_.first_ts = ts;
        t_.last_end = end_time;
        t_.has_times = true;
      }
      t_.first_ts = std::min(t_.first_ts, ts);
      t_.last_end = std::max(t_.last_end, end_time);
    }
    std::vector<TilePatch>& patches = event_patches_;
    std::sort(patches.begin(), patches.end(),
              [](const TilePatch& a, const TilePatch& b) { return a.begin < b.begin; });
    t_.patches.insert(t_.patches.end(), patches.begin(), patches.end());
    record.patch_count = static_cast<uint32_t>(patches.size());
    t_.records.push_back(record);
    return Status();
  }

  std::vector<TilePatch> event_patches_;
};

StatusOr<TileTemplate> make_template(std::string path, std::string text) {
  TileTemplate t;
  t.path = std::move(path);
  t.text = std::move(text);
  if (t.text.capacity() < t.text.size() + kInputPadding) {
    t.text.reserve(t.text.size() + kInputPadding);
  }
  return t;
}

// max + m * span fits in int64.
bool fits(uint64_t max, uint64_t m, uint64_t span) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (max > kMax) return false;
  return m == 0 || span <= (kMax - max) / m;
}

// Buffers output and hands it to the sink in chunks.
class ChunkedOutput {
 public:
  explicit ChunkedOutput(const TileSink& sink) : sink_(sink) { buffer_.reserve(kChunk + 4096); }
  std::string& buffer() { return buffer_; }
  void append(std::string_view s) {
    buffer_.append(s);
    if (buffer_.size() >= kChunk) flush();
  }
  void flush() {
    if (!buffer_.empty()) sink_(buffer_);
    buffer_.clear();
  }

 private:
  static constexpr size_t kChunk = 1 << 20;
  const TileSink& sink_;
  std::string buffer_;
};

void append_replacement(std::string& out, const TilePatch& p, uint32_t k, const TilePlan& plan) {
  const uint64_t v = static_cast<uint64_t>(p.value);
  switch (p.kind) {
    case TilePatchKind::kNodeId:
      json::append_uint(out, v + k * plan.id_span);
      break;
    case TilePatchKind::kRfId:
      json::append_uint(out, v + k * plan.rf_span);
      break;
    case TilePatchKind::kCorrelation:
      json::append_uint(out, v + k * plan.corr_span);
      break;
    case TilePatchKind::kExternalId:
      json::append_uint(out, v + k * plan.ext_span);
      break;
    case TilePatchKind::kTs:
      json::append_micros(out, p.value + static_cast<TimeNs>(k) * plan.period);
      break;
    case TilePatchKind::kTsQuoted:
      out.push_back('"');
      json::append_micros(out, p.value + static_cast<TimeNs>(k) * plan.period);
      out.push_back('"');
      break;
    case TilePatchKind::kStepName:
      out.append("\"ProfilerStep#");
      json::append_int(out, p.value + static_cast<int64_t>(k) * plan.step_span);
      out.push_back('"');
      break;
  }
}

// Copy k of a record: copy 0 is the original text; later copies have their patches applied.
void append_record(ChunkedOutput& out, const TileTemplate& t, const TileRecord& r, uint32_t k,
                   const TilePlan& plan) {
  std::string_view text = t.text;
  if (k == 0 || r.patch_count == 0) {
    out.append(text.substr(r.begin, r.end - r.begin));
    return;
  }
  std::string& buffer = out.buffer();
  uint64_t pos = r.begin;
  for (uint32_t i = r.first_patch; i < r.first_patch + r.patch_count; ++i) {
    const TilePatch& p = t.patches[i];
    buffer.append(text.substr(pos, p.begin - pos));
    append_replacement(buffer, p, k, plan);
    pos = p.begin + p.length;
  }
  out.append(text.substr(pos, r.end - pos));
}

// The records array: copy 0 in file order (records kept once in place, except those after the
// last repeated record, e.g. the host ET's process root, which stay last), the later copies, then
// those trailing records.
uint64_t append_records(ChunkedOutput& out, const TileTemplate& t, const TilePlan& plan) {
  size_t trailing = t.records.size();
  while (trailing > 0 && t.records[trailing - 1].once) --trailing;
  uint64_t written = 0;
  auto emit = [&](const TileRecord& r, uint32_t k) {
    out.append(written == 0 ? "\n" : ",\n");
    append_record(out, t, r, k, plan);
    ++written;
  };
  out.append("[");
  for (size_t i = 0; i < trailing; ++i) emit(t.records[i], 0);
  for (uint32_t k = 1; k < plan.times; ++k) {
    for (size_t i = 0; i < trailing; ++i) {
      if (!t.records[i].once) emit(t.records[i], k);
    }
  }
  for (size_t i = trailing; i < t.records.size(); ++i) emit(t.records[i], 0);
  out.append(written == 0 ? "]" : "\n]");
  return written;
}

// The top-level object with the records array in its place. `rewrite` may replace a raw value.
template <typename Rewrite>
uint64_t write_tiled(const TileTemplate& t, const TilePlan& plan, const TileSink& sink,
                     Rewrite&& rewrite) {
  ChunkedOutput out(sink);
  uint64_t written = 0;
  out.append("{");
  for (size_t i = 0; i < t.top_level.size(); ++i) {
    const TileTopField& f = t.top_level[i];
    if (i > 0) out.append(", ");
    out.append(f.key_raw);
    out.append(": ");
    if (f.is_records) {
      written += append_records(out, t, plan);
    } else if (!rewrite(out.buffer(), key_of(f.key_raw), f.value_raw)) {
      out.append(f.value_raw);
    }
  }
  out.append("}\n");
  out.flush();
  return written;
}

}  // namespace

StatusOr<TileTemplate> parse_tile_host(std::string path, std::string text) {
  CF_ASSIGN_OR_RETURN(TileTemplate t, make_template(std::move(path), std::move(text)));
  CF_RETURN_IF_ERROR(HostTileParser(t).parse());
  return t;
}

StatusOr<TileTemplate> parse_tile_device(std::string path, std::string text) {
  CF_ASSIGN_OR_RETURN(TileTemplate t, make_template(std::move(path), std::move(text)));
  CF_RETURN_IF_ERROR(DeviceTileParser(t).parse());
  return t;
}

StatusOr<TilePlan> plan_tiling(const TileTemplate& host, const TileTemplate& device, uint32_t times,
                               TimeNs period) {
  if (times == 0) return Status::error("tile: the number of copies must be at least 1");
  TilePlan plan;
  plan.times = times;
  plan.id_span = host.max_node_id + 1;
  plan.rf_span = std::max(host.max_rf_id, device.max_rf_id) + 1;
  plan.corr_span = device.max_correlation + 1;
  plan.ext_span = device.max_external_id + 1;
  int64_t min_step = -1, max_step = -1;
  for (const TileTemplate* t : {&host, &device}) {
    if (t->min_step < 0) continue;
    min_step = min_step < 0 ? t->min_step : std::min(min_step, t->min_step);
    max_step = std::max(max_step, t->max_step);
  }
  plan.step_span = min_step < 0 ? 0 : max_step - min_step + 1;
  // One iteration lasts from the first event's start to the last event's end; the next copy
  // starts after a gap of 1% of that (at least 1 us), rounded up to whole microseconds so that
  // integer timestamps stay integers.
  constexpr TimeNs kUs = 1000;
  constexpr TimeNs kTimeLimit = TimeNs{1} << 62;
  const TimeNs length = device.has_times ? device.last_end - device.first_ts : 0;
  plan.length = length;
  if (period < 0 || (period > 0 && period < length)) {
    return Status::errorf(
        "{}: tile: a period of {} us is shorter than the trace ({} us from the first event's start "
        "to the last event's end): the copies would overlap",
        device.path, period / kUs, (length + kUs - 1) / kUs);
  }
  if (period > kTimeLimit) {
    return Status::errorf("{}: tile: a period of {} us is beyond 2^62 ns", device.path,
                          period / kUs);
  }
  const TimeNs with_gap = period > 0 ? period : length + std::max<TimeNs>(length / 100, kUs);
  plan.period = (with_gap + kUs - 1) / kUs * kUs;
  plan.period_ms = (plan.period + 999'999) / 1'000'000;

  const uint64_t m = times - 1;
  struct Check {
    const char* what;
    const std::string* path;
    uint64_t max, span;
  };
  for (const Check& c :
       {Check{"node ids", &host.path, host.max_node_id, plan.id_span},
        Check{"rf_ids", &host.path, plan.rf_span - 1, plan.rf_span},
        Check{"correlation ids", &device.path, device.max_correlation, plan.corr_span},
        Check{"External ids", &device.path, device.max_external_id, plan.ext_span},
        Check{"ProfilerStep numbers", &device.path,
              static_cast<uint64_t>(std::max<int64_t>(max_step, 0)),
              static_cast<uint64_t>(plan.step_span)}}) {
    if (!fits(c.max, m, c.span)) {
      return Status::errorf("{}: tile: {} copies take the {} beyond int64 (largest {}, span {})",
                            *c.path, times, c.what, c.max, c.span);
    }
  }
  if (device.has_times) {
    // last_end + m * period < 2^62 (last_end is above -2^62, the parser checked).
    const uint64_t room = static_cast<uint64_t>(kTimeLimit - 1 - device.last_end);
    if (m != 0 && static_cast<uint64_t>(plan.period) > room / m) {
      return Status::errorf(
          "{}: tile: {} copies of a {} us iteration end beyond 2^62 ns (146 years)", device.path,
          times, plan.period / kUs);
    }
  }
  return plan;
}

uint64_t write_tiled_host(const TileTemplate& host, const TilePlan& plan, const TileSink& sink) {
  return write_tiled(host, plan, sink,
                     [&plan](std::string& out, std::string_view key, std::string_view raw) {
                       if (key != "finish_ts") return false;
                       int64_t v = 0;
                       auto [ptr, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), v);
                       if (ec != std::errc() || ptr != raw.data() + raw.size()) return false;
                       // (times - 1) * period_ms < 2^62 / 10^6 (plan_tiling checked the period and
                       // the times).
                       const int64_t shift = static_cast<int64_t>(plan.times - 1) * plan.period_ms;
                       if (v > std::numeric_limits<int64_t>::max() - shift) return false;
                       json::append_int(out, v + shift);
                       return true;
                     });
}

uint64_t write_tiled_device(const TileTemplate& device, const TilePlan& plan,
                            const TileSink& sink) {
  return write_tiled(device, plan, sink,
                     [](std::string&, std::string_view, std::string_view) { return false; });
}

StatusOr<TileSummary> tile_trace_pair(std::string host_path, std::string host_text,
                                      std::string device_path, std::string device_text,
                                      uint32_t times, TimeNs period, const TileSink& host_sink,
                                      const TileSink& device_sink) {
  CF_ASSIGN_OR_RETURN(TileTemplate host,
                      parse_tile_host(std::move(host_path), std::move(host_text)));
  CF_ASSIGN_OR_RETURN(TileTemplate device,
                      parse_tile_device(std::move(device_path), std::move(device_text)));
  CF_ASSIGN_OR_RETURN(TilePlan plan, plan_tiling(host, device, times, period));
  TileSummary s;
  s.plan = plan;
  s.host_nodes_in = host.records.size();
  s.host_nodes_kept_once = host.kept_once;
  s.device_events_in = device.records.size();
  s.device_events_kept_once = device.kept_once;
  s.invalid_utf8_bytes = host.invalid_utf8_bytes + device.invalid_utf8_bytes;
  s.host_nodes_out = write_tiled_host(host, plan, host_sink);
  s.device_events_out = write_tiled_device(device, plan, device_sink);
  return s;
}

std::string format_tile_summary(const TileSummary& s) {
  const TilePlan& p = s.plan;
  std::string out = fmt::format(
      "tile: {} copies: host nodes {} -> {} ({} kept once), device events {} -> {} ({} kept "
      "once); iteration {} us, period {} us; spans: ids {}, rf_ids {}, correlation {}, External id "
      "{}",
      p.times, s.host_nodes_in, s.host_nodes_out, s.host_nodes_kept_once, s.device_events_in,
      s.device_events_out, s.device_events_kept_once, (p.length + 999) / 1000, p.period / 1000,
      p.id_span, p.rf_span, p.corr_span, p.ext_span);
  if (p.step_span > 0) out += fmt::format(", ProfilerStep {}", p.step_span);
  if (s.invalid_utf8_bytes > 0) {
    out += fmt::format("; {} invalid UTF-8 bytes replaced by '?'", s.invalid_utf8_bytes);
  }
  return out;
}

}  // namespace chakraflow
