#include "stages/link/et_plus_writer.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>

#include "stages/common/json_util.h"

namespace chakraflow {
namespace {

// Formats host nodes, each followed by its GPU nodes, into `buf_`. One per batch: its cursors
// start where the batch does.
class NodeFormatter {
 public:
  NodeFormatter(const HostTrace& host, const DeviceTrace& device, const LinkedTrace& linked,
                const LinkOptions& options, std::string& buf)
      : host_(host), dev_(device), linked_(linked), opt_(options), buf_(buf) {}

  // Host nodes [begin, end) and their GPU nodes, each preceded by ",\n" but the trace's first.
  void format(uint32_t begin, uint32_t end) {
    // The cursors in exec_tids and gpu_sync_deps where the batch starts.
    const LinkedTrace::Cursors at = linked_.cursors_at(begin);
    exec_next_ = at.exec_tid;
    gpu_sync_next_ = at.gpu_sync;
    for (uint32_t i = begin; i < end; ++i) {
      if (i + kAhead < end) prefetch_node(i + kAhead);
      if (i > 0) buf_.append(",\n");
      write_host_node(i);
      const LinkedHostOp& op = linked_.ops[i];
      number(cpu_id_text_, op.new_id);
      for (uint32_t k = op.gpu_begin; k < op.gpu_end; ++k) {
        buf_.append(",\n");
        write_gpu_node(host_.nodes[i], op, k);
      }
    }
  }

 private:
  // The nodes are written in id order, which is not the order of their text in the file: each
  // node's text is a cache (and TLB) miss of its own, the minifier waiting on its first load. The
  // text of the node kAhead places on, and its GPU ops' names, are asked for ahead.
  static constexpr uint32_t kAhead = 4;
  static constexpr size_t kPrefetchBytes = 1024;
  void prefetch_node(uint32_t i) const {
    const std::string_view raw = host_.nodes[i].raw;
    const size_t bytes = std::min(raw.size(), kPrefetchBytes);
    for (size_t at = 0; at < bytes; at += 64) __builtin_prefetch(raw.data() + at);
    const LinkedHostOp& op = linked_.ops[i];
    for (uint32_t k = op.gpu_begin; k < op.gpu_end; ++k) {
      __builtin_prefetch(dev_.name_raw(dev_[linked_.gpu_events[k]]).data());
    }
  }

  // A value of a node's text replaced by `text`; a null `text` (no data) keeps the value's own.
  // `value`: which of a cut node's values it is (CutValue, cut_node).
  struct Splice {
    Span span;
    std::string_view text;
    int value = 0;
  };

  void append_minified(std::string_view s) { json::append_minified(buf_, s); }

  void append_uint(uint64_t v) { json::append_uint(buf_, v); }
  void append_int(int64_t v) { json::append_int(buf_, v); }

  // Sorts `splices` by position, those of values the node lacks (an empty span at 0) dropped;
  // returns how many are left.
  static size_t sort_splices(Splice* splices, size_t n) {
    size_t kept = 0;
    for (size_t k = 0; k < n; ++k) {
      if (!(splices[k].span.empty() && splices[k].span.begin == 0)) splices[kept++] = splices[k];
    }
    for (size_t a = 1; a < kept; ++a) {  // insertion sort by position (kept <= 3)
      for (size_t b = a; b > 0 && splices[b].span.begin < splices[b - 1].span.begin; --b) {
        std::swap(splices[b], splices[b - 1]);
      }
    }
    return kept;
  }

  // The text a splice puts in place of its span of `raw`.
  static std::string_view splice_text(std::string_view raw, const Splice& s) {
    return s.text.data() != nullptr ? s.text : raw.substr(s.span.begin, s.span.end - s.span.begin);
  }

  // Writes `raw` (a JSON object) with spans replaced, minus its closing brace.
  void write_spliced(std::string_view raw, Splice* splices, size_t n) {
    n = sort_splices(splices, n);
    size_t pos = 0;
    for (size_t k = 0; k < n; ++k) {
      append_minified(raw.substr(pos, splices[k].span.begin - pos));
      buf_.append(splice_text(raw, splices[k]));
      pos = splices[k].span.end;
    }
    size_t close = raw.size() - 1;  // the node's '}'
    append_minified(raw.substr(pos, close - pos));
  }

