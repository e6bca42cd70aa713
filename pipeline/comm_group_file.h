// The communicator-group file of a set of converted ranks (stages/convert/comm_groups.h), written by
// `chakraflow run` beside its traces and by `chakraflow convert --comm-groups FILE`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "stages/convert/comm_groups.h"
#include "stages/common/status.h"

namespace chakraflow {

struct CommGroupFileReport {
  CommGroups groups;
  uint64_t unreadable_metadata = 0;
};

// Builds the groups over `world` from `known` (ranks whose conversion reported them:
// ConvertReport::comm_groups) and from each (rank, .et path) of `to_scan` (read in parallel:
// ranks converted by an earlier run), and writes `out_path` atomically. Errors name the file.
Status write_comm_group_file(std::vector<RankCommGroups> known,
                             const std::vector<std::pair<int, std::string>>& to_scan,
                             const std::vector<int>& world, int name_offset,
                             const std::string& out_path, CommGroupFileReport* report);

// One line for people: "3 groups (1 inferred from collectives) -> out/trace.comm_group.json".
std::string describe(const CommGroupFileReport& report, const std::string& out_path);

}  // namespace chakraflow
