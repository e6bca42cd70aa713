// Converter stage 3: data dependencies (reference/chakra_spec.md §2.8, §2.9).
//
// encode_dependencies walks the call tree from every thread root in a pre-order DFS (children in
// ascending id order; iterative, linear in the number of nodes) and encodes, like Chakra:
//   - a chain over the CPU and METADATA nodes of each thread, in pre-order;
//   - each GPU node → the CPU node that launched it;
//   - each CPU node → its inter_thread_dep (before its chain predecessor).
// Default mode adds (docs/compatibility.md):
//   - sync dependencies: a CPU node → the GPU nodes in its `sync_dep` list (Chakra drops them all,
//     spec §5 #15);
//   - each GPU node → the previous GPU node of its (device, stream) by start time, so that a
//     collective waits for the work queued before it on its stream (Chakra leaves GPU ops free
//     once their launcher ran, so collectives start at time zero);
// An added edge must point to a node that comes earlier in one topological order of the Chakra
// edges (the one that follows start times), so the result stays acyclic; edges that would not are
// skipped and counted.
//
// remove_dangling_nodes drops every node that has no data dependency and that no node depends on
// (one pass suffices, as in Chakra). In default mode it also drops ctrl_deps pointing at a removed
// node (the thread roots' link to the removed process root, spec §5 #21).
//
// Plain functions over the conversion state; thread-compatible.
#pragma once

#include <vector>

#include "stages/common/ordered_batches.h"
#include "stages/convert/convert_model.h"

namespace chakraflow {

// The converted nodes, in Chakra's conversion order (its protobuf_node_map), with the call tree.
// The lists of converted nodes note_walk_facts appends to, in conversion order.
struct WalkLists {
  struct StreamKey {
    int64_t device;
    int64_t stream;
    double ts;
    uint32_t index;
  };
  std::vector<StreamKey> stream_keys;  // default mode: GPU nodes with a stream and a start time
  std::vector<uint32_t> thread_roots;  // the thread roots
  std::vector<uint32_t> with_sync;     // the nodes with sync deps
  std::vector<uint32_t> off_thread;    // default mode: the off-thread nodes (kOffThread)

  // `later`'s roots, nodes with sync deps and off-thread nodes after these (ranges of the
  // conversion order, joined in order); the stream keys are joined apart.
  void append_lists(const WalkLists& later);
};

struct ConversionGraph {
  std::vector<ChakraNodeRecord> records;  // in conversion order
  std::vector<CommAttrs> comm;            // ChakraNodeRecord::comm
  std::vector<uint32_t> slot;             // EtPlusTrace index → records index, kNoNode if absent
  // Children of every EtPlusTrace node in the call tree the walk follows, in ascending id order:
  // children[child_begin[i] .. child_begin[i + 1]).
  std::vector<uint32_t> child_begin;
  std::vector<uint32_t> children;
  std::vector<uint32_t> parent;  // the same tree: each node's parent, kNoNode if none
  // Extra walk roots (default mode: orphans with no thread root to attach to), in id order.
  std::vector<uint32_t> extra_roots;

  // What the walks ask of the converted nodes, copied out by note_walk_facts as each node is
  // converted: by the walks, the nodes' cache lines (224 bytes a node) are long gone.
  std::vector<uint32_t> inter_thread_dep;  // by node index: its inter_thread_dep's index, or
                                           // kNoNode (none, or no such node)
  std::vector<double> start;               // by node index, default mode: ts, -inf if none
  WalkLists walk;

  ChakraNodeRecord* record_of(uint32_t index) {
    return slot[index] == kNoNode ? nullptr : &records[slot[index]];
  }
};

// Sizes the arrays note_walk_facts fills, for a trace of `n` nodes.
void prepare_walk_facts(const ConvertOptions& options, size_t n, ConversionGraph& graph);
// Sets record's kInterThreadDep flag and graph's dense arrays for node `index` (its own
// elements only: nodes may be noted concurrently), and appends to `lists` (graph.walk once every
// node is noted, in conversion order). Once per converted node, before encode_dependencies.
void note_walk_facts(const EtPlusTrace& trace, const ConvertOptions& options, uint32_t index,
                     ChakraNodeRecord& record, ConversionGraph& graph, WalkLists& lists);

struct DependencyStats {
  uint64_t gpu_stream_edges = 0;
  uint64_t sync_edges = 0;
};

// `workers` (may be null): the walks from the roots run concurrently when no node lies under two
// of them (else one after another, as Chakra's), beside the sort of the GPU ops' keys; the check
// of the start-time order and the GPU streams' chains in ranges of kEncodeRange (or of the
// workers' range_size, when less). The same dependencies and problems whatever the workers. The
// records hold no data dependency yet (select_nodes leaves them so).
inline constexpr size_t kEncodeRange = 16384;
void encode_dependencies(const EtPlusTrace& trace, const ConvertOptions& options,
                         ConversionGraph& graph, DataProblems& stats, DependencyStats* out,
                         const OrderedBatches* workers = nullptr);

// Moves the nodes that survive dangling removal into a ChakraTrace, sorted by id. `workers` (may
// be null): the passes over the records and nodes in ranges of kDanglingRange of them (or of the
// workers' range_size, when less), concurrently (the same trace and problems whatever the workers
// and range).
inline constexpr size_t kDanglingRange = 32768;
ChakraTrace remove_dangling_nodes(const EtPlusTrace& trace, const ConvertOptions& options,
                                  ConversionGraph&& graph, DataProblems& stats,
                                  const OrderedBatches* workers = nullptr);

}  // namespace chakraflow
