#include "stages/convert/comm_group_inference.h"

#include <algorithm>
#include <tuple>

#include "proto/et_def.pb.h"
#include "stages/et/et_io.h"

namespace chakraflow {
namespace {

struct Group {
  std::string name;
  std::vector<int> members;  // ascending
};

// One rank's collectives and the groups they may run on.
struct RankState {
  int rank = 0;
  const std::vector<CpuCollective>* collectives = nullptr;
  std::vector<const Group*> groups;  // the rank's groups, largest first, then by name
  // By collective: the one group it may run on when it is fixed (a written name other than the
  // default group's is a record's: conversion guesses only the default), else null (any group).
  std::vector<const Group*> fixed;
  std::vector<const Group*> placed;  // by collective; null: not placed yet
};

bool has_times(const CpuCollective& c) {
  return c.start_us != 0;
}

bool may_run_on(const RankState& r, size_t k, const Group* g) {
  return r.fixed[k] != nullptr ? r.fixed[k] == g
                               : std::find(r.groups.begin(), r.groups.end(), g) != r.groups.end();
}

// The first collective of `r` not placed yet that may run on `g`, or -1.
int first_open(const RankState& r, const Group* g) {
  for (size_t k = 0; k < r.placed.size(); ++k) {
    if (r.placed[k] == nullptr && may_run_on(r, k, g)) return static_cast<int>(k);
  }
  return -1;
}

// Every group any rank declares, by name (the first declaration's ranks; an empty list: world).
std::map<std::string, Group> declared_groups(const std::vector<RankCommGroups>& ranks,
                                             const std::vector<int>& world) {
  std::map<std::string, Group> groups;
  for (const RankCommGroups& r : ranks) {
    for (const auto& [name, members] : r.declared) {
      groups.try_emplace(name, Group{name, members.empty() ? world : members});
    }
  }
  return groups;
}

// Rank r's state: its groups, the collectives whose group is fixed, none placed yet (but those of
// a rank without groups, which have nothing to be placed on).
RankState rank_state(const RankCommGroups& r, const std::map<std::string, Group>& groups) {
  static const Group kNoGroup;
  RankState s;
  s.rank = r.rank;
  s.collectives = &r.cpu_collectives;
  for (const auto& [name, g] : groups) {
    if (r.declared.count(name) && std::binary_search(g.members.begin(), g.members.end(), r.rank)) {
      s.groups.push_back(&g);
    }
  }
  std::stable_sort(s.groups.begin(), s.groups.end(), [](const Group* a, const Group* b) {
    return a->members.size() > b->members.size();
  });
  s.fixed.assign(r.cpu_collectives.size(), nullptr);
  s.placed.assign(r.cpu_collectives.size(), nullptr);
  for (size_t k = 0; k < r.cpu_collectives.size(); ++k) {
    const std::string& written = r.cpu_collectives[k].pg_name;
    for (const Group* g : s.groups) {
      if (g->name == written && (g != s.groups.front() || s.groups.size() == 1)) s.fixed[k] = g;
    }
    // No group to run on (a rank without process groups): nothing to place.
    if (s.groups.empty()) s.placed[k] = &kNoGroup;
  }
  return s;
}

// Places collective k of `self` on `g` with the first open collective of every other member,
// when they all may run on it, agree on type and size, and (timed) overlap in time.
bool try_group(std::map<int, RankState>& state, const RankState& self, size_t k, const Group* g) {
  const CpuCollective& c = (*self.collectives)[k];
  std::vector<std::pair<RankState*, size_t>> members;
  uint64_t latest_start = 0, earliest_end = UINT64_MAX;
  bool timed = true;
  for (int m : g->members) {
    auto it = state.find(m);
    if (it == state.end()) return false;  // a member without a trace
    const int j = first_open(it->second, g);
    if (j < 0 || (it->second.rank == self.rank && static_cast<size_t>(j) != k)) return false;
    const CpuCollective& p = (*it->second.collectives)[static_cast<size_t>(j)];
    if (p.type != c.type || p.comm_type != c.comm_type || p.comm_size != c.comm_size) {
      return false;
    }
    timed &= has_times(p);
    latest_start = std::max(latest_start, p.start_us);
    earliest_end = std::min(earliest_end, p.start_us + p.duration_us);
    members.emplace_back(&it->second, static_cast<size_t>(j));
  }
  if (timed && latest_start > earliest_end) return false;
  for (auto& [member, j] : members) member->placed[j] = g;
  return true;
}

// The collectives to place, in the order they end.
std::vector<std::tuple<uint64_t, int, size_t>> placement_order(
    const std::map<int, RankState>& state) {
  std::vector<std::tuple<uint64_t, int, size_t>> order;
  for (const auto& [rank, s] : state) {
    for (size_t k = 0; k < s.placed.size(); ++k) {
      if (s.placed[k] != nullptr) continue;
      const CpuCollective& c = (*s.collectives)[k];
      order.emplace_back(c.start_us + c.duration_us, rank, k);
    }
  }
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace

CollectivePlacement place_cpu_collectives(const std::vector<RankCommGroups>& ranks,
                                          const std::vector<int>& world) {
  CollectivePlacement out;
  const std::map<std::string, Group> groups = declared_groups(ranks, world);
  std::map<int, RankState> state;
  for (const RankCommGroups& r : ranks) {
    RankState& s = state[r.rank] = rank_state(r, groups);
    if (s.groups.size() > 1) out.considered += r.cpu_collectives.size();
  }
  const auto order = placement_order(state);
  for (bool progress = true; progress;) {
    progress = false;
    for (const auto& [end, rank, k] : order) {
      RankState& s = state[rank];
      if (s.placed[k] != nullptr) continue;
      for (const Group* g : s.groups) {
        if (may_run_on(s, k, g) && try_group(state, s, k, g)) {
          progress = true;
          break;
        }
      }
    }
  }
  for (const auto& [rank, s] : state) {
    if (s.groups.size() <= 1) continue;
    for (size_t k = 0; k < s.placed.size(); ++k) {
      const CpuCollective& c = (*s.collectives)[k];
      if (s.placed[k] == nullptr) {
        ++out.unplaced;
        continue;
      }
      ++out.placed;
      ++out.placed_by_rank[rank];
      if (s.placed[k]->name != c.pg_name) out.changed[rank][c.node_id] = s.placed[k]->name;
    }
  }
  return out;
}

Status rewrite_pg_names(const std::string& path,
                        const std::map<uint64_t, std::string>& pg_name_by_node) {
  CF_ASSIGN_OR_RETURN(EtReader reader, EtReader::open(path));
  CF_ASSIGN_OR_RETURN(EtWriter writer, EtWriter::open(path));
  std::string_view raw;
  ChakraProtoMsg::Node node;
  size_t left = pg_name_by_node.size();
  bool first = true;
  while (true) {
    const uint64_t index = reader.record_index();
    const uint64_t offset = reader.offset();
    CF_ASSIGN_OR_RETURN(bool more, reader.next_raw(&raw));
    if (!more) break;
    const bool metadata = first && !first_record_is_node(raw);
    first = false;
    if (metadata || left == 0) {
      writer.write_raw(raw);
      continue;
    }
    if (!node.ParseFromArray(raw.data(), static_cast<int>(raw.size()))) {
      return Status::errorf("{}: record #{} at byte {}: not a Chakra node", path, index, offset);
    }
    auto it = pg_name_by_node.find(node.id());
    if (it == pg_name_by_node.end()) {
      writer.write_raw(raw);
      continue;
    }
    --left;
    ChakraProtoMsg::AttributeProto* attr = nullptr;
    for (auto& a : *node.mutable_attr()) {
      if (a.name() == "pg_name") attr = &a;
    }
    if (attr == nullptr) {
      attr = node.add_attr();
      attr->set_name("pg_name");
    }
    attr->set_string_val(it->second);
    writer.write(node);
  }
  if (left != 0) {
    return Status::errorf("{}: {} node(s) to place on a process group are not in the trace", path,
                          left);
  }
  return writer.commit();
}

}  // namespace chakraflow
