#include "stages/simulate/simulator_report.h"

#include <algorithm>
#include <cmath>

#include "stages/common/json_util.h"

namespace chakraflow {
namespace {

PathKind path_kind(const SimNode& n) {
  switch (n.kind) {
    case SimKind::kCpu:
      return PathKind::kCpu;
    case SimKind::kGpu:
      return PathKind::kGpu;
    case SimKind::kCollective:
      return PathKind::kCollective;
    case SimKind::kP2p:
      return PathKind::kP2p;
  }
  return PathKind::kCpu;
}

// µs with ns precision, shortest form ("14322", "0.5", "1.234").
std::string us(int64_t ns) {
  std::string s = fmt::format("{:.3f}", static_cast<double>(ns) / 1000.0);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}
std::string us(double value) {
  return us(static_cast<int64_t>(std::llround(value * 1000.0)));
}

std::optional<double> error_pct(const RankResult& r) {
  if (!r.predicted_us || !r.measured_us || *r.measured_us <= 0) return std::nullopt;
  return 100.0 * (*r.predicted_us - *r.measured_us) / *r.measured_us;
}

// The prediction against the step measured without a profiler: 0 anywhere in [min, median]
// (the fastest and the typical run), else the distance to the nearer end, in percent of it.
std::optional<double> unprofiled_error_pct(const RankResult& r) {
  if (!r.predicted_us || !r.unprofiled_median_us || !r.unprofiled_min_us ||
      *r.unprofiled_min_us <= 0) {
    return std::nullopt;
  }
  const double p = *r.predicted_us, lo = *r.unprofiled_min_us, hi = *r.unprofiled_median_us;
  if (p > hi) return 100.0 * (p - hi) / hi;
  if (p < lo) return 100.0 * (p - lo) / lo;
  return 0.0;
}

// Whether any rank says something of its recording beyond its step (the report's extra columns).
bool any_recording_facts(const SimResult& result) {
  for (const RankResult& r : result.ranks) {
    if (r.recorded_us || r.unprofiled_median_us) return true;
  }
  return false;
}

// One entry of simulation.json's "ranks".
void append_rank_json(std::string& out, const RankResult& r, bool first) {
  auto num = [](const std::optional<double>& v) { return v ? us(*v) : std::string("null"); };
  const auto err = error_pct(r);
  out += fmt::format(
      "{}\n  {{\"rank\": {}, \"predicted_us\": {}, \"measured_us\": {}, \"error_pct\": {}, "
      "\"nodes\": {}, \"state\": \"{}\", \"trace\": ",
      first ? "" : ",", r.rank, num(r.predicted_us), num(r.measured_us),
      err ? fmt::format("{:.3f}", *err) : "null", r.nodes_done, r.state);
  json::append_escaped(out, r.path);
  if (r.recorded_us || r.unprofiled_median_us) {
    const auto unprofiled_err = unprofiled_error_pct(r);
    out += fmt::format(
        ", \"recorded_us\": {}, \"profiler_overhead_removed\": {}, "
        "\"measured_unprofiled_us\": {}, \"unprofiled_error_pct\": {}",
        num(r.recorded_us ? r.recorded_us : r.measured_us), r.overhead_removed,
        r.unprofiled_median_us ? fmt::format("{{\"median\": {}, \"min\": {}}}",
                                             num(r.unprofiled_median_us), num(r.unprofiled_min_us))
                               : std::string("null"),
        unprofiled_err ? fmt::format("{:.3f}", *unprofiled_err) : "null");
  }
  if (!r.problem.empty()) {
    out += ", \"problem\": ";
    json::append_escaped(out, r.problem);
  }
  out += "}";
}

}  // namespace

const char* to_string(PathKind kind) {
  switch (kind) {
    case PathKind::kCpu:
      return "cpu";
    case PathKind::kGpu:
      return "gpu";
    case PathKind::kCollective:
      return "collective";
    case PathKind::kP2p:
      return "p2p";
    case PathKind::kHostDelay:
      return "host_delay";
    case PathKind::kRankStart:
      return "rank_start";
    case PathKind::kCount:
      break;
  }
  return "?";
}

CriticalPath critical_path(const std::vector<const RankSimulator*>& ranks) {
  CriticalPath path;
  uint32_t rank = kSimNone, node = kSimNone;
  int64_t end = -1;
  uint64_t total_nodes = 0;
  for (uint32_t r = 0; r < ranks.size(); ++r) {
    const auto& nodes = ranks[r]->nodes();
    total_nodes += nodes.size();
    for (uint32_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].end != kSimNever && nodes[i].end > end) {
        end = nodes[i].end;
        rank = r;
        node = i;
      }
    }
  }
  if (rank == kSimNone) return path;
  path.total_ns = end;
  path.end_rank = rank;
  path.end_node = ranks[rank]->nodes()[node].id;
  auto add = [&](PathKind kind, int64_t ns) {
    path.by_kind_ns[static_cast<size_t>(kind)] += std::max<int64_t>(ns, 0);
  };
  std::vector<uint32_t> visited_ranks;
  // Every step goes to a node that ended no later than the current one started, and no node is
  // its own predecessor; the bound only guards against a bug turning into a loop.
  for (uint64_t steps = 0; steps <= total_nodes + ranks.size(); ++steps) {
    const RankSimulator& rs = *ranks[rank];
    const SimNode* n = &rs.nodes()[node];
    visited_ranks.push_back(rank);
    ++path.nodes;
    ++path.nodes_by_kind[static_cast<size_t>(path_kind(*n))];
    if (n->comm != kSimNone && rs.comms()[n->comm].kind != CommKind::kSend &&
        rs.comms()[n->comm].remote_rank != kSimNone) {
      // The transfer, from the deciding member's arrival (or the message's send) to the end; the
      // path goes on from that member's node, whose own duration is the transfer.
      const SimComm& c = rs.comms()[n->comm];
      add(path_kind(*n), n->end - c.transfer_start);
      if (c.remote_rank != rank || c.remote_node != node) {
        rank = c.remote_rank;
        node = c.remote_node;
        n = &ranks[rank]->nodes()[node];
        visited_ranks.push_back(rank);
        ++path.nodes;
        ++path.nodes_by_kind[static_cast<size_t>(path_kind(*n))];
      }
    } else {
      add(path_kind(*n), n->end - n->start);
    }
    // Why the node started when it did.
    if (n->reason == StartReason::kRankStart || n->pred == kSimNone) {
      add(PathKind::kRankStart, n->start);
      break;
    }
    // The wait after the last dependency: a recorded delay (0 when the resource decided), or the
    // rank's start offset when that dependency is a root that took no time at time 0 (a thread).
    const SimNode& pred = ranks[rank]->nodes()[n->pred];
    add(pred.end == 0 ? PathKind::kRankStart : PathKind::kHostDelay, n->start - pred.end);
    node = n->pred;
  }
  std::sort(visited_ranks.begin(), visited_ranks.end());
  visited_ranks.erase(std::unique(visited_ranks.begin(), visited_ranks.end()), visited_ranks.end());
  path.ranks = std::move(visited_ranks);
  return path;
}

