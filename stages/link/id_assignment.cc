#include "stages/link/id_assignment.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "stages/common/prefault.h"
#include "stages/common/profile.h"
#include "stages/common/radix_sort.h"

namespace chakraflow {
namespace {

constexpr std::string_view kThreadRoot = "[pytorch|profiler|execution_trace|thread]";
constexpr std::string_view kThreadRootLegacy = "[pytorch|profiler|execution_graph|thread]";

// The GPU nodes of the output by device event: position in gpu_events and new id.
class GpuNodeIndex {
 public:
  struct Node {
    uint32_t event = 0;
    uint32_t position = 0;
    uint64_t id = 0;
  };
  explicit GpuNodeIndex(const LinkedTrace& linked) {
    nodes_.reserve(linked.gpu_events.size());
    for (const LinkedHostOp& op : linked.ops) {
      for (uint32_t k = op.gpu_begin; k < op.gpu_end; ++k) {
        nodes_.push_back({linked.gpu_events[k].value, k, linked.gpu_new_id(op, k - op.gpu_begin)});
      }
    }
    stable_radix_sort(nodes_, [](const Node& n) { return n.event; });
  }
  const Node* find(DeviceEventIdx e) const {
    auto it = std::lower_bound(nodes_.begin(), nodes_.end(), e.value,
                               [](const Node& n, uint32_t v) { return n.event < v; });
    return it != nodes_.end() && it->event == e.value ? &*it : nullptr;
  }

 private:
  std::vector<Node> nodes_;
};

// The host op that takes over a CPU waiter's wait: the waiter's own, else that of the next CPU op
// of its thread (in (ts, file order)) that has one. Per-thread tables are built on first use.
class HostWaiterResolver {
 public:
  HostWaiterResolver(const DeviceTrace& device, const HostDeviceMap& mapping)
      : device_(device), mapping_(mapping) {}

  HostNodeIdx resolve(DeviceEventIdx waiter) {
    HostNodeIdx own = mapping_.host_of[waiter.value];
    if (own.valid()) return own;
    if (threads_.empty()) build();
    auto it = threads_.find(device_[waiter].tid);
    if (it == threads_.end()) return {};
    Thread& t = it->second;
    if (t.next_linked.empty()) {
      // next_linked[p]: the first position >= p whose op has a host op (ops.size() if none).
      t.next_linked.resize(t.ops.size() + 1, static_cast<uint32_t>(t.ops.size()));
      for (size_t p = t.ops.size(); p-- > 0;) {
        t.next_linked[p] = mapping_.host_of[t.ops[p].value].valid() ? static_cast<uint32_t>(p)
                                                                    : t.next_linked[p + 1];
      }
    }
    TimeNs ts = device_[waiter].ts;
    auto p = std::lower_bound(t.ops.begin(), t.ops.end(), ts,
                              [this](DeviceEventIdx e, TimeNs v) { return device_[e].ts < v; });
    while (p != t.ops.end() && *p != waiter) ++p;
    if (p == t.ops.end()) return {};
    uint32_t q = t.next_linked[static_cast<size_t>(p - t.ops.begin())];
    return q < t.ops.size() ? mapping_.host_of[t.ops[q].value] : HostNodeIdx{};
  }

 private:
  struct Thread {
    std::vector<DeviceEventIdx> ops;  // (ts, file order)
    std::vector<uint32_t> next_linked;
  };
  void build() {
    for (auto& ops : cpu_ops_by_thread(device_)) {
      int64_t tid = device_[ops.front()].tid;
      threads_[tid].ops = std::move(ops);
    }
  }

