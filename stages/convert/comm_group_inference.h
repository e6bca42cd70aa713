// Placing CPU-side collectives on their process groups across ranks.
//
// gloo's collectives (CpuCollective: a communication node named gloo:*) carry no record of their
// process group in PyTorch 2.11 traces. A rank's conversion knows the groups the rank belongs to
// (its `## process_group:init ##` node): with one, that is the group; with several, it writes the
// default group and counts the guess (stages/convert/comm_attributes.h). Across ranks the
// collectives tell more: the members of a group issue its collectives in the same order, with the
// same type and size, and a collective ends on no member before it has started on every member
// (it cannot complete before the last member arrives).
//
// place_cpu_collectives takes every rank's collectives and groups. A rank in one group keeps what
// was written. Then, repeatedly, in the order in which the collectives end (recorded start +
// duration; ties by rank and node), for each collective not placed yet, its rank's groups are
// tried from the largest (the default group first), then by name: a group fits when every member
// rank has, as its first unplaced collective that may run on the group, one with the same type and
// size (this collective, on its own rank), and no member ends it before another starts it (the
// check is skipped when a member has no times). The first group that fits takes those collectives,
// one per member. Passes repeat until one places nothing; what is left keeps the written group and
// is counted as unplaced.
//
// What it cannot tell apart: collectives of the same type and size run at the same time on
// disjoint subgroups look like one collective of a larger group they all belong to; they are
// placed there.
//
// Deterministic: the result depends only on the input, not on its order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stages/common/status.h"
#include "stages/convert/comm_groups.h"

namespace chakraflow {

struct CollectivePlacement {
  // By rank: node id -> the group it is placed on, for the collectives whose group differs from
  // the one written.
  std::map<int, std::map<uint64_t, std::string>> changed;
  std::map<int, uint64_t> placed_by_rank;  // of the ranks in several groups
  uint64_t considered = 0;                 // collectives of ranks in several groups
  uint64_t placed = 0;                     // of those, placed on a group that fits
  uint64_t unplaced = 0;                   // of those, left on the group written
};

// `ranks`: every rank of the run (RankCommGroups::cpu_collectives in id order); `world`: the
// ranks of the run, ascending (an empty group rank list means them all).
CollectivePlacement place_cpu_collectives(const std::vector<RankCommGroups>& ranks,
                                          const std::vector<int>& world);

// Rewrites the pg_name attribute of the nodes `pg_name_by_node` lists (added where a node has
// none) in the .et at `path`, in place through a temporary file; every other record is copied as
// it is. The bytes are those the converter would have written with these names. Errors name the
// file and the record.
Status rewrite_pg_names(const std::string& path,
                        const std::map<uint64_t, std::string>& pg_name_by_node);

}  // namespace chakraflow
