// The multi-rank simulation (`chakraflow simulate`): predicts the step time of every rank of a
// distributed run from its Chakra .et traces (one per rank). Method: docs/simulation.md.
//
//   Simulation::open(paths, options)  one EtFeeder per rank (MultiFeeder) and one RankSimulator
//                                     (stages/simulate/simulator_rank.h) per rank
//   run()                             rounds of: every rank handles its events up to its horizon
//                                     (ranks in parallel, oneTBB) -> the communication it reached
//                                     is matched (stages/simulate/simulator_comm.h, serial, rank
//                                     order) -> completions are delivered
//   result()                          per-rank predicted / measured step, critical path, stall
//
// The run is conservative: a rank never handles an event later than a completion it could still
// receive, so the result is the one a sequential event-driven simulation would give, and it does
// not depend on the number of threads. A round that handles no event and delivers nothing ends
// the run: it is complete, or it is a stall (ranks waiting in communication that cannot match,
// nodes whose dependencies cannot be met), which result() explains. It never hangs.
//
// Measured step: the GlobalMetadata attr step_time_us that `chakraflow convert` writes (first
// start to last end of the linked nodes, device-trace clock); absent for other producers.
//
// This is the multi-rank driver and the only simulator file that uses TBB. Thread safety: one
// Simulation per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stages/common/stats.h"
#include "stages/common/status.h"
#include "stages/feed/et_feeder.h"
#include "stages/simulate/sim_config.h"
#include "stages/simulate/simulator_rank.h"
#include "stages/simulate/simulator_report.h"

namespace chakraflow {

struct SimOptions {
  SimConfig config;
  bool keep_names = false;  // node names, for the timeline
  // The feeder's window (refill_below is forced to 0: the window is read eagerly, so that a
  // parent's next op on its thread is known when the parent starts).
  FeederOptions feeder;
  // Safety bound on rounds (0: none). Every round makes progress or ends the run, so this only
  // turns an unexpected bug into an error instead of a long run.
  uint64_t max_rounds = 0;
};

class Simulation {
 public:
  // Opens every trace (in parallel). Errors: a file that cannot be opened or has no valid first
  // record; the message names every rank whose file is missing.
  static StatusOr<std::unique_ptr<Simulation>> open(const std::vector<std::string>& paths,
                                                    const SimOptions& options);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // Runs to the end. An error is a malformed trace (or the round bound); a stall is a result.
  Status run();
  const SimResult& result() const { return result_; }
  std::vector<const RankSimulator*> ranks() const;

 private:
  struct Impl;
  explicit Simulation(std::unique_ptr<Impl> impl);
  // run()'s end: result_ from the ranks and the matcher.
  void collect_result();
  std::unique_ptr<Impl> impl_;
  SimResult result_;
};

// Expands a trace template: "{rank}" is replaced by the rank; a template without it is a prefix
// (ASTRA-sim's workload prefix) and gets ".{rank}.et" appended.
std::vector<std::string> expand_trace_paths(const std::string& pattern, uint32_t ranks);

}  // namespace chakraflow
