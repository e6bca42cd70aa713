// One rank of the multi-rank simulation: an event-driven replay of one Chakra .et trace through
// its EtFeeder (stages/feed/et_feeder.h), with CPU threads and GPU streams as resources. The
// multi-rank driver (stages/simulate/simulator.h) matches the communication this rank posts with
// the other ranks' and delivers the completions.
//
// Model (docs/simulation.md):
// - Resources: a CPU node (is_cpu_op) runs on the CPU thread of its `tid` attr, any other node on
//   the GPU stream of its `stream` attr (one default stream when absent). A resource runs one node
//   at a time; waiting nodes start in (eligible time, id) order.
// - A node is ready when its data dependencies completed (the feeder says which), eligible after
//   its recorded delay (below), and starts when eligible and its resource is free. A compute node
//   holds its resource for its duration (x compute_scale); a collective or a receive until the
//   driver delivers its completion; a send for its transfer time (eager: the message is then
//   available to the peer, as in ASTRA-sim).
// - Recorded delays (host_gaps): with start_time_micros in the trace, each node keeps the delay it
//   had in the recording between its dependencies' ends and its own start, measured in a replay of
//   the recorded durations ("recorded conditions"): RS(n) = max(start(n), max RE(deps)),
//   RE(n) = RS(n) + duration(n), delay(n) = RS(n) - max RE(deps). Under recorded conditions the
//   replay therefore reproduces the recorded timeline; what changes (a faster network, other
//   ranks' timing) moves nodes through their dependencies. Chakra's pre-order chain puts a parent
//   op's whole exclusive time before its children; a parent whose next op on its thread started
//   before the parent's exclusive time ran out holds the thread only until that op started (its
//   remaining exclusive time, after the children, shows up as the next op's recorded delay).
// - Time: integer nanoseconds from the time base (the earliest recorded start of all ranks with
//   rank_skew, of this rank without); event-driven, no ticking.
//
// Determinism: events at equal times are handled in the order they were scheduled; everything
// here depends only on the trace, the configuration and the calls made.
//
// Thread safety: none (one thread at a time per RankSimulator; different ranks may run on
// different threads). The EtFeeder must outlive it and be used only through it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stages/common/stats.h"
#include "stages/common/status.h"
#include "stages/feed/et_feeder.h"
#include "stages/simulate/sim_config.h"
#include "stages/simulate/simulator_cost.h"
#include "stages/simulate/simulator_node.h"

