#include "stages/id_assignment.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

namespace chakraflow {
namespace {

constexpr std::string_view kThreadRoot = "[pytorch|profiler|execution_trace|thread]";
constexpr std::string_view kThreadRootLegacy = "[pytorch|profiler|execution_graph|thread]";

}  // namespace

LinkedTrace assign_ids(const LinkInputs& in, const LinkOptions& options, LinkStats stats) {
  const auto& nodes = in.host.nodes;
  const DeviceTrace& dev = in.device;
  LinkedTrace out;
  out.stats = std::move(stats);
  out.ops.resize(nodes.size());
  out.sync_deps.resize(nodes.size());

  // GPU ops grouped by launching CPU event; trace order of gpu_ops is (ts, file order).
  std::unordered_map<uint32_t, std::vector<DeviceEventIdx>> gpu_by_cpu_event;
  for (DeviceEventIdx g : in.launchers.gpu_ops) {
    DeviceEventIdx cpu = in.launchers.cpu_op_of[g.value];
    if (cpu.valid()) gpu_by_cpu_event[cpu.value].push_back(g);
  }

  // rf_id -> host op paired with it (the first by id), for inter-thread dependencies.
  std::unordered_map<uint64_t, HostNodeIdx> host_by_rf;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    DeviceEventIdx e = in.mapping.device_of[i];
    if (e.valid() && dev[e].rf_id != 0) host_by_rf.try_emplace(dev[e].rf_id, HostNodeIdx{i});
  }

  uint64_t next_id = 0;
  uint64_t attached_gpu = 0;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    LinkedHostOp& op = out.ops[i];
    op.new_id = next_id++;
    op.device_event = in.mapping.device_of[i];
    op.gpu_begin = static_cast<uint32_t>(out.gpu_events.size());
    if (op.device_event.valid()) {
      op.exclusive = in.exclusive[op.device_event];
      // Chakra attaches a CPU event's GPU ops to every host op paired with it; in default mode
      // only one host op is paired with an event (see map_by_rf_id).
      auto it = gpu_by_cpu_event.find(op.device_event.value);
      if (it != gpu_by_cpu_event.end()) {
        for (DeviceEventIdx g : it->second) out.gpu_events.push_back(g);
        next_id += it->second.size();
        attached_gpu += it->second.size();
      }
      // Inter-thread dependency: Chakra goes through the rf_id of the op found before the gap,
      // and keeps it only if that op's host op was linked earlier (lower original id).
      DeviceEventIdx dep_event = in.gaps[op.device_event];
      if (dep_event.valid()) {
        HostNodeIdx dep_host;
        if (options.compat == Compat::kChakra || options.mode != MatchMode::kSequence) {
          uint64_t rf = dev[dep_event].rf_id;
          auto hit = rf != 0 ? host_by_rf.find(rf) : host_by_rf.end();
          if (hit != host_by_rf.end()) dep_host = hit->second;
        } else {
          dep_host = in.mapping.host_of[dep_event.value];
        }
        if (dep_host.valid() && dep_host.value < i) op.inter_thread_dep = dep_host;
      }
    }
    op.gpu_end = static_cast<uint32_t>(out.gpu_events.size());
  }
  out.node_count = next_id;

  // Unlinked GPU ops: their launching CPU op has no host op.
  uint64_t launched = 0;
  for (DeviceEventIdx g : in.launchers.gpu_ops) launched += in.launchers.cpu_op_of[g.value].valid();
  if (launched > attached_gpu) {
    out.stats.add_count("GPU ops whose launching CPU op has no host op", launched - attached_gpu);
  }

  // Parents.
  auto index_of = [&nodes](uint64_t id) -> int64_t {
    auto it = std::lower_bound(nodes.begin(), nodes.end(), id,
                               [](const HostNode& n, uint64_t v) { return n.id < v; });
    return it != nodes.end() && it->id == id ? it - nodes.begin() : -1;
  };
  std::unordered_map<uint64_t, uint64_t> thread_root_by_tid;  // tid -> new id
  int64_t process_root = index_of(1);
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name == kThreadRoot || nodes[i].name == kThreadRootLegacy) {
      thread_root_by_tid.try_emplace(nodes[i].tid, out.ops[i].new_id);
    }
  }
  std::unordered_map<uint64_t, uint64_t> dangling;  // Chakra mode: missing parent -> fresh id
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const HostNode& n = nodes[i];
    LinkedHostOp& op = out.ops[i];
    if (n.parent_key == ParentKey::kNone) continue;
    int64_t p = index_of(n.parent);
    if (p >= 0) {
      op.new_parent = out.ops[static_cast<size_t>(p)].new_id;
      op.parent_state = static_cast<uint32_t>(p) == i ? ParentState::kSelf : ParentState::kFound;
      continue;
    }
    if (options.compat == Compat::kChakra) {
      auto [it, inserted] = dangling.try_emplace(n.parent, 0);
      if (inserted) it->second = next_id++;
      op.new_parent = it->second;
      op.parent_state = ParentState::kDangling;
      continue;
    }
    auto root = thread_root_by_tid.find(n.tid);
    if (root != thread_root_by_tid.end() && root->second != op.new_id) {
      op.new_parent = root->second;
    } else if (process_root >= 0) {
      op.new_parent = out.ops[static_cast<size_t>(process_root)].new_id;
    } else {
      op.new_parent = op.new_id;
    }
    op.parent_state = ParentState::kReattached;
    out.stats.add("host node whose parent is missing (reattached to its thread root)",
                  fmt::format("node {} (parent {}) at byte {}", n.id, n.parent, n.byte_offset));
  }
  return out;
}

}  // namespace chakraflow
