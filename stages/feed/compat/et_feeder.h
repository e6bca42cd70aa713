// Chakra::ETFeeder: source-compatible with mlcommons/chakra's src/feeder/et_feeder.h
// (reference/chakra_spec.md §4), the feeder ASTRA-sim used until Aug 2025. Simulator code written
// against it (ASTRA-sim's Workload, §4.7) compiles and runs unchanged. Installed as
// <prefix>/include/chakraflow/compat/et_feeder.h; `find_package(chakraflow)` and the target
// chakraflow::feeder put that folder on the include path, so `#include "et_feeder.h"` works as
// with Chakra.
//
// It runs on the trace's static index (stages/feed/et_index.h: every node's dependencies in compact
// arrays, records read again by offset); a node's object is made when it is handed out, from its
// record, and dropped by removeNode.
//
// Same as Chakra, for the call sequences simulators make:
// - The constructor opens the file (std::runtime_error "Failed to open trace file: ..." if it
//   cannot) and reads the first window (1,048,576 nodes, and on to the parents they name); each
//   removeNode while fewer than a window of nodes are ready reads one more window.
// - getNextIssuableNode() returns the ready node with the smallest id, or nullptr.
// - freeChildrenNodes(id) makes the children that waited only on `id` issuable, also before `id`
//   itself was issued; removeNode(id) drops `id`; lookupNode(id) of a removed, unknown or not yet
//   read node throws std::out_of_range; addNode(node) puts a removed node back for lookupNode.
// - pushBackIssuableNode(id) makes `id` issuable again (even one still waiting on parents).
// - hasNodesToIssue() stays true while any node has not been removed: a simulator must
//   removeNode every node it completes.
// - getChildren() lists the nodes that depended on a node when they were read, in read order.
//
// Fixed (docs/compatibility.md, "Feeder"; spec §5 #26-#32):
// - A node is never issued twice: nodes in flight are not re-queued when more of the file is
//   read, nor by freeChildrenNodes, nor by pushBackIssuableNode of a node already queued.
// - A removed node leaves the ready queue (Chakra still issues it).
// - A dependency listed twice is waited on once; a dependency on a node already completed (even
//   read after it was removed) is satisfied; forward references are resolved in linear time.
// - freeChildrenNodes also works after removeNode (the wiki's order; Chakra segfaults).
//   freeChildrenNodes / pushBackIssuableNode of an unknown id throw std::out_of_range (Chakra
//   dereferences a null pointer).
// - One dangling dependency does not make it read the whole file.
// - A stall (cycle, dependency on an id not in the file) is reported once on stderr with the node
//   ids involved, and by isStalled()/stallReport(), instead of a silent hang. A corrupt or
//   truncated file throws std::runtime_error naming the record and byte offset (Chakra stops
//   reading silently): the constructor checks each record's top level; a record malformed below it
//   (in an attribute) throws when its node is handed out.
// - Nodes added with addNode() that were not read from the trace are for lookupNode only.
// - ctrl_deps are ignored, as in Chakra, unless the options say otherwise.
//
// Memory: about 50 bytes per node of the trace, plus the objects of the nodes handed out and not
// removed (Chakra: a parsed protobuf and its wrapper, about 3.2 KB, for every node of the window).
// A gzip'd trace written by chakraflow (its block index) is read by offset like a plain one, a
// 256 KB block of its text inflated at a time; another gzip'd trace keeps its decompressed records
// in memory (they cannot be read by offset).
//
// Not thread-safe (like Chakra's); one ETFeeder per thread.
#pragma once

#if defined(CHAKRAFLOW_FEEDER_V3_ALIASES)
#error \
    "Include Chakra's old feeder (et_feeder.h) before feeder_v3/et_feeder.h, or define CHAKRAFLOW_NO_FEEDER_V3_ALIASES: both define Chakra::ETFeeder"
#endif
#define CHAKRAFLOW_COMPAT_V1_FEEDER 1

// The standard headers Chakra's et_feeder.h includes, which simulator code relies on (ASTRA-sim's
// Workload.cc uses std::queue without including <queue>).
#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "et_feeder_node.h"  // same folder, in the source tree and installed

namespace Chakra {

// chakraflow extension: how ETFeeder reads. The defaults are Chakra's.
struct ETFeederOptions {
  uint64_t window = uint64_t{1} << 20;  // nodes read at once (Chakra's window)
  bool ctrl_deps = false;               // honour ctrl_deps as well as data_deps
};

class ETFeeder {
 public:
  ETFeeder(std::string filename);  // NOLINT: implicit as in Chakra
  ETFeeder(std::string filename, const ETFeederOptions& options);
  ~ETFeeder();
  ETFeeder(const ETFeeder&) = delete;
  ETFeeder& operator=(const ETFeeder&) = delete;

  void addNode(std::shared_ptr<ETFeederNode> node);
  void removeNode(uint64_t node_id);
  bool hasNodesToIssue();
  std::shared_ptr<ETFeederNode> getNextIssuableNode();
  void pushBackIssuableNode(uint64_t node_id);
  std::shared_ptr<ETFeederNode> lookupNode(uint64_t node_id);
  void freeChildrenNodes(uint64_t node_id);

  // chakraflow extensions.
  static ETFeederOptions chakra_options() { return ETFeederOptions(); }
  // Every node of the trace was removed.
  bool isDone();
  // Nothing can be issued any more but nodes are left (a cycle, a dependency on an id not in the
  // file, a removed node whose children were never freed): stallReport() names them.
  bool isStalled();
  std::string stallReport();
  uint64_t nodesRead() const;  // nodes of the file read so far (the window)

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with the nodes handed out (their getChildren())
};

}  // namespace Chakra
