#include "stages/simulate/simulator_comm.h"

#include <algorithm>

#include "stages/et/schema.h"

namespace chakraflow {
namespace {

// "0-3, 5, 7-9"
std::string rank_list(const std::vector<uint32_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j > i + 1 ? fmt::format("{}-{}", ranks[i], ranks[j])
                     : (j == i + 1 ? fmt::format("{}, {}", ranks[i], ranks[j])
                                   : fmt::format("{}", ranks[i]));
    i = j + 1;
  }
  return out;
}

int64_t add_ns(int64_t a, int64_t b) {
  return a == kSimNever || b >= kSimNever - a ? kSimNever : a + b;
}

}  // namespace

CommMatcher::CommMatcher(uint32_t world, const SimConfig* config, const CostModel* cost)
    : world_(world), config_(config), cost_(cost) {}

uint32_t CommMatcher::group_for(const CommRequest& r) {
  auto [it, inserted] =
      group_by_name_.try_emplace(r.pg_name, static_cast<uint32_t>(groups_.size()));
  if (inserted) {
    Group g;
    g.name = r.pg_name;
    if (r.group && !r.group->ranks.empty()) {
      g.members = r.group->ranks;
    } else {
      for (uint32_t k = 0; k < world_; ++k) g.members.push_back(k);
      if (r.group && r.group->group_size > 0 && r.group->group_size != world_) {
        problems_.add(StatKind::kSimGroupSizeMismatch,
                      fmt::format("pg_name \"{}\": group_size {}, {} ranks simulated", r.pg_name,
                                  r.group->group_size, world_));
      }
    }
    for (uint32_t k = 0; k < g.members.size(); ++k) g.position[g.members[k]] = k;
    g.next_index.assign(g.members.size(), 0);
    groups_.push_back(std::move(g));
  } else if (r.group && !r.group->ranks.empty() && r.group->ranks != groups_[it->second].members) {
    problems_.add(StatKind::kSimGroupMembersDisagree,
                  fmt::format("pg_name \"{}\": rank {} lists {}, first seen {}", r.pg_name, r.rank,
                              rank_list(r.group->ranks), rank_list(groups_[it->second].members)));
  }
  return it->second;
}

void CommMatcher::post(CommRequest r) {
  if (r.kind == CommKind::kRecv) {
    const ChannelKey key{r.peer, static_cast<int64_t>(r.rank), r.tag};
    channels_[key].receives.push_back(Recv{r.node, r.id, r.time});
    touched_channels_.push_back(key);
    return;
  }
  const uint32_t gi = group_for(r);
  Group& g = groups_[gi];
  auto pos = g.position.find(r.rank);
  if (pos == g.position.end()) {
    problems_.add(StatKind::kSimRankNotInGroup,
                  fmt::format("rank {} node {} on pg_name \"{}\"", r.rank, r.id, r.pg_name));
    orphans_.push_back(std::move(r));
    return;
  }
  const uint64_t index = g.next_index[pos->second]++;
  Instance& inst = g.open[index];
  if (inst.arrivals.empty()) inst.arrivals.resize(g.members.size());
  Arrival& a = inst.arrivals[pos->second];
  a.present = true;
  a.node = r.node;
  a.id = r.id;
  a.time = r.time;
  a.recorded_ns = r.recorded_ns;
  a.lookahead_ns = r.lookahead_ns;
  a.comm_type = r.comm_type;
  a.bytes = r.bytes;
  ++inst.count;
  touched_.emplace_back(gi, index);
}

void CommMatcher::post(const P2pMessage& m) {
  const ChannelKey key{static_cast<int64_t>(m.src), m.dst, m.tag};
  channels_[key].messages.push_back(m);
  touched_channels_.push_back(key);
}