std::string report_json(const SimResult& result, const SimConfig& config) {
  std::string out;
  out += fmt::format("{{\"status\": \"{}\", \"mode\": \"{}\",\n",
                     result.completed ? "completed" : "stalled", to_string(config.mode));
  out += fmt::format(
      " \"config\": {{\"network\": {{\"bandwidth_gbps\": {}, \"latency_us\": {}, \"algorithm\": "
      "\"{}\"}}, \"host_gaps\": {}, \"rank_skew\": {}, \"collective_replay\": \"{}\", "
      "\"compute_scale\": {}}},\n",
      config.network.bandwidth_gbps, config.network.latency_us, to_string(config.network.algorithm),
      config.host_gaps, config.rank_skew, to_string(config.collective_replay),
      config.compute_scale);
  out += " \"ranks\": [";
  for (size_t k = 0; k < result.ranks.size(); ++k) {
    append_rank_json(out, result.ranks[k], k == 0);
  }
  out += "],\n";
  const CriticalPath& cp = result.critical_path;
  out += fmt::format(
      " \"critical_path\": {{\"total_us\": {}, \"nodes\": {}, \"end\": {{\"rank\": {}, \"node\": "
      "{}}}, \"ranks\": [",
      us(cp.total_ns), cp.nodes, cp.end_rank, cp.end_node);
  for (size_t k = 0; k < cp.ranks.size(); ++k)
    out += fmt::format("{}{}", k ? ", " : "", cp.ranks[k]);
  out += "], \"by_kind_us\": {";
  for (size_t k = 0; k < cp.by_kind_ns.size(); ++k) {
    out += fmt::format("{}\"{}\": {}", k ? ", " : "", to_string(static_cast<PathKind>(k)),
                       us(cp.by_kind_ns[k]));
  }
  out += "}},\n \"stall\": [";
  for (size_t k = 0; k < result.stall.size(); ++k) {
    out += k ? ",\n  " : "\n  ";
    json::append_escaped(out, result.stall[k]);
  }
  out += "],\n \"problems\": {";
  size_t k = 0;
  for (const auto& [kind, entry] : result.problems.entries()) {
    out += k++ ? ", " : "";
    json::append_escaped(out, stat_key(kind));
    out += fmt::format(": {}", entry.count);
  }
  out += fmt::format(
      "}},\n \"nodes\": {}, \"events\": {}, \"rounds\": {}, \"collectives\": {}, \"messages\": "
      "{}}}\n",
      result.nodes, result.events, result.rounds, result.collectives, result.messages);
  return out;
}

