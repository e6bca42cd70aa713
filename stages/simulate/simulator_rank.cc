#include "stages/simulate/simulator_rank.h"

#include <algorithm>
#include <cmath>

#include "stages/et/node_scan.h"
#include "stages/et/schema.h"

namespace chakraflow {
namespace {

constexpr int64_t kNsPerUs = 1000;

SimKind kind_of(int32_t type, bool is_cpu_op) {
  switch (static_cast<ChakraNodeType>(type)) {
    case ChakraNodeType::kCommColl:
      return SimKind::kCollective;
    case ChakraNodeType::kCommSend:
    case ChakraNodeType::kCommRecv:
      return SimKind::kP2p;
    default:
      return is_cpu_op ? SimKind::kCpu : SimKind::kGpu;
  }
}

int64_t saturating_add(int64_t a, int64_t b) {
  if (a == kSimNever || b == kSimNever) return kSimNever;
  return b > 0 && a > kSimNever - b ? kSimNever : a + b;
}

int64_t us_to_ns(uint64_t us) {
  return us > static_cast<uint64_t>(kSimNever / (4 * kNsPerUs))
             ? kSimNever / 4
             : static_cast<int64_t>(us) * kNsPerUs;
}

}  // namespace

std::string SimResource::label() const {
  if (cpu) return has_id ? fmt::format("CPU thread {}", id) : "CPU";
  return has_id ? fmt::format("GPU stream {}", id) : "GPU";
}

RankSimulator::RankSimulator(uint32_t rank, uint32_t world, EtFeeder* feeder,
                             const SimConfig* config, const CostModel* cost, bool keep_names)
    : rank_(rank),
      world_(world),
      feeder_(feeder),
      config_(config),
      cost_(cost),
      keep_names_(keep_names) {
  feeder_->set_observer(this);
}

RankSimulator::~RankSimulator() {
  feeder_->set_observer(nullptr);
}

uint32_t RankSimulator::index_of(NodeId id) const {
  if (id < kDenseIds) return id < dense_index_.size() ? dense_index_[id] : kSimNone;
  auto it = sparse_index_.find(id);
  return it == sparse_index_.end() ? kSimNone : it->second;
}

void RankSimulator::set_index(NodeId id, uint32_t index) {
  if (id < kDenseIds) {
    if (id >= dense_index_.size()) {
      dense_index_.resize(std::max<size_t>(id + 1, dense_index_.size() * 2), kSimNone);
    }
    dense_index_[id] = index;
  } else {
    sparse_index_[id] = index;
  }
}

uint32_t RankSimulator::resource_for(bool cpu, const std::optional<int64_t>& id) {
  // Consecutive nodes mostly share a thread or a stream.
  const int cached = cpu ? 0 : 1;
  if (last_resource_[cached] != kSimNone) {
    const SimResource& r = resources_[last_resource_[cached]];
    if (r.has_id == id.has_value() && (!id || r.id == *id)) return last_resource_[cached];
  }
  uint32_t* slot = nullptr;
  if (!id) {
    slot = cpu ? &default_cpu_ : &default_gpu_;
  } else {
    auto& map = cpu ? cpu_resources_ : gpu_resources_;
    slot = &map.try_emplace(*id, kSimNone).first->second;
  }
  if (*slot == kSimNone) {
    *slot = static_cast<uint32_t>(resources_.size());
    SimResource r;
    r.cpu = cpu;
    r.has_id = id.has_value();
    r.id = id.value_or(0);
    resources_.push_back(r);
    queues_.emplace_back();
    is_dirty_.push_back(0);
  }
  last_resource_[cached] = *slot;
  return *slot;
}

void RankSimulator::on_read(const FeederNode& fn) {
  SimNodeFields f;
  Status s = scan_sim_fields(fn.raw, &f);
  if (!s.ok()) {
    if (read_error_.ok()) {
      read_error_ = Status::errorf("{}: node {} (record #{} at byte {}): {}", feeder_->path(),
                                   fn.id, fn.record_index, fn.byte_offset, s.message());
    }
    f = SimNodeFields{};
    f.id = fn.id;
    f.type = fn.type;
    f.duration_micros = fn.duration_micros;
  }
  ++stats_.nodes_read;
  const auto index = static_cast<uint32_t>(nodes_.size());
  SimNode& n = nodes_.emplace_back();
  n.id = fn.id;
  n.type = f.type;
  n.kind = kind_of(f.type, f.is_cpu_op);
  n.start_us = f.start_time_micros;
  n.recorded_ns = us_to_ns(f.duration_micros);
  // A collective or message without a stream but with a thread is a CPU-side one (gloo runs them
  // on its own threads): it holds its thread, as a GPU one holds its stream.
  const bool on_thread =
      f.is_cpu_op || (n.kind != SimKind::kGpu && n.kind != SimKind::kCpu && !f.stream && f.tid);
  n.resource = resource_for(on_thread, on_thread ? f.tid : f.stream);
  set_index(fn.id, index);
  if (keep_names_) {
    n.name_begin = static_cast<uint32_t>(names_.size());
    n.name_size = static_cast<uint32_t>(f.name.size());
    names_.append(f.name);
  }
  if (n.start_us != 0) {
    any_recorded_start_ = true;
    if (!first_start_us_ || n.start_us < *first_start_us_) first_start_us_ = n.start_us;
  }

  read_comm(f, index);
  // A parent op whose next op on its thread started before the parent's exclusive time ran out
  // holds the thread only until then (see the header). File order is start order on a thread.
  if (config_->host_gaps && n.kind == SimKind::kCpu && n.start_us != 0 && f.tid) {
    truncate_previous_on_thread(*f.tid, index);
  }
}

void RankSimulator::read_comm(const SimNodeFields& f, uint32_t index) {
  SimNode& n = nodes_[index];
  const auto type = static_cast<ChakraNodeType>(f.type);
  if (type == ChakraNodeType::kCommColl || type == ChakraNodeType::kCommSend ||
      type == ChakraNodeType::kCommRecv) {
    SimComm c;
    c.kind = type == ChakraNodeType::kCommColl   ? CommKind::kCollective
             : type == ChakraNodeType::kCommSend ? CommKind::kSend
                                                 : CommKind::kRecv;
    c.node = index;
    if (!f.comm_type && c.kind == CommKind::kCollective) {
      problems_.add(StatKind::kSimCollectiveWithoutCommType,
                    fmt::format("rank {} node {}", rank_, n.id));
    }
    c.comm_type = static_cast<int32_t>(f.comm_type.value_or(0));
    c.bytes = f.comm_size;
    c.peer = c.kind == CommKind::kSend ? f.comm_dst.value_or(-1) : f.comm_src.value_or(-1);
    c.tag = f.comm_tag;
    c.pg_name.assign(f.pg_name);
    n.comm = static_cast<uint32_t>(comms_.size());
    comms_.push_back(std::move(c));
  } else if (type == ChakraNodeType::kMetadata && !f.inputs_values.empty() &&
             f.name.find("process_group:init") != std::string_view::npos) {
    auto defs = parse_process_groups(f.inputs_values);
    if (!defs.ok()) {
      problems_.add(StatKind::kSimProcessGroupInitUnparsed,
                    fmt::format("rank {} node {}: {}", rank_, n.id, defs.status().message()));
    } else {
      for (ProcessGroupDef& def : *defs) {
        std::string name = def.name;
        groups_[name] = std::make_shared<const ProcessGroupDef>(std::move(def));
      }
    }
  }
}

void RankSimulator::truncate_previous_on_thread(int64_t tid, uint32_t index) {
  const SimNode& n = nodes_[index];
  auto [it, inserted] = last_on_thread_.try_emplace(tid, index);
  if (inserted) return;
  SimNode& prev = nodes_[it->second];
  const int64_t until_next = us_to_ns(n.start_us) - us_to_ns(prev.start_us);
  if (n.start_us >= prev.start_us && until_next < prev.recorded_ns) {
    if (prev.ready == kSimNever) {
      prev.recorded_ns = until_next;
      if (!prev.truncated) ++stats_.truncated_parents;
      prev.truncated = true;
    } else {
      ++stats_.truncations_too_late;
    }
  }
  it->second = index;
}

Status RankSimulator::prime() {
  if (const FeederNode* n = feeder_->issue()) CF_RETURN_IF_ERROR(feeder_->push_back(n->id));
  if (feeder_->state() == FeedState::kError) return feeder_->error();
  return read_error_;
}

void RankSimulator::set_time_base(uint64_t base_us, int64_t rank_offset_ns) {
  base_us_ = base_us;
  rank_offset_ns_ = rank_offset_ns;
}

int64_t RankSimulator::relative_start(const SimNode& n) const {
  return us_to_ns(n.start_us) - us_to_ns(base_us_);
}

std::string_view RankSimulator::name(const SimNode& node) const {
  return std::string_view(names_).substr(node.name_begin, node.name_size);
}

void RankSimulator::schedule(int64_t time, uint32_t node, bool complete) {
  events_.push(Event{time, next_seq_++, node, complete});
}

int64_t RankSimulator::next_event() const {
  if (kick_) return 0;
  return events_.empty() ? kSimNever : events_.top().time;
}

Status RankSimulator::advance(int64_t horizon) {
  if (kick_) {
    kick_ = false;
    now_ = 0;
    CF_RETURN_IF_ERROR(issue_ready());
    dispatch(&horizon);
  }
  while (!events_.empty() && events_.top().time <= horizon) {
    now_ = events_.top().time;
    while (!events_.empty() && events_.top().time == now_) {
      const Event e = events_.top();
      events_.pop();
      ++stats_.events;
      if (e.complete) {
        CF_RETURN_IF_ERROR(finish(e.node));
      } else {
        enqueue(e.node);
      }
    }
    CF_RETURN_IF_ERROR(issue_ready());
    dispatch(&horizon);
  }
  return Status();
}

Status RankSimulator::issue_ready() {
  while (const FeederNode* fn = feeder_->issue()) {
    if (!read_error_.ok()) return read_error_;
    NodeHeader header;
    deps_scratch_.clear();
    Status s = scan_node(fn->raw, &header, &deps_scratch_, nullptr);
    if (!s.ok()) {
      return Status::errorf("{}: node {} (record #{} at byte {}): {}", feeder_->path(), fn->id,
                            fn->record_index, fn->byte_offset, s.message());
    }
    const uint32_t index = index_of(fn->id);
    if (index == kSimNone) {  // cannot happen: on_read saw every node the feeder holds
      return Status::errorf("{}: node {} issued but never read", feeder_->path(), fn->id);
    }
    make_ready(index, deps_scratch_);
  }
  if (!read_error_.ok()) return read_error_;
  if (feeder_->state() == FeedState::kError) return feeder_->error();
  return Status();
}

void RankSimulator::make_ready(uint32_t index, const std::vector<NodeId>& deps) {
  SimNode& n = nodes_[index];
  int64_t ready = 0, recorded_ready = 0;
  uint32_t pred = kSimNone;
  for (NodeId d : deps) {
    const uint32_t di = index_of(d);
    if (di == kSimNone) continue;
    const SimNode& dep = nodes_[di];
    if (dep.end == kSimNever) continue;  // not one the feeder waited on (cannot happen)
    if (pred == kSimNone || dep.end > ready || (dep.end == ready && dep.id > nodes_[pred].id)) {
      ready = dep.end;
      pred = di;
    }
    recorded_ready = std::max(recorded_ready, dep.model_end);
  }
  n.ready = ready;
  n.pred = pred;
  n.reason = pred == kSimNone ? StartReason::kRankStart : StartReason::kDependency;
  int64_t recorded_start = recorded_ready;
  if (config_->host_gaps && n.start_us != 0) {
    recorded_start = std::max(recorded_ready, relative_start(n));
    n.delay = recorded_start - recorded_ready;
  } else if (!config_->host_gaps && pred == kSimNone) {
    n.delay = rank_offset_ns_;
  }
  n.model_end = saturating_add(recorded_start, n.recorded_ns);
  n.eligible = std::max(now_, saturating_add(ready, n.delay));
  if (n.eligible > now_) {
    schedule(n.eligible, index, /*complete=*/false);
  } else {
    enqueue(index);
  }
}

void RankSimulator::enqueue(uint32_t index) {
  const SimNode& n = nodes_[index];
  queues_[n.resource].push(Queued{n.eligible, n.id, index});
  if (!is_dirty_[n.resource]) {
    is_dirty_[n.resource] = 1;
    dirty_.push_back(n.resource);
  }
}

void RankSimulator::dispatch(int64_t* horizon) {
  // Resources in the order they became dirty: deterministic.
  for (size_t k = 0; k < dirty_.size(); ++k) {
    const uint32_t r = dirty_[k];
    is_dirty_[r] = 0;
    if (resources_[r].busy != kSimNone || queues_[r].empty()) continue;
    const uint32_t node = queues_[r].top().node;
    queues_[r].pop();
    start(node, horizon);
  }
  dirty_.clear();
}

std::shared_ptr<const ProcessGroupDef> RankSimulator::group_of(std::string_view pg_name) {
  if (pg_name.empty()) return nullptr;
  auto it = groups_.find(std::string(pg_name));
  if (it == groups_.end()) {
    problems_.add(StatKind::kSimPgNameUndefined,
                  fmt::format("rank {}: pg_name \"{}\"", rank_, pg_name));
    return nullptr;
  }
  return it->second;
}

void RankSimulator::start(uint32_t index, int64_t* horizon) {
  SimNode& n = nodes_[index];
  SimResource& res = resources_[n.resource];
  n.start = now_;
  if (now_ > n.eligible && res.last != kSimNone) {
    n.reason = StartReason::kResource;
    n.pred = res.last;
  }
  res.busy = index;
  if (n.comm == kSimNone) {
    const double scaled = static_cast<double>(n.recorded_ns) * config_->compute_scale;
    const int64_t duration =
        scaled >= 9.0e18 ? kSimNever / 4 : static_cast<int64_t>(std::llround(scaled));
    schedule(saturating_add(now_, duration), index, /*complete=*/true);
    return;
  }
  SimComm& c = comms_[n.comm];
  const bool model = config_->mode == SimMode::kModel;
  if (c.kind == CommKind::kSend) {
    // Eager: the send holds its stream for the transfer; the message is then at the peer.
    const int64_t cost = model ? cost_->p2p_ns(c.bytes) : n.recorded_ns;
    const int64_t end = saturating_add(now_, cost);
    c.transfer_start = now_;
    messages_.push_back(P2pMessage{rank_, c.peer, c.tag, index, now_, end, c.bytes});
    schedule(end, index, /*complete=*/true);
    return;
  }
  CommRequest req;
  req.rank = rank_;
  req.node = index;
  req.id = n.id;
  req.kind = c.kind;
  req.time = now_;
  req.recorded_ns = n.recorded_ns;
  req.comm_type = c.comm_type;
  req.bytes = c.bytes;
  req.peer = c.peer;
  req.tag = c.tag;
  if (c.kind == CommKind::kCollective) {
    req.pg_name = c.pg_name;
    req.group = group_of(c.pg_name);
    const uint32_t members = req.group && !req.group->ranks.empty()
                                 ? static_cast<uint32_t>(req.group->ranks.size())
                                 : world_;
    req.lookahead_ns = model ? cost_->collective_ns(c.comm_type, c.bytes, members) : 0;
  }
  *horizon = std::min(*horizon, saturating_add(now_, req.lookahead_ns));
  requests_.push_back(std::move(req));
}

void RankSimulator::complete_comm(uint32_t node, int64_t end, int64_t transfer_start,
                                  uint32_t remote_rank, uint32_t remote_node) {
  SimComm& c = comms_[nodes_[node].comm];
  c.transfer_start = transfer_start;
  c.remote_rank = remote_rank;
  c.remote_node = remote_node;
  if (end < now_) {  // the driver's horizons make this impossible; never schedule in the past
    ++stats_.late_deliveries;
    end = now_;
  }
  schedule(end, node, /*complete=*/true);
}

Status RankSimulator::finish(uint32_t index) {
  SimNode& n = nodes_[index];
  n.end = now_;
  SimResource& res = resources_[n.resource];
  res.busy = kSimNone;
  res.last = index;
  if (!is_dirty_[n.resource]) {
    is_dirty_[n.resource] = 1;
    dirty_.push_back(n.resource);
  }
  ++stats_.nodes_done;
  return feeder_->complete(n.id);
}

std::vector<uint32_t> RankSimulator::waiting_comms() const {
  std::vector<uint32_t> out;
  for (const SimComm& c : comms_) {
    const SimNode& n = nodes_[c.node];
    if (c.kind != CommKind::kSend && n.start != kSimNever && n.end == kSimNever &&
        c.transfer_start == kSimNever) {
      out.push_back(c.node);
    }
  }
  return out;
}

std::optional<std::pair<int64_t, int64_t>> RankSimulator::span() const {
  int64_t first = kSimNever, last = -1;
  for (const SimNode& n : nodes_) {
    if (n.end == kSimNever || (any_recorded_start_ && n.start_us == 0)) continue;
    first = std::min(first, n.start);
    last = std::max(last, n.end);
  }
  if (last < 0) return std::nullopt;
  return std::make_pair(first, last);
}

}  // namespace chakraflow