namespace chakraflow {

inline constexpr int64_t kSimNever = INT64_MAX;
inline constexpr uint32_t kSimNone = UINT32_MAX;

// What a node is, for the critical path and the timeline.
enum class SimKind : uint8_t { kCpu, kGpu, kCollective, kP2p };
enum class CommKind : uint8_t { kNone, kCollective, kSend, kRecv };

// Why a node started when it did (the critical path follows `pred`).
enum class StartReason : uint8_t {
  kRankStart,   // no dependency: at the rank's start plus its recorded delay
  kDependency,  // its last dependency to complete (pred), plus its recorded delay
  kResource,    // its resource was busy until pred ended
};

struct SimNode {
  NodeId id = 0;
  uint64_t start_us = 0;    // recorded start_time_micros (0: none)
  int64_t recorded_ns = 0;  // recorded duration; for a parent, only until its next op started
  int64_t model_end = 0;    // end under recorded conditions (RE)
  int64_t ready = kSimNever;
  int64_t delay = 0;  // recorded delay applied after `ready`
  int64_t eligible = kSimNever;
  int64_t start = kSimNever;
  int64_t end = kSimNever;
  uint32_t resource = kSimNone;
  uint32_t pred = kSimNone;  // node index on this rank (StartReason)
  uint32_t comm = kSimNone;  // index into RankSimulator::comms()
  uint32_t name_begin = 0, name_size = 0;
  int32_t type = 0;  // ChakraProtoMsg::NodeType
  SimKind kind = SimKind::kCpu;
  StartReason reason = StartReason::kRankStart;
  bool truncated = false;
};

struct SimComm {
  CommKind kind = CommKind::kNone;
  uint32_t node = kSimNone;
  int32_t comm_type = 0;
  int64_t bytes = 0;
  int64_t peer = -1;  // send: comm_dst, recv: comm_src
  int64_t tag = 0;
  std::string pg_name;
  // Filled when it completes: when the transfer started (a collective's last arrival, a
  // message's send start) and the node that decided it (the last member to arrive, the sender).
  int64_t transfer_start = kSimNever;
  uint32_t remote_rank = kSimNone;
  uint32_t remote_node = kSimNone;
};

// A collective or a receive this rank reached (it holds its resource until complete_comm).
struct CommRequest {
  uint32_t rank = 0;
  uint32_t node = 0;
  NodeId id = 0;
  CommKind kind = CommKind::kNone;
  int64_t time = 0;          // when it reached the communication
  int64_t recorded_ns = 0;   // its recorded duration
  int64_t lookahead_ns = 0;  // it completes no earlier than time + lookahead
  int32_t comm_type = 0;
  int64_t bytes = 0;
  std::string pg_name;
  std::shared_ptr<const ProcessGroupDef> group;  // null: every rank
  int64_t peer = -1;
  int64_t tag = 0;
};

// A message a send made available to its peer (sends complete on their own).
struct P2pMessage {
  uint32_t src = 0;
  int64_t dst = -1;
  int64_t tag = 0;
  uint32_t send_node = 0;
  int64_t send_start = 0;
  int64_t available = 0;
  int64_t bytes = 0;
};

struct SimResource {
  bool cpu = false;
  bool has_id = false;
  int64_t id = 0;  // tid or stream
  uint32_t busy = kSimNone;
  uint32_t last = kSimNone;  // the node that last ran on it
  std::string label() const;
};

struct RankSimStats {
  uint64_t nodes_read = 0;
  uint64_t nodes_done = 0;
  uint64_t events = 0;
  uint64_t truncated_parents = 0;
  uint64_t truncations_too_late = 0;  // next op read only after the parent was issued
  uint64_t late_deliveries = 0;       // completions delivered before the rank's clock (clamped)
};

class RankSimulator final : public FeederObserver {
 public:
  // `feeder`, `config` and `cost` must outlive this object. `world`: the number of ranks
  // simulated (the default process group). keep_names: keep node names for the timeline.
  RankSimulator(uint32_t rank, uint32_t world, EtFeeder* feeder, const SimConfig* config,
                const CostModel* cost, bool keep_names);
  ~RankSimulator() override;
  RankSimulator(const RankSimulator&) = delete;
  RankSimulator& operator=(const RankSimulator&) = delete;

  // Reads the feeder's first window, so that the recorded start times are known before time 0.
  Status prime();
  // The earliest recorded start among the nodes read (nullopt: the trace records none).
  std::optional<uint64_t> first_start_us() const { return first_start_us_; }
  // Recorded starts are taken relative to `base_us`. `rank_offset_ns` holds back the nodes that
  // depend on nothing when recorded delays are off (the rank's recorded start offset).
  void set_time_base(uint64_t base_us, int64_t rank_offset_ns);

  // Handles every event at times <= horizon, in time order. Stops after the time at which it
  // posts a collective or a receive (plus that request's lookahead), so that the driver can
  // match it before anything later happens here. Errors: the feeder's (malformed trace).
  Status advance(int64_t horizon);
  // Time of the next event (kSimNever: none; the rank is done or waits on communication).
  int64_t next_event() const;

  // The driver's side.
  std::vector<CommRequest>& requests() { return requests_; }
  std::vector<P2pMessage>& messages() { return messages_; }
  void complete_comm(uint32_t node, int64_t end, int64_t transfer_start, uint32_t remote_rank,
                     uint32_t remote_node);

