// The feeder: issues the nodes of one Chakra .et trace (reference/chakra_spec.md §3, §4) in
// dependency order, reading the file in a bounded window.
//
// Contract
// - Reading: `.et` or `.et.gz` (by content) through EtReader, one record at a time. At most
//   `FeederOptions::window` nodes are held (read and not yet completed); the feeder reads past the
//   window only when every node it holds waits on a node it has not read and nothing is in flight,
//   the one case where reading on is the only way to make progress (counted in
//   FeederStats::reads_past_window). Memory is the window's nodes plus a set of the ids already
//   completed (at most 1 bit per id of the id range, see FeederStats::done_set_bytes).
// - Dependencies: data_deps always, ctrl_deps when `FeederOptions::ctrl_deps`. Resolved in time
//   linear in the number of dependencies, whatever the order of the file: a node may depend on a
//   node read later (forward reference) or on a node already completed and dropped (satisfied).
//   A dependency listed twice counts once. A node waits on one parent at a time (the next of its
//   dependencies not complete), so most dependencies cost one bit test in the completed-id set.
//   The node's own bytes (and so its dependency lists) are never changed.
// - Order: issue() returns the ready node with the smallest (priority, id). Priorities are 0
//   unless `FeederOptions::priority` gives them or complete() passes a release priority (the
//   multi-rank feeder uses completion times). The order is a function of the file, the options and
//   the sequence of calls only.
// - Steps: issue() puts a node in flight; complete(id) releases its children and drops it. An
//   in-flight node is never issued again unless push_back(id) returns it to the ready queue.
// - End: state() tells running / done / stalled / error. A stall (nothing ready, nothing in
//   flight, end of file, nodes left) is explained by stall_report(): the ids that never appear,
//   the cycles, the removed nodes whose children were never released.
// - Errors: an unreadable file, a truncated or malformed record, a node id that appears twice stop
//   reading; state() is then kError and error() names the file, the record and its byte offset.
//
// Lifetime: a `const FeederNode*` from issue()/find() stays valid until that node is completed
// (or removed and released). Thread safety: none; use one EtFeeder per thread, or MultiFeeder
// (stages/feed/multi_feeder.h). The data of an issued node is not written by the feeder, so another
// thread may read it while this thread keeps calling the feeder.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stages/common/status.h"
#include "stages/et/node_scan.h"

namespace ChakraProtoMsg {
class Node;
}

namespace chakraflow {

// A node as the feeder holds it: the fields scheduling needs, and the record's bytes for the rest.
struct FeederNode {
  NodeId id = 0;
  int32_t type = 0;              // ChakraProtoMsg::NodeType
  uint64_t duration_micros = 0;  // Chakra's runtime()
  int64_t priority = 0;          // the priority the node was (or will be) issued with
  uint64_t record_index = 0;     // its record in the file (0 is the GlobalMetadata)
  uint64_t byte_offset = 0;      // of that record, in the decompressed stream
  std::string raw;               // the serialized ChakraProtoMsg::Node, as read

  // Decodes `raw` completely. The error names the node and its record.
  Status parse(ChakraProtoMsg::Node* out) const;
};

struct FeederOptions {
  // Most nodes held at once (see the contract above). Chakra's window: 4096 * 256.
  uint64_t window = uint64_t{1} << 20;
  // Read more only while fewer than this many nodes are ready (0: fill the window eagerly, as
  // Chakra does). For a trace sorted by id, the issue order does not depend on it.
  uint64_t refill_below = 256;
  // Honour ctrl_deps as well as data_deps (Chakra's feeder ignores ctrl_deps).
  bool ctrl_deps = false;
  // Priority of a node when it is read; smaller is issued first. Default: 0 for every node.
  std::function<int64_t(const FeederNode&)> priority;
};

enum class FeedState {
  kRunning,  // nodes ready, in flight, or not read yet
  kDone,     // every node read was completed (or removed) and the file is at its end
  kStalled,  // end of file, nothing ready or in flight, nodes left: see stall_report()
  kError,    // reading failed: see error()
};
const char* to_string(FeedState state);

// Why nodes can never be issued. Ids are sorted; example lists are capped (the counts are not).
struct StallReport {
  static constexpr size_t kMaxExamples = 16;
  struct Blocker {
    NodeId id = 0;                 // the node waited on
    uint64_t waiting = 0;          // how many nodes wait on it directly
    std::vector<NodeId> examples;  // some of them
  };
  std::vector<Blocker> missing;     // ids depended on that never appear in the file
  std::vector<Blocker> unreleased;  // removed nodes whose children were never released
  // Dependency cycles among the waiting nodes: each node depends on the one before it, the
  // first on the last. At most kMaxExamples cycles.
  std::vector<std::vector<NodeId>> cycles;
  uint64_t waiting_nodes = 0;  // every node that can never be issued (blocked ones included)

