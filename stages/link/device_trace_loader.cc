#include "stages/link/device_trace_loader.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <unordered_map>

#include "stages/common/file_io.h"
#include "stages/common/json_util.h"
#include "stages/common/ordered_batches.h"
#include "stages/common/prefault.h"
#include "stages/common/profile.h"
#include "stages/common/radix_sort.h"
#include "stages/link/loader_shards.h"

namespace chakraflow {
namespace {

// Events classified, or entries of their lists copied, per range on the workers.
constexpr uint32_t kClassifyRange = 65536;

// cpu_ops_by_thread and thread_begin from cpu_ops (in (ts, file order)). The ops' threads are read
// first, in ranges on `run` (the ops' events lie all over the trace, ordered by time), then given
// slots in the order the threads first appear.
void group_cpu_ops_by_thread(DeviceTrace& trace, const OrderedBatches& run) {
  const size_t n = trace.cpu_ops.size();
  std::vector<int64_t> tids(n);
  for_each_range(run, n, run.range_size(kClassifyRange), [&](size_t, size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) tids[k] = trace[trace.cpu_ops[k]].tid;
  });
  std::vector<uint32_t> thread_of(n);
  std::vector<uint32_t> count;
  std::unordered_map<int64_t, uint32_t> slot;
  // Ops come in runs of one thread: the last thread's slot saves most lookups.
  int64_t last_tid = 0;
  uint32_t last_slot = UINT32_MAX;
  for (size_t k = 0; k < n; ++k) {
    const int64_t tid = tids[k];
    if (last_slot == UINT32_MAX || tid != last_tid) {
      auto [it, inserted] = slot.try_emplace(tid, static_cast<uint32_t>(count.size()));
      if (inserted) count.push_back(0);
      last_tid = tid;
      last_slot = it->second;
    }
    thread_of[k] = last_slot;
    ++count[last_slot];
  }
  trace.thread_begin.assign(count.size() + 1, 0);
  for (size_t k = 0; k < count.size(); ++k)
    trace.thread_begin[k + 1] = trace.thread_begin[k] + count[k];
  trace.cpu_ops_by_thread.resize(trace.cpu_ops.size());
  std::vector<uint32_t> fill(trace.thread_begin.begin(), trace.thread_begin.end() - 1);
  for (size_t k = 0; k < trace.cpu_ops.size(); ++k) {
    trace.cpu_ops_by_thread[fill[thread_of[k]]++] = trace.cpu_ops[k];
  }
}

}  // namespace

namespace {

// The events' indices by role, of the events [begin, end), in file order.
struct RoleLists {
  std::vector<DeviceEventIdx> cpu_ops, launches, gpu_ops, other_with_args;
  bool has_rf_ids = false;
};

void classify_events(const std::vector<DeviceEvent>& ev, uint32_t begin, uint32_t end,
                     RoleLists& out) {
  for (uint32_t i = begin; i < end; ++i) {
    const DeviceEvent& e = ev[i];
    switch (e.cat) {
      case DeviceCategory::kCpuOp:
      case DeviceCategory::kUserAnnotation:
        if (!e.has(kProfilerStep)) {
          out.cpu_ops.push_back({i});
          if (e.has(kHasRfId)) out.has_rf_ids = true;
        }
        break;
      case DeviceCategory::kCudaRuntime:
      case DeviceCategory::kCudaDriver:
        out.launches.push_back({i});
        break;
      case DeviceCategory::kKernel:
      case DeviceCategory::kGpuMemcpy:
      case DeviceCategory::kGpuMemset:
        out.gpu_ops.push_back({i});
        break;
      case DeviceCategory::kOther:
        if (!e.args.empty() && e.has(kHasCorrelation)) out.other_with_args.push_back({i});
        break;
      default:
        break;
    }
  }
}

// `list` sorted by (ts, file order): the list is in file order and the sort by ts is stable. The
// keys are copied out of the events, so that the sort does not wander over them; given
// `workers`, in ranges on them, and sorted on them.
void sort_by_ts(const std::vector<DeviceEvent>& ev, std::vector<DeviceEventIdx>& list,
                const OrderedBatches* workers) {
  const OrderedBatches& run = batches_or_in_turn(workers);
  const size_t n = list.size();
  std::vector<std::pair<TimeNs, uint32_t>> keys(n);
  const size_t per_range = run.range_size(kClassifyRange);
  for_each_range(run, n, per_range, [&](size_t, size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) keys[k] = {ev[list[k].value].ts, list[k].value};
  });
  stable_radix_sort(
      keys, [](const auto& k) { return k.first; }, workers);
  for_each_range(run, n, per_range, [&](size_t, size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) list[k] = DeviceEventIdx{keys[k].second};
  });
}

}  // namespace

