// The PyTorch → Chakra converter (`chakraflow convert`, Chakra's `chakra_converter PyTorch`).
//
// Input: an ET+ (trace_link output) or a plain host execution trace, schema 1.0.1 to 1.1.1,
// .json or .json.gz. Output: a Chakra .et file (stages/et/et_io.h). The stages, in order (see
// stages/convert/convert_model.h): load_et_plus → node selection and attributes (here, with
// CommTyper) → encode_dependencies → remove_dangling_nodes → check_acyclic → write.
//
// Which nodes are converted, as Chakra does it (reference/chakra_spec.md §2.4): every CPU and
// METADATA node in input order, each followed by its GPU children; a GPU node whose launcher is
// missing is not converted. ctrl_deps = [parent] when the parent was converted before the node
// (Chakra mode: host traces list children before parents, so most of their nodes get none);
// default mode writes [parent] whenever the parent is in the output. Default mode also keeps the
// subtrees of nodes whose parent is missing, attached to the thread root of their tid.
//
// Durations: Chakra truncates exclusive_dur to whole µs (sub-µs kernels become 0, which ASTRA-sim
// skips); default mode rounds to the nearest µs and writes at least 1 µs for any positive
// duration, and writes start_time_micros from ts. Nodes named *Optimizer.step* get duration 0
// (Chakra's rule) unless ConvertOptions::zero_optimizer_step is false.
//
// Output bytes are deterministic. Functions are thread-compatible (no shared state).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stages/common/ordered_batches.h"
#include "stages/common/status.h"
#include "stages/convert/comm_groups.h"
#include "stages/convert/convert_model.h"
#include "stages/convert/dependency_encoding.h"

namespace ChakraProtoMsg {
class GlobalMetadata;
class Node;
}  // namespace ChakraProtoMsg

