#include "stages/link/host_device_mapping.h"

#include <algorithm>

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

HostDeviceMap map_by_rf_id(const HostTrace& host, const DeviceTrace& device, Compat compat,
                           DataProblems& stats) {
  HostDeviceMap map;
  map.device_of.assign(host.nodes.size(), DeviceEventIdx{});
  map.host_of.assign(device.events.size(), HostNodeIdx{});
  // rf_id -> CPU event; the last in ts order wins, as in Chakra's dict comprehension.
  KeyIndex by_rf_id(device.cpu_ops.size());
  constexpr size_t kAhead = 8;  // how many keys ahead a lookup's table line is prefetched
  for (size_t k = 0; k < device.cpu_ops.size(); ++k) {
    if (k + kAhead < device.cpu_ops.size()) {
      by_rf_id.prefetch(device[device.cpu_ops[k + kAhead]].rf_id);
    }
    const DeviceEventIdx idx = device.cpu_ops[k];
    if (device[idx].has(kHasRfId)) by_rf_id.assign(device[idx].rf_id, idx.value);
  }
  std::vector<bool> reach;
  if (compat == Compat::kChakra) reach = reachable_from_root(host);
  for (uint32_t i = 0; i < host.nodes.size(); ++i) {
    if (i + kAhead < host.nodes.size()) by_rf_id.prefetch(host.nodes[i + kAhead].rf_id);
    const HostNode& n = host.nodes[i];
    if (n.rf_id == 0) continue;
    ++map.host_ops_with_rf_id;
    if (compat == Compat::kChakra && !reach[i]) {
      ++map.unreachable;
      continue;
    }
    const DeviceEventIdx event{by_rf_id.find(n.rf_id)};
    if (!event.valid()) {
      ++map.unmatched_with_rf_id;
      continue;
    }
    HostNodeIdx& owner = map.host_of[event.value];
    if (owner.valid() && compat == Compat::kDefault) {
      stats.add(
          StatKind::kHostOpsSharingRfId,
          fmt::format("node {} and node {} (rf_id {})", host.nodes[owner.value].id, n.id, n.rf_id));
      continue;
    }
    map.device_of[i] = event;
    if (!owner.valid()) owner = HostNodeIdx{i};
    ++map.matched;
  }
  map.candidates = map.host_ops_with_rf_id;
  if (map.unmatched_with_rf_id > 0) {
    stats.add_count(StatKind::kHostRfIdNotInDevice, map.unmatched_with_rf_id);
  }
  return map;
}

}  // namespace chakraflow
