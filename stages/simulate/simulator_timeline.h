// The simulated timeline as Chrome trace-event JSON (`chakraflow simulate --timeline FILE`; opens
// in Perfetto and chrome://tracing): one process per rank, one thread per resource (CPU thread,
// GPU stream), one complete ("X") event per node that ran, at its simulated start with its
// simulated duration, in µs with ns precision. Args carry the node id, the recorded delay it kept,
// and for communication the wait (arrival to transfer start), the transfer time and the peer that
// decided it. A node that started and never finished (a stall) is an instant event named
// "waiting: NAME". Node names are present when the Simulation kept them (SimOptions::keep_names).
//
// Output bytes depend only on the simulation. Written to a temporary file and renamed; gzip'd when
// the name ends in .gz. Thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "stages/common/status.h"
#include "stages/simulate/simulator_rank.h"

namespace chakraflow {

// Appends the document to `out`.
void append_timeline_json(const std::vector<const RankSimulator*>& ranks, std::string& out);

Status write_timeline(const std::vector<const RankSimulator*>& ranks, const std::string& path);

}  // namespace chakraflow
