// Options shared by the link stages. Plain value type.
#pragma once

#include <cstdint>

#include "stages/trace_model.h"

namespace chakraflow {

// kDefault fixes Chakra's known defects (reference/chakra_spec.md §5, docs/compatibility.md);
// kChakra reproduces Chakra 1.0.0 chakra_trace_link output exactly, defects included.
enum class Compat : uint8_t { kDefault, kChakra };

enum class MatchMode : uint8_t { kAuto, kRfId, kSequence };

struct LinkOptions {
  Compat compat = Compat::kDefault;
  MatchMode mode = MatchMode::kAuto;
  TimeNs gap_threshold = 1000 * 1000;  // 1000 us, Chakra's default
  int rank = -1;                       // informational (messages, summary)
};

}  // namespace chakraflow
