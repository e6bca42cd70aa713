#include "stages/convert/et_plus_nodes.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <unordered_map>

#include "stages/common/file_io.h"
#include "stages/common/json_util.h"
#include "stages/common/move_to_targets.h"
#include "stages/common/prefault.h"
#include "stages/common/profile.h"
#include "stages/link/host_et_loader.h"

namespace chakraflow {
namespace {

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

// Protobuf strings must be UTF-8, but an escaped lone surrogate ("\udc80") unescapes to bytes
// that are not (the loader repairs only raw bytes). Returns `s`, or a copy in `arena` with the bad
// bytes replaced by '?', counted in `stats`.
// `where()` names the place for the report (called only for a string that needs repair).
template <class Where>
std::string_view valid_utf8(std::string_view s, std::deque<std::string>& arena, DataProblems& stats,
                            const Where& where) {
  if (simdjson::validate_utf8(s.data(), s.size())) return s;
  std::string& copy = arena.emplace_back(s);
  json::repair_utf8(copy);
  stats.add(StatKind::kEtPlusStringNotUtf8, std::string(where()));
  return copy;
}

std::optional<uint64_t> top_level_uint(std::string_view raw) {
  uint64_t v = 0;
  if (!json::parse_uint_token(raw, &v)) return std::nullopt;
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
    } else if (json::equals(key, "profiler_overhead")) {
      t.metadata.profiler = parse_profiler_overhead_json(f.value_raw);
      if (!t.metadata.profiler) t.stats.add(StatKind::kEtPlusProfilerOverheadUnreadable, "");
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

// Nodes per range of resolve_parents on the workers.
constexpr uint32_t kParentRange = 32768;

void resolve_parents(EtPlusTrace& t, const OrderedBatches& workers) {
  const profile::Span span("resolve parents");
  // Each node's parent index, in ranges: whether a range saw a flat-layout parent, and its first
  // process root.
  const auto n = static_cast<uint32_t>(t.nodes.size());
  const size_t per_range = workers.range_size(kParentRange);
  const size_t ranges = range_count(n, per_range);
  struct Found {
    uint32_t process_root = kNoNode;
    bool any_flat_parent = false;
  };
  std::vector<Found> found(ranges);
  for_each_range(workers, n, per_range, [&](size_t r, size_t begin, size_t end) {
    Found& f = found[r];
    for (auto i = static_cast<uint32_t>(begin); i < end; ++i) {
      EtPlusNode& node = t.nodes[i];
      if (node.has_parent_id) {
        uint32_t p = t.index_of(node.parent_id);
        node.parent = p == i ? kNoNode : p;
        f.any_flat_parent |= !node.parent_from_ctrl_deps;
      }
      if (f.process_root == kNoNode && is_process_root_name(node.name)) f.process_root = i;
    }
  });
  uint32_t process_root = kNoNode;
  bool any_flat_parent = false;
  for (const Found& f : found) {
    any_flat_parent |= f.any_flat_parent;
    if (process_root == kNoNode) process_root = f.process_root;
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
  if (host == nullptr || io_missing(n, f)) return {};
  const uint32_t at = n.wide == kNoNode ? n.io_at[f] : wide[n.wide].io_at[f];
  const uint32_t len = n.wide == kNoNode ? n.io_len[f] : wide[n.wide].io_len[f];
  return std::string_view(host->text.data() + n.byte_offset + at, len);
}

bool EtPlusTrace::same_io(const EtPlusNode& a, const EtPlusNode& b) const {
  if (a.byte_offset != b.byte_offset) return false;
  if (a.wide == kNoNode && b.wide == kNoNode) {
    return std::equal(a.io_at, a.io_at + kIoFieldCount, b.io_at) &&
           std::equal(a.io_len, a.io_len + kIoFieldCount, b.io_len);
  }
  for (int f = 0; f < kIoFieldCount; ++f) {
    const auto field = static_cast<IoField>(f);
    if (io_missing(a, field) != io_missing(b, field)) return false;
    const std::string_view x = raw_io(a, field), y = raw_io(b, field);
    if (x.data() != y.data() || x.size() != y.size()) return false;
  }
  return true;
}

std::optional<int64_t> EtPlusTrace::exec_tid(const EtPlusNode& n) const {
  auto it = std::lower_bound(exec_tids.begin(), exec_tids.end(),
                             std::pair<uint64_t, int64_t>(n.id, INT64_MIN));
  if (it == exec_tids.end() || it->first != n.id) return std::nullopt;
  return it->second;
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

// Nodes per range of the loaded nodes' order checks on the workers.
constexpr size_t kCheckRange = 32768;

// What follows reading the nodes (in id order): metadata, schema checks, file order, parents.
void finish_trace(const HostTrace& host, const ConvertOptions& options, FileOrder order,
                  EtPlusTrace& t, const OrderedBatches* workers = nullptr) {
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
    // An ET+ lists its nodes in id order: the file order is then the nodes' (no sort). Checked
    // and numbered in ranges on the workers.
    const size_t n = t.nodes.size();
    const OrderedBatches& run = batches_or_in_turn(workers);
    const size_t per_range = run.range_size(kCheckRange);
    for_each_range(run, n, per_range, [&](size_t, size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) t.file_order[i] = static_cast<uint32_t>(i);
    });
    const auto out_of_order = [&](size_t i) {
      return i > 0 && t.nodes[i].byte_offset < t.nodes[i - 1].byte_offset;
    };
    if (first_in_ranges(run, n, per_range, out_of_order) < n) {
      std::sort(t.file_order.begin(), t.file_order.end(), [&](uint32_t a, uint32_t b) {
        return t.nodes[a].byte_offset < t.nodes[b].byte_offset;
      });
    }
    for_each_range(run, n, per_range, [&](size_t, size_t begin, size_t end) {
      for (size_t k = begin; k < end; ++k) {
        t.nodes[t.file_order[k]].file_position = static_cast<uint32_t>(k);
      }
    });
  } else if (order == FileOrder::kFilePosition) {
    for (uint32_t i = 0; i < t.nodes.size(); ++i) t.file_order[t.nodes[i].file_position] = i;
  } else {
    for (uint32_t i = 0; i < t.nodes.size(); ++i) t.file_order[i] = i;
  }
  resolve_parents(t, batches_or_in_turn(workers));
  if (t.parents_renumbered) {
    t.stats.add(StatKind::kEtPlusOldParentIdsMapped, t.path);
  }
}

// GPU ops per range of linked_device_facts given workers.
constexpr size_t kGpuOpsPerRange = 8192;

// The GPU ops gpu_events[begin, end) copied into f.gpu_op, their strings into `arena`.
void copy_gpu_ops(const DeviceTrace& device, const LinkedTrace& linked, size_t begin, size_t end,
                  LinkedDeviceFacts& f, std::deque<std::string>& arena) {
  // Each distinct string copied once, and checked for UTF-8 once.
  std::unordered_map<std::string_view, bool> interned;  // copy -> valid UTF-8
  auto intern = [&](std::string_view s, bool* utf8) -> std::string_view {
    auto it = interned.find(s);
    if (it == interned.end()) {
      std::string_view copy = arena.emplace_back(s);
      it = interned.emplace(copy, simdjson::validate_utf8(copy.data(), copy.size())).first;
    }
    *utf8 = it->second;
    return it->first;
  };
  for (size_t k = begin; k < end; ++k) {
    const DeviceEvent& g = device[linked.gpu_events[k]];
    LinkedDeviceFacts::GpuOp& op = f.gpu_op[k];
    const std::string_view name = device.name(g);
    op.name = intern(name, &op.name_utf8);
    const std::string_view pg_name = device.pg_name(g);
    if (!pg_name.empty() && name.find("ncclDevKernel") != std::string_view::npos) {
      op.pg_name = intern(pg_name, &op.pg_name_utf8);
    }
    op.dur = g.dur;
    op.ts = g.ts;
    op.has_stream = g.has(kHasStream);
    if (op.has_stream) op.stream = g.stream;
  }
}

}  // namespace

LinkedDeviceFacts linked_device_facts(const DeviceTrace& device, const LinkedTrace& linked,
                                      const OrderedBatches* workers) {
  LinkedDeviceFacts f;
  f.host_op.resize(linked.ops.size());
  f.gpu_op.resize(linked.gpu_events.size());
  // Range r: its share of the host ops and of the GPU ops.
  const size_t n = linked.gpu_events.size();
  const size_t ranges = range_count_on(workers, n, kGpuOpsPerRange);
  f.arenas.resize(ranges);
  const size_t parts = f.arenas.size();
  batches_or_in_turn(workers).for_each(parts, [&](size_t r) {
    const size_t ops = linked.ops.size();
    for (size_t i = ops * r / parts; i < ops * (r + 1) / parts; ++i) {
      const DeviceEventIdx e = linked.ops[i].device_event;
      if (e.valid()) f.host_op[i] = {device[e].dur, device[e].ts};
    }
    copy_gpu_ops(device, linked, n * r / parts, n * (r + 1) / parts, f, f.arenas[r]);
  });
  return f;
}

namespace {

// Host nodes per range of place_nodes' index.
constexpr size_t kPlaceRange = 32768;

// Moves the nodes as read (in file order) to their output positions (`slot`, by host node, in id
// order) in `nodes` grown to `total`, in place (no second vector of nodes is alive); the growth's
// pages faulted in through `workers` first, the targets' index read from the host nodes in ranges
// on them, the moves' paths run on them.
void place_nodes(const HostTrace& host, const std::vector<uint32_t>& slot, size_t total,
                 std::vector<EtPlusNode>& nodes, const OrderedBatches& workers) {
  const profile::Span span("place nodes");
  reserve_prefaulted(nodes, total, workers);
  const size_t n = nodes.size();
  std::vector<uint32_t> target(n);  // by position as read
  for_each_range(workers, n, workers.range_size(kPlaceRange),
                 [&](size_t, size_t begin, size_t end) {
                   for (size_t i = begin; i < end; ++i) target[host.nodes[i].file_index] = slot[i];
                 });
  move_to_targets(nodes, target, total, &workers);
}

// What linking a range of host nodes adds besides the nodes themselves, joined in order after the
// ranges (link_nodes): the entries of the trace's side tables, indexed from 0 in the range (the
// nodes that point into them are listed by slot, to be moved by what the ranges before added).
struct LinkedRange {
  std::vector<std::pair<uint64_t, int64_t>> exec_tids;
  std::vector<uint64_t> sync_dep_ids;
  std::vector<uint32_t> sync_slots;  // nodes whose sync_dep_begin is into sync_dep_ids
  std::vector<CommNames> comm_names;
  std::vector<uint32_t> comm_slots;  // nodes whose comm_names is into comm_names
  std::deque<std::string> arena;     // repaired strings
  DataProblems stats;
  bool ids_ascending = true;
  uint64_t first_id = 0, last_id = 0;
  bool any = false;
};

// read_linked_nodes' rewrite of the nodes as read, placed at their output positions: what the
// ET+ writer would write into them (stages/link/et_plus_writer.h), node by node in its order, for
// a range of host nodes (each range with its own LinkedRange; the nodes are only read outside it).
class NodeLinker {
 public:
  NodeLinker(const HostTrace& host, EtPlusTrace& t, const LinkedDeviceFacts& device,
             const LinkedTrace& linked, const LinkOptions& link_options, uint32_t first_host,
             uint32_t first_slot, LinkedRange& out)
      : host_(host),
        t_(t),
        device_(device),
        linked_(linked),
        default_mode_(link_options.compat == Compat::kDefault),
        out_(out),
        position_(first_slot) {
    // The cursors where the range starts.
    const LinkedTrace::Cursors at = linked.cursors_at(first_host);
    gpu_sync_next_ = at.gpu_sync;
    exec_next_ = at.exec_tid;
  }

