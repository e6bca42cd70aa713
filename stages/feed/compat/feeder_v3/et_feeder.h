// Chakra::FeederV3::ETFeeder: source-compatible with the astra-sim fork of Chakra's
// src/feeder_v3/et_feeder.h (reference/astra_sim_feeder_v3.md), the feeder current ASTRA-sim
// uses. Installed as <prefix>/include/chakraflow/compat/feeder_v3/et_feeder.h, and under the path
// ASTRA-sim includes it by (docs/astra-sim.md):
// <prefix>/include/chakraflow/astra-sim/extern/graph_frontend/chakra/src/feeder_v3/et_feeder.h.
//
// Same as FeederV3:
// - The constructor reads the GlobalMetadata (public `global_metadata`), scans every node once and
//   builds the whole dependency graph (data and ctrl dependencies); the free set is known before
//   the first issue. std::runtime_error if the file cannot be opened ("Failed to open file ...")
//   or read.
// - getDependancyResolver(): the issue / finish state machine (dependancy_solver.h).
// - lookupNode(id): a new node handle for any id, any time; contents are read on demand.
// - hasNodesToIssue(): the free set is not empty. getNextIssuableNode() takes a free node;
//   pushBackIssuableNode(id) / freeChildrenNodes(id) are the resolver's push_back / finish.
// - addNode throws std::runtime_error; removeNode does nothing (the graph is read-only).
// Differences (docs/compatibility.md, "FeederV3"):
// - Memory: the graph in compact arrays (about 40 bytes per node and 4 per dependency edge) and a
//   bounded cache of recently read nodes; node contents are read again from the file by offset
//   (a gzip'd trace keeps its decompressed records in memory instead).
// - A dependency on an id that is no node of the trace is ignored and reported once on stderr
//   (danglingDependencies()). FeederV3 throws "Node N in ctrl_dep graph, but not found in index",
//   which stops every trace Chakra's converter writes (its profiler roots depend on node 0).
// - A node id that appears twice, or a malformed record, throws std::runtime_error naming the file
//   and the record (FeederV3 keeps the last record of an id, or stops reading silently). The
//   constructor checks each record's top level; a record malformed below it (in an attribute)
//   throws when that node's contents are first read.
// - getNextIssuableNode() takes the free node with the smallest id (FeederV3: whichever the hash
//   set lists first), and returns nullptr when none is free.
// - A trace whose every node waits on another (a cycle) is reported by the resolver's stalled()
//   and stallReport(), not only by an empty free set.
//
// Not thread-safe; one ETFeeder per thread (several feeders may run in parallel).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>

#include "common.h"
#include "dependancy_solver.h"
#include "et_feeder_node.h"

namespace Chakra {
namespace FeederV3 {

class ETFeeder {
 public:
  ChakraGlobalMetadata global_metadata;

  explicit ETFeeder(const std::string& file_path);
  // chakraflow extension: `data_deps` / `ctrl_deps` choose the dependencies honoured (FeederV3's
  // USE_DATA_DEPS / USE_CTRL_DEPS, both true by default); `cache_nodes` bounds the node cache.
  ETFeeder(const std::string& file_path, bool data_deps, bool ctrl_deps,
           size_t cache_nodes = DEFAULT_ETFEEDER_CACHE_SIZE);
  ~ETFeeder();
  ETFeeder(const ETFeeder&) = delete;
  ETFeeder& operator=(const ETFeeder&) = delete;

  DependancyResolver& getDependancyResolver() { return dependancy_resolver_; }

  std::shared_ptr<ETFeederNode> lookupNode(const NodeId& node_id);
  bool hasNodesToIssue();
  std::shared_ptr<ETFeederNode> getNextIssuableNode();
  void pushBackIssuableNode(const NodeId& node_id);
  void freeChildrenNodes(const NodeId& node_id);
  void addNode(std::shared_ptr<ETFeederNode> node);
  void removeNode(const NodeId& node_id);

  // FeederV3 numbers its feeders in construction order.
  const uint64_t& feeder_id() const { return feeder_id_; }

  // chakraflow extensions.
  const std::string& path() const;
  uint64_t nodeCount() const;
  bool hasNode(NodeId node_id) const;
  uint64_t danglingDependencies() const;
  // Bytes held by the graph arrays and the node cache (not the process's heap overhead).
  uint64_t memoryBytes() const;

 private:
  friend class ETFeederNode;
  friend class DependancyResolver;
  struct Impl;
  std::shared_ptr<const chakraflow::NodeRecord> record(NodeId node_id);

  std::unique_ptr<Impl> impl_;
  DependancyResolver dependancy_resolver_;
  uint64_t feeder_id_;
};

}  // namespace FeederV3

#if !defined(CHAKRAFLOW_COMPAT_V1_FEEDER) && !defined(CHAKRAFLOW_NO_FEEDER_V3_ALIASES)
using ETFeeder = FeederV3::ETFeeder;
#endif

}  // namespace Chakra
