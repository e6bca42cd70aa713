#include "pipeline/comm_group_file.h"

#include <oneapi/tbb/parallel_for.h>

#include <algorithm>

#include <fmt/format.h>

#include "stages/common/file_io.h"

namespace chakraflow {

StatusOr<std::vector<RankCommGroups>> collect_rank_groups(
    std::vector<RankCommGroups> known, const std::vector<std::pair<int, std::string>>& to_scan,
    int name_offset) {
  std::vector<StatusOr<RankCommGroups>> scanned(to_scan.size(), Status::error("not scanned"));
  tbb::parallel_for(size_t{0}, to_scan.size(), [&](size_t i) {
    scanned[i] = scan_comm_groups(to_scan[i].second, to_scan[i].first, name_offset);
  });
  std::vector<RankCommGroups> ranks = std::move(known);
  for (auto& s : scanned) {
    if (!s.ok()) return s.status();
    ranks.push_back(std::move(s).value());
  }
  // In rank order, whatever the source.
  std::sort(ranks.begin(), ranks.end(),
            [](const RankCommGroups& a, const RankCommGroups& b) { return a.rank < b.rank; });
  return ranks;
}

Status write_comm_group_file(const std::vector<RankCommGroups>& ranks,
                             const std::vector<int>& world, int name_offset,
                             const std::string& out_path, CommGroupFileReport* report) {
  report->unreadable_metadata = 0;
  for (const RankCommGroups& r : ranks) report->unreadable_metadata += r.unreadable_metadata;
  report->groups = build_comm_groups(ranks, world, name_offset);
  return write_file_atomically(out_path, comm_groups_json(report->groups));
}

StatusOr<CpuCollectivePlacement> place_and_rewrite_cpu_collectives(
    std::vector<RankCommGroups>& ranks, const std::vector<int>& world,
    const std::function<std::string(int)>& et_path_of) {
  CpuCollectivePlacement out;
  out.placement = place_cpu_collectives(ranks, world);
  const auto& changed = out.placement.changed;
  std::vector<RankCommGroups*> to_rewrite;
  for (RankCommGroups& r : ranks) {
    if (changed.count(r.rank)) to_rewrite.push_back(&r);
  }
  std::vector<Status> status(to_rewrite.size());
  tbb::parallel_for(size_t{0}, to_rewrite.size(), [&](size_t i) {
    status[i] = rewrite_pg_names(et_path_of(to_rewrite[i]->rank), changed.at(to_rewrite[i]->rank));
  });
  for (const Status& s : status) CF_RETURN_IF_ERROR(s);
  // What the traces hold now: the names on their collectives.
  for (RankCommGroups* r : to_rewrite) {
    const auto& names = changed.at(r->rank);
    for (CpuCollective& c : r->cpu_collectives) {
      if (auto it = names.find(c.node_id); it != names.end()) c.pg_name = it->second;
    }
    for (const auto& [node, name] : names) r->used.insert(name);
  }
  out.traces_rewritten = to_rewrite.size();
  return out;
}

std::string describe(const CommGroupFileReport& report, const std::string& out_path) {
  const CommGroups& g = report.groups;
  std::string what =
      fmt::format("{} communicator group{}", g.groups.size(), g.groups.size() == 1 ? "" : "s");
  if (g.default_world) {
    what += " (the traces record no process group: the default group of every rank)";
  } else if (g.inferred > 0) {
    what += fmt::format(" ({} inferred from the collectives' pg_name: no metadata declares them)",
                        g.inferred);
  }
  if (g.disagreements > 0) {
    what += fmt::format("; {} group(s) declared with different ranks by different ranks (union)",
                        g.disagreements);
  }
  if (report.unreadable_metadata > 0) {
    what += fmt::format("; {} process-group metadata node(s) unreadable (skipped)",
                        report.unreadable_metadata);
  }
  return what + " -> " + out_path;
}

}  // namespace chakraflow
