#include "stages/link/host_device_mapping.h"

#include <algorithm>
#include <atomic>
#include <map>

#include <fmt/format.h>

#include "stages/common/key_index.h"

namespace chakraflow {

std::vector<bool> reachable_from_root(const HostTrace& host) {
  const auto& nodes = host.nodes;
  std::vector<bool> reach(nodes.size(), false);
  auto index_of = [&nodes](uint64_t id) -> int64_t {
    auto it = std::lower_bound(nodes.begin(), nodes.end(), id,
                               [](const HostNode& n, uint64_t v) { return n.id < v; });
    return it != nodes.end() && it->id == id ? it - nodes.begin() : -1;
  };
  // children lists (CSR) by parent index
  std::vector<uint32_t> count(nodes.size() + 1, 0);
  std::vector<int64_t> parent_idx(nodes.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].parent_key == ParentKey::kNone) continue;
    parent_idx[i] = index_of(nodes[i].parent);
    if (parent_idx[i] >= 0 && static_cast<size_t>(parent_idx[i]) != i)
      ++count[static_cast<size_t>(parent_idx[i]) + 1];
  }
  for (size_t i = 1; i < count.size(); ++i) count[i] += count[i - 1];
  std::vector<uint32_t> children(count.back());
  std::vector<uint32_t> fill(count.begin(), count.end() - 1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (parent_idx[i] >= 0 && static_cast<size_t>(parent_idx[i]) != i) {
      children[fill[static_cast<size_t>(parent_idx[i])]++] = static_cast<uint32_t>(i);
    }
  }
  int64_t root = index_of(1);
  if (root < 0) return reach;
  std::vector<uint32_t> stack = {static_cast<uint32_t>(root)};
  reach[static_cast<size_t>(root)] = true;
  while (!stack.empty()) {
    uint32_t n = stack.back();
    stack.pop_back();
    for (uint32_t c = count[n]; c < count[n + 1]; ++c) {
      if (!reach[children[c]]) {
        reach[children[c]] = true;
        stack.push_back(children[c]);
      }
    }
  }
  return reach;
}

namespace {

// Device CPU ops, and host ops, per range of map_by_rf_id's passes on the workers.
constexpr size_t kMapRange = 32768;

}  // namespace

