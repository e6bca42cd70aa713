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

// Scans each (rank, .et path) in parallel, builds the groups over `world` and writes `out_path`
// atomically. Errors name the file.
Status write_comm_group_file(const std::vector<std::pair<int, std::string>>& rank_traces,
                             const std::vector<int>& world, int name_offset,
                             const std::string& out_path, CommGroupFileReport* report);

// One line for people: "3 groups (1 inferred from collectives) -> out/trace.comm_group.json".
std::string describe(const CommGroupFileReport& report, const std::string& out_path);

}  // namespace chakraflow
