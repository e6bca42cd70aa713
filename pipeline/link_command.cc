// `chakraflow link` (also `chakra_trace_link`): one rank, Chakra's flags.

#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "pipeline/cli_args.h"
#include "pipeline/commands.h"
#include "pipeline/parallel_batches.h"
#include "pipeline/rank_graph.h"
#include "stages/common/file_io.h"
#include "stages/common/profile.h"
#include "stages/link/link_options.h"

namespace chakraflow {
namespace {

const std::vector<cli::FlagSpec>& link_flags() {
  static const std::vector<cli::FlagSpec> specs = {
      {"chakra-host-trace", true, "host execution trace (.json or .json.gz)", {"host"}},
      {"chakra-device-trace", true, "device (Kineto) trace (.json or .json.gz)", {"device"}},
      {"output-file", true, "ET+ output (.json, or .json.gz to compress)", {"output"}},
      {"rank", true, "rank of this trace (reported only)", {}},
      {"gap-threshold-us", true, "inter-thread gap threshold in microseconds (default 1000)", {}},
      {"mode", true, "host-device matching: auto (default), rf_id, sequence", {}},
      {"compat", true, "default, or chakra to reproduce chakra_trace_link 1.0.0 exactly", {}},
      {"format", true, "chakra (default), or legacy: the layout of the legacy trace_link.py", {}},
      {"annotation", true, "sequence mode: the iteration annotation (e.g. ProfilerStep)", {}},
      {"min-match-rate", true, "sequence mode: percent of host ops to match (default 90)", {}},
      {"timing-trace",
       true,
       "Kineto-only trace of the same code (a later step, or another run): timings taken from it, "
       "matched by operator order (docs/simulation.md)",
       {"timing"}},
      {"step-time",
       true,
       "the capture's step_time.json: profiler-overhead calibration and unprofiled step",
       {}},
      {"profiler-overhead",
       true,
       "auto (default: remove with a --step-time calibration), off, default (also without one)",
       {}},
      {"threads", true, "worker threads (default: all cores)", {}},
      {"log-level", true, "DEBUG, INFO (default), WARNING, ERROR, CRITICAL", {}},
      {"profile",
       true,
       "also write a Chrome trace of where the command's time went to FILE (docs/performance.md)",
       {}},
      {"print-graph", false, "print the pipeline's flow graph (Graphviz dot) and exit", {}},
      {"help", false, "show this help", {"h"}},
  };
  return specs;
}

enum class LogLevel { kDebug, kInfo, kWarning, kError };

StatusOr<LogLevel> parse_log_level(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (s == "DEBUG") return LogLevel::kDebug;
  if (s == "INFO") return LogLevel::kInfo;
  if (s == "WARNING" || s == "WARN") return LogLevel::kWarning;
  if (s == "ERROR" || s == "CRITICAL") return LogLevel::kError;
  return Status::errorf("--log-level: unknown level '{}' (DEBUG, INFO, WARNING, ERROR, CRITICAL)",
                        s);
}

// The flags as a job (a usage error: its message).
StatusOr<RankJob> parse_link_job(const cli::Args& args) {
  RankJob job;
  const bool timing = args.has("timing-trace");
  for (const char* flag : {"chakra-host-trace", "output-file"}) {
    CF_RETURN_IF_ERROR(args.get_path(flag).status());
  }
  CF_RETURN_IF_ERROR(args.get_path(timing ? "timing-trace" : "chakra-device-trace").status());
  job.host_path = *args.get("chakra-host-trace");
  job.et_plus_path = *args.get("output-file");
  std::vector<std::string> inputs = {job.host_path};
  if (timing) {
    // The timing trace gives the timings; the ET step's own device trace is not needed.
    job.device_path = *args.get("timing-trace");
    set_timing_trace(job.link);
  } else {
    job.device_path = *args.get("chakra-device-trace");
  }
  inputs.push_back(job.device_path);
  if (auto path = args.get("step-time")) {
    job.step_time_path = *path;
    inputs.push_back(*path);
  }
  CF_RETURN_IF_ERROR(check_output_is_not_input(job.et_plus_path, inputs));
  CF_ASSIGN_OR_RETURN(int64_t rank, args.get_int("rank", -1));
  job.link.rank = static_cast<int>(rank);
  for (const std::string& name : link_option_names()) {
    std::string flag = name;
    for (char& ch : flag) ch = ch == '_' ? '-' : ch;
    if (auto value = args.get(flag)) {
      CF_RETURN_IF_ERROR(set_link_option(job.link, "--" + flag, *value));
    }
  }
  if (timing && job.link.mode != MatchMode::kSequence) {
    return Status::error(
        "--timing-trace is matched by operator order: --mode must be sequence, or absent");
  }
  return job;
}

// What was done about profiler overhead (stages/link/profiler_overhead.h), when the link had a
// timing trace, a step_time.json or profiler costs to take out; else nothing.
std::string profiler_overhead_line(const RankJob& job, const RankJobResult& r) {
  if (r.profiler && r.profiler->removed) {
    const ProfilerOverheadNote& p = *r.profiler;
    return fmt::format(
        "  profiler overhead: {:.3f} us per op, {:.3f} us per runtime call taken out ({}): "
        "step {:.3f} ms as recorded, {:.3f} ms after\n",
        p.costs.per_op / 1000.0, p.costs.per_runtime_call / 1000.0,
        job.step_time_path.empty() ? "--profiler-overhead default" : job.step_time_path,
        p.recorded_step_us / 1000.0, p.step_us / 1000.0);
  }
  if (job.link.compat == Compat::kDefault &&
      (job.link.other_process || !job.step_time_path.empty())) {
    return "  profiler overhead: not taken out (no calibration: give a step_time.json with "
           "profiler_overhead_us_per_op, or --profiler-overhead default)\n";
  }
  return std::string();
}

// The report printed on stderr at `level` (empty: nothing to print).
std::string link_report(const RankJob& job, const RankJobResult& r, LogLevel level) {
  if (level > LogLevel::kWarning || (level == LogLevel::kWarning && r.stats.entries().empty())) {
    return std::string();
  }
  std::string report = format_link_report(r.summary, r.stats);
  if (level <= LogLevel::kInfo) report += profiler_overhead_line(job, r);
  if (level <= LogLevel::kInfo) {
    report +=
        fmt::format("  {} -> {}: {:.1f} MB in, {:.1f} MB out, {:.3f} s ({:.0f} MB/s)\n",
                    job.host_path, job.et_plus_path, r.input_bytes / 1e6, r.output_bytes / 1e6,
                    r.seconds, r.seconds > 0 ? r.input_bytes / 1e6 / r.seconds : 0.0);
  }
  if (level == LogLevel::kDebug) {
    const StageTimes& t = r.times;
    report += fmt::format(
        "  stage times (s): load host {:.3f}, load device {:.3f}, exclusive {:.3f}, gaps {:.3f}, "
        "launchers {:.3f}, sync {:.3f}, map {:.3f}, assign ids {:.3f}, write {:.3f}\n",
        t.load_host, t.load_device, t.exclusive, t.gaps, t.launchers, t.sync, t.map, t.link,
        t.write);
  }
  return report;
}

}  // namespace

int run_link_command(int argc, char** argv, int first) {
  const char* synopsis =
      "link --chakra-host-trace H (--chakra-device-trace D | --timing-trace T) --output-file O "
      "[--step-time step_time.json] [--profiler-overhead auto|off|default] [--rank N] "
      "[--gap-threshold-us 1000] [--mode auto|rf_id|sequence] [--compat default|chakra] "
      "[--format chakra|legacy] [--annotation NAME] [--min-match-rate PERCENT] [--log-level LEVEL] "
      "[--profile FILE] [--print-graph]";
  cli::Verb verb("link", synopsis, link_flags(), cli::Verb::ParseErrors::kMessageOnly);
  if (auto exit = verb.parse(argc, argv, first)) return *exit;
  const cli::Args& args = verb.args();
  if (auto exit = verb.print_graph([&args] {
        RankPlan plan;
        plan.format = args.get_or("format", "chakra") == "legacy" ? OutputFormat::kLegacy
                                                                  : OutputFormat::kChakra;
        return rank_graph_dot(plan);
      })) {
    return *exit;
  }
  const bool timing = args.has("timing-trace");
  if (timing && args.has("chakra-device-trace")) {
    verb.note(
        "--timing-trace gives the timings; the ET step's own device trace "
        "(--chakra-device-trace) is not read");
  }
  const char* device = timing ? "timing-trace" : "chakra-device-trace";
  if (auto exit = verb.require({"chakra-host-trace", device, "output-file"})) return *exit;
  if (auto exit = verb.no_positionals()) return *exit;
  // A flag's value that is wrong is reported without the usage.
  auto job = parse_link_job(args);
  if (!job.ok()) return verb.value_error(job.status().message());
  auto level = parse_log_level(args.get_or("log-level", "INFO"));
  if (!level.ok()) return verb.value_error(level.status().message());
  auto threads = args.get_int_in("threads", 0, 0, cli::kMaxThreads);
  if (!threads.ok()) return verb.value_error(threads.status().message());
  const std::shared_ptr<void> limit = limit_threads(static_cast<size_t>(*threads));
  std::vector<std::string> paths = {job->host_path, job->device_path, job->et_plus_path};
  if (!job->step_time_path.empty()) paths.push_back(job->step_time_path);
  if (auto exit = verb.start_profile(paths)) return *exit;

  const RankJobResult r = [&] {
    const profile::Span span("link", job->link.rank);
    return run_link_job(*job);
  }();
  if (!r.status.ok()) return verb.finish_profile(verb.failure(r.status));
  std::fputs(link_report(*job, r, *level).c_str(), stderr);
  return verb.finish_profile(0);
}

}  // namespace chakraflow