void build_device_indices(DeviceTrace& trace, const OrderedBatches* workers) {
  const OrderedBatches& run = batches_or_in_turn(workers);
  const auto& ev = trace.events;
  const auto n = static_cast<uint32_t>(ev.size());
  const size_t per_range = run.range_size(kClassifyRange);
  const size_t ranges = range_count(n, per_range);
  std::vector<RoleLists> parts(ranges);
  for_each_range(run, n, per_range, [&](size_t r, size_t begin, size_t end) {
    classify_events(ev, static_cast<uint32_t>(begin), static_cast<uint32_t>(end), parts[r]);
  });
  // The ranges' lists joined in order: each list in file order.
  RoleLists all = std::move(parts[0]);
  for (size_t r = 1; r < ranges; ++r) {
    RoleLists& p = parts[r];
    all.cpu_ops.insert(all.cpu_ops.end(), p.cpu_ops.begin(), p.cpu_ops.end());
    all.launches.insert(all.launches.end(), p.launches.begin(), p.launches.end());
    all.gpu_ops.insert(all.gpu_ops.end(), p.gpu_ops.begin(), p.gpu_ops.end());
    all.other_with_args.insert(all.other_with_args.end(), p.other_with_args.begin(),
                               p.other_with_args.end());
    all.has_rf_ids |= p.has_rf_ids;
  }
  trace.cpu_ops = std::move(all.cpu_ops);
  trace.launches = std::move(all.launches);
  trace.gpu_ops = std::move(all.gpu_ops);
  trace.other_with_args = std::move(all.other_with_args);
  trace.has_rf_ids = all.has_rf_ids;
  // The three sorts side by side, the grouping by thread after its sort; each on the workers too
  // when the trace was read in shards (the rank has workers of its own, not only a share of a
  // batch's).
  const OrderedBatches* sort_workers = trace.parse_shards > 1 ? workers : nullptr;
  run.for_each(3, [&](size_t task) {
    if (task == 0) {
      sort_by_ts(ev, trace.cpu_ops, sort_workers);
      group_cpu_ops_by_thread(trace, batches_or_in_turn(sort_workers));
    } else {
      sort_by_ts(ev, task == 1 ? trace.launches : trace.gpu_ops, sort_workers);
    }
  });
}

namespace {

namespace od = simdjson::ondemand;

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Kineto writes some ids as strings ("tid": "stream 7", pid "Spans"); map those to a stable
// integer.
int64_t id_from_text(std::string_view s) {
  int64_t v = 0;
  bool digits = !s.empty();
  for (char c : s) {
    if (c < '0' || c > '9') {
      digits = false;
      break;
    }
    v = v * 10 + (c - '0');
    if (v > (int64_t{1} << 60)) {
      digits = false;
      break;
    }
  }
  if (digits) return v;
  uint64_t h = 1469598103934665603ull;  // FNV-1a, negative so it cannot collide with real ids
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return -static_cast<int64_t>(h >> 2) - 1;
}

// The key of the events array, as a JSON string literal (keys are compared with their quotes).
constexpr std::string_view kEventsKey = "\"traceEvents\"";

class DeviceParser {
 public:
  DeviceParser(DeviceTrace& t, size_t window_bytes, ParseShards shards = {})
      : t_(t), text_(t.text), window_bytes_(window_bytes), shards_(shards) {}