  const DeviceTrace& device_;
  const HostDeviceMap& mapping_;
  std::unordered_map<int64_t, Thread> threads_;
};

// Translates the synchronization dependencies to new ids (see id_assignment.h).
void add_sync_dependencies(const LinkInputs& in, LinkedTrace& out) {
  const SyncDependencies& sync = *in.sync;
  const GpuNodeIndex nodes(out);
  HostWaiterResolver waiters(in.device, in.mapping);
  SyncSummary& summary = out.sync;
  summary.calls = sync.calls.size();
  summary.inferred = sync.inferred;

  // Per call, for the report: does it yield dependencies (else it is outside the linked window).
  for (const SyncCall& c : sync.calls) {
    if (c.problem != SyncProblem::kNone) continue;
    ++summary.calls_resolved;
    bool written = c.kind == SyncKind::kStreamWait ? nodes.find(c.waiter) != nullptr
                                                   : waiters.resolve(c.waiter).valid();
    for (uint32_t k = c.targets_begin; written && k < c.targets_end; ++k) {
      if (nodes.find(sync.targets[k])) {
        ++summary.calls_emitted;
        break;
      }
    }
  }

  // CPU waits -> host nodes, again only the last target per stream once waits are merged.
  std::vector<std::pair<uint32_t, DeviceEventIdx>> host_waits;
  for (const SyncEdge& e : sync.cpu_waits) {
    HostNodeIdx h = waiters.resolve(e.waiter);
    if (!h.valid()) {
      ++summary.dropped_unlinked_waiter;
    } else if (nodes.find(e.target) == nullptr) {
      ++summary.dropped_orphan_target;
    } else {
      host_waits.emplace_back(h.value, e.target);
    }
  }
  std::sort(host_waits.begin(), host_waits.end());
  std::vector<DeviceEventIdx> targets;
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < host_waits.size();) {
    uint32_t h = host_waits[i].first;
    targets.clear();
    for (; i < host_waits.size() && host_waits[i].first == h; ++i)
      targets.push_back(host_waits[i].second);
    keep_last_per_stream(in.device, targets);
    ids.clear();
    for (DeviceEventIdx t : targets) ids.push_back(nodes.find(t)->id);
    std::sort(ids.begin(), ids.end());
    out.sync_deps.add(h, ids);  // h ascending (host_waits is sorted)
    summary.host_deps += ids.size();
  }

  // GPU waits -> GPU nodes.
  for (const SyncEdge& e : sync.gpu_waits) {
    const GpuNodeIndex::Node* w = nodes.find(e.waiter);
    const GpuNodeIndex::Node* t = nodes.find(e.target);
    if (w == nullptr) {
      ++summary.dropped_unlinked_waiter;
    } else if (t == nullptr) {
      ++summary.dropped_orphan_target;
    } else {
      out.gpu_sync_deps.push_back({w->position, t->id});
    }
  }
  std::sort(out.gpu_sync_deps.begin(), out.gpu_sync_deps.end());
  out.gpu_sync_deps.erase(std::unique(out.gpu_sync_deps.begin(), out.gpu_sync_deps.end()),
                          out.gpu_sync_deps.end());
  summary.gpu_deps = out.gpu_sync_deps.size();

  out.stats.add_count(StatKind::kSyncDepTargetNotWritten, summary.dropped_orphan_target);
  out.stats.add_count(StatKind::kSyncDepWaiterNotWritten, summary.dropped_unlinked_waiter);
}

// The index of `id` in the ascending `ids`, or -1: searched from `hint` outwards, in steps that
// double, then by bisection (O(log distance)).
int64_t find_id_near(const std::vector<uint64_t>& ids, uint64_t id, size_t hint) {
  const size_t n = ids.size();
  if (n == 0) return -1;
  hint = std::min(hint, n - 1);
  size_t lo = 0, hi = n;  // the answer is in [lo, hi)
  if (ids[hint] < id) {
    lo = hint + 1;
    size_t bound = lo, step = 1;
    while (bound < n && ids[bound] < id) {
      lo = bound + 1;
      bound += step;
      step *= 2;
    }
    hi = std::min(bound + 1, n);
  } else {
    hi = hint + 1;
    lo = hint;
    size_t step = 1;
    while (lo > 0 && ids[lo - 1] >= id) {
      hi = lo;
      lo = lo > step ? lo - step : 0;
      step *= 2;
    }
  }
  auto it = std::lower_bound(ids.begin() + static_cast<ptrdiff_t>(lo),
                             ids.begin() + static_cast<ptrdiff_t>(hi), id);
  return it != ids.begin() + static_cast<ptrdiff_t>(hi) && *it == id ? it - ids.begin() : -1;
}

// GPU ops grouped by the host op that owns their launching CPU event (HostDeviceMap::host_of: the
// first host op paired with it), in the trace order of gpu_ops ((ts, file order)): the ops of host
// op h are ops[begin[h] .. begin[h + 1]). A launch whose CPU event no host op owns is not
// attached.
struct GpuOpsByHost {
  std::vector<uint32_t> begin;
  std::vector<DeviceEventIdx> ops;

