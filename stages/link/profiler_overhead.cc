#include "stages/link/profiler_overhead.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "stages/common/file_io.h"
#include "stages/common/json_util.h"
#include "stages/link/device_trace_loader.h"

namespace chakraflow {
namespace {

// The calibration loop records 1.5 host events per op: a cpu_op for each op, and a CUDA launch
// for every other one (the one-element CUDA add).
constexpr double kCalibrationEventsPerOp = 1.5;

TimeNs ns_of_us(double us) {
  return us > 0 ? static_cast<TimeNs>(std::llround(us * 1000.0)) : 0;
}

bool is_host_event(const DeviceEvent& e) {
  switch (e.cat) {
    case DeviceCategory::kCpuOp:
    case DeviceCategory::kUserAnnotation:
    case DeviceCategory::kCudaRuntime:
    case DeviceCategory::kCudaDriver:
      return true;
    default:
      return false;
  }
}

// A user annotation (a ProfilerStep, `## backward ##`, a record_function scope) brackets a stretch
// of its thread without saying the thread ran: a thread whose only open events are annotations
// may be waiting on another (the caller of backward() while the autograd thread runs it).
bool is_annotation(const DeviceEvent& e) {
  return e.has(kProfilerStep) || e.cat == DeviceCategory::kUserAnnotation;
}

TimeNs cost_of(const DeviceEvent& e, const ProfilerCosts& costs) {
  if (e.has(kProfilerStep)) return 0;
  const bool runtime =
      e.cat == DeviceCategory::kCudaRuntime || e.cat == DeviceCategory::kCudaDriver;
  return runtime ? costs.per_runtime_call : costs.per_op;
}

// One host thread's warp as the boundaries come in time order.
struct ThreadWarp {
  TimeNs first = 0;    // the trace's first host timestamp: nothing moves before it
  TimeNs removed = 0;  // cost taken out of this thread's timeline so far
  TimeNs last_warped = std::numeric_limits<TimeNs>::min();
  TimeNs last_time = std::numeric_limits<TimeNs>::min();  // of the last boundary
  TimeNs last_end = std::numeric_limits<TimeNs>::min();   // of the last event end
  int64_t open = 0;      // events started and not ended, annotations aside
  bool started = false;  // an event started on it

  // The warped time of a boundary at `t` after `extra` more removed: never before the thread's
  // last warped time, and after it when `t` is (so that order and nesting stay as recorded).
  TimeNs place(TimeNs t, TimeNs extra) {
    TimeNs w = t - (removed + extra);
    TimeNs floor = first;
    if (last_time != std::numeric_limits<TimeNs>::min()) {
      floor = std::max(floor, t > last_time ? last_warped + 1 : last_warped);
    }
    if (w < floor) w = floor;
    removed = t - w;
    last_warped = w;
    last_time = t;
    return w;
  }
};

struct Boundary {
  TimeNs t;
  uint32_t thread;
  uint8_t is_start;  // ends first at one instant: an op that ends as the next one starts
  uint32_t event;
  friend bool operator<(const Boundary& a, const Boundary& b) {
    if (a.t != b.t) return a.t < b.t;
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.is_start != b.is_start) return a.is_start < b.is_start;
    return a.event < b.event;
  }
};

// The start and end boundaries of every host event that has a cost, by time (and the threads
// they are on, by (pid, tid) in order of first appearance); counts those events.
std::vector<Boundary> host_boundaries(const std::vector<DeviceEvent>& ev,
                                      const ProfilerCosts& costs, size_t* threads,
                                      uint64_t* host_events) {
  std::unordered_map<uint64_t, uint32_t> thread_slot;
  std::vector<Boundary> bounds;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const DeviceEvent& e = ev[i];
    if (!is_host_event(e)) continue;
    const uint64_t key = (static_cast<uint64_t>(e.pid) << 32) ^ static_cast<uint64_t>(e.tid);
    const uint32_t thread =
        thread_slot.try_emplace(key, static_cast<uint32_t>(thread_slot.size())).first->second;
    bounds.push_back({e.ts, thread, 1, i});
    bounds.push_back({e.end(), thread, 0, i});
    *host_events += cost_of(e, costs) > 0;
  }
  std::sort(bounds.begin(), bounds.end());
  *threads = thread_slot.size();
  return bounds;
}