  Status parse() {
    if (text_.empty())
      return Status::errorf("{}: empty file, expected a Kineto device trace", t_.path);
    // Real traces take 250-350 bytes per event, generated ones ~190: reserving for 128 avoids
    // growing by copying (the untouched tail of the reservation costs no memory).
    t_.events.reserve(t_.text.size() / 128);
    if (window_bytes_ > 0 && parse_in_shards()) {
      build_indices();
      return Status();
    }
    od::parser parser;
    if (const size_t window = json::resolve_window_bytes(window_bytes_, text_.size());
        window > 0 && text_.size() > 2 * window) {
      EventWindows windows(*this);
      t_.parse_windows =
          json::read_array_in_windows(parser, t_.text.mutable_data(), t_.text.size(),
                                      t_.text.capacity(), kEventsKey, window, windows);
      if (t_.parse_windows > 0) {
        build_indices();
        return Status();
      }
      // Not a text the windows can read, or a bad one: the whole document's parse reports it.
      forget_events();
    }
    CF_RETURN_IF_ERROR(parse_document(parser));
    build_indices();
    return Status();
  }

 private:
  // A shard's parser: reads into `out` (its events, names, counts), the text being `text`; its
  // data problems wait for the shards before it to be counted (their element numbers).
  DeviceParser(DeviceTrace& out, std::string_view text, size_t window_bytes)
      : t_(out), text_(text), window_bytes_(window_bytes), defer_problems_(true) {}

  void forget_events() {
    last_offset_ = 0;
    t_.events.clear();
    t_.pg_names.clear();
    t_.decoded_names.clear();
    t_.load_stats = DataProblems();
    t_.flow_events = 0;
    t_.arena.clear();
  }

  // traceEvents read in shards (ParseShards): true when read. Shard 0 reads into this trace, the
  // others into their own, appended in order after.
  bool parse_in_shards() {
    const size_t count = shards_.for_text(text_.size());
    if (count < 2) return false;
    defer_problems_ = true;
    const size_t window = json::resolve_window_bytes(window_bytes_, text_.size() / count);
    LoaderShards<DeviceTrace, DeviceParser, EventWindows> shards(
        count, *this, [&](DeviceTrace& part, size_t) {
          part.path = t_.path;
          part.events.reserve(text_.size() / count / 128);
          return std::unique_ptr<DeviceParser>(new DeviceParser(part, text_, window));
        });
    const size_t read =
        json::read_array_in_shards(t_.text.mutable_data(), t_.text.size(), t_.text.capacity(),
                                   kEventsKey, window, shards.readers(), *shards_.workers);
    defer_problems_ = false;
    if (read == 0) {
      forget_events();
      deferred_.clear();
      return false;
    }
    // In file order: each shard's events after the ones before, its names' indices moved by the
    // names before, its problems numbered from the elements before.
    const profile::Span span("merge device shards");
    size_t more = 0;
    for (size_t k = 1; k < count; ++k) more += shards.part(k).events.size();
    reserve_prefaulted(t_.events, t_.events.size() + more, *shards_.workers);
    size_t elements = shards.elements(0);
    count_deferred(0);
    for (size_t k = 1; k < count; ++k) {
      DeviceTrace& part = shards.part(k);
      const auto names = static_cast<uint32_t>(t_.pg_names.size());
      const size_t first = t_.events.size();
      t_.events.insert(t_.events.end(), part.events.begin(), part.events.end());
      if (!part.pg_names.empty()) {
        for (size_t i = first; i < t_.events.size(); ++i) {
          if (t_.events[i].pg_name != DeviceEvent::kNoPgName) t_.events[i].pg_name += names;
        }
        t_.pg_names.insert(t_.pg_names.end(), part.pg_names.begin(), part.pg_names.end());
      }
      // By byte offset, in file order: the shards' follow each other.
      t_.decoded_names.insert(t_.decoded_names.end(), part.decoded_names.begin(),
                              part.decoded_names.end());
      t_.flow_events += part.flow_events;
      if (!part.arena.empty()) t_.more_arenas.push_back(std::move(part.arena));
      shards.parser(k).count_deferred(elements);
      t_.load_stats.merge(part.load_stats);
      elements += shards.elements(k);
    }
    t_.parse_shards = read;
    return true;
  }

  // The problems a shard's events deferred, counted with their element numbers from `first`.
  void count_deferred(size_t first) {
    defer_problems_ = false;
    for (const Deferred& d : deferred_) count_problem(d.kind, first + d.index, d.offset, d.quoted);
    deferred_.clear();
  }

