// The link stages composed sequentially, without the flow graph: used by tests, benchmarks and
// fuzzers. pipeline/link_graph.cc runs the same stage functions as concurrent flow-graph nodes.
#pragma once

#include <string>
#include <vector>

#include "stages/link/exclusive_durations.h"
#include "stages/link/gap_dependencies.h"
#include "stages/link/host_device_mapping.h"
#include "stages/link/id_assignment.h"
#include "stages/link/launcher_correlation.h"
#include "stages/link/link_options.h"
#include "stages/link/linked_trace.h"
#include "stages/link/sync_dependencies.h"

namespace chakraflow {

// What a link run reports: coverage and the data problems counted by kind.
struct LinkSummary {
  uint64_t host_nodes = 0;
  uint64_t host_ops_linked = 0;      // host nodes paired with a device CPU op
  uint64_t host_ops_with_rf_id = 0;  // host ops with rf_id != 0
  uint64_t host_op_candidates = 0;   // host ops the mapping tried to pair (see HostDeviceMap)
  uint64_t device_cpu_ops = 0;
  uint64_t gpu_ops = 0;           // GPU ops considered
  uint64_t gpu_ops_linked = 0;    // written as GPU nodes
  uint64_t gpu_ops_orphaned = 0;  // no launch event / no CPU op / CPU op without host op
  uint64_t et_plus_nodes = 0;
  uint64_t gap_groups = 0;
  SyncSummary sync;                  // synchronization dependencies (none in Chakra mode)
  std::string mode;                  // "rf_id" or "sequence"
  std::vector<ThreadMatch> threads;  // sequence mode: per host thread, how it was matched
};

// Resolves MatchMode::kAuto from the device trace.
MatchMode resolve_mode(const DeviceTrace& device, MatchMode requested);

// Stage 6 dispatch: the host-device map for the resolved mode.
StatusOr<HostDeviceMap> map_host_to_device(const HostTrace& host, const DeviceTrace& device,
                                           const LinkOptions& options, LinkStats& stats);

// Runs stages 3-7 in order (with the sync dependencies after launcher correlation).
StatusOr<LinkedTrace> link_traces(const HostTrace& host, const DeviceTrace& device,
                                  const LinkOptions& options);

LinkSummary summarize(const HostTrace& host, const DeviceTrace& device,
                      const LauncherLinks& launchers, const HostDeviceMap& mapping,
                      const GapDependencies& gaps, const LinkedTrace& linked, MatchMode mode);

// Human-readable report (several lines); a warning line reads "count  key: description".
std::string format_link_report(const LinkSummary& summary, const LinkStats& stats);

}  // namespace chakraflow