// The sweep over the boundaries in time order, one instant of one thread at a time: the host
// events' new starts and ends, with their costs taken out.
class HostWarp {
 public:
  HostWarp(const std::vector<DeviceEvent>& ev, const ProfilerCosts& costs, TimeNs gap_threshold,
           size_t threads, TimeNs first)
      : new_ts(ev.size()),
        new_end(ev.size()),
        ev_(ev),
        costs_(costs),
        gap_threshold_(gap_threshold),
        warp_(threads) {
    for (ThreadWarp& w : warp_) w.first = first;
  }

  void run(const std::vector<Boundary>& bounds) {
    for (size_t k = 0; k < bounds.size();) {
      const TimeNs t = bounds[k].t;
      const uint32_t th = bounds[k].thread;
      size_t end_of_ends = k;
      while (end_of_ends < bounds.size() && bounds[end_of_ends].t == t &&
             bounds[end_of_ends].thread == th && !bounds[end_of_ends].is_start) {
        ++end_of_ends;
      }
      if (end_of_ends > k) place_ends(bounds, k, end_of_ends);
      size_t end_of_starts = end_of_ends;
      while (end_of_starts < bounds.size() && bounds[end_of_starts].t == t &&
             bounds[end_of_starts].thread == th) {
        ++end_of_starts;
      }
      if (end_of_starts > end_of_ends) place_starts(bounds, end_of_ends, end_of_starts);
      k = end_of_starts;
    }
  }

  std::vector<TimeNs> new_ts, new_end;  // by event

 private:
  // bounds[from, to): ends at one instant of one thread; their exit costs come after them. Ends
  // of annotations alone on a thread idle since its last end (the caller of backward() when the
  // autograd thread is done) wake it as a start would.
  void place_ends(const std::vector<Boundary>& bounds, size_t from, size_t to) {
    const TimeNs t = bounds[from].t;
    const uint32_t th = bounds[from].thread;
    ThreadWarp& w = warp_[th];
    if (w.open == 0 && idle_long(w, t)) wake(th, t);
    const TimeNs at = w.place(t, 0);
    TimeNs exit = 0;
    for (size_t j = from; j < to; ++j) {
      new_end[bounds[j].event] = at;
      exit += cost_of(ev_[bounds[j].event], costs_) / 2;
    }
    w.removed += exit;
    for (size_t j = from; j < to; ++j) w.open -= !is_annotation(ev_[bounds[j].event]);
    w.last_end = t;
  }

  bool idle_long(const ThreadWarp& w, TimeNs t) const {
    return w.last_end == std::numeric_limits<TimeNs>::min() || t - w.last_end > gap_threshold_;
  }

  // Thread `th`, waking at `t`, has lost at least what the thread that started an op last before
  // had.
  void wake(uint32_t th, TimeNs t) {
    const LastStart& by = latest_.thread != th ? latest_ : previous_;
    if (by.thread != UINT32_MAX && by.t < t) {
      warp_[th].removed = std::max(warp_[th].removed, warp_[by.thread].removed);
    }
  }

  // bounds[from, to): starts at one instant of one thread; their entry costs come before them.
  // A thread that wakes up (nothing open, after a gap) has lost at least what the thread that
  // started an op last had.
  void place_starts(const std::vector<Boundary>& bounds, size_t from, size_t to) {
    const TimeNs t = bounds[from].t;
    const uint32_t th = bounds[from].thread;
    ThreadWarp& w = warp_[th];
    if (w.open == 0 && (!w.started || idle_long(w, t))) wake(th, t);
    TimeNs entry = 0;
    for (size_t j = from; j < to; ++j) entry += cost_of(ev_[bounds[j].event], costs_) / 2;
    const TimeNs at = w.place(t, entry);
    for (size_t j = from; j < to; ++j) new_ts[bounds[j].event] = at;
    // An annotation (the ProfilerStep spans the step) leaves its thread idle for the wake-up rule.
    for (size_t j = from; j < to; ++j) w.open += !is_annotation(ev_[bounds[j].event]);
    w.started = true;
    if (latest_.thread != th) previous_ = latest_;
    latest_ = {th, t};
  }

