// Many ranks at once: one EtFeeder per rank (per .et file), fed in parallel with oneTBB,
// releasing ready nodes into one concurrent priority queue for the simulator.
//
// Order: the queue pops the smallest (time, rank, id). `time` is the node's ready time: the
// largest completion time passed to complete() among its parents (0 for nodes that wait on
// nothing). Within a rank this is the EtFeeder order keyed (priority = ready time, id).
//
// Determinism: release_ready() moves *every* node ready at that moment on every rank into the
// queue; what a rank releases depends only on that rank's file, the options and the calls made for
// that rank. Keys are unique, so a simulator that alternates phases (release_ready(); pop until
// empty; complete(...)) sees the same sequence whatever the number of threads.
//
// Thread safety: try_pop(), complete(), push_back() may be called from any thread, concurrently;
// calls for one rank are serialized by a per-rank lock, different ranks proceed in parallel.
// release_ready() and complete_all() run ranks in parallel themselves. state()/summary() must not
// run concurrently with the others. A ReadyNode's `node` stays valid until complete(rank, id).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stages/common/status.h"
#include "stages/feed/et_feeder.h"

namespace chakraflow {

struct ReadyNode {
  int64_t time = 0;
  uint32_t rank = 0;
  NodeId id = 0;
  const FeederNode* node = nullptr;
};

struct Completion {
  uint32_t rank = 0;
  NodeId id = 0;
  int64_t time = 0;  // when it completed: its children's ready time is at least this
};

struct RankSummary {
  std::string path;
  FeedState state = FeedState::kRunning;
  FeederStats stats;
  std::string problem;  // the error, or the stall report
};

class MultiFeeder {
 public:
  // Opens one feeder per path (rank r reads paths[r]), in parallel. The first error is returned.
  static StatusOr<std::unique_ptr<MultiFeeder>> open(const std::vector<std::string>& paths,
                                                     const FeederOptions& options = {});
  ~MultiFeeder();
  MultiFeeder(const MultiFeeder&) = delete;
  MultiFeeder& operator=(const MultiFeeder&) = delete;

  size_t ranks() const;

  // Issues every node ready now on every rank into the queue (ranks in parallel); returns how many.
  size_t release_ready();
  // Pops the smallest (time, rank, id); false when the queue is empty.
  bool try_pop(ReadyNode* out);
  bool queue_empty() const;

  // Completes an issued node of `rank` at `time`.
  Status complete(uint32_t rank, NodeId id, int64_t time);
  // Completes many, ranks in parallel, each rank's in the given order. The first error is returned.
  Status complete_all(const std::vector<Completion>& completions);
  // Gives an issued node back to its rank: the next release_ready() queues it again.
  Status push_back(uint32_t rank, NodeId id);

  // Error if any rank failed; else running while any rank runs (or nodes are queued); else
  // stalled if any rank stalled; else done.
  FeedState state();
  std::vector<RankSummary> summary();
  // Direct access to one rank's feeder (not thread-safe against the calls above for that rank).
  EtFeeder& feeder(uint32_t rank);

 private:
  struct Impl;
  explicit MultiFeeder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace chakraflow