  // Results.
  uint32_t rank() const { return rank_; }
  const std::vector<SimNode>& nodes() const { return nodes_; }
  const std::vector<SimComm>& comms() const { return comms_; }
  const std::vector<SimResource>& resources() const { return resources_; }
  std::string_view name(const SimNode& node) const;
  const RankSimStats& stats() const { return stats_; }
  const DataProblems& problems() const { return problems_; }
  // Nodes holding a resource until a delivery (collectives, receives), in index order.
  std::vector<uint32_t> waiting_comms() const;
  EtFeeder& feeder() { return *feeder_; }
  // Predicted step: first start to last end of the nodes with a recorded start (all nodes when
  // the trace records none). nullopt before any node ran.
  std::optional<std::pair<int64_t, int64_t>> span() const;

  // FeederObserver.
  void on_read(const FeederNode& node) override;
  void on_free(NodeId) override {}

 private:
  struct Event {
    int64_t time;
    uint64_t seq;
    uint32_t node;
    bool complete;  // else: eligible
  };
  struct EventAfter {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  struct Queued {
    int64_t eligible;
    NodeId id;
    uint32_t node;
    bool operator>(const Queued& o) const {
      return eligible != o.eligible ? eligible > o.eligible : id > o.id;
    }
  };
  using ReadyQueue = std::priority_queue<Queued, std::vector<Queued>, std::greater<Queued>>;

  uint32_t index_of(NodeId id) const;
  void set_index(NodeId id, uint32_t index);
  uint32_t resource_for(bool cpu, const std::optional<int64_t>& id);
  // on_read's steps for node `index` (its fields `f`): its communication, or the process groups a
  // METADATA node defines; the truncation of the previous op of its thread (host_gaps).
  void read_comm(const SimNodeFields& f, uint32_t index);
  void truncate_previous_on_thread(int64_t tid, uint32_t index);
  int64_t relative_start(const SimNode& n) const;
  void schedule(int64_t time, uint32_t node, bool complete);
  Status issue_ready();
  void make_ready(uint32_t node, const std::vector<NodeId>& deps);
  void enqueue(uint32_t node);
  void dispatch(int64_t* horizon);
  void start(uint32_t node, int64_t* horizon);
  Status finish(uint32_t node);
  std::shared_ptr<const ProcessGroupDef> group_of(std::string_view pg_name);

  const uint32_t rank_;
  const uint32_t world_;
  EtFeeder* feeder_;
  const SimConfig* config_;
  const CostModel* cost_;
  const bool keep_names_;

  std::vector<SimNode> nodes_;
  std::vector<SimComm> comms_;
  std::vector<SimResource> resources_;
  std::vector<ReadyQueue> queues_;  // per resource
  std::vector<uint32_t> dirty_;     // resources to dispatch at the current time
  std::vector<uint8_t> is_dirty_;
  std::unordered_map<int64_t, uint32_t> cpu_resources_, gpu_resources_;
  uint32_t default_cpu_ = kSimNone, default_gpu_ = kSimNone;
  uint32_t last_resource_[2] = {kSimNone, kSimNone};  // CPU, GPU: the last one looked up

  // NodeId -> index into nodes_: dense for small ids, hashed above.
  static constexpr NodeId kDenseIds = NodeId{1} << 26;
  std::vector<uint32_t> dense_index_;
  std::unordered_map<NodeId, uint32_t> sparse_index_;

  // Per CPU thread, the last CPU node read with a recorded start (parent truncation).
  std::unordered_map<int64_t, uint32_t> last_on_thread_;
  // Process groups from this rank's process_group:init node.
  std::unordered_map<std::string, std::shared_ptr<const ProcessGroupDef>> groups_;

  std::priority_queue<Event, std::vector<Event>, EventAfter> events_;
  uint64_t next_seq_ = 0;
  int64_t now_ = 0;
  bool kick_ = true;  // the nodes ready at time 0 are still to be issued
  uint64_t base_us_ = 0;
  int64_t rank_offset_ns_ = 0;
  std::optional<uint64_t> first_start_us_;
  bool any_recorded_start_ = false;
  Status read_error_;

  std::vector<CommRequest> requests_;
  std::vector<P2pMessage> messages_;
  std::vector<NodeId> deps_scratch_;
  std::string names_;
  RankSimStats stats_;
  DataProblems problems_;
};

}  // namespace chakraflow