  // Host node i (at `slot`) and its GPU ops' nodes after it.
  void link(uint32_t i, uint32_t slot) {
    const LinkedHostOp& op = linked_.ops[i];
    // The GPU nodes are copies of the host node's text, before the host node's own changes.
    if (op.gpu_begin < op.gpu_end) as_read_ = t_.nodes[slot];
    link_host_node(i, slot);
    for (uint32_t k = op.gpu_begin; k < op.gpu_end; ++k) {
      link_gpu_node(op, k, slot + 1 + (k - op.gpu_begin));
    }
  }

 private:
  void link_host_node(uint32_t i, uint32_t slot) {
    EtPlusNode& n = t_.nodes[slot];
    const HostNode& h = host_.nodes[i];
    const LinkedHostOp& op = linked_.ops[i];
    n.id = op.new_id;
    n.file_position = position_++;
    in_id_order(n.id);
    // The writer replaces the value of the key the loader took the parent from (`parent` only
    // in the default mode).
    const bool remapped = h.parent_key == ParentKey::kCtrlDeps ||
                          (h.parent_key == ParentKey::kParent && default_mode_);
    if (op.parent_state != ParentState::kNone && remapped) {
      n.parent_id = op.new_parent;
      n.has_parent_id = true;
    }
    if (op.device_event.valid()) {
      const LinkedDeviceFacts::Timing& e = device_.host_op[i];
      set_timing(n, e.dur, op.exclusive, e.ts, op);
      if (exec_next_ < linked_.exec_tids.size() && linked_.exec_tids[exec_next_].first == i) {
        out_.exec_tids.emplace_back(op.new_id, linked_.exec_tids[exec_next_++].second);
      }
      // Chakra mode: the value its ET+ holds, Chakra's arithmetic (the writer's).
      if (!linked_.chakra_exclusive.empty()) n.exclusive_dur = linked_.chakra_exclusive[i].value;
    }
    const std::span<const uint64_t> sync = linked_.sync_deps[i];
    if (!sync.empty()) {
      begin_sync(n, slot);
      out_.sync_dep_ids.insert(out_.sync_dep_ids.end(), sync.begin(), sync.end());
      end_sync(n);
    }
  }