HostDeviceMap map_by_rf_id(const HostTrace& host, const DeviceTrace& device, Compat compat,
                           DataProblems& stats, const OrderedBatches* workers) {
  const OrderedBatches& run = batches_or_in_turn(workers);
  const size_t per_range = run.range_size(kMapRange);
  HostDeviceMap map;
  map.device_of.assign(host.nodes.size(), DeviceEventIdx{});
  map.host_of.assign(device.events.size(), HostNodeIdx{});
  // rf_id -> CPU event; the last in ts order wins, as in Chakra's dict comprehension. The rf_ids
  // are a counter of the process's record functions: dense over their range and rising with
  // time, so that a direct table (DenseKeyIndex) is filled and read nearly in order; their range
  // is found in ranges on the workers.
  struct Extent {
    uint64_t least = UINT64_MAX, most = 0;
    size_t count = 0;
  };
  const size_t ops = device.cpu_ops.size();
  std::vector<Extent> extents(range_count(ops, per_range));
  for_each_range(run, ops, per_range, [&](size_t r, size_t begin, size_t end) {
    Extent& x = extents[r];
    for (size_t k = begin; k < end; ++k) {
      const DeviceEvent& e = device[device.cpu_ops[k]];
      if (!e.has(kHasRfId)) continue;
      x.least = std::min(x.least, e.rf_id);
      x.most = std::max(x.most, e.rf_id);
      ++x.count;
    }
  });
  Extent all;
  for (const Extent& x : extents) {
    all.least = std::min(all.least, x.least);
    all.most = std::max(all.most, x.most);
    all.count += x.count;
  }
  DenseKeyIndex by_rf_id(all.least, all.most, all.count);
  constexpr size_t kAhead = 8;  // how many keys ahead a lookup's table line is prefetched
  for (size_t k = 0; k < ops; ++k) {
    if (k + kAhead < ops) by_rf_id.prefetch(device[device.cpu_ops[k + kAhead]].rf_id);
    const DeviceEventIdx idx = device.cpu_ops[k];
    if (device[idx].has(kHasRfId)) by_rf_id.assign(device[idx].rf_id, idx.value);
  }
  std::vector<bool> reach;
  if (compat == Compat::kChakra) reach = reachable_from_root(host);
  // In ranges of host ops on the workers: each op's event, and the op stored as the event's
  // owner (host_of) by whichever range stores last; then, in ranges again, the ops that did not
  // end up as their event's owner, whose events are shared. Sharing is rare (in default mode it is
  // a data problem), and is settled in order after: an event's owner is its first op in host
  // order, and in default mode the other ops are not paired (counted, with both ops named), as
  // one pass in order decides.
  const size_t n = host.nodes.size();
  struct Counts {
    uint64_t with_rf_id = 0, unreachable = 0, unmatched = 0, matched = 0;
    std::vector<uint32_t> not_owner;  // ops whose event another op was stored for
  };
  std::vector<Counts> counts(range_count(n, per_range));
  for_each_range(run, n, per_range, [&](size_t r, size_t begin, size_t end) {
    Counts& c = counts[r];
    for (size_t i = begin; i < end; ++i) {
      if (i + kAhead < end) by_rf_id.prefetch(host.nodes[i + kAhead].rf_id);
      const uint64_t rf_id = host.nodes[i].rf_id;
      if (rf_id == 0) continue;
      ++c.with_rf_id;
      if (compat == Compat::kChakra && !reach[i]) {
        ++c.unreachable;
        continue;
      }
      const DeviceEventIdx event{by_rf_id.find(rf_id)};
      if (!event.valid()) {
        ++c.unmatched;
        continue;
      }
      ++c.matched;
      map.device_of[i] = event;
      std::atomic_ref<uint32_t>(map.host_of[event.value].value)
          .store(static_cast<uint32_t>(i), std::memory_order_relaxed);
    }
  });
  for_each_range(run, n, per_range, [&](size_t r, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const DeviceEventIdx event = map.device_of[i];
      if (event.valid() && map.host_of[event.value].value != i) {
        counts[r].not_owner.push_back(static_cast<uint32_t>(i));
      }
    }
  });
  // Each shared event's ops: the one stored last, then the others (in host order).
  std::map<uint32_t, std::vector<uint32_t>> shared;  // by event
  for (const Counts& c : counts) {
    for (uint32_t i : c.not_owner) {
      const uint32_t event = map.device_of[i].value;
      std::vector<uint32_t>& ops_of = shared[event];
      if (ops_of.empty()) ops_of.push_back(map.host_of[event].value);
      ops_of.push_back(i);
    }
  }
  std::vector<uint32_t> paired_elsewhere;  // ops whose event an earlier op owns, in host order
  for (auto& [event, ops_of] : shared) {
    const uint32_t owner = *std::min_element(ops_of.begin(), ops_of.end());
    map.host_of[event] = HostNodeIdx{owner};
    for (uint32_t i : ops_of) {
      if (i != owner) paired_elsewhere.push_back(i);
    }
  }
  std::sort(paired_elsewhere.begin(), paired_elsewhere.end());
  for (const Counts& c : counts) {
    map.host_ops_with_rf_id += c.with_rf_id;
    map.unreachable += c.unreachable;
    map.unmatched_with_rf_id += c.unmatched;
    map.matched += c.matched;
  }
  if (compat == Compat::kDefault) {
    for (uint32_t i : paired_elsewhere) {
      const HostNode& node = host.nodes[i];
      const HostNodeIdx owner = map.host_of[map.device_of[i].value];
      stats.add(StatKind::kHostOpsSharingRfId,
                fmt::format("node {} and node {} (rf_id {})", host.nodes[owner.value].id, node.id,
                            node.rf_id));
      map.device_of[i] = DeviceEventIdx{};
      --map.matched;
    }
  }
  map.candidates = map.host_ops_with_rf_id;
  if (map.unmatched_with_rf_id > 0) {
    stats.add_count(StatKind::kHostRfIdNotInDevice, map.unmatched_with_rf_id);
  }
  return map;
}

}  // namespace chakraflow
