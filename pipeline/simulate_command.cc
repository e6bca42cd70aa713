// `chakraflow simulate --traces 'DIR/PREFIX.{rank}.et' --ranks N [--config sim.yaml]
//  [--timeline FILE] [--report-json FILE] [--threads N]`: predicts every rank's step time from
// its Chakra trace (stages/simulate/simulator.h, docs/simulation.md).
//
// Exit status: 0 when every rank finished; 1 on a stall (the report says which ranks wait on
// what; the timeline and the JSON report are still written) or bad input; 2 on a usage error.
#include <oneapi/tbb/global_control.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "pipeline/cli_args.h"
#include "pipeline/commands.h"
#include "stages/common/file_io.h"
#include "stages/simulate/sim_config.h"
#include "stages/simulate/simulator.h"
#include "stages/simulate/simulator_timeline.h"

namespace chakraflow {
namespace {

const std::vector<cli::FlagSpec>& simulate_flags() {
  static const std::vector<cli::FlagSpec> specs = {
      {"traces",
       true,
       "trace of each rank: a path with {rank} (DIR/trace.{rank}.et), or a prefix "
       "(DIR/trace: DIR/trace.{rank}.et)",
       {"workload"}},
      {"ranks", true, "number of ranks", {}},
      {"config", true, "YAML configuration (configs/sim.yaml; default: replay mode)", {}},
      {"timeline", true, "write the simulated timeline as Chrome trace JSON (Perfetto)", {}},
      {"report-json", true, "write the per-rank predicted/measured step times as JSON", {}},
      {"window", true, "feeder window per rank, in nodes (default 1048576)", {}},
      {"threads", true, "worker threads (default: all cores)", {}},
      {"quiet", false, "print only the summary line", {"q"}},
      {"help", false, "show this help", {"h"}},
  };
  return specs;
}

}  // namespace

int run_simulate_command(int argc, char** argv, int first) {
  const char* synopsis =
      "simulate --traces 'DIR/PREFIX.{rank}.et' --ranks N [--config sim.yaml] [--timeline FILE] "
      "[--report-json FILE]";
  const auto& specs = simulate_flags();
  cli::Verb verb("simulate", synopsis, specs);
  if (auto exit = verb.parse(argc, argv, first)) return *exit;
  if (auto exit = verb.no_positionals()) return *exit;
  const cli::Args& args = verb.args();
  auto usage_error = [&](const std::string& why) { return verb.usage_error(why); };
  if (!args.has("traces")) return usage_error("--traces is required");
  auto ranks = args.get_int("ranks", 0);
  if (!ranks.ok()) return usage_error(ranks.status().message());
  if (*ranks <= 0 || *ranks > (1 << 20))
    return usage_error("--ranks must be between 1 and 1048576");
  auto threads = args.get_int_in("threads", 0, 0, cli::kMaxThreads);
  if (!threads.ok()) return usage_error(threads.status().message());
  for (const char* flag : {"traces", "config", "timeline", "report-json"}) {
    if (auto path = args.get_path(flag); !path.ok()) return usage_error(path.status().message());
  }
  auto window = args.get_int("window", int64_t{1} << 20);
  if (!window.ok()) return usage_error(window.status().message());
  if (*window <= 0) return usage_error("--window must be at least 1");
  const bool quiet = args.has("quiet");
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "chakraflow simulate: error: %s\n", s.message().c_str());
    return 1;
  };

  std::unique_ptr<oneapi::tbb::global_control> limit;
  if (*threads > 0) {
    limit = std::make_unique<oneapi::tbb::global_control>(
        oneapi::tbb::global_control::max_allowed_parallelism, static_cast<size_t>(*threads));
  }

  SimOptions options;
  if (auto config_path = args.get("config")) {
    auto config = load_sim_config(*config_path);
    if (!config.ok()) return fail(config.status());
    options.config = *config;
  }
  const auto timeline = args.get("timeline");
  const auto report_path = args.get("report-json");
  options.keep_names = timeline.has_value();
  options.feeder.window = static_cast<uint64_t>(*window);

  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<std::string> paths =
      expand_trace_paths(*args.get("traces"), static_cast<uint32_t>(*ranks));
  // The outputs replace no input (a trace, the configuration).
  std::vector<std::string> inputs = paths;
  if (auto config_path = args.get("config")) inputs.push_back(*config_path);
  for (const auto& output : {timeline, report_path}) {
    if (!output) continue;
    if (Status s = check_output_is_not_input(*output, inputs); !s.ok()) {
      return usage_error(s.message());
    }
  }
  auto sim = Simulation::open(paths, options);
  if (!sim.ok()) return fail(sim.status());
  Status ran = (*sim)->run();
  if (!ran.ok()) return fail(ran);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const SimResult& result = (*sim)->result();

  if (timeline) {
    Status s = write_timeline((*sim)->ranks(), *timeline);
    if (!s.ok()) return fail(s);
  }
  if (report_path) {
    Status s = write_file_atomically(*report_path, report_json(result, options.config));
    if (!s.ok()) return fail(s);
  }
  if (!quiet) std::fputs(report_text(result, options.config).c_str(), stdout);
  std::printf(
      "chakraflow simulate: %lld ranks, %s mode: %llu nodes, %llu collectives, %llu messages in "
      "%llu rounds; %.3f s (%.2f M nodes/s)%s\n",
      static_cast<long long>(*ranks), to_string(options.config.mode),
      static_cast<unsigned long long>(result.nodes),
      static_cast<unsigned long long>(result.collectives),
      static_cast<unsigned long long>(result.messages),
      static_cast<unsigned long long>(result.rounds), seconds,
      seconds > 0 ? result.nodes / seconds / 1e6 : 0.0, result.completed ? "" : ", STALLED");
  if (!result.completed) {
    if (quiet) {  // the table was not printed: still say what blocks
      for (const std::string& line : result.stall) {
        std::fprintf(stderr, "chakraflow simulate: stalled: %s\n", line.c_str());
      }
    }
    return 1;
  }
  return 0;
}

}  // namespace chakraflow