  // A data problem of the event `index` (at byte `offset`; `quoted`: the id written as a string).
  void count_problem(StatKind kind, size_t index, uint64_t offset, std::string_view quoted) {
    if (defer_problems_) {
      deferred_.push_back({kind, index, offset, std::string(quoted)});
    } else if (kind == StatKind::kDeviceIdAsString) {
      t_.load_stats.add(kind,
                        fmt::format("traceEvents[{}] at byte {}: \"{}\"", index, offset, quoted));
    } else {
      t_.load_stats.add(kind, fmt::format("traceEvents[{}] at byte {}", index, offset));
    }
  }

  // The whole document in one parse: the top level, its one "traceEvents" array.
  Status parse_document(od::parser& parser) {
    od::document doc;
    auto err = json::iterate_document(parser, t_.text, &doc, &t_.invalid_utf8_bytes);
    if (err) {
      last_offset_ = json::locate_document_error(text_, err);
      return fail(doc, err, "cannot parse JSON");
    }
    od::object root;
    // A cut-off file fails here at byte 0: parse_*_text restates it at the end of the input.
    if ((err = doc.get_object().get(root))) return fail(doc, err, "top level is not a JSON object");
    bool saw_events = false;
    uint64_t events_key_at = 0;
    for (auto field_result : root) {
      od::field field;
      if ((err = std::move(field_result).get(field)))
        return fail(doc, err, "invalid top-level field");
      std::string_view key_literal = json::string_literal(field.key().raw(), end());
      if (key_literal != kEventsKey) continue;  // deviceProperties etc. are skipped
      const uint64_t key_at = json::offset_in(text_, key_literal.data());
      if (saw_events) {
        return Status::errorf("{}: byte {}: top-level key {} appears twice (first at byte {})",
                              t_.path, key_at, kEventsKey, events_key_at);
      }
      saw_events = true;
      events_key_at = key_at;
      CF_RETURN_IF_ERROR(read_events(doc, field.value()));
    }
    if (!saw_events) {
      return Status::errorf("{}: no \"traceEvents\" array: not a Kineto device trace", t_.path);
    }
    const char* trailing = nullptr;
    if (doc.current_location().get(trailing) == simdjson::SUCCESS) {
      return Status::errorf("{}: byte {}: unexpected content after the top-level object", t_.path,
                            json::current_offset(doc, text_));
    }
    return Status();
  }

  // The "traceEvents" array of the whole document, every event.
  Status read_events(od::document& doc, od::value events_value) {
    const char* at = nullptr;
    if (events_value.current_location().get(at) == simdjson::SUCCESS) {
      last_offset_ = json::offset_in(text_, at);
    }
    od::array events;
    if (auto err = events_value.get_array().get(events)) {
      return fail(doc, err, "\"traceEvents\" is not an array");
    }
    size_t index = 0;
    for (auto element : events) {
      od::value value;
      if (auto err = std::move(element).get(value))
        return fail(doc, err, fmt::format("traceEvents[{}]", index));
      const char* start = nullptr;
      if (auto err = value.current_location().get(start)) {
        return fail(doc, err, fmt::format("traceEvents[{}]", index));
      }
      last_offset_ = json::offset_in(text_, start);
      CF_RETURN_IF_ERROR(read_event(doc, value, index));
      ++index;
    }
    return Status();
  }

  // traceEvents read a window at a time (the whole document's parse reports what they refuse).
  class EventWindows final : public json::ArrayWindowReader {
   public:
    explicit EventWindows(DeviceParser& p) : p_(p) {}
    bool root_field(od::field& field) override {
      // deviceProperties etc. are skipped; a second traceEvents is left to the whole parse.
      return json::string_literal(field.key().raw(), p_.end()) != kEventsKey;
    }
    bool element(od::document& doc, od::value& value, const char* start) override {
      p_.last_offset_ = json::offset_in(p_.text_, start);
      if (!p_.read_event(doc, value, index_).ok()) return false;
      ++index_;
      return true;
    }

    // Elements read so far.
    size_t elements() const { return index_; }

