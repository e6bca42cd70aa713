// `chakraflow feed X.et [Y.et ...] [--window N] [--refill N] [--ctrl-deps]`: issues a whole trace
// through the feeder (stages/feed/et_feeder.h) and reports what a simulator would meet: the nodes
// issued, an issue-order checksum, the end state (with the node ids when it stalls) and the
// throughput.
//
// One file: the synchronous loop issue -> complete, smallest id first (for chakra.0.et the order
// Chakra's feeder gives with get -> freeChildren -> remove). Several files: one rank per file on
// the MultiFeeder, in rounds (release every ready node of every rank, pop them in (ready time,
// rank, id) order, complete each at ready time + duration); the checksum is per rank.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "pipeline/cli_args.h"
#include "pipeline/commands.h"
#include "stages/feed/et_feeder.h"
#include "stages/feed/multi_feeder.h"

namespace chakraflow {
namespace {

const std::vector<cli::FlagSpec>& feed_flags() {
  static const std::vector<cli::FlagSpec> specs = {
      {"window", true, "most nodes held in memory (default 1048576, Chakra's)", {}},
      {"refill",
       true,
       "read more when fewer nodes than this are ready (default 256; 0: keep the "
       "window full)",
       {}},
      {"ctrl-deps", false, "honour ctrl_deps as well as data_deps", {"ctrl_deps"}},
      {"quiet", false, "print only the summary line", {"q"}},
      {"help", false, "show this help", {"h"}},
  };
  return specs;
}

std::string rate(uint64_t nodes, double seconds) {
  if (seconds <= 0) return "-";
  double per_s = nodes / seconds;
  return per_s >= 1e6 ? fmt::format("{:.2f} M nodes/s", per_s / 1e6)
                      : fmt::format("{:.1f} k nodes/s", per_s / 1e3);
}

void print_stats(const FeederStats& s, const FeederOptions& options) {
  std::printf("  window:        %llu (max resident %llu, read past the window %llu)\n",
              static_cast<unsigned long long>(options.window),
              static_cast<unsigned long long>(s.max_resident),
              static_cast<unsigned long long>(s.reads_past_window));
  std::printf("  dependencies:  %llu, %s (found complete %llu, waits on nodes not read yet %llu)\n",
              static_cast<unsigned long long>(s.dependencies),
              options.ctrl_deps ? "data + ctrl" : "data only",
              static_cast<unsigned long long>(s.deps_already_done),
              static_cast<unsigned long long>(s.forward_deps));
  if (s.metadata_missing) std::printf("  note:          the file has no GlobalMetadata record\n");
}

int feed_one(const cli::Verb& verb, const std::string& path, const FeederOptions& options,
             bool quiet) {
  auto t0 = std::chrono::steady_clock::now();
  auto opened = EtFeeder::open(path, options);
  if (!opened.ok()) return verb.failure(opened.status());
  EtFeeder& feeder = **opened;
  IssueChecksum checksum;
  uint64_t issued = 0;
  std::vector<NodeId> first;
  while (const FeederNode* node = feeder.issue()) {
    const NodeId id = node->id;
    checksum.add(id);
    if (first.size() < 8) first.push_back(id);
    ++issued;
    Status done = feeder.complete(id);
    if (!done.ok()) return verb.failure(done);  // cannot happen: the node was just issued
  }
  const FeedState state = feeder.state();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const FeederStats stats = feeder.stats();
  std::string first_ids;
  for (NodeId id : first) first_ids += fmt::format(" {}", id);
  if (quiet) {
    std::printf("%s: %llu nodes, checksum %016llx, %s, %s\n", path.c_str(),
                static_cast<unsigned long long>(issued),
                static_cast<unsigned long long>(checksum.value()), to_string(state),
                rate(issued, seconds).c_str());
  } else {
    std::printf("feed: %s\n", path.c_str());
    std::printf("  nodes issued:  %llu (read %llu)\n", static_cast<unsigned long long>(issued),
                static_cast<unsigned long long>(stats.nodes_read));
    std::printf("  issue order:   checksum %016llx, first ids%s\n",
                static_cast<unsigned long long>(checksum.value()), first_ids.c_str());
    std::printf("  end state:     %s\n", to_string(state));
    print_stats(stats, options);
    std::printf("  throughput:    %llu nodes in %.3f ms: %s\n",
                static_cast<unsigned long long>(issued), seconds * 1e3,
                rate(issued, seconds).c_str());
  }
  if (state == FeedState::kStalled) {
    verb.message(path + ": stalled: " + feeder.stall_report().to_string());
    return 1;
  }
  if (state == FeedState::kError) {
    return verb.failure(feeder.error());
  }
  return 0;
}

int feed_many(const cli::Verb& verb, const std::vector<std::string>& paths,
              const FeederOptions& options, bool quiet) {
  auto t0 = std::chrono::steady_clock::now();
  auto opened = MultiFeeder::open(paths, options);
  if (!opened.ok()) return verb.failure(opened.status());
  MultiFeeder& feeder = **opened;
  std::vector<IssueChecksum> checksums(paths.size());
  std::vector<uint64_t> issued(paths.size(), 0);
  std::vector<Completion> batch;
  uint64_t rounds = 0;
  int64_t end_time = 0;
  while (true) {
    feeder.release_ready();
    batch.clear();
    ReadyNode ready;
    while (feeder.try_pop(&ready)) {
      checksums[ready.rank].add(ready.id);
      ++issued[ready.rank];
      const int64_t finish = ready.time + static_cast<int64_t>(ready.node->duration_micros);
      end_time = std::max(end_time, finish);
      batch.push_back(Completion{ready.rank, ready.id, finish});
    }
    if (batch.empty()) break;
    ++rounds;
    Status done = feeder.complete_all(batch);
    if (!done.ok()) return verb.failure(done);
  }
  const FeedState state = feeder.state();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t total = 0;
  int rc = 0;
  std::vector<RankSummary> summary = feeder.summary();
  for (size_t r = 0; r < paths.size(); ++r) {
    total += issued[r];
    const RankSummary& s = summary[r];
    if (quiet) {
      std::printf("rank %zu: %s: %llu nodes, checksum %016llx, %s\n", r, s.path.c_str(),
                  static_cast<unsigned long long>(issued[r]),
                  static_cast<unsigned long long>(checksums[r].value()), to_string(s.state));
    } else {
      std::printf("feed: rank %zu: %s\n", r, s.path.c_str());
      std::printf("  nodes issued:  %llu (read %llu)\n", static_cast<unsigned long long>(issued[r]),
                  static_cast<unsigned long long>(s.stats.nodes_read));
      std::printf("  issue order:   checksum %016llx\n",
                  static_cast<unsigned long long>(checksums[r].value()));
      std::printf("  end state:     %s\n", to_string(s.state));
      print_stats(s.stats, options);
    }
    if (!s.problem.empty()) {
      verb.message(fmt::format("rank {}: {}: {}: {}", r, s.path, to_string(s.state), s.problem));
      rc = 1;
    }
  }
  std::printf(
      "feed: %zu ranks, %llu nodes in %llu rounds (ready-time span %lld us), end state %s: "
      "%.3f ms, %s\n",
      paths.size(), static_cast<unsigned long long>(total), static_cast<unsigned long long>(rounds),
      static_cast<long long>(end_time), to_string(state), seconds * 1e3,
      rate(total, seconds).c_str());
  return state == FeedState::kDone ? rc : 1;
}

}  // namespace

int run_feed_command(int argc, char** argv, int first) {
  const char* synopsis = "feed X.et [Y.et ...] [--window N] [--refill N] [--ctrl-deps] [--quiet]";
  const auto& specs = feed_flags();
  cli::Verb verb("feed", synopsis, specs);
  if (auto exit = verb.parse(argc, argv, first)) return *exit;
  const cli::Args& args = verb.args();
  if (args.positionals().empty()) return verb.usage_error("missing the trace (.et or .et.gz)");
  FeederOptions options;
  auto window = args.get_int("window", static_cast<int64_t>(options.window));
  auto refill = args.get_int("refill", static_cast<int64_t>(options.refill_below));
  if (!window.ok()) return verb.usage_error(window.status().message());
  if (!refill.ok()) return verb.usage_error(refill.status().message());
  if (*window < 1) return verb.usage_error("--window must be at least 1");
  if (*refill < 0) return verb.usage_error("--refill must be 0 or more");
  options.window = static_cast<uint64_t>(*window);
  options.refill_below = static_cast<uint64_t>(*refill);
  options.ctrl_deps = args.has("ctrl-deps");
  const bool quiet = args.has("quiet");
  const auto& paths = args.positionals();
  return paths.size() == 1 ? feed_one(verb, paths.front(), options, quiet)
                           : feed_many(verb, paths, options, quiet);
}

}  // namespace chakraflow