namespace chakraflow {

class EtWriter;

struct ConvertReport {
  uint64_t input_nodes = 0;
  uint64_t output_nodes = 0;
  uint64_t removed_dangling = 0;
  uint64_t gpu_stream_edges = 0;
  uint64_t sync_edges = 0;
  uint64_t bytes_written = 0;
  DataProblems stats;  // data problems that did not stop the conversion, by kind
  // The trace's communicator groups (stages/convert/comm_groups.h: comm_groups_of), for the
  // group file ASTRA-sim reads; `rank` is the caller's to set.
  RankCommGroups comm_groups;
};

// ET+ nodes → the Chakra nodes that are written, sorted by id, dependencies encoded and checked
// for cycles: the stages below, in order. Data problems are added to `stats`. `workers` (may be
// null): the stages' ranges run through it; the same trace.
StatusOr<ChakraTrace> convert_et_plus(const EtPlusTrace& trace, const ConvertOptions& options,
                                      DataProblems& stats, const OrderedBatches* workers = nullptr);

// The conversion's stages, one at a time (the rank graph, pipeline/rank_graph.h, runs each as a
// node of its own): select_nodes -> encode_dependencies (stages/convert/dependency_encoding.h, on
// `graph`, into `dependencies`) -> drop_dangling_nodes -> check_acyclic
// (stages/convert/cycle_check.h) -> write_converted (the rank graph gives it the cycle check to run
// beside the encoding). A trace being converted, between them:
struct Conversion {
  ConversionGraph graph;
  // The group names the communication typing chose (CommAttrs point into them).
  std::vector<std::unique_ptr<std::string>> pg_names;
  DependencyStats dependencies;
};
// The call tree the walk follows, and the nodes converted, in Chakra's order (CPU and METADATA
// nodes in input order, each followed by its GPU children), with their type, duration, stream,
// start and communication attributes. `workers`: the nodes converted in ranges through it,
// concurrently (the same result).
Conversion select_nodes(const EtPlusTrace& trace, const ConvertOptions& options,
                        DataProblems& stats, const OrderedBatches* workers = nullptr);
// The nodes that are written: the dangling ones removed, sorted by id, their groups renamed by
// ConvertOptions::pg_name_offset. `workers`: remove_dangling_nodes' passes through it.
ChakraTrace drop_dangling_nodes(const EtPlusTrace& trace, const ConvertOptions& options,
                                Conversion&& conversion, DataProblems& stats,
                                const OrderedBatches* workers = nullptr);
// Writes `output_path` atomically (write_chakra_trace, through `batches`) and fills `report`
// (optional; its stats: `stats`). `check_beside` (optional): a check run beside the encoding (the
// rank graph's cycle check); the file is committed only when it passed, else its error is returned.
Status write_converted(const EtPlusTrace& trace, const ChakraTrace& chakra, DataProblems stats,
                       const std::string& output_path, const ConvertOptions& options,
                       ConvertReport* report, const OrderedBatches* batches = nullptr,
                       const std::function<Status()>& check_beside = {});

// The step the trace recorded, in the device trace's clock (µs): from the first start to the last
// end (ts + inclusive_dur, or exclusive_dur when larger) of the nodes linked to the device trace
// (those with a ts). nullopt when no node has one (a plain host trace). Default mode writes it to
// the GlobalMetadata as the double attrs step_start_us, step_end_us and step_time_us, the measured
// step time `chakraflow simulate` compares its prediction with (docs/simulation.md).
struct MeasuredStep {
  double start_us = 0;
  double end_us = 0;
};
// `workers` (may be null): the nodes read in ranges, concurrently (the same step).
std::optional<MeasuredStep> measured_step(const EtPlusTrace& trace,
                                          const OrderedBatches* workers = nullptr);

// The messages Chakra writes for the trace (default mode adds the measured step).
void fill_global_metadata(const EtPlusTrace& trace, const ConvertOptions& options,
                          ChakraProtoMsg::GlobalMetadata* metadata,
                          const OrderedBatches* workers = nullptr);
// A node's six IOInfo strings (Python's str() of each list, stages/convert/python_repr.h), rendered
// from the raw JSON the node points at (EtPlusTrace::raw_io); a missing list is "[]".
struct RenderedIo {
  std::string text;                    // the lists' text, then room kept for the next node's
  std::string_view io[kIoFieldCount];  // into text
};
// Fails, naming the file, the node's byte offset and id, and the list, on a list that is not
// well-formed JSON (the loader only checks that its brackets balance).
Status render_io(const EtPlusTrace& trace, const EtPlusNode& node, RenderedIo& out);

// `record` is one of `chakra`'s nodes (its communication attributes are in `chakra`). Fails as
// render_io.
Status fill_node(const EtPlusTrace& trace, const ChakraTrace& chakra,
                 const ChakraNodeRecord& record, ChakraProtoMsg::Node* node);
// The serialized bytes of fill_node's message, encoded directly (what write_chakra_trace writes:
// no message objects per node). Replaces `out`.
Status encode_node(const EtPlusTrace& trace, const ChakraTrace& chakra,
                   const ChakraNodeRecord& record, std::string& out);

// Records per batch of write_chakra_trace: about 1-2 MB of output.
inline constexpr size_t kEtBatchRecords = 4096;

// Writes the GlobalMetadata then every node (in id order) to `writer` (not committed). The nodes
// are encoded in batches of kEtBatchRecords through `batches` (concurrently where it runs them
// so; one after another without it) and written in order: the same bytes either way.
Status write_chakra_trace(const EtPlusTrace& trace, const ChakraTrace& chakra,
                          const ConvertOptions& options, EtWriter& writer,
                          const OrderedBatches* batches = nullptr);

// The whole converter: loads `input_path`, converts, and writes `output_path` atomically.
Status convert_file(const std::string& input_path, const std::string& output_path,
                    const ConvertOptions& options, ConvertReport* report);

// The converter after reading: converts `trace` (from load_et_plus, parse_et_plus or
// read_linked_nodes) and writes `output_path` atomically, its records encoded through `batches`
// (as write_converted).
Status convert_trace(const EtPlusTrace& trace, const std::string& output_path,
                     const ConvertOptions& options, ConvertReport* report,
                     const OrderedBatches* batches = nullptr);

}  // namespace chakraflow