  // A host node with GPU ops is written again for each of them with other values spliced in (the
  // same three: id, name, parent): its text between those values is minified once, into cut_,
  // and copied for each. The values kept as they are (a number, the name's string literal) are
  // what the minifier would write for them, so the bytes are those of write_spliced.
  enum CutValue { kCutId, kCutName, kCutParent, kCutValues };
  struct Cut {
    std::string text;                  // the minified pieces, one after another
    size_t piece_end[kCutValues + 1];  // each piece's end in `text`
    Splice after[kCutValues];          // the value after each piece (its span and CutValue)
    size_t values = 0;
  };

  void cut_node(const HostNode& n) {
    Cut& c = cut_;
    c.after[0] = {n.id_value, {}, kCutId};
    c.after[1] = {n.name_value, {}, kCutName};
    c.after[2] = {n.parent_value, {}, kCutParent};
    c.values = sort_splices(c.after, kCutValues);
    c.text.clear();
    size_t pos = 0;
    for (size_t k = 0; k < c.values; ++k) {
      json::append_minified(c.text, n.raw.substr(pos, c.after[k].span.begin - pos));
      c.piece_end[k] = c.text.size();
      pos = c.after[k].span.end;
    }
    json::append_minified(c.text, n.raw.substr(pos, n.raw.size() - 1 - pos));
    c.piece_end[c.values] = c.text.size();
  }

  // write_spliced of the node cut_node cut last, with `texts` (by CutValue; null: the value's own)
  // spliced in.
  void write_cut(const HostNode& n, const std::string_view (&texts)[kCutValues]) {
    const Cut& c = cut_;
    size_t from = 0;
    for (size_t k = 0; k < c.values; ++k) {
      buf_.append(c.text, from, c.piece_end[k] - from);
      buf_.append(splice_text(n.raw, {c.after[k].span, texts[c.after[k].value]}));
      from = c.piece_end[k];
    }
    buf_.append(c.text, from, c.piece_end[c.values] - from);
  }

  static std::string_view number(std::string& storage, uint64_t v) {
    storage.clear();
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof(tmp), v);
    storage.assign(tmp, static_cast<size_t>(r.ptr - tmp));
    return storage;
  }

  // The timing keys of a node matched to event `e`: its dur, `exclusive`, its ts. Chakra mode
  // writes them as Chakra's json.dump does: the numbers json.load read (a float stays a float:
  // 4.0, not 4) and `chakra_exclusive` (null: the event's dur), Chakra's arithmetic.
  void append_timing(const DeviceEvent& e, TimeNs exclusive, const PyNumber* chakra_exclusive,
                     const LinkedHostOp& owner) {
    const bool chakra = opt_.compat == Compat::kChakra;
    buf_.append(",\"inclusive_dur\":");
    if (chakra) {
      json::append_python_number(buf_, e.py_dur().value, e.py_dur().is_float);
    } else {
      json::append_micros(buf_, e.dur);
    }
    buf_.append(",\"exclusive_dur\":");
    if (chakra) {
      const PyNumber x = chakra_exclusive ? *chakra_exclusive : e.py_dur();
      json::append_python_number(buf_, x.value, x.is_float);
    } else {
      json::append_micros(buf_, exclusive);
    }
    buf_.append(",\"ts\":");
    if (chakra) {
      json::append_python_number(buf_, e.py_ts().value, e.py_ts().is_float);
    } else {
      json::append_micros(buf_, e.ts);
    }
    buf_.append(",\"inter_thread_dep\":");
    if (owner.inter_thread_dep.valid()) {
      append_uint(linked_.ops[owner.inter_thread_dep.value].new_id);
    } else {
      buf_.append("null");
    }
  }

  bool remap_parent_key(const HostNode& n) const {
    if (n.parent_key == ParentKey::kCtrlDeps) return true;
    return n.parent_key == ParentKey::kParent && opt_.compat == Compat::kDefault;
  }

