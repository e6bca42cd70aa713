// Stage 7: attaches GPU ops to host ops and assigns the ET+ ids, as Chakra's UniqueIdAssigner
// does: host nodes in original id order get dense ids from 0, each followed immediately by its GPU
// ops (in GPU ts order). Parents are remapped to new ids; a missing parent is reattached to the
// root of its thread (default) or given a fresh dangling id (Chakra mode). Inter-thread
// dependencies are resolved from device events to host ops.
//
// Synchronization dependencies (default mode) are translated to new ids: a CPU waiter without host
// op passes its wait to the next CPU op of its thread that has one (it starts later still); a
// wait involving a GPU op that is not written as a node (orphan) is dropped and counted, so every
// id in sync_deps / gpu_sync_deps is a node of the output. Chakra mode writes none.
#pragma once

#include "stages/common/ordered_batches.h"
#include "stages/link/exclusive_durations.h"
#include "stages/link/gap_dependencies.h"
#include "stages/link/host_device_mapping.h"
#include "stages/link/launcher_correlation.h"
#include "stages/link/link_options.h"
#include "stages/link/linked_trace.h"
#include "stages/link/sync_dependencies.h"

namespace chakraflow {

struct LinkInputs {
  const HostTrace& host;
  const DeviceTrace& device;
  const ExclusiveDurations& exclusive;
  const GapDependencies& gaps;
  const LauncherLinks& launchers;
  const HostDeviceMap& mapping;
  const SyncDependencies* sync = nullptr;  // null: no synchronization dependencies
};

// `workers`: its independent parts run through it concurrently (the GPU ops' grouping beside the
// rf_id index; the threads ops ran on beside the parents and sync dependencies): the same result.
LinkedTrace assign_ids(const LinkInputs& in, const LinkOptions& options, DataProblems stats,
                       const OrderedBatches* workers = nullptr);

// The synchronization dependencies translated to new ids into `out` (default mode, `in.sync`
// set), as assign_ids does when given them: for a caller that numbered the ops without them, so
// that the sync stage runs beside the numbering (the rank graph); the same trace either way.
void add_sync_ids(const LinkInputs& in, const LinkOptions& options, LinkedTrace& out);

}  // namespace chakraflow