  // A counting sort over the host ops, not over every device event.
  GpuOpsByHost(const LinkInputs& in, size_t host_ops) : begin(host_ops + 2, 0) {
    auto owner_of = [&in](DeviceEventIdx g) {
      const DeviceEventIdx cpu = in.launchers.cpu_op_of[g.value];
      return cpu.valid() ? in.mapping.host_of[cpu.value] : HostNodeIdx();
    };
    // Counts sit two places up, so that placing the ops moves each host op's start to its end,
    // which is the next one's start.
    for (DeviceEventIdx g : in.launchers.gpu_ops) {
      if (const HostNodeIdx h = owner_of(g); h.valid()) ++begin[h.value + 2];
    }
    for (size_t h = 2; h < begin.size(); ++h) begin[h] += begin[h - 1];
    ops.resize(begin.back());
    for (DeviceEventIdx g : in.launchers.gpu_ops) {
      if (const HostNodeIdx h = owner_of(g); h.valid()) ops[begin[h.value + 1]++] = g;
    }
  }
};

// rf_id -> host op paired with it (the first by id), for inter-thread dependencies: (rf_id, host
// op) pairs sorted by rf_id, each rf_id's first host op first (added in host op order, the sort
// stable), on `workers` when given.
class HostByRfId {
 public:
  HostByRfId(const LinkInputs& in, const OrderedBatches* workers) {
    for (uint32_t i = 0; i < in.host.nodes.size(); ++i) {
      DeviceEventIdx e = in.mapping.device_of[i];
      if (e.valid() && in.device[e].rf_id != 0) pairs_.emplace_back(in.device[e].rf_id, i);
    }
    stable_radix_sort(
        pairs_, [](const auto& p) { return p.first; }, workers);
  }
  HostNodeIdx find(uint64_t rf) const {
    auto it = std::lower_bound(pairs_.begin(), pairs_.end(), std::pair<uint64_t, uint32_t>(rf, 0));
    return it != pairs_.end() && it->first == rf ? HostNodeIdx{it->second} : HostNodeIdx();
  }