   private:
    DeviceParser& p_;
    size_t index_ = 0;
  };

  // The event at last_offset_: kept, or counted when it is an ac2g flow event.
  Status read_event(od::document& doc, od::value& value, size_t index) {
    od::object obj;
    if (auto err = value.get_object().get(obj)) {
      return fail(doc, err, fmt::format("traceEvents[{}] is not an object", index));
    }
    // Read where it stays (a copy of 120 bytes per event saved); taken back unless it is kept.
    DeviceEvent& e = t_.events.emplace_back();
    e.byte_offset = last_offset_;
    has_ph_ = false;
    quoted_id_ = {};
    Status read = parse_event(doc, obj, index, e);
    if (read.ok() && e.cat != DeviceCategory::kOther) {
      // Counted once the event is read whole (a window's cut element is read again).
      if (!has_ph_) count_problem(StatKind::kDeviceEventWithoutPh, index, e.byte_offset, {});
      if (!quoted_id_.empty()) {
        count_problem(StatKind::kDeviceIdAsString, index, e.byte_offset, quoted_id_);
      }
    }
    if (!read.ok() || e.cat == DeviceCategory::kAc2g) {
      if (read.ok()) ++t_.flow_events;  // checked, counted, not kept: no stage reads them
      // Its process group name and decoded name, if any, are the last ones in the side tables.
      if (e.pg_name != DeviceEvent::kNoPgName) t_.pg_names.pop_back();
      if (e.has(kNameDecoded)) t_.decoded_names.pop_back();
      t_.events.pop_back();
    }
    return read;
  }

  const char* end() const { return text_.data() + text_.size(); }

  // The iterator cannot be asked where it is once it has failed: errors name the start of the
  // element being read (last_offset_), which is where the user should look.
  Status fail(od::document& doc, simdjson::error_code err, std::string_view what) {
    (void)doc;
    const char* hint = (err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || err == simdjson::TAPE_ERROR)
                           ? " (the file is truncated or malformed after this point)"
                           : "";
    return Status::errorf("{}: byte {}: {}: {}{}", t_.path, last_offset_, what,
                          simdjson::error_message(err), hint);
  }
  uint64_t last_offset_ = 0;
  // Of the event being read: whether it has "ph"; the first linking id given as a string.
  bool has_ph_ = false;
  std::string_view quoted_id_;

  Status event_error(const DeviceEvent& e, size_t index, std::string_view what) {
    return Status::errorf("{}: byte {}: traceEvents[{}]: {}", t_.path, e.byte_offset, index, what);
  }

  Status read_literal(od::value& v, const DeviceEvent& e, size_t index, std::string_view what,
                      std::string_view* literal, std::string_view* unescaped) {
    if (auto r = json::read_string(v, t_.arena, literal, unescaped); r != json::StringRead::kOk) {
      return event_error(e, index, fmt::format("\"{}\" {}", what, json::string_problem(r)));
    }
    return Status();
  }

  // A name read from `literal` as `name`: kept aside when it is not the literal's text between
  // its quotes (a second "name" of the event replaces the first).
  void set_decoded_name(DeviceEvent& e, std::string_view literal, std::string_view name) {
    if (e.has(kNameDecoded)) {
      t_.decoded_names.pop_back();
      e.flags &= static_cast<uint16_t>(~kNameDecoded);
    }
    if (name.data() == literal.data() + 1 && name.size() + 2 == literal.size()) return;
    e.flags |= kNameDecoded;
    t_.decoded_names.emplace_back(e.byte_offset, name);
  }

  // The name of the event being read (a shard's trace has no text of its own to give it).
  std::string_view name_of(const DeviceEvent& e) const {
    if (e.has(kNameDecoded)) return t_.decoded_names.back().second;
    const Span s = e.name_literal;
    if (s.end - s.begin < 2) return {};
    return text_.substr(e.byte_offset + s.begin + 1, s.end - s.begin - 2);
  }