void CommMatcher::match(std::vector<CommDelivery>* out) {
  std::sort(touched_.begin(), touched_.end());
  touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
  for (const auto& [gi, index] : touched_) {
    Group& g = groups_[gi];
    auto it = g.open.find(index);
    if (it == g.open.end() || it->second.count < g.members.size()) continue;
    const Instance& inst = it->second;
    // The transfer starts when the last member arrives (ties: the lowest rank decides).
    size_t last = 0;
    int64_t start = inst.arrivals[0].time, min_recorded = inst.arrivals[0].recorded_ns;
    int64_t bytes = inst.arrivals[0].bytes;
    bool disagree = false;
    for (size_t k = 1; k < inst.arrivals.size(); ++k) {
      const Arrival& a = inst.arrivals[k];
      if (a.time > start) {
        start = a.time;
        last = k;
      }
      min_recorded = std::min(min_recorded, a.recorded_ns);
      bytes = std::max(bytes, a.bytes);
      disagree |= a.comm_type != inst.arrivals[0].comm_type || a.bytes != inst.arrivals[0].bytes;
    }
    if (disagree) {
      problems_.add(StatKind::kSimCollectiveMembersDisagree, describe(g, index, inst));
    }
    const int64_t modelled = cost_->collective_ns(inst.arrivals[0].comm_type, bytes,
                                                  static_cast<uint32_t>(g.members.size()));
    for (size_t k = 0; k < inst.arrivals.size(); ++k) {
      const Arrival& a = inst.arrivals[k];
      int64_t cost = modelled;
      if (config_->mode == SimMode::kReplay) {
        cost = config_->collective_replay == CollectiveReplay::kMin ? min_recorded : a.recorded_ns;
      }
      out->push_back(CommDelivery{g.members[k], a.node, add_ns(start, cost), start, g.members[last],
                                  inst.arrivals[last].node});
    }
    ++collectives_matched_;
    g.open.erase(it);
  }
  touched_.clear();

  std::sort(touched_channels_.begin(), touched_channels_.end());
  touched_channels_.erase(std::unique(touched_channels_.begin(), touched_channels_.end()),
                          touched_channels_.end());
  for (const ChannelKey& key : touched_channels_) {
    Channel& c = channels_[key];
    while (!c.messages.empty() && !c.receives.empty()) {
      const P2pMessage m = c.messages.front();
      const Recv r = c.receives.front();
      c.messages.pop_front();
      c.receives.pop_front();
      const bool message_late = m.available > r.time;
      out->push_back(
          CommDelivery{static_cast<uint32_t>(std::get<1>(key)), r.node,
                       std::max(m.available, r.time), message_late ? m.send_start : r.time,
                       message_late ? m.src : kSimNone, message_late ? m.send_node : kSimNone});
      ++messages_matched_;
    }
  }
  touched_channels_.clear();
}

int64_t CommMatcher::instance_bound(const Group& g, const Instance& inst,
                                    const std::vector<int64_t>& earliest) const {
  int64_t bound = 0, lookahead = kSimNever;
  for (size_t k = 0; k < inst.arrivals.size(); ++k) {
    const Arrival& a = inst.arrivals[k];
    if (a.present) {
      bound = std::max(bound, a.time);
      lookahead = std::min(lookahead, a.lookahead_ns);
    } else {
      const uint32_t m = g.members[k];
      bound = std::max(bound, m < world_ ? earliest[m] : kSimNever);
    }
  }
  return add_ns(bound, lookahead == kSimNever ? 0 : lookahead);
}