  // The GPU op at gpu_events[k] of host op `op`, at `slot`: a copy of the host node as read with
  // the writer's keys: ctrl_deps (the host node), timing, cat, stream, pg_name, sync_dep.
  void link_gpu_node(const LinkedHostOp& op, uint32_t k, uint32_t slot) {
    EtPlusNode& n = t_.nodes[slot];
    const LinkedDeviceFacts::GpuOp& g = device_.gpu_op[k];
    n = as_read_;
    n.id = linked_.gpu_new_id(op, k - op.gpu_begin);
    n.file_position = position_++;
    in_id_order(n.id);
    auto where = [&n] { return fmt::format("node {}", n.id); };
    n.name = g.name_utf8 ? g.name : valid_utf8(g.name, out_.arena, out_.stats, where);
    n.kind = n.name.find("process_group:init") != std::string_view::npos ? OpKind::kMetadata
                                                                         : OpKind::kGpu;
    if (n.op_schema_repaired) out_.stats.add(StatKind::kEtPlusStringNotUtf8, where());
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
      // The host node's entry (as read, in the trace's table) gives the collective name.
      const std::string_view pg_name =
          g.pg_name_utf8 ? g.pg_name : valid_utf8(g.pg_name, out_.arena, out_.stats, where);
      const std::string_view collective = t_.collective_name(n);
      n.comm_names = static_cast<uint32_t>(out_.comm_names.size());
      out_.comm_names.push_back({pg_name, collective});
      out_.comm_slots.push_back(slot);
    } else if (n.pg_name_repaired) {
      out_.stats.add(StatKind::kEtPlusStringNotUtf8, where());
    }
    const auto& gpu_sync = linked_.gpu_sync_deps;  // sorted by GPU position
    if (gpu_sync_next_ < gpu_sync.size() && gpu_sync[gpu_sync_next_].gpu_position == k) {
      begin_sync(n, slot);
      for (; gpu_sync_next_ < gpu_sync.size() && gpu_sync[gpu_sync_next_].gpu_position == k;
           ++gpu_sync_next_) {
        out_.sync_dep_ids.push_back(gpu_sync[gpu_sync_next_].dep_id);
      }
      end_sync(n);
    }
    if (n.io_missing) out_.stats.add(StatKind::kEtPlusNodeWithoutIo, where());
  }

