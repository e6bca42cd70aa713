// The simulator's network cost model: alpha-beta (latency-bandwidth) costs of collectives and
// point-to-point messages (docs/simulation.md has the formulas and their sources).
//
// With p ranks, S bytes (the node's comm_size, taken as the collective's data size, as ASTRA-sim
// does), alpha = latency, beta = 1 / bandwidth and L = ceil(log2 p):
//
//   collective       ring                              tree
//   all-reduce       2(p-1) alpha + 2(p-1)/p S beta    2L alpha + 2 S beta
//   reduce-scatter,  (p-1) alpha + (p-1)/p S beta      L alpha + (p-1)/p S beta
//   all-gather, gather, scatter
//   all-to-all       (p-1) alpha + (p-1)/p S beta      (as ring: pairwise exchange)
//   broadcast,       (p-1) alpha + S beta              L alpha + S beta
//   reduce
//   barrier          2(p-1) alpha                      2L alpha
//   send/recv        alpha + S beta
//
// A group of one rank costs 0. Times are integer nanoseconds (rounded to nearest).
// Immutable after construction; thread-safe.
#pragma once

#include <cstdint>

#include "stages/simulate/sim_config.h"

namespace chakraflow {

class CostModel {
 public:
  explicit CostModel(const NetworkConfig& network);

  // Cost of a collective of Chakra CollectiveCommType `comm_type` (an unknown type is costed as
  // an all-reduce) over `ranks` ranks.
  int64_t collective_ns(int32_t comm_type, int64_t bytes, uint32_t ranks) const;
  int64_t p2p_ns(int64_t bytes) const;

  double alpha_ns() const { return alpha_ns_; }
  double beta_ns_per_byte() const { return beta_ns_per_byte_; }

 private:
  CollectiveAlgorithm algorithm_;
  double alpha_ns_;
  double beta_ns_per_byte_;
};

}  // namespace chakraflow
