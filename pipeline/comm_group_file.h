// The communicator-group file of a set of converted ranks (stages/convert/comm_groups.h), written
// by `chakraflow run` beside its traces and by `chakraflow convert --comm-groups FILE`.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "stages/common/status.h"
#include "stages/convert/comm_group_inference.h"
#include "stages/convert/comm_groups.h"

namespace chakraflow {

struct CommGroupFileReport {
  CommGroups groups;
  uint64_t unreadable_metadata = 0;
};

// Every rank's groups: `known` (ranks whose conversion reported them: ConvertReport::comm_groups)
// and each (rank, .et path) of `to_scan` (read in parallel: ranks converted by an earlier run), in
// rank order. Errors name the file.
StatusOr<std::vector<RankCommGroups>> collect_rank_groups(
    std::vector<RankCommGroups> known, const std::vector<std::pair<int, std::string>>& to_scan,
    int name_offset);

// Builds the groups over `world` from every rank's and writes `out_path` atomically.
Status write_comm_group_file(const std::vector<RankCommGroups>& ranks,
                             const std::vector<int>& world, int name_offset,
                             const std::string& out_path, CommGroupFileReport* report);

// Places the ranks' CPU-side (gloo) collectives on their process groups across ranks
// (stages/convert/comm_group_inference.h) and rewrites the pg_name of those whose group changes in
// each rank's .et (`et_path_of(rank)`, in parallel); `ranks` then tells what the traces hold.
struct CpuCollectivePlacement {
  CollectivePlacement placement;
  uint64_t traces_rewritten = 0;
};
StatusOr<CpuCollectivePlacement> place_and_rewrite_cpu_collectives(
    std::vector<RankCommGroups>& ranks, const std::vector<int>& world,
    const std::function<std::string(int)>& et_path_of);

// One line for people: "3 groups (1 inferred from collectives) -> out/trace.comm_group.json".
std::string describe(const CommGroupFileReport& report, const std::string& out_path);

}  // namespace chakraflow
