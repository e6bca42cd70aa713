// Options shared by the link stages. Plain value type.
#pragma once

#include <cstdint>
#include <string>

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

}  // namespace chakraflow
