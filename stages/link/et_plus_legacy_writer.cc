#include "stages/link/et_plus_legacy_writer.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "stages/common/json_util.h"
#include "stages/link/sequence_matching.h"

namespace chakraflow {
namespace {

constexpr size_t kChunk = 1 << 20;
constexpr size_t kNotFound = std::string_view::npos;

// The keys a GPU node copies from its host node, in the legacy linker's order.
constexpr std::string_view kCopiedKeys[] = {"inputs",  "input_shapes",  "input_types",
                                            "outputs", "output_shapes", "output_types"};

size_t skip_space(std::string_view s, size_t pos) {
  while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\n' || s[pos] == '\r' || s[pos] == '\t'))
    ++pos;
  return pos;
}

// One past the end of the JSON string literal starting at s[pos] ('"'), or kNotFound.
size_t skip_string(std::string_view s, size_t pos) {
  for (++pos; pos < s.size(); ++pos) {
    if (s[pos] == '\\')
      ++pos;
    else if (s[pos] == '"')
      return pos + 1;
  }
  return kNotFound;
}

// One past the end of the JSON value starting at s[pos] (no leading space), or kNotFound. The
// text was validated by the loader; this only has to find where the value ends.
size_t skip_value(std::string_view s, size_t pos) {
  if (pos >= s.size()) return kNotFound;
  if (s[pos] == '"') return skip_string(s, pos);
  if (s[pos] != '{' && s[pos] != '[') {
    while (pos < s.size() && s[pos] != ',' && s[pos] != '}' && s[pos] != ']' && s[pos] != ' ' &&
           s[pos] != '\n' && s[pos] != '\r' && s[pos] != '\t')
      ++pos;
    return pos;
  }
  int depth = 0;
  while (pos < s.size()) {
    const char c = s[pos];
    if (c == '"') {
      pos = skip_string(s, pos);
      if (pos == kNotFound) return kNotFound;
      continue;
    }
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') {
      if (--depth == 0) return pos + 1;
    }
    ++pos;
  }
  return kNotFound;
}

// The raw value of top-level member `key` (unescaped keys only) of the JSON object `object`.
std::string_view member(std::string_view object, std::string_view key) {
  size_t pos = skip_space(object, 1);
  while (pos < object.size() && object[pos] == '"') {
    const size_t key_end = skip_string(object, pos);
    if (key_end == kNotFound) return {};
    const std::string_view k = object.substr(pos + 1, key_end - pos - 2);
    pos = skip_space(object, key_end);
    if (pos >= object.size() || object[pos] != ':') return {};
    pos = skip_space(object, pos + 1);
    const size_t value_end = skip_value(object, pos);
    if (value_end == kNotFound) return {};
    if (k == key) return object.substr(pos, value_end - pos);
    pos = skip_space(object, value_end);
    if (pos < object.size() && object[pos] == ',') pos = skip_space(object, pos + 1);
  }
  return {};
}

// Legacy id numbering: the first id >= a wanted one that no node has taken yet. Taken ids form
// runs; `next_` jumps over them (union-find with path compression), so each lookup is amortized
// constant however long the runs.
class LegacyIds {
 public:
  uint64_t take(uint64_t wanted) {
    uint64_t id = wanted;
    path_.clear();
    for (auto it = next_.find(id); it != next_.end(); it = next_.find(id)) {
      path_.push_back(id);
      id = it->second;
    }
    for (uint64_t p : path_) next_[p] = id + 1;
    next_[id] = id + 1;
    return id;
  }

 private:
  std::unordered_map<uint64_t, uint64_t> next_;
  std::vector<uint64_t> path_;
};

struct TimeSpan {
  TimeNs begin = std::numeric_limits<TimeNs>::max();
  TimeNs end = std::numeric_limits<TimeNs>::min();
  bool valid() const { return begin <= end; }
  void add(TimeNs b, TimeNs e) {
    begin = std::min(begin, b);
    end = std::max(end, e);
  }
};

class LegacyWriter {
 public:
  LegacyWriter(const HostTrace& host, const DeviceTrace& device, const LinkedTrace& linked,
               const ByteSink& sink)
      : host_(host), dev_(device), linked_(linked), sink_(sink) {
    buf_.reserve(kChunk + 4096);
  }

