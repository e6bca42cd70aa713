// TimeNs: a time or a duration in integer nanoseconds. Kineto writes microseconds, sometimes with
// a fractional (nanosecond) part; the loaders keep them, and the JSON helpers read and write them,
// as TimeNs.
#pragma once

#include <cstdint>

namespace chakraflow {

using TimeNs = int64_t;

}  // namespace chakraflow
