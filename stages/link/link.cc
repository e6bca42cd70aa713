#include "stages/link/link.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <set>

#include "stages/common/json_util.h"
#include "stages/link/sequence_matching.h"

namespace chakraflow {
namespace {

// rf_ids number the ops of a process from 1: two ranks running the same program number their ops
// alike, so a host ET paired with another rank's device trace "links" by rf_id, silently wrong.
// The process ids tell: the host ET's top-level "pid" must be one of the device trace's CPU-op
// pids. An error by default; in Chakra mode (which does not check) a counted warning, as when
// --min-match-rate 0 turns the checks off.
Status check_same_process(const HostTrace& host, const DeviceTrace& device,
                          const LinkOptions& options, DataProblems& stats) {
  std::optional<int64_t> host_pid;
  for (const TopLevelField& f : host.top_level) {
    if (f.key_raw != "\"pid\"") continue;
    int64_t pid = 0;
    auto r = std::from_chars(f.value_raw.data(), f.value_raw.data() + f.value_raw.size(), pid);
    if (r.ec == std::errc() && r.ptr == f.value_raw.data() + f.value_raw.size()) host_pid = pid;
  }
  if (!host_pid || device.cpu_ops.empty()) return Status();
  // The first CPU op nearly always has the host's pid: the set of pids (a tree insert per op) is
  // only made for the message.
  for (DeviceEventIdx e : device.cpu_ops) {
    if (device[e].pid == *host_pid) return Status();
  }
  std::set<int64_t> device_pids;
  for (DeviceEventIdx e : device.cpu_ops) device_pids.insert(device[e].pid);
  if (options.compat == Compat::kChakra || options.min_match_rate <= 0) {
    stats.add(StatKind::kHostPidNotInDevice, fmt::format("host pid {}", *host_pid));
    return Status();
  }
  return Status::errorf(
      "{} was recorded by process {}, but no CPU op of {} was (processes {}): the traces come "
      "from different processes (another rank or another run); their rf_ids would match ops "
      "that are not the same (--min-match-rate 0 links them anyway)",
      host.path, *host_pid, device.path, fmt::join(device_pids, ", "));
}

}  // namespace

MatchMode resolve_mode(const DeviceTrace& device, MatchMode requested) {
  if (requested != MatchMode::kAuto) return requested;
  return device.has_rf_ids ? MatchMode::kRfId : MatchMode::kSequence;
}

StatusOr<HostDeviceMap> map_host_to_device(const HostTrace& host, const DeviceTrace& device,
                                           const LinkOptions& options, DataProblems& stats,
                                           const OrderedBatches* workers) {
  MatchMode mode = resolve_mode(device, options.mode);
  if (mode == MatchMode::kSequence) return map_by_sequence(host, device, options, stats);
  if (!device.has_rf_ids) {
    return Status::errorf("{}: --mode rf_id, but no device event carries \"Record function id\"",
                          device.path);
  }
  CF_RETURN_IF_ERROR(check_same_process(host, device, options, stats));
  return map_by_rf_id(host, device, options.compat, stats, workers);
}

StatusOr<LinkedRank> map_and_assign_ids(const HostTrace& host, const DeviceTrace& device,
                                        const DeviceFindings& found, const LinkOptions& options,
                                        DataProblems stats, const OrderedBatches* workers) {
  CF_ASSIGN_OR_RETURN(HostDeviceMap mapping,
                      map_host_to_device(host, device, options, stats, workers));
  return assign_linked_ids(host, device, found, mapping, options, std::move(stats), workers);
}

LinkedRank assign_linked_ids(const HostTrace& host, const DeviceTrace& device,
                             const DeviceFindings& found, const HostDeviceMap& mapping,
                             const LinkOptions& options, DataProblems stats,
                             const OrderedBatches* workers) {
  // Later stages see the mode that was used (auto resolved): sequence mode resolves inter-thread
  // dependencies through the map instead of rf_ids.
  LinkedRank rank;
  rank.options = options;
  rank.options.mode = resolve_mode(device, options.mode);
  rank.trace =
      assign_ids({host, device, found.exclusive, found.gaps, found.launchers, mapping, found.sync},
                 rank.options, std::move(stats), workers);
  rank.summary =
      summarize(host, device, found.launchers, mapping, found.gaps, rank.trace, rank.options.mode);
  return rank;
}

void add_linked_sync(const HostTrace& host, const DeviceTrace& device, const DeviceFindings& found,
                     const HostDeviceMap& mapping, const DataProblems& sync_stats,
                     LinkedRank& rank) {
  // The sync stage's problems are of kinds no other stage counts: merged here or before the
  // numbering's, the same problems.
  rank.trace.stats.merge(sync_stats);
  add_sync_ids({host, device, found.exclusive, found.gaps, found.launchers, mapping, found.sync},
               rank.options, rank.trace);
  rank.summary.sync = rank.trace.sync;
}

StatusOr<std::optional<ProfilerOverheadNote>> prepare_device_trace(DeviceTrace& device,
                                                                   const LinkOptions& options) {
  if (options.other_process) {
    std::vector<std::string_view> steps;
    for (const DeviceEvent& e : device.events) {
      if (e.has(kProfilerStep) && e.cat == DeviceCategory::kUserAnnotation) {
        steps.push_back(device.name(e));
      }
    }
    if (steps.size() > 1) {
      return Status::errorf(
          "{}: the timing trace holds {} recorded steps ({}); it must hold one, the step the host "
          "trace recorded (docs/capturing.md)",
          device.path, steps.size(), fmt::join(steps, ", "));
    }
    if (device.cpu_ops.empty()) {
      return Status::errorf("{}: the timing trace holds no CPU op (cpu_op, user_annotation)",
                            device.path);
    }
  }
  if (options.compat == Compat::kChakra) return std::optional<ProfilerOverheadNote>();
  const ProfilerCosts costs = options.profiler_costs();
  const std::optional<StepTime::Step> unprofiled =
      options.step_time ? options.step_time->unprofiled : std::nullopt;
  if (!costs.any() && !unprofiled) return std::optional<ProfilerOverheadNote>();
  const OverheadRemoval removal = remove_profiler_overhead(device, costs, options.gap_threshold);
  ProfilerOverheadNote note;
  note.removed = costs.any();
  note.recorded_with = options.recorded_with;
  note.costs = costs;
  note.recorded_step_us = json::micros_value(removal.recorded_step);
  note.step_us = json::micros_value(removal.step);
  note.unprofiled = unprofiled;
  return std::optional<ProfilerOverheadNote>(note);
}

StatusOr<LinkedRank> link_rank(const HostTrace& host, const DeviceTrace& device,
                               const LinkOptions& options, const OrderedBatches* workers) {
  DataProblems stats;
  ExclusiveDurations exclusive = compute_exclusive_durations(device, options.compat);
  GapDependencies gaps = compute_gap_dependencies(device, options.gap_threshold);
  LauncherLinks launchers = correlate_launchers(device, options.compat, stats, workers);
  SyncDependencies sync =
      compute_sync_dependencies(device, launchers, options.compat, stats, workers);
  return map_and_assign_ids(host, device, {exclusive, gaps, launchers, &sync}, options,
                            std::move(stats), workers);
}

StatusOr<LinkedTrace> link_traces(const HostTrace& host, const DeviceTrace& device,
                                  const LinkOptions& options, const OrderedBatches* workers) {
  CF_ASSIGN_OR_RETURN(LinkedRank rank, link_rank(host, device, options, workers));
  return std::move(rank.trace);
}

LinkSummary summarize(const HostTrace& host, const DeviceTrace& device,
                      const LauncherLinks& launchers, const HostDeviceMap& mapping,
                      const GapDependencies& gaps, const LinkedTrace& linked, MatchMode mode) {
  LinkSummary s;
  s.host_nodes = host.nodes.size();
  s.host_ops_linked = mapping.matched;
  s.host_ops_with_rf_id = mapping.host_ops_with_rf_id;
  s.host_op_candidates = mapping.candidates;
  s.threads = mapping.threads;
  s.device_cpu_ops = device.cpu_ops.size();
  s.gpu_ops = launchers.gpu_ops.size();
  s.gpu_ops_linked = linked.gpu_events.size();
  s.gpu_ops_orphaned = s.gpu_ops - s.gpu_ops_linked;
  s.et_plus_nodes = linked.node_count;
  s.gap_groups = gaps.groups;
  s.sync = linked.sync;
  s.mode = mode == MatchMode::kSequence ? "sequence" : "rf_id";
  return s;
}

std::string format_link_report(const LinkSummary& s, const DataProblems& stats) {
  auto pct = [](uint64_t a, uint64_t b) {
    return b == 0 ? 100.0 : 100.0 * static_cast<double>(a) / static_cast<double>(b);
  };
  std::string out = fmt::format(
      "link report ({} mode)\n"
      "  host ops linked:   {} / {} {} ({:.1f}%), {} host nodes in all\n",
      s.mode, s.host_ops_linked, s.host_op_candidates,
      s.mode == "sequence" ? "host ops" : "with rf_id",
      pct(s.host_ops_linked, s.host_op_candidates), s.host_nodes);
  for (const ThreadMatch& t : s.threads) out += "    " + format_thread_match(t) + "\n";
  out += fmt::format(
      "  GPU ops linked:    {} / {} ({:.1f}%), orphaned {}\n"
      "  ET+ nodes written: {}; inter-thread groups: {}\n",
      s.gpu_ops_linked, s.gpu_ops, pct(s.gpu_ops_linked, s.gpu_ops), s.gpu_ops_orphaned,
      s.et_plus_nodes, s.gap_groups);
  out += fmt::format(
      "  sync deps:         {} on host nodes, {} on GPU nodes, from {} sync calls ({} resolved, "
      "{} in the trace, {} with inferred stream)\n",
      s.sync.host_deps, s.sync.gpu_deps, s.sync.calls_emitted, s.sync.calls_resolved, s.sync.calls,
      s.sync.inferred);
  if (stats.entries().empty()) {
    out += "  warnings: none\n";
  } else {
    out += "  warnings by kind:\n";
    for (const auto& [kind, entry] : stats.entries()) {
      out +=
          fmt::format("    {:>7}  {}: {}\n", entry.count, stat_key(kind), stat_description(kind));
      for (const auto& ex : entry.examples) out += fmt::format("             e.g. {}\n", ex);
    }
  }
  return out;
}

}  // namespace chakraflow
