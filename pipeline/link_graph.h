// The link pipeline as a oneTBB flow graph.
//
//   source(seq) -> limiter -> broadcast -+-> load_host ---------------------------------+
//                                        +-> load_device -> broadcast -+--------------+ |
//                                                                      +-> exclusive -+ |
//                                                                      +-> gaps ------+-+->
//                                                                      join(seq) -> link_and_write
//                                                                      +-> launchers -+ |
//   limiter.decrementer()
//   <-------------------------------------------------------------------------------+
//
// Many jobs (ranks) flow through the graph at once; the limiter bounds how many are in flight, and
// so the memory. The three per-device stages run concurrently. Each job's result lands in its own
// slot, so results are in job order whatever the scheduling. No exception escapes a node body.
#pragma once

#include <string>
#include <vector>

#include "stages/link.h"
#include "stages/status.h"

namespace chakraflow {

struct LinkJob {
  std::string host_path;
  std::string device_path;
  std::string output_path;
  LinkOptions options;
};

struct StageTimes {
  double load_host = 0, load_device = 0, exclusive = 0, gaps = 0, launchers = 0, link = 0,
         write = 0;
};

struct LinkJobResult {
  Status status;
  LinkSummary summary;
  LinkStats stats;
  uint64_t input_bytes = 0;   // decompressed host + device JSON
  uint64_t output_bytes = 0;  // uncompressed ET+ bytes
  double seconds = 0;         // wall time of the job
  StageTimes times;
};

// Runs every job; at most `max_in_flight` jobs hold their traces in memory at once.
std::vector<LinkJobResult> run_link_graph(const std::vector<LinkJob>& jobs, size_t max_in_flight);

}  // namespace chakraflow
