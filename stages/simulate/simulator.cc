#include "stages/simulate/simulator.h"

#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <filesystem>

#include "proto/et_def.pb.h"
#include "stages/feed/multi_feeder.h"
#include "stages/simulate/simulator_comm.h"
#include "stages/simulate/simulator_cost.h"

namespace chakraflow {
namespace {

// What the GlobalMetadata says of the recorded step: step_time_us (double, or an integer type from
// other producers), and what `chakraflow convert` writes of the profiler overhead
// (recorded_step_time_us, profiler_overhead_removed, unprofiled_step_median_us / _min_us).
RankResult step_facts(const std::string& metadata_bytes) {
  RankResult facts;
  if (metadata_bytes.empty()) return facts;
  ChakraProtoMsg::GlobalMetadata md;
  if (!md.ParseFromString(metadata_bytes)) return facts;
  auto number = [](const ChakraProtoMsg::AttributeProto& a) -> std::optional<double> {
    if (a.has_double_val()) return a.double_val();
    if (a.has_uint64_val()) return static_cast<double>(a.uint64_val());
    if (a.has_int64_val()) return static_cast<double>(a.int64_val());
    return std::nullopt;
  };
  for (const auto& a : md.attr()) {
    if (a.name() == "step_time_us") facts.measured_us = number(a);
    if (a.name() == "recorded_step_time_us") facts.recorded_us = number(a);
    if (a.name() == "unprofiled_step_median_us") facts.unprofiled_median_us = number(a);
    if (a.name() == "unprofiled_step_min_us") facts.unprofiled_min_us = number(a);
    if (a.name() == "profiler_overhead_removed") facts.overhead_removed = a.bool_val();
  }
  return facts;
}

// Runs body(r) for the listed ranks: inline for one, with oneTBB for more.
template <typename Body>
void for_ranks(const std::vector<uint32_t>& ranks, const Body& body) {
  if (ranks.size() == 1) {
    body(ranks[0]);
    return;
  }
  oneapi::tbb::parallel_for(size_t{0}, ranks.size(), [&](size_t k) { body(ranks[k]); });
}

// A rank's end state (done, waiting, stalled, error) and its problem, from its simulator.
void set_end_state(RankSimulator& rank, RankResult& rr) {
  const std::vector<uint32_t> waiting = rank.waiting_comms();
  const FeedState state = rank.feeder().state();
  if (state == FeedState::kError) {
    rr.state = "error";
    rr.problem = rank.feeder().error().message();
  } else if (!waiting.empty()) {
    rr.state = "waiting";
    std::string nodes;
    for (size_t k = 0; k < waiting.size() && k < 8; ++k) {
      nodes += fmt::format("{}{}", k ? ", " : "", rank.nodes()[waiting[k]].id);
    }
    rr.problem = fmt::format("waits in communication: node{} {}{}", waiting.size() > 1 ? "s" : "",
                             nodes, waiting.size() > 8 ? ", ..." : "");
  } else if (state == FeedState::kStalled) {
    rr.state = "stalled";
    rr.problem = rank.feeder().stall_report().to_string();
  } else if (state == FeedState::kDone) {
    rr.state = "done";
  } else {
    rr.state = "stalled";  // in flight with nothing left to deliver it (cannot happen)
    rr.problem =
        fmt::format("{} nodes in flight, none of them able to finish", rank.feeder().in_flight());
  }
}

// What blocks a stalled simulation: each communication still pending (who waits, who never
// reached it, and why: `rank_state`), then each rank that stalled or failed.
std::vector<std::string> stall_lines(const CommMatcher& matcher,
                                     const std::vector<RankResult>& ranks,
                                     const std::vector<std::string>& rank_state) {
  const auto world = static_cast<uint32_t>(ranks.size());
  std::vector<std::string> lines;
  for (const PendingComm& p : matcher.pending()) {
    std::string line = p.what + ": ";
    std::string waiting;
    for (size_t k = 0; k < p.ranks_waiting.size(); ++k) {
      waiting +=
          fmt::format("{}rank {} (node {})", k ? ", " : "", p.ranks_waiting[k], p.nodes_waiting[k]);
    }
    line += "waiting: " + waiting;
    for (uint32_t m : p.ranks_missing) {
      line += m >= world ? fmt::format("; rank {} is not simulated ({} ranks)", m, world)
                         : fmt::format("; rank {} never reached it: {}", m, rank_state[m]);
    }
    lines.push_back(std::move(line));
  }
  for (const RankResult& rr : ranks) {
    if (rr.state == "stalled" || rr.state == "error") {
      lines.push_back(fmt::format("rank {} ({}): {}", rr.rank, rr.state, rr.problem));
    }
  }
  return lines;
}

}  // namespace

std::vector<std::string> expand_trace_paths(const std::string& pattern, uint32_t ranks) {
  std::vector<std::string> out;
  const std::string token = "{rank}";
  const bool has_token = pattern.find(token) != std::string::npos;
  for (uint32_t r = 0; r < ranks; ++r) {
    std::string path = has_token ? pattern : pattern + ".{rank}.et";
    for (size_t at; (at = path.find(token)) != std::string::npos;) {
      path.replace(at, token.size(), std::to_string(r));
    }
    out.push_back(std::move(path));
  }
  return out;
}

struct Simulation::Impl {
  SimOptions options;
  std::vector<std::string> paths;
  std::unique_ptr<MultiFeeder> feeders;
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<CommMatcher> matcher;
  std::vector<std::unique_ptr<RankSimulator>> ranks;
  std::vector<RankResult> step_facts;  // by rank: what its metadata says of the recorded step
  uint64_t rounds = 0;
};

Simulation::Simulation(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Simulation::~Simulation() = default;

StatusOr<std::unique_ptr<Simulation>> Simulation::open(const std::vector<std::string>& paths,
                                                       const SimOptions& options) {
  if (paths.empty()) return Status::errorf("simulate: no trace (at least one rank is needed)");
  std::string missing;
  size_t missing_count = 0;
  for (size_t r = 0; r < paths.size(); ++r) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(paths[r], ec)) {
      if (missing_count++ < 16) {
        missing += fmt::format("{}rank {} ({})", missing.empty() ? "" : ", ", r, paths[r]);
      }
    }
  }
  if (missing_count > 0) {
    return Status::errorf("simulate: {} of {} rank traces missing: {}{}", missing_count,
                          paths.size(), missing, missing_count > 16 ? ", ..." : "");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->paths = paths;
  FeederOptions feeder_options = options.feeder;
  feeder_options.refill_below = 0;
  feeder_options.ctrl_deps = false;  // Chakra's semantics: data_deps order the nodes
  feeder_options.priority = nullptr;
  CF_ASSIGN_OR_RETURN(impl->feeders, MultiFeeder::open(paths, feeder_options));
  const auto world = static_cast<uint32_t>(paths.size());
  impl->cost = std::make_unique<CostModel>(impl->options.config.network);
  impl->matcher = std::make_unique<CommMatcher>(world, &impl->options.config, impl->cost.get());
  for (uint32_t r = 0; r < world; ++r) {
    impl->ranks.push_back(std::make_unique<RankSimulator>(r, world, &impl->feeders->feeder(r),
                                                          &impl->options.config, impl->cost.get(),
                                                          options.keep_names));
    impl->step_facts.push_back(step_facts(impl->feeders->feeder(r).metadata()));
  }

  // Read every rank's first window (in parallel) to learn the recorded start times.
  std::vector<uint32_t> all(world);
  for (uint32_t r = 0; r < world; ++r) all[r] = r;
  std::vector<Status> errors(world);
  for_ranks(all, [&](uint32_t r) {
    errors[r] = impl->ranks[r]->prime().with_context(fmt::format("rank {}", r));
  });
  for (Status& s : errors) CF_RETURN_IF_ERROR(s);

  std::optional<uint64_t> base;
  for (const auto& rank : impl->ranks) {
    if (auto first = rank->first_start_us(); first && (!base || *first < *base)) base = first;
  }
  const SimConfig& config = impl->options.config;
  for (const auto& rank : impl->ranks) {
    const auto first = rank->first_start_us();
    const uint64_t rank_base = config.rank_skew ? base.value_or(0) : first.value_or(0);
    const int64_t offset =
        config.rank_skew && first && base ? static_cast<int64_t>(*first - *base) * 1000 : 0;
    rank->set_time_base(rank_base, offset);
  }
  return std::unique_ptr<Simulation>(new Simulation(std::move(impl)));
}

std::vector<const RankSimulator*> Simulation::ranks() const {
  std::vector<const RankSimulator*> out;
  for (const auto& r : impl_->ranks) out.push_back(r.get());
  return out;
}

Status Simulation::run() {
  Impl& d = *impl_;
  const auto world = static_cast<uint32_t>(d.ranks.size());
  std::vector<int64_t> next(world), horizon(world);
  std::vector<uint32_t> active;
  std::vector<Status> errors(world);
  std::vector<CommDelivery> deliveries;
  while (true) {
    for (uint32_t r = 0; r < world; ++r) next[r] = d.ranks[r]->next_event();
    d.matcher->horizons(next, &horizon);
    active.clear();
    for (uint32_t r = 0; r < world; ++r) {
      if (next[r] != kSimNever && next[r] <= horizon[r]) active.push_back(r);
    }
    if (active.empty()) break;  // nothing can happen any more: done, or stalled
    if (d.options.max_rounds != 0 && d.rounds >= d.options.max_rounds) {
      return Status::errorf("simulate: stopped after {} rounds (the configured bound)", d.rounds);
    }
    ++d.rounds;
    for_ranks(active, [&](uint32_t r) { errors[r] = d.ranks[r]->advance(horizon[r]); });
    for (uint32_t r : active) {
      CF_RETURN_IF_ERROR(errors[r].with_context(fmt::format("rank {}", r)));
    }
    // Serial phase, rank order: match what the ranks reached, deliver the completions.
    for (uint32_t r : active) {
      for (CommRequest& req : d.ranks[r]->requests()) d.matcher->post(std::move(req));
      d.ranks[r]->requests().clear();
      for (const P2pMessage& m : d.ranks[r]->messages()) d.matcher->post(m);
      d.ranks[r]->messages().clear();
    }
    deliveries.clear();
    d.matcher->match(&deliveries);
    for (const CommDelivery& x : deliveries) {
      d.ranks[x.rank]->complete_comm(x.node, x.end, x.transfer_start, x.remote_rank, x.remote_node);
    }
  }

  collect_result();
  return Status();
}

void Simulation::collect_result() {
  Impl& d = *impl_;
  const auto world = static_cast<uint32_t>(d.ranks.size());
  SimResult& res = result_;
  res = SimResult{};
  res.rounds = d.rounds;
  res.collectives = d.matcher->collectives_matched();
  res.messages = d.matcher->messages_matched();
  std::vector<std::string> rank_state(world);
  bool all_done = true;
  for (uint32_t r = 0; r < world; ++r) {
    RankSimulator& rank = *d.ranks[r];
    RankResult rr = d.step_facts[r];
    rr.rank = r;
    rr.path = d.paths[r];
    rr.nodes_read = rank.stats().nodes_read;
    rr.nodes_done = rank.stats().nodes_done;
    if (auto span = rank.span()) rr.predicted_us = (span->second - span->first) / 1000.0;
    set_end_state(rank, rr);
    all_done &= rr.state == "done";
    rank_state[r] =
        rr.state == "done"
            ? fmt::format("finished its trace ({} nodes) without reaching it", rr.nodes_done)
            : rr.problem;
    res.nodes += rr.nodes_done;
    res.events += rank.stats().events;
    res.problems.merge(rank.problems());
    if (rank.feeder().stats().metadata_missing) {
      res.problems.add(StatKind::kSimEtWithoutMetadata, d.paths[r]);
    }
    if (rank.stats().truncations_too_late > 0) {
      res.problems.add_count(StatKind::kSimParentIssuedEarly, rank.stats().truncations_too_late);
    }
    if (rank.stats().late_deliveries > 0) {
      res.problems.add_count(StatKind::kSimCompletionBeforeClock, rank.stats().late_deliveries);
    }
    res.ranks.push_back(std::move(rr));
  }
  res.problems.merge(d.matcher->problems());
  if (uint64_t n = d.matcher->messages_unreceived(); n > 0) {
    res.problems.add_count(StatKind::kSimMessageUnreceived, n);
  }
  res.stall = stall_lines(*d.matcher, res.ranks, rank_state);
  res.completed = all_done && !d.matcher->has_pending();
  res.critical_path = critical_path(ranks());
}

}  // namespace chakraflow
