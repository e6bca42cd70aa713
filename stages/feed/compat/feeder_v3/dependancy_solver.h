// Chakra::FeederV3::DependancyResolver: source-compatible with the astra-sim fork of Chakra's
// src/feeder_v3/dependancy_solver.h (reference/astra_sim_feeder_v3.md), the state machine current
// ASTRA-sim drives through ETFeeder::getDependancyResolver(). Installed as
// <prefix>/include/chakraflow/compat/feeder_v3/dependancy_solver.h.
//
// A node moves Pending -> Taken (take_node) -> Finished (finish_node); push_back_node returns a
// Taken node to the free set. A node is free when every parent it depends on (data and ctrl
// dependencies, each counted once) has finished.
// - get_dependancy_free_nodes(): the free nodes (Pending, no parent left).
// - get_ongoing_nodes(): the Taken ones. Both empty: the trace is done (or stalled, see below).
// - take_node(id) throws std::runtime_error unless `id` is free; finish_node(id) and
//   push_back_node(id) unless `id` is Taken.
// Differences (docs/compatibility.md, "FeederV3"):
// - The graph is held in compact arrays built when the feeder opens the trace (about 40 bytes per
//   node and 4 per dependency; FeederV3 keeps six hash maps, about 1.5 KB per node), so it is
//   read-only: add_node and the per-layer mutable accessors are not offered; get_children /
//   get_parents return the sets by value (data and ctrl dependencies together).
// - When free and ongoing are both empty and nodes are left (a dependency cycle, a node that
//   depends on itself), stalled() is true and stallReport() names them; FeederV3 just stops.
//   The first stall is also reported once on stderr.
//
// Not thread-safe (FeederV3 locks a mutex per call but never unlocks it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>

#include "common.h"

namespace Chakra {
namespace FeederV3 {

class ETFeeder;

class DependancyResolver {
 public:
  DependancyResolver(const DependancyResolver&) = delete;
  DependancyResolver& operator=(const DependancyResolver&) = delete;
  ~DependancyResolver();

  void take_node(const NodeId& node);
  void push_back_node(const NodeId& node);
  void finish_node(const NodeId& node);
  // FeederV3 computes the initial free set here, once; the feeder has done it already, so this
  // only checks that it is called before any node was taken, as FeederV3 does.
  void resolve_dependancy_free_nodes();

  const std::unordered_set<NodeId>& get_dependancy_free_nodes() const { return free_; }
  const std::unordered_set<NodeId>& get_ongoing_nodes() const { return ongoing_; }
  // The nodes that depend on `node` / that `node` still waits on. std::out_of_range if `node` is
  // not in the trace.
  std::unordered_set<NodeId> get_children(NodeId node) const;
  std::unordered_set<NodeId> get_parents(NodeId node) const;

  // chakraflow extensions.
  uint64_t node_count() const;
  uint64_t finished_count() const { return finished_; }
  bool stalled() const;
  std::string stallReport() const;

 private:
  friend class ETFeeder;
  struct Graph;
  DependancyResolver();
  uint32_t index_or_throw(NodeId node, const char* call) const;
  void report_stall_once();

  std::unique_ptr<Graph> graph_;
  std::unordered_set<NodeId> free_;
  std::unordered_set<NodeId> ongoing_;
  uint64_t finished_ = 0;
  bool stall_reported_ = false;
};

}  // namespace FeederV3
}  // namespace Chakra
