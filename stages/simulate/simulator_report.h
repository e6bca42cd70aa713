// What a simulation reports (stages/simulate/simulator.h): per-rank predicted and measured step
// times, the critical path by node kind, the stall report; as text and as the `--report-json`
// document:
//
//   {"status": "completed" | "stalled",
//    "mode": "replay", "config": {...},
//    "ranks": [{"rank": 0, "predicted_us": 14322.0, "measured_us": 14351.0, "error_pct": -0.2,
//               "nodes": 1935, "state": "done"}, ...],
//    "critical_path": {"total_us": ..., "nodes": ..., "ranks": [...],
//                      "by_kind_us": {"cpu": ..., "gpu": ..., "collective": ..., "p2p": ...,
//                                     "host_delay": ..., "rank_start": ...}},
//    "stall": ["..."], "problems": {"<key>": count}, "nodes": ..., "events": ..., "rounds": ...,
//    "collectives": ..., "messages": ...}
//
// measured_us / predicted_us are null when unknown. Times in µs with ns precision. The document
// depends only on the result (no wall times): the same inputs give the same bytes.
//
// critical_path is a pure function of the ranks' simulated nodes. Thread-compatible.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stages/common/stats.h"
#include "stages/simulate/sim_config.h"
#include "stages/simulate/simulator_rank.h"

namespace chakraflow {

// Kinds of time on the critical path.
enum class PathKind : uint8_t {
  kCpu,         // CPU ops
  kGpu,         // GPU compute kernels and copies
  kCollective,  // collective transfers (from the last member's arrival)
  kP2p,         // point-to-point transfers
  kHostDelay,   // recorded delays between a node's dependencies and its start
  kRankStart,   // from time 0 to the first node on the path (rank start offset)
  kCount,
};
const char* to_string(PathKind kind);

struct CriticalPath {
  int64_t total_ns = 0;
  std::array<int64_t, static_cast<size_t>(PathKind::kCount)> by_kind_ns{};
  std::array<uint64_t, static_cast<size_t>(PathKind::kCount)> nodes_by_kind{};
  uint64_t nodes = 0;
  std::vector<uint32_t> ranks;  // ranks the path goes through, sorted
  uint32_t end_rank = 0;
  NodeId end_node = 0;
};

struct RankResult {
  uint32_t rank = 0;
  std::string path;
  std::optional<double> predicted_us;  // the rank's simulated step (first start to last end)
  std::optional<double> measured_us;   // GlobalMetadata step_time_us: the trace's own step
  // What the trace says of its recording (stages/link/profiler_overhead.h, GlobalMetadata):
  std::optional<double> recorded_us;  // recorded_step_time_us: the step as the profiler recorded
                                      // it, before the overhead was taken out
  bool overhead_removed = false;      // profiler_overhead_removed
  // unprofiled_step_median_us / _min_us: the step measured without a profiler (step_time.json).
  std::optional<double> unprofiled_median_us, unprofiled_min_us;
  uint64_t nodes_read = 0;
  uint64_t nodes_done = 0;
  std::string state;    // "done", "waiting" (in communication), "stalled" (dependencies), "error"
  std::string problem;  // why it did not finish
};

struct SimResult {
  bool completed = false;  // every rank ran every node; nothing waits
  std::vector<RankResult> ranks;
  CriticalPath critical_path;
  // When not completed: one line per blocked collective / receive / rank, naming ranks and nodes.
  std::vector<std::string> stall;
  uint64_t nodes = 0;
  uint64_t events = 0;
  uint64_t rounds = 0;
  uint64_t collectives = 0;  // matched
  uint64_t messages = 0;     // point-to-point messages matched
  DataProblems problems;     // data problems that did not stop the run, by kind
};

// From the node that ends last (over all ranks; ties: lowest rank, then earliest node) back to
// time 0, following each node's start reason and each communication's deciding member.
CriticalPath critical_path(const std::vector<const RankSimulator*>& ranks);

// The --report-json document.
std::string report_json(const SimResult& result, const SimConfig& config);

// The human-readable summary: the per-rank table, the critical path, the stall report.
std::string report_text(const SimResult& result, const SimConfig& config);

}  // namespace chakraflow