  // Host node i: its text with the new id and parent, its timing from the matched event, the
  // thread it ran on and its sync dependencies.
  void write_host_node(uint32_t i) {
    const HostNode& n = host_.nodes[i];
    const LinkedHostOp& op = linked_.ops[i];
    const std::string_view id = number(id_text_, op.new_id);
    const std::string_view parent = op.parent_state != ParentState::kNone && remap_parent_key(n)
                                        ? number(parent_text_, op.new_parent)
                                        : std::string_view();
    if (op.gpu_begin < op.gpu_end) {
      cut_node(n);  // its GPU ops' nodes copy the pieces
      write_cut(n, {id, {}, parent});
    } else {
      Splice splices[2] = {{n.id_value, id}, {n.parent_value, parent}};
      write_spliced(n.raw, splices, parent.data() != nullptr ? 2 : 1);
    }
    if (op.device_event.valid()) {
      const PyNumber* chakra_exclusive =
          linked_.chakra_exclusive.empty() ? nullptr : &linked_.chakra_exclusive[i];
      append_timing(dev_[op.device_event], op.exclusive, chakra_exclusive, op);
      // The thread it ran on, where the host trace names another (LinkedTrace::exec_tids).
      if (exec_next_ < linked_.exec_tids.size() && linked_.exec_tids[exec_next_].first == i) {
        buf_.append(",\"exec_tid\":");
        append_int(linked_.exec_tids[exec_next_++].second);
      }
    }
    const std::span<const uint64_t> sync = linked_.sync_deps[i];
    if (!sync.empty()) {
      buf_.append(",\"sync_dep\":[");
      for (size_t k = 0; k < sync.size(); ++k) {
        if (k) buf_.push_back(',');
        append_uint(sync[k]);
      }
      buf_.push_back(']');
    }
    buf_.push_back('}');
  }

  // The GPU op at gpu_events[k], of host op `op` (node `n`, its id in cpu_id_text_): a copy of
  // the host node's text with the GPU op's id, name and timing, its launcher as parent, and its
  // device fields.
  void write_gpu_node(const HostNode& n, const LinkedHostOp& op, uint32_t k) {
    const DeviceEvent& g = dev_[linked_.gpu_events[k]];
    const bool ctrl_in_place = n.parent_key == ParentKey::kCtrlDeps;
    const bool parent_in_place =
        ctrl_in_place || (n.parent_key == ParentKey::kParent && opt_.compat == Compat::kDefault);
    write_cut(n, {number(id_text_, linked_.gpu_new_id(op, k - op.gpu_begin)), dev_.name_raw(g),
                  parent_in_place ? std::string_view(cpu_id_text_) : std::string_view()});
    append_timing(g, g.dur, nullptr, op);
    if (!ctrl_in_place) {
      buf_.append(",\"ctrl_deps\":");
      buf_.append(cpu_id_text_);
    }
    buf_.append(",\"cat\":\"");
    buf_.append(category_name(g.cat));
    buf_.append("\",\"ph\":");
    if (g.ph) {
      buf_.push_back('"');
      buf_.push_back(g.ph);
      buf_.push_back('"');
    } else {
      buf_.append("null");
    }
    buf_.append(",\"stream\":");
    if (g.has(kHasStream))
      append_int(g.stream);
    else
      buf_.append("null");
    if (const std::string_view pg_name = dev_.pg_name(g);
        !pg_name.empty() && dev_.name(g).find("ncclDevKernel") != std::string_view::npos) {
      buf_.append(",\"pg_name\":");
      json::append_escaped(buf_, pg_name);
    }
    // GPU-to-GPU sync dependencies (sorted by position, so one cursor serves all nodes).
    const auto& gpu_sync = linked_.gpu_sync_deps;
    if (gpu_sync_next_ < gpu_sync.size() && gpu_sync[gpu_sync_next_].gpu_position == k) {
      buf_.append(",\"sync_dep\":[");
      for (bool first_dep = true;
           gpu_sync_next_ < gpu_sync.size() && gpu_sync[gpu_sync_next_].gpu_position == k;
           ++gpu_sync_next_, first_dep = false) {
        if (!first_dep) buf_.push_back(',');
        append_uint(gpu_sync[gpu_sync_next_].dep_id);
      }
      buf_.push_back(']');
    }
    buf_.push_back('}');
  }