  // The last two starts on distinct threads: the thread that started an op last before an
  // instant (other than a given one) is one of them.
  struct LastStart {
    uint32_t thread = UINT32_MAX;
    TimeNs t = 0;
  };

  const std::vector<DeviceEvent>& ev_;
  const ProfilerCosts& costs_;
  const TimeNs gap_threshold_;
  std::vector<ThreadWarp> warp_;
  LastStart latest_, previous_;
};

// The host events' new times; what a runtime call launched moves with it.
void apply_warp(std::vector<DeviceEvent>& ev, const HostWarp& warp) {
  std::unordered_map<int64_t, TimeNs> shift_of_correlation;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    DeviceEvent& e = ev[i];
    if (!is_host_event(e)) continue;
    if (e.has(kHasCorrelation) &&
        (e.cat == DeviceCategory::kCudaRuntime || e.cat == DeviceCategory::kCudaDriver)) {
      shift_of_correlation.emplace(e.correlation, e.ts - warp.new_ts[i]);
    }
    e.dur = warp.new_end[i] - warp.new_ts[i];
    e.ts = warp.new_ts[i];
  }
  for (DeviceEvent& e : ev) {
    if (is_host_event(e) || !e.has(kHasCorrelation)) continue;
    if (auto it = shift_of_correlation.find(e.correlation); it != shift_of_correlation.end()) {
      e.ts -= it->second;
    }
  }
}

TimeNs step_of(const DeviceTrace& trace) {
  TimeNs first = std::numeric_limits<TimeNs>::max(), last = std::numeric_limits<TimeNs>::min();
  for (const DeviceEvent& e : trace.events) {
    if (!is_host_event(e)) continue;
    if (e.has(kProfilerStep) && e.cat == DeviceCategory::kUserAnnotation) return e.dur;
    first = std::min(first, e.ts);
    last = std::max(last, e.end());
  }
  return last >= first ? last - first : 0;
}

}  // namespace

ProfilerCosts costs_from(const StepTime::Calibration& c, RecordedWith with) {
  const double kineto_per_event = std::max(0.0, c.kineto_us - c.none_us) / kCalibrationEventsPerOp;
  ProfilerCosts costs;
  costs.per_runtime_call = ns_of_us(kineto_per_event);
  costs.per_op = with == RecordedWith::kKineto
                     ? ns_of_us(kineto_per_event)
                     : ns_of_us(kineto_per_event + std::max(0.0, c.et_kineto_us - c.kineto_us));
  return costs;
}

TimeNs recorded_step(const DeviceTrace& trace) {
  return step_of(trace);
}

OverheadRemoval remove_profiler_overhead(DeviceTrace& trace, const ProfilerCosts& costs,
                                         TimeNs gap_threshold) {
  OverheadRemoval out;
  out.costs = costs;
  out.recorded_step = step_of(trace);
  if (!costs.any()) {
    out.step = out.recorded_step;
    return out;
  }
  size_t threads = 0;
  const std::vector<Boundary> bounds =
      host_boundaries(trace.events, costs, &threads, &out.host_events);
  HostWarp warp(trace.events, costs, gap_threshold, threads, bounds.empty() ? 0 : bounds.front().t);
  warp.run(bounds);
  apply_warp(trace.events, warp);
  build_device_indices(trace);
  out.step = step_of(trace);
  return out;
}

void append_profiler_overhead_json(std::string& out, const ProfilerOverheadNote& note) {
  auto number = [&](const char* key, double v) {
    out += fmt::format(",\"{}\":", key);
    json::append_python_float(out, v);
  };
  out += fmt::format("{{\"removed\":{},\"recorded_with\":\"{}\"", note.removed ? "true" : "false",
                     note.recorded_with == RecordedWith::kKineto ? "kineto" : "et_kineto");
  number("us_per_op", static_cast<double>(note.costs.per_op) / 1000.0);
  number("us_per_runtime_call", static_cast<double>(note.costs.per_runtime_call) / 1000.0);
  number("recorded_step_us", note.recorded_step_us);
  number("step_us", note.step_us);
  if (note.unprofiled) {
    out += ",\"unprofiled_step_us\":{\"median\":";
    json::append_python_float(out, note.unprofiled->median_us);
    out += ",\"min\":";
    json::append_python_float(out, note.unprofiled->min_us);
    out += fmt::format(",\"n\":{}}}", note.unprofiled->n);
  }
  out += '}';
}