 private:
  std::vector<std::pair<uint64_t, uint32_t>> pairs_;
};

// Host op i's inter-thread dependency, from the dependency event its matched `event` has. Chakra
// goes through the rf_id of the op found before the gap, and keeps it only if that op's host op
// was linked earlier (lower original id). Events of a trace without rf_ids (sequence mode) are
// paired with host ops directly.
HostNodeIdx inter_thread_dep(const LinkInputs& in, const LinkOptions& options,
                             const HostByRfId& host_by_rf, DeviceEventIdx event, uint32_t i) {
  const DeviceEventIdx dep_event = in.gaps[event];
  if (!dep_event.valid()) return {};
  HostNodeIdx dep_host;
  if (options.mode != MatchMode::kSequence) {
    const uint64_t rf = in.device[dep_event].rf_id;
    if (rf != 0) dep_host = host_by_rf.find(rf);
  } else {
    dep_host = in.mapping.host_of[dep_event.value];
  }
  return dep_host.valid() && dep_host.value < i ? dep_host : HostNodeIdx();
}

// Host op i's exclusive duration as Chakra computed it, clamped at 0 (counted).
void copy_chakra_exclusive(const LinkInputs& in, uint32_t i, DeviceEventIdx event, PyNumber& x,
                           DataProblems& stats) {
  x = in.exclusive.chakra[event.value];
  if (x.value < 0) {
    stats.add(StatKind::kChakraExclusiveBelowZero,
              fmt::format("host node {}", in.host.nodes[i].id));
    x.value = 0;
  }
}

// Host ops per range of number_ops on the workers.
constexpr uint32_t kNumberRange = 32768;

// The ids: host nodes in original id order get dense ids from 0, each followed by its GPU ops,
// which are attached to it. Returns the next free id; counts the GPU ops attached.
uint64_t number_ops(const LinkInputs& in, const LinkOptions& options, LinkedTrace& out,
                    uint64_t* attached_gpu, const OrderedBatches& workers) {
  // The two indexes, concurrently.
  std::optional<GpuOpsByHost> gpu_index;
  std::optional<HostByRfId> rf_index;
  workers.for_each(2, [&](size_t task) {
    if (task == 0) {
      gpu_index.emplace(in, in.host.nodes.size());
    } else {
      rf_index.emplace(in, &workers);
    }
  });
  const GpuOpsByHost& gpu = *gpu_index;
  const HostByRfId& host_by_rf = *rf_index;
  // In ranges of host ops on the workers, twice: each op's event, exclusive time, inter-thread
  // dependency and count of GPU ops; then, the counts summed in order, its id and its GPU ops'
  // place in gpu_events (the same as one pass in order).
  const auto n = static_cast<uint32_t>(in.host.nodes.size());
  const size_t per_range = workers.range_size(kNumberRange);
  const size_t ranges = range_count(n, per_range);
  // Pass 1 keeps each op's GPU ops' place in GpuOpsByHost in gpu_begin and their count in
  // gpu_end (Chakra attaches a CPU event's GPU ops to every host op paired with it, the owner's
  // group; in default mode only one host op is paired with an event: see map_by_rf_id), and each
  // range's count of them.
  std::vector<DataProblems> problems(ranges);
  std::vector<uint32_t> gpu_before(ranges + 1, 0);  // GPU ops of the ranges before each
  for_each_range(workers, n, per_range, [&](size_t r, size_t begin, size_t end) {
    uint32_t count = 0;
    for (auto i = static_cast<uint32_t>(begin); i < end; ++i) {
      LinkedHostOp& op = out.ops[i];
      op.device_event = in.mapping.device_of[i];
      if (!op.device_event.valid()) continue;
      op.exclusive = in.exclusive[op.device_event];
      if (!in.exclusive.chakra.empty()) {
        copy_chakra_exclusive(in, i, op.device_event, out.chakra_exclusive[i], problems[r]);
      }
      if (const HostNodeIdx owner = in.mapping.host_of[op.device_event.value]; owner.valid()) {
        op.gpu_begin = gpu.begin[owner.value];
        op.gpu_end = gpu.begin[owner.value + 1] - op.gpu_begin;
        count += op.gpu_end;
      }
      op.inter_thread_dep = inter_thread_dep(in, options, host_by_rf, op.device_event, i);
    }
    gpu_before[r + 1] = count;
  });
  for (size_t r = 0; r < ranges; ++r) {
    gpu_before[r + 1] += gpu_before[r];
    out.stats.merge(problems[r]);
  }
  grow_prefaulted(out.gpu_events, gpu_before[ranges], workers);
  for_each_range(workers, n, per_range, [&](size_t r, size_t begin, size_t end) {
    uint32_t at = gpu_before[r];
    for (auto i = static_cast<uint32_t>(begin); i < end; ++i) {
      LinkedHostOp& op = out.ops[i];
      const uint32_t first = op.gpu_begin, count = op.gpu_end;
      op.new_id = uint64_t{i} + at;  // each host op after the ones before and their GPU ops
      std::copy(gpu.ops.begin() + first, gpu.ops.begin() + first + count,
                out.gpu_events.begin() + at);
      op.gpu_begin = at;
      at += count;
      op.gpu_end = at;
    }
  });
  *attached_gpu += gpu_before[ranges];
  return uint64_t{n} + gpu_before[ranges];
}

// Host op i (`n`) whose parent is not a host op: in Chakra mode a fresh dangling id per missing
// parent (from `*next_id`, in the order the ops come), else reattached to its thread's root, or
// the process root, or itself, and counted.
void reattach(const HostNode& n, uint32_t i, int64_t process_root,
              const std::unordered_map<uint64_t, uint64_t>& thread_root_by_tid,
              const LinkOptions& options, std::unordered_map<uint64_t, uint64_t>& dangling,
              uint64_t* next_id, LinkedTrace& out) {
  LinkedHostOp& op = out.ops[i];
  if (options.compat == Compat::kChakra) {
    auto [it, inserted] = dangling.try_emplace(n.parent, 0);
    if (inserted) it->second = (*next_id)++;
    op.new_parent = it->second;
    op.parent_state = ParentState::kDangling;
    return;
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
  out.stats.add(StatKind::kHostParentMissingReattached,
                fmt::format("node {} (parent {}) at byte {}", n.id, n.parent, n.byte_offset));
}

// Parents remapped to new ids. The ids are copied out (a binary search over the whole nodes
// missed the cache at every step), and a parent is looked for from its child outwards: it usually
// lies shortly before it. Both in ranges of host ops on `workers` (the thread roots found beside
// the copying); then the ops whose parent is missing, in order (reattach): what one pass in order
// gives.
void assign_parents(const LinkInputs& in, const LinkOptions& options, LinkedTrace& out,
                    uint64_t* next_id, const OrderedBatches& workers) {
  const auto& nodes = in.host.nodes;
  const size_t per_range = workers.range_size(kNumberRange);
  const size_t ranges = range_count(nodes.size(), per_range);
  std::vector<uint64_t> ids(nodes.size());
  std::vector<std::vector<uint32_t>> roots(ranges);  // the thread roots of each range, in order
  for_each_range(workers, nodes.size(), per_range, [&](size_t r, size_t begin, size_t end) {
    for (auto i = static_cast<uint32_t>(begin); i < end; ++i) {
      ids[i] = nodes[i].id;
      if (nodes[i].name == kThreadRoot || nodes[i].name == kThreadRootLegacy) {
        roots[r].push_back(i);
      }
    }
  });
  std::unordered_map<uint64_t, uint64_t> thread_root_by_tid;  // tid -> new id (the first root)
  for (const std::vector<uint32_t>& range_roots : roots) {
    for (uint32_t i : range_roots) thread_root_by_tid.try_emplace(nodes[i].tid, out.ops[i].new_id);
  }
  std::vector<std::vector<uint32_t>> missing(ranges);  // ops whose parent is not a host op
  for_each_range(workers, nodes.size(), per_range, [&](size_t r, size_t begin, size_t end) {
    for (auto i = static_cast<uint32_t>(begin); i < end; ++i) {
      const HostNode& n = nodes[i];
      if (n.parent_key == ParentKey::kNone) continue;
      const int64_t p = find_id_near(ids, n.parent, i);
      if (p < 0) {
        missing[r].push_back(i);
        continue;
      }
      LinkedHostOp& op = out.ops[i];
      op.new_parent = out.ops[static_cast<size_t>(p)].new_id;
      op.parent_state = static_cast<uint32_t>(p) == i ? ParentState::kSelf : ParentState::kFound;
    }
  });
  const int64_t process_root = find_id_near(ids, 1, 0);
  std::unordered_map<uint64_t, uint64_t> dangling;  // Chakra mode: missing parent -> fresh id
  for (const std::vector<uint32_t>& range_missing : missing) {
    for (uint32_t i : range_missing) {
      reattach(nodes[i], i, process_root, thread_root_by_tid, options, dangling, next_id, out);
    }
  }
}

}  // namespace

// LinkedTrace::exec_tids. Each host tid's home is the device thread most of its matched ops ran
// on (ties: the lower tid); a device thread is the host tid whose home it is (several: the one
// with more ops there, then the lower). An op whose event ran off its tid's home ran on the
// host tid of its event's thread, else on the device tid itself. Counted and listed in ranges of
// ops on `workers`: the same list.
std::vector<std::pair<uint32_t, int64_t>> exec_tids(const LinkInputs& in,
                                                    const std::vector<LinkedHostOp>& ops,
                                                    const OrderedBatches& workers) {
  using Pair = std::pair<uint64_t, int64_t>;  // (host tid, device tid)
  // The ops' events lie all over the device trace: each one's thread is asked for a few ops ahead.
  constexpr uint32_t kAhead = 16;
  auto prefetch_ahead = [&](size_t i, size_t end) {
    if (i + kAhead < end && ops[i + kAhead].device_event.valid()) {
      __builtin_prefetch(&in.device[ops[i + kAhead].device_event].tid);
    }
  };
  // Ops per (host tid, device tid), counted in ranges of ops on the workers and summed. Ops come
  // in long runs of one pair: the last pair's counter saves most lookups.
  const size_t per_range = workers.range_size(kNumberRange);
  const size_t ranges = range_count(ops.size(), per_range);
  std::vector<std::map<Pair, uint64_t>> range_counts(ranges);
  for_each_range(workers, ops.size(), per_range, [&](size_t r, size_t begin, size_t end) {
    std::map<Pair, uint64_t>& count = range_counts[r];
    Pair last_key;
    uint64_t* last_count = nullptr;
    for (size_t i = begin; i < end; ++i) {
      prefetch_ahead(i, end);
      if (!ops[i].device_event.valid()) continue;
      const Pair key{in.host.nodes[i].tid, in.device[ops[i].device_event].tid};
      if (last_count == nullptr || key != last_key) {
        last_count = &count[key];
        last_key = key;
      }
      ++*last_count;
    }
  });
  std::map<Pair, uint64_t> count;
  for (const std::map<Pair, uint64_t>& part : range_counts) {
    for (const auto& [key, n] : part) count[key] += n;
  }
  std::map<uint64_t, std::pair<uint64_t, int64_t>> home;  // host tid -> (ops, device tid)
  for (const auto& [key, n] : count) {
    auto [it, inserted] = home.try_emplace(key.first, n, key.second);
    if (!inserted && n > it->second.first) it->second = {n, key.second};
  }
  std::map<int64_t, std::pair<uint64_t, uint64_t>> host_of;  // device tid -> (ops, host tid)
  for (const auto& [host_tid, h] : home) {
    auto [it, inserted] = host_of.try_emplace(h.second, h.first, host_tid);
    if (!inserted && h.first > it->second.first) it->second = {h.first, host_tid};
  }
  // The ops off their home, in ranges again, joined in order.
  std::vector<std::vector<std::pair<uint32_t, int64_t>>> parts(ranges);
  for_each_range(workers, ops.size(), per_range, [&](size_t r, size_t begin, size_t end) {
    std::vector<std::pair<uint32_t, int64_t>>& out = parts[r];
    uint64_t last_tid = 0;
    int64_t last_home = 0;
    bool cached = false;
    for (size_t i = begin; i < end; ++i) {
      prefetch_ahead(i, end);
      if (!ops[i].device_event.valid()) continue;
      const int64_t ran_on = in.device[ops[i].device_event].tid;
      if (!cached || in.host.nodes[i].tid != last_tid) {
        last_tid = in.host.nodes[i].tid;
        last_home = home.at(last_tid).second;
        cached = true;
      }
      if (last_home == ran_on) continue;
      auto it = host_of.find(ran_on);
      out.emplace_back(static_cast<uint32_t>(i),
                       it != host_of.end() ? static_cast<int64_t>(it->second.second) : ran_on);
    }
  });
  std::vector<std::pair<uint32_t, int64_t>> out;
  for (const auto& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

LinkedTrace assign_ids(const LinkInputs& in, const LinkOptions& options, DataProblems stats,
                       const OrderedBatches* workers) {
  const OrderedBatches& run = batches_or_in_turn(workers);
  LinkedTrace out;
  out.stats = std::move(stats);
  uint64_t attached_gpu = 0;
  uint64_t next_id = 0;
  {
    const profile::Span span("number ops");
    grow_prefaulted(out.ops, in.host.nodes.size(), run);
    if (!in.exclusive.chakra.empty()) out.chakra_exclusive.resize(in.host.nodes.size());
    next_id = number_ops(in, options, out, &attached_gpu, run);
  }
  out.node_count = next_id;

  // Unlinked GPU ops: their launching CPU op has no host op.
  uint64_t launched = 0;
  for (DeviceEventIdx g : in.launchers.gpu_ops) launched += in.launchers.cpu_op_of[g.value].valid();
  if (launched > attached_gpu) {
    out.stats.add_count(StatKind::kGpuOpCpuOpWithoutHostOp, launched - attached_gpu);
  }

  // The parents and sync dependencies beside the threads the ops ran on (which reads only the
  // ops' device events, set above).
  run.for_each(2, [&](size_t task) {
    if (task == 0) {
      const profile::Span span("assign parents");
      assign_parents(in, options, out, &next_id, run);
      add_sync_ids(in, options, out);
    } else if (options.compat == Compat::kDefault) {
      const profile::Span span("exec tids");
      out.exec_tids = exec_tids(in, out.ops, run);
    }
  });
  // What the loaders repaired is reported with the link's data problems.
  out.stats.add_count(StatKind::kHostInvalidUtf8Bytes, in.host.invalid_utf8_bytes);
  out.stats.add_count(StatKind::kDeviceInvalidUtf8Bytes, in.device.invalid_utf8_bytes);
  out.stats.merge(in.device.load_stats);
  if (in.host.schema.empty()) {
    out.stats.add(StatKind::kHostSchemaMissing, in.host.path);
  }
  return out;
}

void add_sync_ids(const LinkInputs& in, const LinkOptions& options, LinkedTrace& out) {
  if (in.sync != nullptr && options.compat == Compat::kDefault) add_sync_dependencies(in, out);
}

}  // namespace chakraflow