  // `part` (inside the event's text) as a span relative to the event's start.
  Status span_in_event(const DeviceEvent& e, size_t index, std::string_view part, Span* out) {
    const uint64_t begin = json::offset_in(text_, part.data()) - e.byte_offset;
    if (begin + part.size() > UINT32_MAX) {
      return event_error(e, index, "the event is larger than 4 GiB");
    }
    *out = Span{static_cast<uint32_t>(begin), static_cast<uint32_t>(begin + part.size())};
    return Status();
  }

  // Integer-like id fields: numbers, integral doubles, or strings (`quoted` is then set to the
  // string).
  bool read_id(od::value& v, int64_t* out, std::string_view* quoted = nullptr) {
    od::json_type type;
    if (v.type().get(type)) return false;
    if (type == od::json_type::number) {
      if (json::get_int64(v, out)) return true;
      uint64_t u;
      if (json::get_uint64(v, &u)) {  // ids above int64: keep the bit pattern
        *out = static_cast<int64_t>(u);
        return true;
      }
      return false;
    }
    if (type == od::json_type::string) {
      std::string_view s;
      if (v.get_string().get(s)) return false;
      *out = id_from_text(s);
      if (quoted != nullptr && quoted->empty()) *quoted = s;
      return true;
    }
    return false;
  }

  Status read_time(od::value& v, const DeviceEvent& e, size_t index, std::string_view what,
                   TimeNs* out, bool* fractional, bool* is_float) {
    od::json_type type{};  // read below even when type() failed
    if (v.type().get(type) || type != od::json_type::number) {
      // Some exporters quote numbers; accept "123.4" but nothing else.
      std::string_view s;
      if (type == od::json_type::string && !v.get_string().get(s) &&
          json::parse_micros_as_ns(s, out, fractional)) {
        return Status();
      }
      return event_error(e, index, fmt::format("\"{}\" is not a number", what));
    }
    const std::string_view token = json::token(v);
    if (!json::parse_micros_as_ns(token, out, fractional, is_float)) {
      return event_error(
          e, index,
          fmt::format("\"{}\" ({}) is not a finite number of int64 nanoseconds", what, token));
    }
    return Status();
  }

  Status parse_event(od::document& doc, od::object obj, size_t index, DeviceEvent& e) {
    std::string_view cat;
    bool has_ts = false;
    for (auto field_result : obj) {
      if (field_result.error()) return event_error(e, index, "invalid field");
      od::field& field = field_result.value_unsafe();  // a reference: copies of it stall
      const std::string_view key = json::raw_key(field);
      od::value& v = field.value();
      if (json::equals(key, "ph")) {
        std::string_view lit, s;
        CF_RETURN_IF_ERROR(read_literal(v, e, index, "ph", &lit, &s));
        e.ph = s.empty() ? 0 : s[0];
        has_ph_ = !s.empty();
      } else if (json::equals(key, "cat")) {
        std::string_view lit;
        CF_RETURN_IF_ERROR(read_literal(v, e, index, "cat", &lit, &cat));
      } else if (json::equals(key, "name")) {
        od::json_type type;
        if (v.type().get(type) == simdjson::SUCCESS && type != od::json_type::string) continue;
        std::string_view literal, name;
        CF_RETURN_IF_ERROR(read_literal(v, e, index, "name", &literal, &name));
        CF_RETURN_IF_ERROR(span_in_event(e, index, literal, &e.name_literal));
        set_decoded_name(e, literal, name);
      } else if (json::equals(key, "ts")) {
        bool frac = false, is_float = false;
        CF_RETURN_IF_ERROR(read_time(v, e, index, "ts", &e.ts, &frac, &is_float));
        if (frac) e.flags |= kTsFractional;
        if (is_float) e.flags |= kTsFloat;
        has_ts = true;
      } else if (json::equals(key, "dur")) {
        od::json_type type;
        if (v.type().get(type) == simdjson::SUCCESS && type == od::json_type::null) continue;
        bool frac = false, is_float = false;
        CF_RETURN_IF_ERROR(read_time(v, e, index, "dur", &e.dur, &frac, &is_float));
        e.flags |= kHasDur;
        if (frac) e.flags |= kDurFractional;
        if (is_float) e.flags |= kDurFloat;
      } else if (json::equals(key, "tid")) {
        if (read_id(v, &e.tid)) e.flags |= kHasTid;
      } else if (json::equals(key, "pid")) {
        read_id(v, &e.pid);
      } else if (json::equals(key, "args")) {
        const char* args_start = nullptr;
        od::object args;
        if (v.current_location().get(args_start) || v.get_object().get(args)) continue;
        CF_RETURN_IF_ERROR(parse_args(args, index, e));
        // Keep the raw text of args for stages that read more of it (synchronization events).
        const char* after = nullptr;
        if (doc.current_location().get(after)) after = end();
        while (after > args_start && after[-1] != '}') --after;
        CF_RETURN_IF_ERROR(span_in_event(
            e, index, std::string_view(args_start, static_cast<size_t>(after - args_start)),
            &e.args));
      }
    }
    return check_event(e, index, cat, has_ts);
  }

