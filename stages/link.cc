#include "stages/link.h"

#include <fmt/format.h>

namespace chakraflow {

MatchMode resolve_mode(const DeviceTrace& device, MatchMode requested) {
  if (requested != MatchMode::kAuto) return requested;
  return device.has_rf_ids ? MatchMode::kRfId : MatchMode::kSequence;
}

StatusOr<HostDeviceMap> map_host_to_device(const HostTrace& host, const DeviceTrace& device,
                                           const LinkOptions& options, LinkStats& stats) {
  MatchMode mode = resolve_mode(device, options.mode);
  if (mode == MatchMode::kSequence) {
    return Status::errorf(
        "{}: the device trace has no \"Record function id\" args, so it cannot be linked by rf_id; "
        "order-based (sequence) matching is not available in this build",
        device.path);
  }
  if (!device.has_rf_ids) {
    return Status::errorf("{}: --mode rf_id, but no device event carries \"Record function id\"",
                          device.path);
  }
  return map_by_rf_id(host, device, options.compat, stats);
}

StatusOr<LinkedTrace> link_traces(const HostTrace& host, const DeviceTrace& device,
                                  const LinkOptions& options) {
  LinkStats stats;
  ExclusiveDurations exclusive = compute_exclusive_durations(device, options.compat);
  GapDependencies gaps = compute_gap_dependencies(device, options.gap_threshold);
  LauncherLinks launchers = correlate_launchers(device, options.compat, stats);
  CF_ASSIGN_OR_RETURN(HostDeviceMap mapping, map_host_to_device(host, device, options, stats));
  return assign_ids({host, device, exclusive, gaps, launchers, mapping}, options, std::move(stats));
}

LinkSummary summarize(const HostTrace& host, const DeviceTrace& device,
                      const LauncherLinks& launchers, const HostDeviceMap& mapping,
                      const GapDependencies& gaps, const LinkedTrace& linked, MatchMode mode) {
  LinkSummary s;
  s.host_nodes = host.nodes.size();
  s.host_ops_linked = mapping.matched;
  s.host_ops_with_rf_id = mapping.host_ops_with_rf_id;
  s.device_cpu_ops = device.cpu_ops.size();
  s.gpu_ops = launchers.gpu_ops.size();
  s.gpu_ops_linked = linked.gpu_events.size();
  s.gpu_ops_orphaned = s.gpu_ops - s.gpu_ops_linked;
  s.et_plus_nodes = linked.node_count;
  s.gap_groups = gaps.groups;
  s.mode = mode == MatchMode::kSequence ? "sequence" : "rf_id";
  return s;
}

std::string format_link_report(const LinkSummary& s, const LinkStats& stats) {
  auto pct = [](uint64_t a, uint64_t b) {
    return b == 0 ? 100.0 : 100.0 * static_cast<double>(a) / static_cast<double>(b);
  };
  std::string out = fmt::format(
      "link report ({} mode)\n"
      "  host ops linked:   {} / {} with rf_id ({:.1f}%), {} host nodes in all\n"
      "  GPU ops linked:    {} / {} ({:.1f}%), orphaned {}\n"
      "  ET+ nodes written: {}; inter-thread groups: {}\n",
      s.mode, s.host_ops_linked, s.host_ops_with_rf_id,
      pct(s.host_ops_linked, s.host_ops_with_rf_id), s.host_nodes, s.gpu_ops_linked, s.gpu_ops,
      pct(s.gpu_ops_linked, s.gpu_ops), s.gpu_ops_orphaned, s.et_plus_nodes, s.gap_groups);
  if (stats.entries().empty()) {
    out += "  warnings: none\n";
  } else {
    out += "  warnings by kind:\n";
    for (const auto& [kind, entry] : stats.entries()) {
      out += fmt::format("    {:>7}  {}\n", entry.count, kind);
      for (const auto& ex : entry.examples) out += fmt::format("             e.g. {}\n", ex);
    }
  }
  return out;
}

}  // namespace chakraflow
