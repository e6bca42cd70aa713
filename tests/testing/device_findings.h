// The device-side stages' findings of a rank (link_rank's stages 2-5, one after another), for
// tests that then number the rank themselves (assign_linked_ids) with and without workers.
#pragma once

#include "stages/common/stats.h"
#include "stages/link/exclusive_durations.h"
#include "stages/link/gap_dependencies.h"
#include "stages/link/launcher_correlation.h"
#include "stages/link/link.h"
#include "stages/link/sync_dependencies.h"

namespace chakraflow::testing {

struct Findings {
  ExclusiveDurations exclusive;
  GapDependencies gaps;
  LauncherLinks launchers;
  SyncDependencies sync;

  // What assign_linked_ids takes: views of the findings above (this object must outlive it).
  DeviceFindings view() const { return {exclusive, gaps, launchers, &sync}; }
};

// The findings of `device` under `options`, their problems counted into `stats` in link_rank's
// order.
inline Findings device_findings(const DeviceTrace& device, const LinkOptions& options,
                                DataProblems& stats) {
  Findings f;
  f.exclusive = compute_exclusive_durations(device, options.compat);
  f.gaps = compute_gap_dependencies(device, options.gap_threshold);
  f.launchers = correlate_launchers(device, options.compat, stats);
  f.sync = compute_sync_dependencies(device, f.launchers, options.compat, stats);
  return f;
}

}  // namespace chakraflow::testing