  static std::string_view category_name(DeviceCategory c) {
    switch (c) {
      case DeviceCategory::kKernel:
        return "kernel";
      case DeviceCategory::kGpuMemcpy:
        return "gpu_memcpy";
      case DeviceCategory::kGpuMemset:
        return "gpu_memset";
      default:
        return "gpu_op";
    }
  }

  const HostTrace& host_;
  const DeviceTrace& dev_;
  const LinkedTrace& linked_;
  const LinkOptions& opt_;
  std::string& buf_;
  // format's state: the numbers spliced in, and its cursors in linked_.gpu_sync_deps and
  // linked_.exec_tids.
  std::string id_text_, parent_text_, cpu_id_text_;
  Cut cut_;  // the host node written last, when it has GPU ops
  size_t gpu_sync_next_ = 0;
  size_t exec_next_ = 0;
};

// The document: the host trace's top level, its nodes in batches (formatted through `batches`,
// written in order), the extra members.
class Writer {
 public:
  Writer(const HostTrace& host, const DeviceTrace& device, const LinkedTrace& linked,
         const LinkOptions& options, const ByteSink& sink, const OrderedBatches& batches,
         uint32_t batch_nodes)
      : host_(host),
        dev_(device),
        linked_(linked),
        opt_(options),
        sink_(sink),
        batches_(batches),
        batch_nodes_(static_cast<uint32_t>(batches.range_size(batch_nodes < 1 ? 1 : batch_nodes))) {
  }

  Status run() {
    std::string extra;
    if (linked_.profiler && opt_.compat == Compat::kDefault) {
      extra = ",\"profiler_overhead\":";
      append_profiler_overhead_json(extra, *linked_.profiler);
    }
    std::string buf;
    CF_RETURN_IF_ERROR(write_document(
        buf, host_,
        [&] {
          buf.append("[\n");
          sink_(buf);
          buf.clear();
          const auto n = static_cast<uint32_t>(host_.nodes.size());
          const size_t count = (n + batch_nodes_ - 1) / batch_nodes_;
          CF_RETURN_IF_ERROR(batches_.run(
              count,
              [&](size_t b, std::string& out) {
                const auto begin = static_cast<uint32_t>(b * batch_nodes_);
                NodeFormatter(host_, dev_, linked_, opt_, out)
                    .format(begin, std::min(n, begin + batch_nodes_));
                return Status();
              },
              [&](std::string& out) {
                sink_(out);
                return Status();
              }));
          buf.append("\n]");
          return Status();
        },
        extra));
    sink_(buf);
    return Status();
  }

 private:
  const HostTrace& host_;
  const DeviceTrace& dev_;
  const LinkedTrace& linked_;
  const LinkOptions& opt_;
  const ByteSink& sink_;
  const OrderedBatches& batches_;
  const uint32_t batch_nodes_;
};

}  // namespace

Status write_document(std::string& buf, const HostTrace& host,
                      const std::function<Status()>& write_nodes, std::string_view extra_members) {
  buf.push_back('{');
  bool first = true;
  for (const TopLevelField& f : host.top_level) {
    if (!first) buf.push_back(',');
    first = false;
    buf.append(f.key_raw);
    buf.push_back(':');
    if (f.is_nodes) {
      CF_RETURN_IF_ERROR(write_nodes());
    } else {
      json::append_minified(buf, f.value_raw);
    }
  }
  buf.append(extra_members);
  buf.append("}\n");
  return Status();
}

Status write_et_plus(const HostTrace& host, const DeviceTrace& device, const LinkedTrace& linked,
                     const LinkOptions& options, const ByteSink& sink,
                     const OrderedBatches* batches, uint32_t batch_nodes) {
  return Writer(host, device, linked, options, sink, batches_or_in_turn(batches), batch_nodes)
      .run();
}

}  // namespace chakraflow
