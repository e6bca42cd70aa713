// Options shared by the link stages. Plain value type. set_link_option is the one parser of their
// text form, for `chakraflow link`'s flags and the `link:` section of run configurations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stages/common/status.h"
#include "stages/link/profiler_overhead.h"
#include "stages/link/trace_model.h"

namespace chakraflow {

// kDefault fixes Chakra's known defects (reference/chakra_spec.md §5, docs/compatibility.md);
// kChakra reproduces Chakra 1.0.0 chakra_trace_link output exactly, defects included.
enum class Compat : uint8_t { kDefault, kChakra };

enum class MatchMode : uint8_t { kAuto, kRfId, kSequence };

// kChakra: the ET+ of Chakra's chakra_trace_link (et_plus_writer.h). kLegacy: the layout of the
// legacy exact-match linker (param tools/trace_link.py; et_plus_legacy_writer.h).
enum class OutputFormat : uint8_t { kChakra, kLegacy };

struct LinkOptions {
  Compat compat = Compat::kDefault;
  MatchMode mode = MatchMode::kAuto;
  TimeNs gap_threshold = 1000 * 1000;  // 1000 us, Chakra's default
  int rank = -1;                       // informational (messages, summary)
  OutputFormat format = OutputFormat::kChakra;
  // Sequence mode: device events whose name contains this string (e.g. "ProfilerStep",
  // "DataLoader") end an iteration; the host trace is matched inside one iteration. Empty: the
  // window is found from the operator names alone.
  std::string annotation;
  // Sequence mode: the fewest host ops that must be matched, as a fraction, for the trace and for
  // every host thread with at least 32 ops; below it the link is an error. 0 accepts any result
  // (and skips the same-process check).
  double min_match_rate = 0.9;
  // The device trace comes from another process than the host trace (a timing trace: the same
  // code profiled by Kineto alone in a later step or another run): sequence mode without the
  // same-process check; the match rate still applies.
  bool other_process = false;
  // Profiler overhead (stages/link/profiler_overhead.h). kAuto: taken out when a calibration is
  // given; kOff: never; kDefault: with the calibration, else with kDefaultCalibration.
  enum class Overhead : uint8_t { kAuto, kOff, kDefault };
  Overhead profiler_overhead = Overhead::kAuto;
  // What recorded the device trace: the ET step's own device trace (ET + Kineto), or a timing
  // trace (Kineto alone).
  RecordedWith recorded_with = RecordedWith::kEtAndKineto;
  // The capture's step_time.json, when given: its calibration and unprofiled step.
  std::optional<StepTime> step_time;

  // The costs to take out of the device trace: none in Chakra mode.
  ProfilerCosts profiler_costs() const;
};

// Options for a timing trace as the device trace: sequence mode, another process, recorded by
// Kineto alone.
void set_timing_trace(LinkOptions& options);

// The per-op costs measured on an NVIDIA H200 host with PyTorch 2.11 (../shared/data/pt211_h200,
// the calibration of five runs: none 3.9-7.2, Kineto 7.1-7.8, ET + Kineto 16.3-19.1 us per op),
// used by `profiler_overhead: default` when no step_time.json is given.
inline constexpr StepTime::Calibration kDefaultCalibration = {3.903, 7.51, 17.535};

// Sets the option `name` from its text: "mode" (auto, rf_id, sequence), "compat" (default,
// chakra), "format" (chakra, legacy), "gap_threshold_us" (0 to 1e12 microseconds, stored in ns),
// "annotation", "min_match_rate" (a percentage, stored as a fraction), "profiler_overhead" (auto,
// off, default); or their flags,
// "--gap-threshold-us". The error names the option as `name` spells it (--gap-threshold-us,
// 'gap_threshold_us') and says what is wrong with the value; the caller says where it was.
Status set_link_option(LinkOptions& options, std::string_view name, std::string_view value);

// The option names set_link_option takes, in the configuration's spelling.
const std::vector<std::string>& link_option_names();

}  // namespace chakraflow