  // An event's times, category and ProfilerStep flag, once its fields are read.
  Status check_event(DeviceEvent& e, size_t index, std::string_view cat, bool has_ts) {
    // Times are int64 nanoseconds: bounding ts, dur and their sum to ±2^62 ns (146 years) keeps
    // every end time, and every difference of two times that the stages take, within int64.
    constexpr TimeNs kTimeLimit = TimeNs{1} << 62;
    const auto in_range = [](TimeNs t) { return t > -kTimeLimit && t < kTimeLimit; };
    if (!in_range(e.ts) || !in_range(e.dur) || !in_range(e.ts + e.dur)) {
      return event_error(e, index, "\"ts\", \"dur\" or their sum is beyond ±2^62 ns (146 years)");
    }
    e.cat = classify_category(cat);
    // A negative duration, or a negative start of an op (a time before the trace's epoch), would
    // be carried into ET+ and lost from the .et (whose times are unsigned): the trace is corrupt.
    if (e.dur < 0) {
      return event_error(e, index, fmt::format("\"dur\" is negative ({} ns)", e.dur));
    }
    if (e.ts < 0 && e.cat != DeviceCategory::kOther) {
      return event_error(e, index,
                         fmt::format("\"{}\" event with a negative \"ts\" ({} ns)", cat, e.ts));
    }
    // Only metadata events ("ph": "M") come without a time; an op without one cannot be ordered.
    if (!has_ts && e.cat != DeviceCategory::kOther) {
      return event_error(e, index, fmt::format("\"{}\" event without \"ts\"", cat));
    }
    if ((e.cat == DeviceCategory::kCpuOp || e.cat == DeviceCategory::kUserAnnotation) &&
        name_of(e).find("ProfilerStep") != std::string_view::npos) {
      e.flags |= kProfilerStep;
    }
    return Status();
  }

  Status parse_args(od::object args, size_t index, DeviceEvent& e) {
    for (auto field_result : args) {
      if (field_result.error()) return event_error(e, index, "invalid \"args\"");
      od::field& field = field_result.value_unsafe();
      const std::string_view key = json::raw_key(field);
      od::value& v = field.value();
      int64_t id = 0;
      // The ids that link events to each other: a string is read, and counted.
      if (json::equals(key, "External id")) {
        if (read_id(v, &id, &quoted_id_)) {
          e.external_id = id;
          e.flags |= kHasExternalId;
        }
      } else if (json::equals(key, "correlation")) {
        if (read_id(v, &id, &quoted_id_)) {
          e.correlation = id;
          e.flags |= kHasCorrelation;
        }
      } else if (json::equals(key, "stream")) {
        od::json_type type;
        if (v.type().get(type) == simdjson::SUCCESS && type == od::json_type::null) {
          e.flags |= kStreamNull;
        } else if (read_id(v, &id)) {
          e.stream = id;
          e.flags |= kHasStream;
        }
      } else if (json::equals(key, "device")) {
        if (read_id(v, &id)) {
          e.device = id;
          e.flags |= kHasDevice;
        }
      } else if (json::equals(key, "Record function id")) {
        if (read_id(v, &id, &quoted_id_) && id > 0) {
          e.rf_id = static_cast<uint64_t>(id);
          e.flags |= kHasRfId;
        }
      } else if (json::equals(key, "Process Group Name")) {
        od::json_type type;
        if (v.type().get(type) == simdjson::SUCCESS && type == od::json_type::string) {
          std::string_view lit, pg_name;
          CF_RETURN_IF_ERROR(read_literal(v, e, index, "Process Group Name", &lit, &pg_name));
          if (e.pg_name == DeviceEvent::kNoPgName) {
            e.pg_name = static_cast<uint32_t>(t_.pg_names.size());
            t_.pg_names.push_back(pg_name);
          } else {
            t_.pg_names[e.pg_name] = pg_name;  // a second one replaces the first, as before
          }
        }
      }
    }
    return Status();
  }

