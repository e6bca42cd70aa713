#include "stages/exclusive_durations.h"

#include <algorithm>
#include <unordered_map>

namespace chakraflow {
namespace {

struct Open {
  DeviceEventIdx idx;
  TimeNs ts;
  TimeNs dur;
  TimeNs end;
  TimeNs covered;   // length of the union of counted nested intervals
  TimeNs frontier;  // end of the counted union so far (intervals arrive in ts order)
};

void add_interval(Open& o, TimeNs ts, TimeNs end) {
  TimeNs from = std::max(ts, o.frontier);
  if (end > from) o.covered += end - from;
  o.frontier = std::max(o.frontier, end);
}

void sweep_thread(const DeviceTrace& trace, std::vector<DeviceEventIdx> ops, Compat compat,
                  std::vector<TimeNs>& out) {
  const auto& ev = trace.events;
  // Nesting order: a parent sorts before everything it contains. Ties keep file order.
  std::stable_sort(ops.begin(), ops.end(), [&ev](DeviceEventIdx a, DeviceEventIdx b) {
    const DeviceEvent& x = ev[a.value];
    const DeviceEvent& y = ev[b.value];
    if (x.ts != y.ts) return x.ts < y.ts;
    return x.end() > y.end();
  });
  std::vector<Open> stack;
  auto close = [&](const Open& o) { out[o.idx.value] = o.dur - o.covered; };
  for (DeviceEventIdx idx : ops) {
    const DeviceEvent& e = ev[idx.value];
    TimeNs end = e.end();
    while (!stack.empty() && !(e.ts >= stack.back().ts && end <= stack.back().end)) {
      close(stack.back());
      stack.pop_back();
    }
    if (!stack.empty()) {
      if (compat == Compat::kDefault) {
        add_interval(stack.back(), e.ts, end);
      } else {
        // Chakra counts, for each op A, the union of the ops nested in A that sort after A by
        // (ts, dur). An op nested in A is already covered for A when an op between them on the
        // nesting path sorts after A; only ops starting at A's ts can sort before A, so the walk
        // up stops at the first ancestor that starts earlier than the op below it.
        for (size_t level = stack.size(); level-- > 0;) {
          Open& a = stack[level];
          bool covered = false;
          for (size_t m = level + 1; m < stack.size() && !covered; ++m) {
            covered = stack[m].ts > a.ts || stack[m].dur >= a.dur;
          }
          bool after = e.ts > a.ts || e.dur >= a.dur;
          if (after && !covered) add_interval(a, e.ts, end);
          if (level > 0 && a.ts > stack[level - 1].ts) break;
        }
      }
    }
    stack.push_back({idx, e.ts, e.dur, end, 0, e.ts});
  }
  while (!stack.empty()) {
    close(stack.back());
    stack.pop_back();
  }
}

}  // namespace

std::vector<std::vector<DeviceEventIdx>> cpu_ops_by_thread(const DeviceTrace& trace) {
  std::vector<std::vector<DeviceEventIdx>> threads;
  std::unordered_map<int64_t, size_t> slot;
  for (DeviceEventIdx idx : trace.cpu_ops) {
    auto [it, inserted] = slot.try_emplace(trace[idx].tid, threads.size());
    if (inserted) threads.emplace_back();
    threads[it->second].push_back(idx);
  }
  return threads;
}

ExclusiveDurations compute_exclusive_durations(const DeviceTrace& trace, Compat compat) {
  ExclusiveDurations result;
  result.by_event.resize(trace.events.size());
  for (size_t i = 0; i < trace.events.size(); ++i) result.by_event[i] = trace.events[i].dur;
  for (auto& ops : cpu_ops_by_thread(trace))
    sweep_thread(trace, std::move(ops), compat, result.by_event);
  return result;
}

}  // namespace chakraflow
