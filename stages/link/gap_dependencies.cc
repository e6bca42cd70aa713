#include "stages/link/gap_dependencies.h"

#include <algorithm>
#include <unordered_map>

#include "stages/link/exclusive_durations.h"

namespace chakraflow {

GapDependencies compute_gap_dependencies(const DeviceTrace& trace, TimeNs threshold) {
  GapDependencies result;
  result.by_event.assign(trace.events.size(), DeviceEventIdx{});
  const auto threads = cpu_ops_by_thread(trace);

  // All CPU ops in ts order with the rank of their thread (order of first appearance, which is
  // the order Chakra iterates threads in) and their position within the thread.
  const std::vector<DeviceEventIdx>& all = trace.cpu_ops;
  std::unordered_map<int64_t, uint32_t> thread_rank;
  for (uint32_t r = 0; r < threads.size(); ++r) thread_rank[trace[threads[r].front()].tid] = r;
  std::vector<uint32_t> rank_of(all.size());
  // Runs of ops share a thread: the last thread's rank is kept to spare the hash lookups.
  int64_t last_tid = 0;
  uint32_t last_rank = UINT32_MAX;
  for (size_t i = 0; i < all.size(); ++i) {
    const int64_t tid = trace[all[i]].tid;
    if (last_rank == UINT32_MAX || tid != last_tid) {
      last_tid = tid;
      last_rank = thread_rank[tid];
    }
    rank_of[i] = last_rank;
  }
  // prev_other[i]: the largest j < i whose thread differs from thread of i, or -1.
  std::vector<int64_t> prev_other(all.size(), -1);
  for (size_t i = 1; i < all.size(); ++i) {
    prev_other[i] = rank_of[i - 1] != rank_of[i] ? static_cast<int64_t>(i - 1) : prev_other[i - 1];
  }
  std::vector<TimeNs> all_ts(all.size());
  for (size_t i = 0; i < all.size(); ++i) all_ts[i] = trace[all[i]].ts;

  // Latest-starting op of another thread than `rank` with ts < t; among equal ts Chakra keeps the
  // first one it meets: lowest thread rank, then ts order within the thread.
  auto find_before = [&](uint32_t rank, TimeNs t) -> DeviceEventIdx {
    auto pos = std::lower_bound(all_ts.begin(), all_ts.end(), t) - all_ts.begin();
    if (pos == 0) return {};
    int64_t j = pos - 1;
    if (rank_of[static_cast<size_t>(j)] == rank) j = prev_other[static_cast<size_t>(j)];
    if (j < 0) return {};
    TimeNs best_ts = all_ts[static_cast<size_t>(j)];
    if (best_ts <= 0) return {};  // Chakra starts from latest_timestamp = 0 and needs ts > it
    int64_t best = j;
    for (int64_t k = j - 1; k >= 0 && all_ts[static_cast<size_t>(k)] == best_ts; --k) {
      if (rank_of[static_cast<size_t>(k)] == rank) continue;
      if (rank_of[static_cast<size_t>(k)] <= rank_of[static_cast<size_t>(best)]) best = k;
    }
    return all[static_cast<size_t>(best)];
  };

  result.groups = 0;
  for (uint32_t r = 0; r < threads.size(); ++r) {
    const auto& ops = threads[r];
    DeviceEventIdx dep;
    for (size_t i = 0; i < ops.size(); ++i) {
      const DeviceEvent& e = trace[ops[i]];
      bool group_start = i == 0;
      if (!group_start) {
        const DeviceEvent& prev = trace[ops[i - 1]];
        group_start = e.ts - prev.ts - prev.dur > threshold;
      }
      if (group_start) {
        ++result.groups;
        dep = find_before(r, e.ts);
      }
      result.by_event[ops[i].value] = dep;
    }
  }
  return result;
}

}  // namespace chakraflow