  // The keys the writer appends after the node's own: they replace what the node had.
  void set_timing(EtPlusNode& n, TimeNs inclusive, TimeNs exclusive, TimeNs ts,
                  const LinkedHostOp& owner) const {
    n.inclusive_dur = json::micros_value(inclusive);
    n.exclusive_dur = json::micros_value(exclusive);
    n.ts = json::micros_value(ts);
    n.has_ts = true;
    // A null inter_thread_dep leaves the node's own value.
    if (owner.inter_thread_dep.valid()) {
      n.inter_thread_dep = linked_.ops[owner.inter_thread_dep.value].new_id;
    }
  }
  void begin_sync(EtPlusNode& n, uint32_t slot) const {
    n.sync_dep_begin = static_cast<uint32_t>(out_.sync_dep_ids.size());
    out_.sync_slots.push_back(slot);
  }
  void end_sync(EtPlusNode& n) const {
    n.sync_dep_count = static_cast<uint32_t>(out_.sync_dep_ids.size()) - n.sync_dep_begin;
  }
  void in_id_order(uint64_t id) {
    if (!out_.any) {
      out_.any = true;
      out_.first_id = id;
    } else {
      out_.ids_ascending &= id > out_.last_id;
    }
    out_.last_id = id;
  }

  const HostTrace& host_;
  EtPlusTrace& t_;
  const LinkedDeviceFacts& device_;
  const LinkedTrace& linked_;
  const bool default_mode_;
  LinkedRange& out_;
  EtPlusNode as_read_;
  uint32_t position_;         // in the ET+ the writer would write
  size_t gpu_sync_next_ = 0;  // cursor in linked.gpu_sync_deps (sorted by GPU position)
  size_t exec_next_ = 0;      // cursor in linked.exec_tids (by host op)
};

// read_linked_nodes, from the nodes as read (`t.nodes`, with their sync deps, strings
// and data problems in `t`).
StatusOr<EtPlusTrace> link_nodes(const HostTrace& host, EtPlusTrace t, LinkedDeviceFacts device,
                                 const LinkedTrace& linked, const LinkOptions& link_options,
                                 const ConvertOptions& options, const OrderedBatches& workers) {
  if (t.nodes.size() != host.nodes.size()) {
    return Status::errorf("{}: internal error: {} nodes read for {} host nodes", host.path,
                          t.nodes.size(), host.nodes.size());
  }
  t.path = host.path;
  t.device_arenas = std::move(device.arenas);  // the GPU names and pg_names
  // Each host node's output position; its GPU ops' nodes follow it.
  const auto hosts = static_cast<uint32_t>(host.nodes.size());
  std::vector<uint32_t> slot(hosts);
  size_t total = 0;
  for (uint32_t i = 0; i < hosts; ++i) {
    slot[i] = static_cast<uint32_t>(total);
    total += 1 + (linked.ops[i].gpu_end - linked.ops[i].gpu_begin);
  }
  place_nodes(host, slot, total, t.nodes, workers);
  // The nodes linked in ranges of host nodes, concurrently; what each adds to the trace's tables
  // joined in order, the nodes' indices into them moved by what the ranges before added.
  const auto per_range = static_cast<uint32_t>(workers.range_size(kLinkRangeNodes));
  const size_t ranges = range_count(hosts, per_range);
  std::vector<LinkedRange> parts(ranges);
  for_each_range(workers, hosts, per_range, [&](size_t r, size_t begin, size_t end) {
    if (begin >= end) return;
    const auto first = static_cast<uint32_t>(begin);
    NodeLinker linker(host, t, device, linked, link_options, first, slot[first], parts[r]);
    for (uint32_t i = first; i < end; ++i) linker.link(i, slot[i]);
  });
  // Ids are dense in the writer's order (stages/link/id_assignment.h): checked as they were set
  // (no pass over the nodes for it); sorted if not.
  bool ids_ascending = true;
  const LinkedRange* before = nullptr;
  for (LinkedRange& part : parts) {
    ids_ascending &= part.ids_ascending;
    if (part.any && before != nullptr) ids_ascending &= part.first_id > before->last_id;
    if (part.any) before = &part;
    const auto sync_base = static_cast<uint32_t>(t.sync_dep_ids.size());
    for (uint32_t s : part.sync_slots) t.nodes[s].sync_dep_begin += sync_base;
    t.sync_dep_ids.insert(t.sync_dep_ids.end(), part.sync_dep_ids.begin(), part.sync_dep_ids.end());
    const auto comm_base = static_cast<uint32_t>(t.comm_names.size());
    for (uint32_t s : part.comm_slots) t.nodes[s].comm_names += comm_base;
    t.comm_names.insert(t.comm_names.end(), part.comm_names.begin(), part.comm_names.end());
    t.exec_tids.insert(t.exec_tids.end(), part.exec_tids.begin(), part.exec_tids.end());
    if (!part.arena.empty()) t.device_arenas.push_back(std::move(part.arena));
    t.stats.merge(part.stats);
  }
  if (!ids_ascending) std::sort(t.exec_tids.begin(), t.exec_tids.end());
  // The writer's top-level "profiler_overhead" (default mode).
  if (link_options.compat == Compat::kDefault) t.metadata.profiler = linked.profiler;
  if (ids_ascending) {
    finish_trace(host, options, FileOrder::kIndex, t, &workers);
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
  finish_trace(host, options, FileOrder::kFilePosition, t, &workers);
  return t;
}

}  // namespace

EtPlusNodeSink::EtPlusNodeSink(std::string path, bool keep_host_nodes, size_t text_bytes,
                               size_t bytes_per_node)
    : keep_host_nodes_(keep_host_nodes), bytes_per_node_(bytes_per_node) {
  trace_.path = std::move(path);
  if (bytes_per_node > 0) trace_.nodes.reserve(text_bytes / bytes_per_node);
}

namespace {

// The text a file holds, to reserve room for its nodes: a gzip'd file's inflated size (its
// trailer's; its own size would reserve for a twentieth of the nodes, and the vector grown by
// copying faults in twice its final size), at most 128 times its own (a corrupt trailer asks for
// no more than that); 0 when it is no regular file.
size_t text_bytes_to_reserve_for(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return 0;
  return static_cast<size_t>(std::min<uint64_t>(input_text_size(path), uint64_t{size} * 128));
}

}  // namespace

EtPlusNodeSink EtPlusNodeSink::for_linking(std::string path) {
  // Room for the GPU ops' nodes too (a node of a host ET takes 300 bytes or more of its text).
  const size_t text = text_bytes_to_reserve_for(path);
  return EtPlusNodeSink(std::move(path), /*keep_host_nodes=*/true, text, 300);
}

void EtPlusNodeSink::restart() {
  trace_.nodes.clear();
  trace_.sync_dep_ids.clear();
  trace_.exec_tids.clear();
  trace_.comm_names.clear();
  trace_.wide.clear();
  trace_.arena.clear();
  trace_.more_arenas.clear();
  trace_.stats = DataProblems();
}

std::unique_ptr<HostNodeSink> EtPlusNodeSink::shard(size_t text_bytes) const {
  return std::make_unique<EtPlusNodeSink>(trace_.path, keep_host_nodes_, text_bytes,
                                          bytes_per_node_);
}

void EtPlusNodeSink::reserve_more(size_t nodes, const OrderedBatches& workers) {
  reserve_prefaulted(trace_.nodes, trace_.nodes.size() + nodes, workers);
}

void EtPlusNodeSink::append(HostNodeSink&& shard) {
  EtPlusTrace& t = trace_;
  EtPlusTrace& s = static_cast<EtPlusNodeSink&>(shard).trace_;
  const auto sync_base = static_cast<uint32_t>(t.sync_dep_ids.size());
  const auto comm_base = static_cast<uint32_t>(t.comm_names.size());
  const auto wide_base = static_cast<uint32_t>(t.wide.size());
  const size_t first = t.nodes.size();
  t.nodes.insert(t.nodes.end(), s.nodes.begin(), s.nodes.end());
  for (size_t i = first; i < t.nodes.size(); ++i) {
    EtPlusNode& n = t.nodes[i];
    if (n.sync_dep_count > 0) n.sync_dep_begin += sync_base;
    if (n.comm_names != kNoNode) n.comm_names += comm_base;
    if (n.wide != kNoNode) n.wide += wide_base;
  }
  t.wide.insert(t.wide.end(), s.wide.begin(), s.wide.end());
  t.sync_dep_ids.insert(t.sync_dep_ids.end(), s.sync_dep_ids.begin(), s.sync_dep_ids.end());
  t.exec_tids.insert(t.exec_tids.end(), s.exec_tids.begin(), s.exec_tids.end());
  t.comm_names.insert(t.comm_names.end(), s.comm_names.begin(), s.comm_names.end());
  if (!s.arena.empty()) t.more_arenas.push_back(std::move(s.arena));
  t.stats.merge(s.stats);
}

Status EtPlusNodeSink::node(const HostNode& h, const HostNodeDetail& d) {
  EtPlusTrace& t = trace_;
  EtPlusNode& n = t.nodes.emplace_back();
  n.id = h.id;
  n.byte_offset = h.byte_offset;
  n.exclusive_dur = d.exclusive_dur;
  n.inclusive_dur = d.inclusive_dur;
  n.ts = d.ts;
  n.has_ts = d.has_ts;
  n.inter_thread_dep = d.inter_thread_dep;
  if (d.has_exec_tid) t.exec_tids.emplace_back(h.id, d.exec_tid);
  n.stream = d.stream;
  n.has_stream = d.has_stream;
  n.stream_given = d.stream_given;
  n.device = d.device;
  if (!d.sync_deps.empty()) {
    n.sync_dep_begin = static_cast<uint32_t>(t.sync_dep_ids.size());
    t.sync_dep_ids.insert(t.sync_dep_ids.end(), d.sync_deps.begin(), d.sync_deps.end());
    n.sync_dep_count = static_cast<uint32_t>(d.sync_deps.size());
  }
  n.tid = d.int_attr[kTid];
  auto where = [&n] { return fmt::format("node {}", n.id); };
  if (d.op_schema_not_string) t.stats.add(StatKind::kEtPlusOpSchemaNotString, where());
  if (d.pg_name_not_string) t.stats.add(StatKind::kEtPlusPgNameNotString, where());
  if (d.collective_name_not_string) {
    t.stats.add(StatKind::kEtPlusCollectiveNameNotString, where());
  }
  // The strings written to the .et. One that lies in the node's text, as written (no escape),
  // is valid: the loader's parse checked that text (or repaired it); only an unescaped copy
  // (which an escaped lone surrogate makes invalid) needs the check.
  auto checked = [&](std::string_view s) {
    const bool in_text =
        s.data() >= h.raw.data() && s.data() + s.size() <= h.raw.data() + h.raw.size();
    return in_text ? s : valid_utf8(s, t.arena, t.stats, where);
  };
  n.name = checked(h.name);
  n.op_schema = checked(d.op_schema);
  n.op_schema_repaired = n.op_schema.data() != d.op_schema.data();
  const std::string_view pg_name = checked(d.pg_name);
  n.pg_name_repaired = pg_name.data() != d.pg_name.data();
  n.pg_name_from_attr = d.pg_name_from_attr;
  t.set_comm_names(n, pg_name, d.collective_name);
  if (n.name.find("process_group:init") != std::string_view::npos) {
    n.kind = OpKind::kMetadata;
  } else {
    n.kind = d.has_cat ? OpKind::kGpu : OpKind::kCpu;
  }
  if (h.parent_key != ParentKey::kNone) {
    n.parent_id = h.parent;
    n.has_parent_id = true;
    n.parent_from_ctrl_deps = h.parent_key == ParentKey::kCtrlDeps;
  }
  // The IOInfo lists, where they lie in the node's text (the writer renders them). A missing
  // list is written as [] (Chakra would stop with a KeyError) and counted.
  static_assert(kIoFieldCount == kHostIoLists);
  if (h.raw.size() >= UINT32_MAX) {
    return Status::errorf("{}: byte {}: node id {}: node larger than 4 GiB", t.path, h.byte_offset,
                          h.id);
  }
  // The attributes and IOInfo spans in the node's narrow fields where all fit, else in a side
  // entry (EtPlusNode::wide).
  const int64_t attrs[5] = {d.int_attr[kRfId], d.int_attr[kFwParent], d.int_attr[kSeqId],
                            d.int_attr[kScope], d.int_attr[kFwTid]};
  bool narrow = true;
  bool missing = false;
  for (int64_t a : attrs) narrow &= a >= INT32_MIN && a <= INT32_MAX;
  for (int f = 0; f < kIoFieldCount; ++f) {
    const Span io = d.io[f];
    missing |= io.empty();
    narrow &= io.empty() || (io.begin < EtPlusNode::kIoMissing &&
                             io.end - io.begin <= std::numeric_limits<uint16_t>::max());
  }
  if (narrow) {
    for (int k = 0; k < 5; ++k) n.attrs[k] = static_cast<int32_t>(attrs[k]);
    for (int f = 0; f < kIoFieldCount; ++f) {
      const Span io = d.io[f];
      n.io_at[f] = io.empty() ? EtPlusNode::kIoMissing : static_cast<uint16_t>(io.begin);
      n.io_len[f] = static_cast<uint16_t>(io.end - io.begin);
    }
  } else {
    n.wide = static_cast<uint32_t>(t.wide.size());
    WideFields& w = t.wide.emplace_back();
    std::copy(attrs, attrs + 5, w.attrs);
    for (int f = 0; f < kIoFieldCount; ++f) {
      const Span io = d.io[f];
      w.io_at[f] = io.empty() ? UINT32_MAX : io.begin;
      w.io_len[f] = io.end - io.begin;
    }
  }
  if (missing) t.stats.add(StatKind::kEtPlusNodeWithoutIo, where());
  n.io_missing = missing;
  return Status();
}

StatusOr<EtPlusTrace> read_linked_nodes(const HostTrace& host, EtPlusNodeSink nodes,
                                        LinkedDeviceFacts device, const LinkedTrace& linked,
                                        const LinkOptions& link_options,
                                        const ConvertOptions& options,
                                        const OrderedBatches* workers) {
  return link_nodes(host, nodes.take_nodes(), std::move(device), linked, link_options, options,
                    batches_or_in_turn(workers));
}

namespace {

// The nodes of an ET+ or host ET text, read in the loader's pass.
StatusOr<EtPlusFile> et_plus_from(const std::string& path, EtPlusNodeSink& sink,
                                  StatusOr<HostTrace> host, const ConvertOptions& options,
                                  const OrderedBatches* workers) {
  if (!host.ok()) return host.status();
  EtPlusFile file;
  file.trace = sink.take_nodes();
  // The nodes came in file order: id order already for ET+ (no sort), children before
  // parents in a host ET. Whether they are in id order, and the first repeated id, are found in
  // ranges on the workers (the nodes' ids lie 184 bytes apart): one pass when the ids ascend.
  std::vector<EtPlusNode>& nodes = file.trace.nodes;
  const size_t n = nodes.size();
  const OrderedBatches& run = batches_or_in_turn(workers);
  auto first_where = [&](auto&& pred) {
    return first_in_ranges(run, n, run.range_size(kCheckRange),
                           [&](size_t i) { return i > 0 && pred(i); });
  };
  size_t repeat = first_where([&](size_t i) { return nodes[i].id <= nodes[i - 1].id; });
  if (repeat < n && first_where([&](size_t i) { return nodes[i].id < nodes[i - 1].id; }) < n) {
    std::stable_sort(nodes.begin(), nodes.end(),
                     [](const EtPlusNode& a, const EtPlusNode& b) { return a.id < b.id; });
    repeat = first_where([&](size_t i) { return nodes[i].id == nodes[i - 1].id; });
  }
  if (repeat < n) {
    return Status::errorf("{}: duplicate node id {} (nodes at byte {} and byte {})", path,
                          nodes[repeat].id, nodes[repeat - 1].byte_offset,
                          nodes[repeat].byte_offset);
  }
  std::sort(file.trace.exec_tids.begin(), file.trace.exec_tids.end());
  file.host = std::make_unique<HostTrace>(std::move(*host));
  finish_trace(*file.host, options, FileOrder::kByteOffset, file.trace, workers);
  return file;
}

}  // namespace

StatusOr<EtPlusFile> load_et_plus(const std::string& path, const ConvertOptions& options,
                                  size_t window_bytes, const ParseShards& shards) {
  // Nodes take 500 to 1,000 bytes of JSON: reserve for the smaller, rather than grow by copying.
  EtPlusNodeSink sink(path, /*keep_host_nodes=*/false, text_bytes_to_reserve_for(path), 500);
  return et_plus_from(path, sink, load_host_trace(path, &sink, window_bytes, shards), options,
                      shards.workers);
}

StatusOr<EtPlusFile> parse_et_plus(std::string path, std::string text,
                                   const ConvertOptions& options, size_t window_bytes) {
  EtPlusNodeSink sink(path, /*keep_host_nodes=*/false, text.size(), 500);
  StatusOr<HostTrace> host = parse_host_trace(path, std::move(text), window_bytes, &sink);
  return et_plus_from(path, sink, std::move(host), options, nullptr);
}

}  // namespace chakraflow
