// The link stages composed sequentially, without the flow graph: used by tests, benchmarks and
// fuzzers. pipeline/rank_graph.cc runs the same stage functions as concurrent flow-graph nodes.
#pragma once

#include <string>
#include <vector>

#include "stages/common/ordered_batches.h"
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

// Stage 6 dispatch: the host-device map for the resolved mode. `workers` (may be null): rf_id
// mode's lookups run through it.
StatusOr<HostDeviceMap> map_host_to_device(const HostTrace& host, const DeviceTrace& device,
                                           const LinkOptions& options, DataProblems& stats,
                                           const OrderedBatches* workers = nullptr);

// What the device-side stages found (exclusive durations, gaps, launchers, sync), which the
// last link stage combines with the host trace.
struct DeviceFindings {
  const ExclusiveDurations& exclusive;
  const GapDependencies& gaps;
  const LauncherLinks& launchers;
  const SyncDependencies* sync = nullptr;  // null: no synchronization dependencies
};

// A linked rank: the trace with its new ids, what the run reports about it, and the options the
// writers and the converter must use (the match mode resolved: auto becomes rf_id or sequence).
struct LinkedRank {
  LinkedTrace trace;
  LinkSummary summary;
  LinkOptions options;
};

// Stages 6-7: host-device mapping, then id assignment. `stats` holds what the device-side stages
// counted; the result's trace.stats has them with the mapping's and the id assignment's.
// `workers` (may be null): both stages' parts run through it; the same rank.
StatusOr<LinkedRank> map_and_assign_ids(const HostTrace& host, const DeviceTrace& device,
                                        const DeviceFindings& found, const LinkOptions& options,
                                        DataProblems stats,
                                        const OrderedBatches* workers = nullptr);

// Stage 7 alone, given stage 6's `mapping` (which needs neither launchers nor sync, so that the
// flow graph maps while they run): the same result as map_and_assign_ids when `stats` holds the
// device-side stages' problems, then the mapping's. `workers`: assign_ids' independent parts run
// through it (stages/link/id_assignment.h).
LinkedRank assign_linked_ids(const HostTrace& host, const DeviceTrace& device,
                             const DeviceFindings& found, const HostDeviceMap& mapping,
                             const LinkOptions& options, DataProblems stats,
                             const OrderedBatches* workers = nullptr);
// The synchronization dependencies of a rank assign_linked_ids numbered without them
// (`found.sync` null then, set now): translated to new ids, the sync stage's problems
// (`sync_stats`) counted and the summary's sync part set. With assign_linked_ids, the same rank
// as assign_linked_ids given them: the rank graph runs the sync stage beside the numbering.
void add_linked_sync(const HostTrace& host, const DeviceTrace& device, const DeviceFindings& found,
                     const HostDeviceMap& mapping, const DataProblems& sync_stats,
                     LinkedRank& rank);

// Readies a loaded device trace for linking, before the device-side stages: a timing trace
// (LinkOptions::other_process) must hold one recorded step; the profiler overhead the options ask
// for is taken out (stages/link/profiler_overhead.h). Returns what LinkedTrace::profiler then
// holds: nothing in Chakra mode, or when nothing was taken out and no unprofiled step is known.
StatusOr<std::optional<ProfilerOverheadNote>> prepare_device_trace(DeviceTrace& device,
                                                                   const LinkOptions& options);

// Every link stage in order (the flow graph runs the device-side ones concurrently, then
// map_and_assign_ids). `workers` (may be null: all on the calling thread): the stages that split
// their work run it through it, as on the flow graph; the same rank whatever the workers.
StatusOr<LinkedRank> link_rank(const HostTrace& host, const DeviceTrace& device,
                               const LinkOptions& options, const OrderedBatches* workers = nullptr);
// link_rank's trace.
StatusOr<LinkedTrace> link_traces(const HostTrace& host, const DeviceTrace& device,
                                  const LinkOptions& options,
                                  const OrderedBatches* workers = nullptr);

LinkSummary summarize(const HostTrace& host, const DeviceTrace& device,
                      const LauncherLinks& launchers, const HostDeviceMap& mapping,
                      const GapDependencies& gaps, const LinkedTrace& linked, MatchMode mode);

// Human-readable report (several lines); a warning line reads "count  key: description".
std::string format_link_report(const LinkSummary& summary, const DataProblems& stats);

}  // namespace chakraflow