std::optional<ProfilerOverheadNote> parse_profiler_overhead_json(std::string_view text) {
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  if (parser.parse(simdjson::padded_string(text)).get(o)) return std::nullopt;
  ProfilerOverheadNote note;
  std::string_view with;
  double per_op = 0, per_call = 0;
  if (o["removed"].get(note.removed) || o["recorded_with"].get(with) ||
      o["us_per_op"].get(per_op) || o["us_per_runtime_call"].get(per_call) ||
      o["recorded_step_us"].get(note.recorded_step_us) || o["step_us"].get(note.step_us) ||
      (with != "kineto" && with != "et_kineto")) {
    return std::nullopt;
  }
  note.recorded_with = with == "kineto" ? RecordedWith::kKineto : RecordedWith::kEtAndKineto;
  note.costs.per_op = ns_of_us(per_op);
  note.costs.per_runtime_call = ns_of_us(per_call);
  simdjson::dom::object u;
  if (!o["unprofiled_step_us"].get(u)) {
    StepTime::Step step;
    if (u["median"].get(step.median_us) || u["min"].get(step.min_us) || u["n"].get(step.n)) {
      return std::nullopt;
    }
    note.unprofiled = step;
  }
  return note;
}

StatusOr<StepTime> load_step_time(const std::string& path) {
  CF_ASSIGN_OR_RETURN(std::string text, read_input_file(path));
  return parse_step_time(path, text);
}

StatusOr<StepTime> parse_step_time(const std::string& path, std::string_view text) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(simdjson::padded_string(text)).get(doc)) {
    return Status::errorf("{}: not JSON", path);
  }
  simdjson::dom::object root;
  if (doc.get(root)) return Status::errorf("{}: not a JSON object", path);
  auto number = [&](simdjson::dom::object o, const char* section, const char* key,
                    double* out) -> Status {
    simdjson::dom::element v;
    if (o[key].get(v)) return Status::errorf("{}: {}.{} is missing", path, section, key);
    if (v.get_double().get(*out) || !std::isfinite(*out) || *out < 0) {
      return Status::errorf("{}: {}.{} is not a number of at least 0", path, section, key);
    }
    return Status();
  };
  StepTime out;
  simdjson::dom::object step;
  if (!root["unprofiled_step_ms"].get(step)) {
    StepTime::Step s;
    double median_ms = 0, min_ms = 0, n = 0;
    CF_RETURN_IF_ERROR(number(step, "unprofiled_step_ms", "median", &median_ms));
    CF_RETURN_IF_ERROR(number(step, "unprofiled_step_ms", "min", &min_ms));
    CF_RETURN_IF_ERROR(number(step, "unprofiled_step_ms", "n", &n));
    if (min_ms > median_ms || median_ms <= 0) {
      return Status::errorf("{}: unprofiled_step_ms: min {} is not in (0, median {}]", path, min_ms,
                            median_ms);
    }
    s.median_us = median_ms * 1000.0;
    s.min_us = min_ms * 1000.0;
    s.n = static_cast<int64_t>(n);
    out.unprofiled = s;
  }
  simdjson::dom::object costs;
  if (!root["profiler_overhead_us_per_op"].get(costs)) {
    StepTime::Calibration c;
    CF_RETURN_IF_ERROR(number(costs, "profiler_overhead_us_per_op", "none", &c.none_us));
    CF_RETURN_IF_ERROR(number(costs, "profiler_overhead_us_per_op", "kineto", &c.kineto_us));
    CF_RETURN_IF_ERROR(number(costs, "profiler_overhead_us_per_op", "et_kineto", &c.et_kineto_us));
    out.calibration = c;
  }
  if (!out.unprofiled && !out.calibration) {
    return Status::errorf(
        "{}: neither unprofiled_step_ms nor profiler_overhead_us_per_op (docs/capturing.md)", path);
  }
  return out;
}

}  // namespace chakraflow