std::string report_text(const SimResult& result, const SimConfig& config) {
  std::string out;
  auto opt_us = [](const std::optional<double>& v) { return v ? us(*v) : std::string("-"); };
  auto pct = [](const std::optional<double>& v) {
    return v ? fmt::format("{:+.2f}%", *v) : std::string("-");
  };
  if (!any_recording_facts(result)) {
    out += fmt::format("{:>5}  {:>14}  {:>14}  {:>8}  {:>8}  {}\n", "rank", "predicted_us",
                       "measured_us", "error", "nodes", "state");
    for (const RankResult& r : result.ranks) {
      out +=
          fmt::format("{:>5}  {:>14}  {:>14}  {:>8}  {:>8}  {}\n", r.rank, opt_us(r.predicted_us),
                      opt_us(r.measured_us), pct(error_pct(r)), r.nodes_done, r.state);
    }
  } else {
    // The prediction (of the unprofiled step, when the profilers' overhead was taken out), the
    // step as recorded, and the step measured without a profiler: [min, median].
    out += fmt::format("{:>5}  {:>14}  {:>14}  {:>23}  {:>8}  {:>8}  {}\n", "rank", "predicted_us",
                       "recorded_us", "unprofiled_us [min-med]", "error", "nodes", "state");
    for (const RankResult& r : result.ranks) {
      const std::string unprofiled =
          r.unprofiled_median_us
              ? fmt::format("{}-{}", opt_us(r.unprofiled_min_us), opt_us(r.unprofiled_median_us))
              : "-";
      out +=
          fmt::format("{:>5}  {:>14}  {:>14}  {:>23}  {:>8}  {:>8}  {}\n", r.rank,
                      opt_us(r.predicted_us), opt_us(r.recorded_us ? r.recorded_us : r.measured_us),
                      unprofiled, pct(unprofiled_error_pct(r)), r.nodes_done, r.state);
    }
  }
  const CriticalPath& cp = result.critical_path;
  if (cp.nodes > 0) {
    std::string kinds;
    for (size_t k = 0; k < cp.by_kind_ns.size(); ++k) {
      if (cp.by_kind_ns[k] == 0) continue;
      kinds += fmt::format("{}{} {} us ({:.1f}%)", kinds.empty() ? "" : ", ",
                           to_string(static_cast<PathKind>(k)), us(cp.by_kind_ns[k]),
                           cp.total_ns > 0 ? 100.0 * cp.by_kind_ns[k] / cp.total_ns : 0.0);
    }
    std::string ranks;
    for (size_t k = 0; k < cp.ranks.size() && k < 16; ++k) {
      ranks += fmt::format("{}{}", k ? "," : "", cp.ranks[k]);
    }
    if (cp.ranks.size() > 16) ranks += ",...";
    out +=
        fmt::format("critical path: {} us, {} nodes on ranks {}, ends at rank {} node {}\n  {}\n",
                    us(cp.total_ns), cp.nodes, ranks, cp.end_rank, cp.end_node, kinds);
  }
  for (const auto& [kind, entry] : result.problems.entries()) {
    out +=
        fmt::format("warning: {} x {}: {}{}\n", entry.count, stat_key(kind), stat_description(kind),
                    entry.examples.empty() ? "" : " (e.g. " + entry.examples.front() + ")");
  }
  if (!result.completed) {
    out +=
        fmt::format("STALLED ({} mode): {} thing{} can never complete:\n", to_string(config.mode),
                    result.stall.size(), result.stall.size() == 1 ? "" : "s");
    for (const std::string& line : result.stall) out += "  " + line + "\n";
  }
  return out;
}

}  // namespace chakraflow
