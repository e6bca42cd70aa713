// Options shared by the link stages. Plain value type. set_link_option is the one parser of their
// text form, for `chakraflow link`'s flags and the `link:` section of run configurations.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stages/common/status.h"
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
};

// Sets the option `name` from its text: "mode" (auto, rf_id, sequence), "compat" (default,
// chakra), "format" (chakra, legacy), "gap_threshold_us" (0 to 1e12 microseconds, stored in ns),
// "annotation", "min_match_rate" (a percentage, stored as a fraction); or their flags,
// "--gap-threshold-us". The error names the option as `name` spells it (--gap-threshold-us,
// 'gap_threshold_us') and says what is wrong with the value; the caller says where it was.
Status set_link_option(LinkOptions& options, std::string_view name, std::string_view value);

// The option names set_link_option takes, in the configuration's spelling.
const std::vector<std::string>& link_option_names();

}  // namespace chakraflow