  void build_indices() {
    const profile::Span span("device indices");
    build_device_indices(t_, shards_.workers);
  }

  DeviceTrace& t_;
  std::string_view text_;
  size_t window_bytes_;
  ParseShards shards_;
  bool defer_problems_ = false;
  struct Deferred {
    StatKind kind;
    size_t index;
    uint64_t offset;
    std::string quoted;  // a copy: the view may be into the parser's buffer, gone after the shard
  };
  std::vector<Deferred> deferred_;
};

}  // namespace

DeviceCategory classify_category(std::string_view cat) {
  if (json::equals(cat, "cpu_op") || iequals(cat, "operator")) return DeviceCategory::kCpuOp;
  if (json::equals(cat, "user_annotation") || iequals(cat, "user_annotation") ||
      iequals(cat, "user annotation")) {
    return DeviceCategory::kUserAnnotation;
  }
  if (json::equals(cat, "cuda_runtime") || iequals(cat, "runtime") ||
      iequals(cat, "cuda_runtime")) {
    return DeviceCategory::kCudaRuntime;
  }
  if (json::equals(cat, "cuda_driver") || iequals(cat, "cuda_driver") || iequals(cat, "driver")) {
    return DeviceCategory::kCudaDriver;
  }
  if (json::equals(cat, "kernel") || iequals(cat, "kernel")) return DeviceCategory::kKernel;
  if (json::equals(cat, "gpu_memcpy") || iequals(cat, "memcpy") || iequals(cat, "gpu_memcpy")) {
    return DeviceCategory::kGpuMemcpy;
  }
  if (json::equals(cat, "gpu_memset") || iequals(cat, "memset") || iequals(cat, "gpu_memset")) {
    return DeviceCategory::kGpuMemset;
  }
  if (json::equals(cat, "ac2g")) return DeviceCategory::kAc2g;
  return DeviceCategory::kOther;
}

namespace {

StatusOr<DeviceTrace> parse_device_text(std::string path, InputText text, size_t window_bytes,
                                        const ParseShards& shards = {}) {
  DeviceTrace trace;
  trace.path = std::move(path);
  trace.text = std::move(text);
  const profile::Span span("parse device events");  // and their indices
  CF_RETURN_IF_ERROR(json::explain_truncation(DeviceParser(trace, window_bytes, shards).parse(),
                                              trace.path, trace.text));
  return trace;
}

}  // namespace

StatusOr<DeviceTrace> parse_device_trace(std::string path, std::string text) {
  return parse_device_text(std::move(path), InputText(std::move(text)), kDeviceWindowBytes);
}

StatusOr<DeviceTrace> parse_device_trace(std::string path, std::string text, size_t window_bytes) {
  return parse_device_text(std::move(path), InputText(std::move(text)), window_bytes);
}

StatusOr<DeviceTrace> load_device_trace(const std::string& path, const ParseShards& shards) {
  CF_ASSIGN_OR_RETURN(InputText text, [&] {
    const profile::Span span("read device text");
    return InputText::read(path, shards.own_workers());
  }());
  return parse_device_text(path, std::move(text), kDeviceWindowBytes, shards);
}

StatusOr<DeviceTrace> parse_device_trace(std::string path, std::string text, size_t window_bytes,
                                         const ParseShards& shards) {
  return parse_device_text(std::move(path), InputText(std::move(text)), window_bytes, shards);
}

PyNumber DeviceEvent::py_ts() const {
  return {json::micros_value(ts), has(kTsFloat)};
}

PyNumber DeviceEvent::py_dur() const {
  return {json::micros_value(dur), has(kDurFloat)};
}

}  // namespace chakraflow