  bool empty() const { return waiting_nodes == 0; }
  // One paragraph: "2 nodes can never be issued: node 7 waits on id 99, which is not in the
  // trace; cycle 4 -> 5 -> 4".
  std::string to_string() const;
};

struct FeederStats {
  uint64_t nodes_read = 0;
  uint64_t nodes_issued = 0;       // issue() results, a pushed-back node counting again
  uint64_t nodes_completed = 0;    // complete() calls and removed nodes
  uint64_t dependencies = 0;       // dependency entries honoured, as listed in the file
  uint64_t deps_already_done = 0;  // found complete when looked at (no wait needed)
  uint64_t forward_deps = 0;       // waits placed on an id not read yet
  uint64_t max_resident = 0;       // most nodes held at once
  uint64_t reads_past_window = 0;  // nodes read beyond the window to make progress
  uint64_t done_set_bytes = 0;     // memory of the completed-id set
  bool metadata_missing = false;   // the file starts with a Node, not a GlobalMetadata
};

// An order-sensitive checksum of an issue sequence (FNV-1a 64 over the ids' little-endian bytes),
// printed by `chakraflow feed` and compared by tests.
class IssueChecksum {
 public:
  void add(NodeId id) {
    for (int i = 0; i < 8; ++i) {
      value_ ^= (id >> (8 * i)) & 0xFF;
      value_ *= 0x100000001b3ull;
    }
  }
  uint64_t value() const { return value_; }

 private:
  uint64_t value_ = 0xcbf29ce484222325ull;
};

// Hooks for a layer that mirrors the nodes the feeder holds (the simulator's rank engine).
// Called on the feeder's thread: on_read when a node is read, on_free when the feeder drops it
// (completed or removed, and its children released). They must not call the feeder back, except
// for const queries.
class FeederObserver {
 public:
  virtual ~FeederObserver() = default;
  virtual void on_read(const FeederNode& node) = 0;
  virtual void on_free(NodeId id) = 0;
};

class EtFeeder {
 public:
  // Opens `path` and reads its GlobalMetadata; nodes are read on demand.
  static StatusOr<std::unique_ptr<EtFeeder>> open(const std::string& path,
                                                  FeederOptions options = {});
  ~EtFeeder();
  EtFeeder(const EtFeeder&) = delete;
  EtFeeder& operator=(const EtFeeder&) = delete;

  const std::string& path() const;
  const FeederOptions& options() const;
  // The serialized GlobalMetadata record (empty when the file has none).
  const std::string& metadata() const;
  // Must be set before the first node is read (before any other call).
  void set_observer(FeederObserver* observer);

  // --- The simulator's steps.
  // The ready node with the smallest (priority, id), now in flight; nullptr when none is ready
  // now (state() says whether one will be).
  const FeederNode* issue();
  // Completes an in-flight node: its children stop waiting on it (their priority becomes at least
  // `release_priority`) and it is dropped. Error if `id` is not in flight.
  Status complete(NodeId id, int64_t release_priority = 0);
  // Returns an in-flight node to the ready queue. Error if `id` is not in flight.
  Status push_back(NodeId id);

  // --- Finer steps (Chakra's freeChildrenNodes / removeNode / pushBackIssuableNode map here).
  // Children stop waiting on `id`, which may be in any state, even removed. Idempotent.
  Status release_children(NodeId id, int64_t release_priority = 0);
  // Drops `id` from the graph: a ready node leaves the queue, an in-flight node counts as done.
  // If its children were not released, they (and nodes read later that depend on it) wait until
  // release_children(id).
  Status remove(NodeId id);
  // Makes `id` ready even if it still waits on parents (Chakra's pushBackIssuableNode allows it).
  // It will not be queued a second time when its parents complete.
  Status make_ready(NodeId id);

  // --- Queries.
  // The node if it is in the graph (read, not removed), else nullptr.
  const FeederNode* find(NodeId id) const;
  // Whether `id` completed (its children were released): a dependency on it is satisfied.
  bool completed(NodeId id) const;
  bool is_in_flight(NodeId id) const;
  bool is_ready(NodeId id) const;
  // The nodes held that wait on `id`, in read order; empty once `id` completed. A scan of the
  // nodes held (for diagnostics, not for a simulator's inner loop).
  std::vector<NodeId> children(NodeId id) const;

  // Running / done / stalled / error; reads on when nothing else can decide it.
  FeedState state();
  const Status& error() const;
  // Why the feed is stalled (meaningful when state() is kStalled; empty otherwise).
  StallReport stall_report() const;
  FeederStats stats() const;
  bool end_of_file() const;
  uint64_t resident() const;  // nodes held (read and not yet dropped)
  uint64_t in_graph() const;  // of which in the graph (not removed)
  uint64_t ready() const;
  uint64_t in_flight() const;

 private:
  struct Impl;
  explicit EtFeeder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace chakraflow
