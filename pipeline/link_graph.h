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

#include <functional>
#include <string>
#include <vector>

#include "stages/link/link.h"
#include "stages/common/status.h"

namespace chakraflow {

struct LinkJob {
  std::string host_path;
  std::string device_path;
  std::string output_path;  // the ET+; empty: none is written (LinkGraphHooks::convert_linked)
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
  double seconds = 0;         // wall time of the job (link)
  Status after_status;        // of LinkGraphHooks::after_link, when it ran
  double after_seconds = 0;
  StageTimes times;
};

// A linked rank, in memory (the link node's view of it).
struct LinkedRank {
  const HostTrace& host;
  const DeviceTrace& device;
  const LinkedTrace& linked;
  const LinkOptions& options;  // the job's, with the match mode resolved
  // Frees the device trace (its text and events: about as much memory as the host trace) once the
  // hook no longer needs it; `device` must not be used after.
  const std::function<void()>& release_device;
};

// Optional work attached to the graph (the batch runner's stages after linking, progress).
struct LinkGraphHooks {
  // Loads a job's host trace in place of load_host_trace(job.host_path) (e.g. with a
  // HostFieldVisitor riding on the loader's pass).
  std::function<StatusOr<HostTrace>(size_t seq)> load_host;
  // Runs in the link node while the rank's traces are still in memory, after its ET+ is committed
  // (or instead of writing one, when the job's output_path is empty): e.g. the conversion to .et
  // without writing and re-reading the ET+. Its status lands in LinkJobResult::after_status, and
  // after_link is not called.
  std::function<Status(size_t seq, const LinkedRank& rank)> convert_linked;
  // Runs in its own flow-graph node after a job's ET+ is committed, still counted against the
  // limiter (e.g. the conversion to .et). Its status lands in LinkJobResult::after_status.
  std::function<Status(size_t seq)> after_link;
  // Called once per job when it is finished, successful or not (any thread; serialise inside).
  std::function<void(size_t seq, const LinkJobResult& result)> on_done;
};

// Runs every job; at most `max_in_flight` jobs hold their traces in memory at once.
std::vector<LinkJobResult> run_link_graph(const std::vector<LinkJob>& jobs, size_t max_in_flight,
                                          const LinkGraphHooks& hooks = {});

}  // namespace chakraflow
