// The simulator's run configuration (`chakraflow simulate --config sim.yaml`, configs/sim.yaml).
//
//   mode: replay            # replay | model
//   network:
//     bandwidth_gbps: 100   # link bandwidth, gigabits per second (1 Gb/s = 0.125 bytes/ns)
//     latency_us: 5         # per-step latency (alpha), microseconds
//     algorithm: ring       # ring | tree
//   host_gaps: true         # keep the recorded delays between dependent ops (host overhead)
//   rank_skew: true         # start every rank at its recorded start offset
//   collective_replay: min  # replay: a collective lasts the min (default) or each rank's own
//                           # recorded duration after its last member arrived
//   compute_scale: 1.0      # multiplies every compute (non-communication) duration
//
// Every key is optional (defaults above). An unknown key, a value of the wrong type or out of range
// is an error naming the source, the line and the column. Documented in docs/simulation.md.
//
// Value type; thread-compatible. parse_sim_config is pure; load_sim_config reads a file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "stages/common/status.h"

namespace chakraflow {

enum class SimMode : uint8_t {
  kReplay,  // every node lasts its recorded duration; a collective its measured transfer time
  kModel,   // collectives and point-to-point messages cost the alpha-beta network model
};

enum class CollectiveAlgorithm : uint8_t { kRing, kTree };

enum class CollectiveReplay : uint8_t {
  kMin,  // the shortest recorded duration among the members (the last arriver's: no wait in it)
  kOwn,  // each member's own recorded duration (it includes the time that member waited)
};

struct NetworkConfig {
  double bandwidth_gbps = 100;  // gigabits per second
  double latency_us = 5;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
};

struct SimConfig {
  SimMode mode = SimMode::kReplay;
  NetworkConfig network;
  bool host_gaps = true;
  bool rank_skew = true;
  CollectiveReplay collective_replay = CollectiveReplay::kMin;
  double compute_scale = 1.0;
};

const char* to_string(SimMode mode);
const char* to_string(CollectiveAlgorithm algorithm);
const char* to_string(CollectiveReplay replay);

// Parses YAML text; `source` names it in messages ("configs/sim.yaml:4:3: unknown key ...").
StatusOr<SimConfig> parse_sim_config(std::string_view yaml, std::string_view source);

// Reads and parses a file.
StatusOr<SimConfig> load_sim_config(const std::string& path);

}  // namespace chakraflow
