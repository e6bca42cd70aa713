#include "stages/simulate/simulator_cost.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "stages/et/schema.h"

namespace chakraflow {
namespace {

int64_t to_ns(double ns) {
  if (!(ns > 0)) return 0;
  if (ns >= 9.0e18) return INT64_MAX / 4;  // far beyond any run; keeps sums from overflowing
  return static_cast<int64_t>(std::llround(ns));
}

}  // namespace

CostModel::CostModel(const NetworkConfig& network)
    : algorithm_(network.algorithm),
      alpha_ns_(network.latency_us * 1000.0),
      // gigabits per second = 0.125 bytes per ns.
      beta_ns_per_byte_(8.0 / network.bandwidth_gbps) {}

int64_t CostModel::collective_ns(int32_t comm_type, int64_t bytes, uint32_t ranks) const {
  if (ranks <= 1) return 0;
  const double p = ranks;
  const double s = static_cast<double>(std::max<int64_t>(bytes, 0));
  const double a = alpha_ns_;
  const double b = beta_ns_per_byte_;
  const double log_p = std::bit_width(ranks - 1);  // ceil(log2 p) for p >= 2
  const bool ring = algorithm_ == CollectiveAlgorithm::kRing;
  const double share = (p - 1) / p;  // of the data each rank sends in a ring pass
  switch (static_cast<CollectiveType>(comm_type)) {
    case CollectiveType::kReduceScatter:
    case CollectiveType::kReduceScatterBlock:
    case CollectiveType::kAllGather:
    case CollectiveType::kGather:
    case CollectiveType::kScatter:
      return to_ns((ring ? (p - 1) : log_p) * a + share * s * b);
    case CollectiveType::kAllToAll:
      return to_ns((p - 1) * a + share * s * b);
    case CollectiveType::kBroadcast:
    case CollectiveType::kReduce:
      return to_ns((ring ? (p - 1) : log_p) * a + s * b);
    case CollectiveType::kBarrier:
      return to_ns(2 * (ring ? (p - 1) : log_p) * a);
    case CollectiveType::kAllReduce:
    default:
      return ring ? to_ns(2 * (p - 1) * a + 2 * share * s * b) : to_ns(2 * log_p * a + 2 * s * b);
  }
}

int64_t CostModel::p2p_ns(int64_t bytes) const {
  return to_ns(alpha_ns_ + static_cast<double>(std::max<int64_t>(bytes, 0)) * beta_ns_per_byte_);
}

}  // namespace chakraflow
