// A rank's pipeline, declared once: the oneTBB flow graph that `chakraflow link`, `convert` and
// `run` all build (rank_graph.cc holds the one declaration).
//
// From a host and a device trace (RankInput::kHostAndDevice):
//
//   source -> limiter -> fan_out -+-> load_host --+---------------------------------------+
//                                 |               +-> host_and_device -> map -------------+
//                                 +-> load_device -> device_out -+------------------------+
//                                                                +-> (host_and_device)    |
//                                                                +-> exclusive -----------+
//                                                                +-> gaps ----------------+
//                                                                +-> launchers -+---------+
//                                                                +--------------+-> sync -|-+
//                                                                                         | |
//      join <-----------------------------------------------------------------------------+ |
//        -> assign_ids -> ids_and_sync <----------------------------------------------------+
//        -> add_sync -> [write_et_plus] -> [release_device -> complete_nodes | read_et_plus]
//        -> [select_nodes -> encode_dependencies -> drop_dangling -> write_et]
//        -> finish -> limiter.decrementer()
//
// From an ET+ file (RankInput::kEtPlus): source -> limiter -> start -> read_et_plus ->
// select_nodes -> ... -> write_et -> finish.
//
// The ids are numbered (assign_ids) while the sync stage runs; its dependencies are translated to
// them after (add_sync). The nodes in brackets exist when the plan asks for them: write_et_plus
// when an ET+ is kept (or, in the legacy layout, converted from a temporary file); the converter's
// stages when the rank is converted to .et, one node each (stages/convert/pytorch_converter.h;
// write_et runs the cycle check beside the encoding and commits only an acyclic trace), from its
// nodes either completed in memory (release_device -> complete_nodes) or read from an ET+ file
// (read_et_plus). In the chakra layout the conversion is in memory: the host loader makes the
// converter's node of every host node in its own pass (one parse of the text; the printed graph
// says so on load_host), complete_nodes gives them what linking learned (read_linked_nodes: it
// reads nothing), and no ET+ is written that is not kept; release_device frees the device trace
// (about as large as the host trace) before complete_nodes makes the GPU ops' nodes.
// `chakraflow link --print-graph` (and convert, run) print the graph as Graphviz dot.
//
// Many jobs (ranks) flow through the graph at once; the limiter bounds how many are in flight,
// and so the memory. The device-side stages run concurrently. Each job's result lands in its own
// slot, so results are in job order whatever the scheduling. No exception escapes a node body:
// a node that fails turns its job into a failed message that the nodes after it pass on.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "stages/common/status.h"
#include "stages/convert/convert_model.h"
#include "stages/convert/pytorch_converter.h"
#include "stages/link/link.h"

namespace chakraflow {

enum class RankInput : uint8_t { kHostAndDevice, kEtPlus };

// What every job of a graph does (the graph's shape).
struct RankPlan {
  RankInput input = RankInput::kHostAndDevice;
  bool write_et_plus = true;                    // keep the ET+ (RankJob::et_plus_path)
  bool convert = false;                         // write the .et (RankJob::et_path)
  OutputFormat format = OutputFormat::kChakra;  // the ET+ layout (LinkOptions::format)
  // The legacy layout is converted through a temporary ET+ file when none is kept; the chakra
  // layout in memory.
  bool converts_in_memory() const {
    return convert && input == RankInput::kHostAndDevice && format == OutputFormat::kChakra;
  }
  bool writes_et_plus_file() const {
    return input == RankInput::kHostAndDevice &&
           (write_et_plus || (convert && !converts_in_memory()));
  }
};

struct RankJob {
  std::string host_path;     // the host ET (kHostAndDevice) or the ET+ (kEtPlus)
  std::string device_path;   // kHostAndDevice only
  std::string et_plus_path;  // the ET+ written when the plan keeps it
  std::string et_path;       // the .et written when the plan converts
  LinkOptions link;
  ConvertOptions convert;
  // The capture's step_time.json (empty: none): read with the device trace, it fills
  // LinkOptions::step_time (stages/link/profiler_overhead.h).
  std::string step_time_path;
};

struct StageTimes {
  double load_host = 0, load_device = 0, exclusive = 0, gaps = 0, launchers = 0, sync = 0, map = 0,
         link = 0, write = 0, convert = 0;
};

struct RankJobResult {
  Status status;          // the first error that stopped the job
  LinkSummary summary;    // kHostAndDevice
  DataProblems stats;     // data problems the link stages counted
  ConvertReport convert;  // when converted (its stats: the converter's data problems)
  // What was done about profiler overhead (prepare_device_trace), and the unprofiled step.
  std::optional<ProfilerOverheadNote> profiler;
  uint64_t input_bytes = 0;   // decompressed host + device JSON
  uint64_t output_bytes = 0;  // uncompressed ET+ bytes written
  double seconds = 0;         // wall time of the job, from its start to finish
  StageTimes times;
};

// Runs every job through the plan's graph; at most `max_in_flight` jobs hold their traces in
// memory at once. `on_done` (optional) is called once per job when it has finished, successful
// or not, from any thread (serialise inside): progress reports.
std::vector<RankJobResult> run_rank_graph(
    const RankPlan& plan, const std::vector<RankJob>& jobs, size_t max_in_flight,
    const std::function<void(size_t seq, const RankJobResult& result)>& on_done = {});

// One rank linked to its ET+ (job.et_plus_path, in job.link.format): `chakraflow link`.
RankJobResult run_link_job(const RankJob& job);

// The plan's graph as Graphviz dot: the nodes and edges run_rank_graph makes.
std::string rank_graph_dot(const RankPlan& plan);

}  // namespace chakraflow
