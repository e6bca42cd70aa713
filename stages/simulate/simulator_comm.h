// Communication matching across ranks for the simulator (stages/simulate/simulator.h).
//
// Collectives: a process group is named by pg_name (empty: every simulated rank); its members come
// from the process_group:init node of the rank that first uses it. The k-th collective a member
// reaches on a group matches the k-th of every other member (NCCL's rule: order within the
// communicator, not ids or names). A matched collective starts when its last member arrives and
// lasts its cost: the alpha-beta model (model mode), or the recorded duration (replay: the shortest
// among the members, or each member's own). Members that disagree on type or size are counted.
//
// Point-to-point: a message (stages/simulate/simulator_rank.h: sends are eager) matches the first
// receive posted by its destination for the same (source, tag), in order; the receive completes
// when both the message is available and the receive was reached.
//
// Horizons (conservative parallel simulation): horizon(r) is a lower bound of the time at which
// any communication rank r waits in can complete, so that rank r may handle every event up to it
// without missing one. It uses, for each member that has not arrived yet, a lower bound of when it
// can arrive: its next event, or, for a rank itself waiting in communication, the earliest its own
// wait can end (a fixed point over the waits-for relation, iterated from the next event times).
//
// Determinism: requests are posted rank by rank in rank order, matches are made in (group, index)
// and (source, destination, tag) order. Thread safety: none (the driver's serial phase).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "stages/common/stats.h"
#include "stages/simulate/sim_config.h"
#include "stages/simulate/simulator_cost.h"
#include "stages/simulate/simulator_rank.h"

namespace chakraflow {

struct CommDelivery {
  uint32_t rank = 0;
  uint32_t node = 0;
  int64_t end = 0;
  int64_t transfer_start = 0;
  uint32_t remote_rank = kSimNone;  // the member that arrived last, or the sender
  uint32_t remote_node = kSimNone;
};

// Something that can never complete, for the stall report.
struct PendingComm {
  std::string what;  // "collective #3 of process group \"0\" (all_reduce, 1048576 bytes)"
  std::vector<uint32_t> ranks_waiting;
  std::vector<NodeId> nodes_waiting;    // one per waiting rank
  std::vector<uint32_t> ranks_missing;  // members that never arrived
};

class CommMatcher {
 public:
  CommMatcher(uint32_t world, const SimConfig* config, const CostModel* cost);

  void post(CommRequest request);  // a collective or a receive
  void post(const P2pMessage& message);
  // Matches what can be matched; appends the deliveries (deterministic order).
  void match(std::vector<CommDelivery>* out);
  // horizon[r] for every rank, given each rank's next event time (kSimNever: none).
  void horizons(const std::vector<int64_t>& next_event, std::vector<int64_t>* horizon) const;

  bool has_pending() const;
  // What still waits (after the run): collectives short of members, receives without a message,
  // collectives on a group their rank is not a member of.
  std::vector<PendingComm> pending() const;

  uint64_t collectives_matched() const { return collectives_matched_; }
  uint64_t messages_matched() const { return messages_matched_; }
  // Messages nobody received (the destination never posted a matching receive, or is not a rank).
  uint64_t messages_unreceived() const;
  const DataProblems& problems() const { return problems_; }

 private:
  struct Arrival {
    bool present = false;
    uint32_t node = 0;
    NodeId id = 0;
    int64_t time = 0;
    int64_t recorded_ns = 0;
    int64_t lookahead_ns = 0;
    int32_t comm_type = 0;
    int64_t bytes = 0;
  };
  struct Instance {
    std::vector<Arrival> arrivals;  // by member position
    uint32_t count = 0;
  };
  struct Group {
    std::string name;
    std::vector<uint32_t> members;  // sorted
    std::unordered_map<uint32_t, uint32_t> position;
    std::vector<uint64_t> next_index;   // per member position
    std::map<uint64_t, Instance> open;  // by index in the group
  };
  struct Recv {
    uint32_t node;
    NodeId id;
    int64_t time;
  };
  struct Channel {
    std::deque<P2pMessage> messages;
    std::deque<Recv> receives;
  };
  using ChannelKey = std::tuple<int64_t, int64_t, int64_t>;  // (source, destination, tag)

  uint32_t group_for(const CommRequest& request);
  int64_t instance_bound(const Group& g, const Instance& inst,
                         const std::vector<int64_t>& earliest) const;
  std::string describe(const Group& g, uint64_t index, const Instance& inst) const;

  const uint32_t world_;
  const SimConfig* config_;
  const CostModel* cost_;
  std::vector<Group> groups_;
  std::unordered_map<std::string, uint32_t> group_by_name_;
  std::vector<std::pair<uint32_t, uint64_t>> touched_;  // (group, index) with new arrivals
  std::map<ChannelKey, Channel> channels_;
  std::vector<ChannelKey> touched_channels_;
  std::vector<CommRequest> orphans_;  // collectives on a group without their rank
  uint64_t collectives_matched_ = 0;
  uint64_t messages_matched_ = 0;
  DataProblems problems_;
};

}  // namespace chakraflow
