// Stage 2b: taking out of a device trace what the profilers added to its host timeline, so that
// the linked trace, the .et and their replay show the step as it runs without a profiler.
//
// The profilers cost CPU time on every event they record: Kineto's RecordFunction callbacks around
// each op (shapes recorded), CUPTI's around each CUDA runtime call, and the execution-trace
// observer's around each op. The model: each recorded host event (cpu_op, user_annotation, CUDA
// runtime / driver call) cost its thread `per_op` (ops) or `per_runtime_call` (runtime calls) ns,
// half before its start timestamp and half after its end timestamp. Each host thread's timeline is
// compressed by what its events cost up to each instant (a "time warp": every timestamp moves
// earlier by the cost of the boundaries before it), never below the time that actually passed:
// between two consecutive timestamps of a thread at most their distance is removed (and nothing
// moves before the trace's first timestamp), so nesting and order stay as recorded. A thread that
// starts a group of work after being idle (no op open, and its first op or a gap over
// `gap_threshold` since its last; the gap rule of inter-thread dependencies) was woken by the
// thread whose op started last before: it takes over that thread's removed time up to then (bounded
// as above), so that work another thread started earlier starts earlier too. A GPU op (kernel,
// memcpy, memset) and any event with a correlation id move with the runtime call that launched it,
// by the same amount: launch latencies stay; a kernel that waited for the CPU now waits less, which
// the simulator works out from its stream and dependencies. ProfilerStep annotations are warped and
// cost nothing.
//
// Costs: from the capture's calibration (step_time.json, `profiler_overhead_us_per_op`: the mean
// cost per op of a loop alternating a one-element CUDA add and a CPU view, which records 1.5 host
// events per op, under no profiler, Kineto alone, and the execution-trace observer plus Kineto):
//   Kineto alone:     per_op = per_runtime_call = (kineto - none) / 1.5
//   ET + Kineto:      per_runtime_call = (kineto - none) / 1.5,
//                     per_op = per_runtime_call + (et_kineto - kineto)   (the ET records ops only)
// (docs/simulation.md, "Predicting the unprofiled step").
//
// Plain functions; the trace is changed in place and its indices rebuilt. O(events log events).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "stages/common/status.h"
#include "stages/link/trace_model.h"

namespace chakraflow {

// What the profiler cost per recorded host event, in ns.
struct ProfilerCosts {
  TimeNs per_op = 0;            // cpu_op / user_annotation events
  TimeNs per_runtime_call = 0;  // cuda_runtime / cuda_driver events
  bool any() const { return per_op > 0 || per_runtime_call > 0; }
  friend bool operator==(const ProfilerCosts&, const ProfilerCosts&) = default;
};

// A capture's step_time.json: the step timed without a profiler, and the per-op costs measured
// the same day on the same machine (both optional in the file; a documented superset is read).
struct StepTime {
  struct Step {
    double median_us = 0, min_us = 0;
    int64_t n = 0;
    friend bool operator==(const Step&, const Step&) = default;
  };
  std::optional<Step> unprofiled;
  struct Calibration {
    double none_us = 0, kineto_us = 0, et_kineto_us = 0;  // per op of the calibration loop
  };
  std::optional<Calibration> calibration;
};

// Parses step_time.json text; errors name `path` and what is wrong.
StatusOr<StepTime> parse_step_time(const std::string& path, std::string_view text);
// Reads and parses the file (gzip'd or not).
StatusOr<StepTime> load_step_time(const std::string& path);

// Which profilers recorded a device trace.
enum class RecordedWith : uint8_t {
  kKineto,       // Kineto alone (a timing trace)
  kEtAndKineto,  // the execution-trace observer and Kineto (the ET step's own trace)
};

// The costs a calibration gives for a trace recorded with `with` (formulas above); 0 where the
// calibration says the profiler cost nothing (or less than no profiler: run-to-run noise).
ProfilerCosts costs_from(const StepTime::Calibration& calibration, RecordedWith with);

struct OverheadRemoval {
  ProfilerCosts costs;
  TimeNs recorded_step = 0;  // the step as recorded: ProfilerStep's span, else first to last event
  TimeNs step = 0;           // the same window after the removal
  uint64_t host_events = 0;  // host events that cost
};

// What a link did about profiler overhead, carried to the ET+ (its top-level
// "profiler_overhead" object) and the .et (GlobalMetadata attributes, stages/convert), where the
// simulator reports it: the recorded step, the step after the removal, the costs, and the step
// step_time.json measured without a profiler.
struct ProfilerOverheadNote {
  bool removed = false;  // costs were taken out
  RecordedWith recorded_with = RecordedWith::kEtAndKineto;
  ProfilerCosts costs;
  double recorded_step_us = 0;  // as the profiler recorded it
  double step_us = 0;           // after the removal (= recorded_step_us when none)
  std::optional<StepTime::Step> unprofiled;
  friend bool operator==(const ProfilerOverheadNote&, const ProfilerOverheadNote&) = default;
};

// The note as one JSON object (minified, deterministic), and back; nullopt for text that is not
// such an object.
void append_profiler_overhead_json(std::string& out, const ProfilerOverheadNote& note);
std::optional<ProfilerOverheadNote> parse_profiler_overhead_json(std::string_view json);

// Takes `costs` out of `trace` (model above). `gap_threshold`: LinkOptions::gap_threshold.
OverheadRemoval remove_profiler_overhead(DeviceTrace& trace, const ProfilerCosts& costs,
                                         TimeNs gap_threshold);

// The recorded step of a trace (as OverheadRemoval::recorded_step), without changing it.
TimeNs recorded_step(const DeviceTrace& trace);

}  // namespace chakraflow
