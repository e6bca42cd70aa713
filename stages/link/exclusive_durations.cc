#include "stages/link/exclusive_durations.h"

#include <algorithm>
#include <cstdint>

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
  sort_in_nesting_order(trace, ops);
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

void sort_in_nesting_order(const DeviceTrace& trace, std::vector<DeviceEventIdx>& ops) {
  // The keys are copied out of the events, so that the sort does not wander over them (a trace
  // holds millions of events of 120 bytes).
  struct NestKey {
    TimeNs ts, end;
    DeviceEventIdx idx;
  };
  std::vector<NestKey> keys;
  keys.reserve(ops.size());
  for (DeviceEventIdx i : ops) keys.push_back({trace[i].ts, trace[i].end(), i});
  auto nesting = [](const NestKey& x, const NestKey& y) {
    return x.ts != y.ts ? x.ts < y.ts : x.end > y.end;
  };
  // The ops come in ts order: only a run of ops starting together can be out of nesting order,
  // and a thread rarely has one. Sorted only if so.
  if (std::is_sorted(keys.begin(), keys.end(), nesting)) return;
  std::stable_sort(keys.begin(), keys.end(), nesting);
  for (size_t k = 0; k < keys.size(); ++k) ops[k] = keys[k].idx;
}

std::vector<std::vector<DeviceEventIdx>> cpu_ops_by_thread(const DeviceTrace& trace) {
  // The loader grouped them (DeviceTrace::cpu_ops_by_thread, thread_begin).
  std::vector<std::vector<DeviceEventIdx>> threads;
  const auto& ops = trace.cpu_ops_by_thread;
  for (size_t k = 0; k + 1 < trace.thread_begin.size(); ++k) {
    threads.emplace_back(ops.begin() + trace.thread_begin[k],
                         ops.begin() + trace.thread_begin[k + 1]);
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
