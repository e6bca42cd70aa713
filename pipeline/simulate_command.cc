// `chakraflow simulate --traces 'DIR/PREFIX.{rank}.et' --ranks N [--config sim.yaml]
//  [--timeline FILE] [--report-json FILE] [--threads N]`: predicts every rank's step time from
// its Chakra trace (stages/simulate/simulator.h, docs/simulation.md).
//
// Exit status: 0 when every rank finished; 1 on a stall (the report says which ranks wait on
// what; the timeline and the JSON report are still written) or bad input; 2 on a usage error.

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "pipeline/cli_args.h"
#include "pipeline/commands.h"
#include "pipeline/parallel_batches.h"
#include "stages/common/file_io.h"
#include "stages/simulate/sim_config.h"
#include "stages/simulate/simulator.h"
#include "stages/simulate/simulator_report.h"
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

// What `chakraflow simulate` was asked to do.
struct SimulateRequest {
  std::vector<std::string> traces;  // one per rank
  std::optional<std::string> timeline, report_path;
  SimOptions options;
  int64_t ranks = 0;
  int64_t threads = 0;
  bool quiet = false;
};

// The flags as a request; a usage error (exit status 2) as its message, a configuration that
// does not load as `config_error`.
StatusOr<SimulateRequest> parse_simulate_request(const cli::Args& args, Status* config_error) {
  SimulateRequest req;
  if (!args.has("traces")) return Status::error("--traces is required");
  CF_ASSIGN_OR_RETURN(req.ranks, args.get_int("ranks", 0));
  if (req.ranks <= 0 || req.ranks > (1 << 20)) {
    return Status::error("--ranks must be between 1 and 1048576");
  }
  CF_ASSIGN_OR_RETURN(req.threads, args.get_int_in("threads", 0, 0, cli::kMaxThreads));
  for (const char* flag : {"traces", "config", "timeline", "report-json"}) {
    CF_RETURN_IF_ERROR(args.get_path(flag).status());
  }
  CF_ASSIGN_OR_RETURN(int64_t window, args.get_int("window", int64_t{1} << 20));
  if (window <= 0) return Status::error("--window must be at least 1");
  req.quiet = args.has("quiet");
  req.timeline = args.get("timeline");
  req.report_path = args.get("report-json");
  req.options.keep_names = req.timeline.has_value();
  req.options.feeder.window = static_cast<uint64_t>(window);
  req.traces = expand_trace_paths(*args.get("traces"), static_cast<uint32_t>(req.ranks));
  // The outputs replace no input (a trace, the configuration).
  std::vector<std::string> inputs = req.traces;
  if (auto config_path = args.get("config")) inputs.push_back(*config_path);
  for (const auto& output : {req.timeline, req.report_path}) {
    if (output) CF_RETURN_IF_ERROR(check_output_is_not_input(*output, inputs));
  }
  if (auto config_path = args.get("config")) {
    auto config = load_sim_config(*config_path);
    if (config.ok()) {
      req.options.config = *config;
    } else {
      *config_error = config.status();
    }
  }
  return req;
}

std::string summary_line(const SimulateRequest& req, const SimResult& result, double seconds) {
  return fmt::format(
      "chakraflow simulate: {} ranks, {} mode: {} nodes, {} collectives, {} messages in {} "
      "rounds; {:.3f} s ({:.2f} M nodes/s){}\n",
      req.ranks, to_string(req.options.config.mode), result.nodes, result.collectives,
      result.messages, result.rounds, seconds, seconds > 0 ? result.nodes / seconds / 1e6 : 0.0,
      result.completed ? "" : ", STALLED");
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
  Status config_error;
  auto req = parse_simulate_request(verb.args(), &config_error);
  if (!req.ok()) return verb.usage_error(req.status().message());
  if (!config_error.ok()) return verb.failure(config_error);
  const std::shared_ptr<void> limit = limit_threads(static_cast<size_t>(req->threads));

  const auto t0 = std::chrono::steady_clock::now();
  auto sim = Simulation::open(req->traces, req->options);
  if (!sim.ok()) return verb.failure(sim.status());
  if (Status ran = (*sim)->run(); !ran.ok()) return verb.failure(ran);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const SimResult& result = (*sim)->result();
  if (req->timeline) {
    if (Status s = write_timeline((*sim)->ranks(), *req->timeline); !s.ok()) return verb.failure(s);
  }
  if (req->report_path) {
    Status s = write_file_atomically(*req->report_path, report_json(result, req->options.config));
    if (!s.ok()) return verb.failure(s);
  }
  if (!req->quiet) std::fputs(report_text(result, req->options.config).c_str(), stdout);
  std::fputs(summary_line(*req, result, seconds).c_str(), stdout);
  if (!result.completed) {
    if (req->quiet) {  // the table was not printed: still say what blocks
      for (const std::string& line : result.stall) {
        verb.message("stalled: " + line);
      }
    }
    return 1;
  }
  return 0;
}

}  // namespace chakraflow