  Status run() {
    number_nodes();
    span_annotations();
    CF_RETURN_IF_ERROR(write_document(buf_, host_, [this] { return write_nodes(); }));
    flush();
    return Status();
  }

 private:
  // Ids as the legacy linker gives them: host nodes in file order keep their id unless taken,
  // each followed by its GPU nodes.
  void number_nodes() {
    const auto& nodes = host_.nodes;
    file_order_.resize(nodes.size());
    for (uint32_t i = 0; i < nodes.size(); ++i) file_order_[i] = i;
    std::stable_sort(file_order_.begin(), file_order_.end(), [&](uint32_t a, uint32_t b) {
      return nodes[a].byte_offset < nodes[b].byte_offset;
    });
    LegacyIds ids;
    node_id_.resize(nodes.size());
    gpu_id_.resize(linked_.gpu_events.size());
    for (uint32_t i : file_order_) {
      const uint64_t orig = nodes[i].id;
      node_id_[i] = ids.take(orig);
      by_orig_id_.try_emplace(orig, node_id_[i]);
      const LinkedHostOp& op = linked_.ops[i];
      for (uint32_t k = op.gpu_begin; k < op.gpu_end; ++k) gpu_id_[k] = ids.take(orig);
    }
  }

  // The new id of host node i's parent; nullopt leaves the value as it is.
  std::optional<uint64_t> parent_id(uint32_t i) const {
    const HostNode& n = host_.nodes[i];
    auto it = by_orig_id_.find(n.parent);
    if (it != by_orig_id_.end()) return it->second;
    // Missing parent: the node id assign_ids reattached it to (the legacy linker raised KeyError).
    const LinkedHostOp& op = linked_.ops[i];
    if (op.parent_state != ParentState::kReattached) return std::nullopt;
    auto p = std::lower_bound(linked_.ops.begin(), linked_.ops.end(), op.new_parent,
                              [](const LinkedHostOp& o, uint64_t id) { return o.new_id < id; });
    if (p == linked_.ops.end() || p->new_id != op.new_parent) return std::nullopt;
    return node_id_[static_cast<size_t>(p - linked_.ops.begin())];
  }

  // The process annotation spans every matched device op; a thread annotation those of its tid.
  void span_annotations() {
    for (uint32_t i = 0; i < host_.nodes.size(); ++i) {
      DeviceEventIdx e = linked_.ops[i].device_event;
      if (!e.valid()) continue;
      const DeviceEvent& ev = dev_[e];
      process_span_.add(ev.ts, ev.end());
      thread_span_[host_.nodes[i].tid].add(ev.ts, ev.end());
    }
  }

  const TimeSpan* annotation_span(const HostNode& n) const {
    if (is_process_annotation(n.name)) return process_span_.valid() ? &process_span_ : nullptr;
    if (!is_thread_annotation(n.name)) return nullptr;
    auto it = thread_span_.find(n.tid);
    return it != thread_span_.end() && it->second.valid() ? &it->second : nullptr;
  }

  Status write_nodes() {
    buf_.append("[\n");
    bool first = true;
    for (uint32_t i : file_order_) {
      if (!first) buf_.append(",\n");
      first = false;
      write_host_node(i);
      maybe_flush();
    }
    for (uint32_t i : file_order_) {
      const LinkedHostOp& op = linked_.ops[i];
      for (uint32_t k = op.gpu_begin; k < op.gpu_end; ++k) {
        if (!first) buf_.append(",\n");
        first = false;
        CF_RETURN_IF_ERROR(write_gpu_node(i, k));
        maybe_flush();
      }
    }
    buf_.append("\n]");
    return Status();
  }

