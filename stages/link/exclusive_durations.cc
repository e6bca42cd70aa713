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

// Chakra's calculate_exclusive_dur for one thread's CPU ops, on Python numbers (PyNumber): sorted
// by (ts, dur), ties in file order (its two stable sorts); for each op, the later ops whose
// interval lies inside its own are collected until one starts after its end; their intervals are
// merged and each merged length is subtracted in turn. O(ops x nesting depth), as Chakra's.
void chakra_thread(const DeviceTrace& trace, const std::vector<DeviceEventIdx>& ops,
                   std::vector<PyNumber>& out) {
  struct Op {
    PyNumber ts, dur, end;  // end = ts + dur, computed as Python does
    DeviceEventIdx idx;
  };
  std::vector<Op> sorted;
  sorted.reserve(ops.size());
  for (DeviceEventIdx i : ops) {
    const PyNumber ts = trace[i].py_ts(), dur = trace[i].py_dur();
    sorted.push_back({ts, dur, {ts.value + dur.value, ts.is_float || dur.is_float}, i});
  }
  std::stable_sort(sorted.begin(), sorted.end(), [](const Op& a, const Op& b) {
    if (a.ts.value != b.ts.value) return a.ts.value < b.ts.value;
    if (a.dur.value != b.dur.value) return a.dur.value < b.dur.value;
    return a.idx < b.idx;
  });
  struct Region {
    PyNumber start, end;
  };
  std::vector<Region> regions;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const Op& op = sorted[i];
    regions.clear();
    for (size_t j = i + 1; j < sorted.size(); ++j) {
      const Op& child = sorted[j];
      if (child.ts.value >= op.ts.value && child.end.value <= op.end.value) {
        // Merged as they come: they come by start, as Chakra's sort by start leaves them.
        if (!regions.empty() && child.ts.value <= regions.back().end.value) {
          if (child.end.value > regions.back().end.value) regions.back().end = child.end;
        } else {
          regions.push_back({child.ts, child.end});
        }
      }
      if (op.end.value < child.ts.value) break;
    }
    PyNumber exclusive = op.dur;
    for (const Region& r : regions) {
      exclusive.value -= r.end.value - r.start.value;
      exclusive.is_float |= r.start.is_float || r.end.is_float;
    }
    out[op.idx.value] = exclusive;
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
  if (compat == Compat::kChakra) {
    result.chakra.resize(trace.events.size());
    for (size_t i = 0; i < trace.events.size(); ++i) result.chakra[i] = trace.events[i].py_dur();
  }
  for (auto& ops : cpu_ops_by_thread(trace)) {
    if (compat == Compat::kChakra) chakra_thread(trace, ops, result.chakra);
    sweep_thread(trace, std::move(ops), compat, result.by_event);
  }
  return result;
}

}  // namespace chakraflow