void CommMatcher::horizons(const std::vector<int64_t>& next_event,
                           std::vector<int64_t>* horizon) const {
  // earliest[r]: a lower bound of rank r's next event, deliveries included. Lowered from the next
  // event times along the waits-for relation until nothing changes; a chain of waits is at most
  // `world` ranks long, so world + 1 passes reach the fixed point.
  std::vector<int64_t> earliest = next_event;
  auto relax = [&](std::vector<int64_t>* target, bool* changed) {
    for (const Group& g : groups_) {
      for (const auto& [index, inst] : g.open) {
        const int64_t bound = instance_bound(g, inst, earliest);
        for (size_t k = 0; k < inst.arrivals.size(); ++k) {
          const uint32_t r = g.members[k];
          if (inst.arrivals[k].present && bound < (*target)[r]) {
            (*target)[r] = bound;
            if (changed) *changed = true;
          }
        }
      }
    }
    for (const auto& [key, c] : channels_) {
      const auto [src, dst, tag] = key;
      if (c.receives.empty() || dst < 0 || dst >= static_cast<int64_t>(world_)) continue;
      // A message already queued would have been matched; the next comes no earlier than the
      // source's next event.
      const int64_t source =
          src >= 0 && src < static_cast<int64_t>(world_) ? earliest[src] : kSimNever;
      const int64_t bound = std::max(c.receives.front().time, source);
      if (c.messages.empty() && bound < (*target)[dst]) {
        (*target)[dst] = bound;
        if (changed) *changed = true;
      }
    }
  };
  for (uint32_t pass = 0; pass <= world_; ++pass) {
    bool changed = false;
    relax(&earliest, &changed);
    if (!changed) break;
  }
  horizon->assign(world_, kSimNever);
  relax(horizon, nullptr);
}

bool CommMatcher::has_pending() const {
  if (!orphans_.empty()) return true;
  for (const Group& g : groups_) {
    if (!g.open.empty()) return true;
  }
  for (const auto& [key, c] : channels_) {
    if (!c.receives.empty()) return true;
  }
  return false;
}

uint64_t CommMatcher::messages_unreceived() const {
  uint64_t n = 0;
  for (const auto& [key, c] : channels_) n += c.messages.size();
  return n;
}

std::string CommMatcher::describe(const Group& g, uint64_t index, const Instance& inst) const {
  std::string kinds;
  for (size_t k = 0; k < inst.arrivals.size(); ++k) {
    const Arrival& a = inst.arrivals[k];
    if (!a.present) continue;
    const std::string kind = fmt::format("{}, {} bytes", collective_name(a.comm_type), a.bytes);
    if (kinds.find(kind) == std::string::npos) kinds += (kinds.empty() ? "" : " / ") + kind;
  }
  return fmt::format("collective #{} ({}) of process group \"{}\" (ranks {})", index, kinds,
                     g.name.empty() ? std::string("default") : g.name, rank_list(g.members));
}

std::vector<PendingComm> CommMatcher::pending() const {
  std::vector<PendingComm> out;
  for (const Group& g : groups_) {
    for (const auto& [index, inst] : g.open) {
      PendingComm p;
      p.what = describe(g, index, inst);
      for (size_t k = 0; k < inst.arrivals.size(); ++k) {
        if (inst.arrivals[k].present) {
          p.ranks_waiting.push_back(g.members[k]);
          p.nodes_waiting.push_back(inst.arrivals[k].id);
        } else {
          p.ranks_missing.push_back(g.members[k]);
        }
      }
      out.push_back(std::move(p));
    }
  }
  for (const auto& [key, c] : channels_) {
    const auto [src, dst, tag] = key;
    for (const Recv& r : c.receives) {
      PendingComm p;
      p.what = fmt::format("receive from rank {} (tag {})", src, tag);
      p.ranks_waiting.push_back(static_cast<uint32_t>(dst));
      p.nodes_waiting.push_back(r.id);
      if (src >= 0 && src <= UINT32_MAX) p.ranks_missing.push_back(static_cast<uint32_t>(src));
      out.push_back(std::move(p));
    }
  }
  for (const CommRequest& r : orphans_) {
    PendingComm p;
    p.what = fmt::format("{} on process group \"{}\", which does not list rank {}",
                         collective_name(r.comm_type), r.pg_name, r.rank);
    p.ranks_waiting.push_back(r.rank);
    p.nodes_waiting.push_back(r.id);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace chakraflow