  void write_host_node(uint32_t i) {
    const HostNode& n = host_.nodes[i];
    std::string id_text = std::to_string(node_id_[i]);
    std::string parent_text;
    struct Splice {
      Span span;
      std::string_view text;
    } splices[2];
    size_t count = 0;
    if (!n.id_value.empty()) splices[count++] = {n.id_value, id_text};
    if (n.parent_key != ParentKey::kNone && !n.parent_value.empty()) {
      if (auto p = parent_id(i)) {
        parent_text = std::to_string(*p);
        splices[count++] = {n.parent_value, parent_text};
      }
    }
    if (count == 2 && splices[1].span.begin < splices[0].span.begin)
      std::swap(splices[0], splices[1]);
    size_t pos = 0;
    for (size_t k = 0; k < count; ++k) {
      append_minified(n.raw.substr(pos, splices[k].span.begin - pos));
      buf_.append(splices[k].text);
      pos = splices[k].span.end;
    }
    append_minified(n.raw.substr(pos, n.raw.size() - 1 - pos));  // up to the closing brace
    const DeviceEventIdx e = linked_.ops[i].device_event;
    if (e.valid()) {
      append_dur_ts(dev_[e].dur, dev_[e].ts);
    } else if (const TimeSpan* span = annotation_span(n)) {
      append_dur_ts(span->end - span->begin, span->begin);
    }
    buf_.push_back('}');
  }

  void append_dur_ts(TimeNs dur, TimeNs ts) {
    buf_.append(",\"dur\":");
    json::append_micros(buf_, dur);
    buf_.append(",\"ts\":");
    json::append_micros(buf_, ts);
  }

  Status write_gpu_node(uint32_t i, uint32_t k) {
    const DeviceEvent& g = dev_[linked_.gpu_events[k]];
    const std::string_view text = dev_.text;
    const size_t end = g.byte_offset < text.size() ? skip_value(text, g.byte_offset) : kNotFound;
    if (end == kNotFound || text[g.byte_offset] != '{') {
      return Status::errorf("{}: byte {}: cannot re-read the GPU event '{}'", dev_.path,
                            g.byte_offset, dev_.name(g));
    }
    const std::string_view event = text.substr(g.byte_offset, end - g.byte_offset);
    append_minified(event.substr(0, event.size() - 1));  // without the closing brace
    buf_.append(",\"parent\":");
    append_uint(node_id_[i]);
    buf_.append(",\"id\":");
    append_uint(gpu_id_[k]);
    const std::string_view raw = host_.nodes[i].raw;
    for (std::string_view key : kCopiedKeys) {
      std::string_view value = member(raw, key);
      if (value.empty()) continue;
      buf_.append(",\"");
      buf_.append(key);
      buf_.append("\":");
      append_minified(value);
    }
    buf_.push_back('}');
    return Status();
  }

  void append_uint(uint64_t v) { json::append_uint(buf_, v); }

  void append_minified(std::string_view s) { json::append_minified(buf_, s); }

  void maybe_flush() {
    if (buf_.size() >= kChunk) flush();
  }
  void flush() {
    if (!buf_.empty()) sink_(buf_);
    buf_.clear();
  }

  const HostTrace& host_;
  const DeviceTrace& dev_;
  const LinkedTrace& linked_;
  const ByteSink& sink_;
  std::string buf_;
  std::vector<uint32_t> file_order_;
  std::vector<uint64_t> node_id_;                      // by HostNodeIdx
  std::vector<uint64_t> gpu_id_;                       // by position in LinkedTrace::gpu_events
  std::unordered_map<uint64_t, uint64_t> by_orig_id_;  // original id -> new id of its first node
  TimeSpan process_span_;
  std::unordered_map<uint64_t, TimeSpan> thread_span_;  // by host tid
};

}  // namespace

Status write_et_plus_legacy(const HostTrace& host, const DeviceTrace& device,
                            const LinkedTrace& linked, const LinkOptions& options,
                            const ByteSink& sink) {
  (void)options;  // the layout is fixed; options shaped the linking stages
  return LegacyWriter(host, device, linked, sink).run();
}

}  // namespace chakraflow
