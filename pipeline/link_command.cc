// `chakraflow link` (also `chakra_trace_link`): one rank, Chakra's flags.
#include <oneapi/tbb/global_control.h>

#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "pipeline/cli_args.h"
#include "pipeline/commands.h"
#include "pipeline/link_graph.h"
#include "stages/common/file_io.h"

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
      {"threads", true, "worker threads (default: all cores)", {}},
      {"log-level", true, "DEBUG, INFO (default), WARNING, ERROR, CRITICAL", {}},
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

}  // namespace

int run_link_command(int argc, char** argv, int first) {
  const auto& specs = link_flags();
  const char* synopsis =
      "link --chakra-host-trace H --chakra-device-trace D --output-file O [--rank N] "
      "[--gap-threshold-us 1000] [--mode auto|rf_id|sequence] [--compat default|chakra] "
      "[--format chakra|legacy] [--annotation NAME] [--min-match-rate PERCENT] [--log-level LEVEL]";
  auto parsed = cli::Args::parse(argc, argv, first, specs);
  if (!parsed.ok()) {
    std::fprintf(stderr, "chakraflow link: %s\n", parsed.status().message().c_str());
    return 2;
  }
  const cli::Args& args = *parsed;
  if (args.has("help")) {
    std::fputs(cli::usage("chakraflow", synopsis, specs).c_str(), stdout);
    return 0;
  }
  std::vector<std::string> missing;
  for (const char* required : {"chakra-host-trace", "chakra-device-trace", "output-file"}) {
    if (!args.has(required)) missing.push_back(std::string("--") + required);
  }
  if (!missing.empty() || !args.positionals().empty()) {
    std::string why = missing.empty()
                          ? fmt::format("unexpected argument '{}'", args.positionals().front())
                          : fmt::format("missing {}", fmt::join(missing, ", "));
    std::fprintf(stderr, "chakraflow link: %s\n%s", why.c_str(),
                 cli::usage("chakraflow", synopsis, specs).c_str());
    return 2;
  }
  LinkJob job;
  auto fail_usage = [](const Status& s) {
    std::fprintf(stderr, "chakraflow link: %s\n", s.message().c_str());
    return 2;
  };
  for (const char* flag : {"chakra-host-trace", "chakra-device-trace", "output-file"}) {
    if (auto path = args.get_path(flag); !path.ok()) return fail_usage(path.status());
  }
  job.host_path = *args.get("chakra-host-trace");
  job.device_path = *args.get("chakra-device-trace");
  job.output_path = *args.get("output-file");
  if (Status s = check_output_is_not_input(job.output_path, {job.host_path, job.device_path});
      !s.ok()) {
    return fail_usage(s);
  }
  auto rank = args.get_int("rank", -1);
  if (!rank.ok()) return fail_usage(rank.status());
  job.options.rank = static_cast<int>(*rank);
  auto gap = args.get_double("gap-threshold-us", 1000.0);
  if (!gap.ok()) return fail_usage(gap.status());
  if (*gap < 0 || *gap > 1e12) {  // as in run configs: the threshold in ns must fit in int64
    return fail_usage(Status::error("--gap-threshold-us must be between 0 and 1e12"));
  }
  job.options.gap_threshold = static_cast<TimeNs>(*gap * 1000.0 + 0.5);
  std::string mode = args.get_or("mode", "auto");
  if (mode == "auto")
    job.options.mode = MatchMode::kAuto;
  else if (mode == "rf_id")
    job.options.mode = MatchMode::kRfId;
  else if (mode == "sequence")
    job.options.mode = MatchMode::kSequence;
  else
    return fail_usage(Status::errorf("--mode: unknown mode '{}' (auto, rf_id, sequence)", mode));
  std::string compat = args.get_or("compat", "default");
  if (compat == "default")
    job.options.compat = Compat::kDefault;
  else if (compat == "chakra")
    job.options.compat = Compat::kChakra;
  else
    return fail_usage(Status::errorf("--compat: unknown value '{}' (default, chakra)", compat));
  std::string format = args.get_or("format", "chakra");
  if (format == "chakra")
    job.options.format = OutputFormat::kChakra;
  else if (format == "legacy")
    job.options.format = OutputFormat::kLegacy;
  else
    return fail_usage(Status::errorf("--format: unknown value '{}' (chakra, legacy)", format));
  job.options.annotation = args.get_or("annotation", "");
  auto min_rate = args.get_double("min-match-rate", 90.0);
  if (!min_rate.ok()) return fail_usage(min_rate.status());
  if (!(*min_rate >= 0 && *min_rate <= 100))
    return fail_usage(Status::error("--min-match-rate must be a percentage in [0, 100]"));
  job.options.min_match_rate = *min_rate / 100.0;
  auto level = parse_log_level(args.get_or("log-level", "INFO"));
  if (!level.ok()) return fail_usage(level.status());
  auto threads = args.get_int_in("threads", 0, 0, cli::kMaxThreads);
  if (!threads.ok()) return fail_usage(threads.status());
  std::unique_ptr<oneapi::tbb::global_control> limit;
  if (*threads > 0) {
    limit = std::make_unique<oneapi::tbb::global_control>(
        oneapi::tbb::global_control::max_allowed_parallelism, static_cast<size_t>(*threads));
  }

  auto results = run_link_graph({job}, 1);
  const LinkJobResult& r = results.front();
  if (!r.status.ok()) {
    std::fprintf(stderr, "chakraflow link: error: %s\n", r.status.message().c_str());
    return 1;
  }
  if (*level <= LogLevel::kInfo || (*level == LogLevel::kWarning && !r.stats.entries().empty())) {
    std::string report = format_link_report(r.summary, r.stats);
    if (*level <= LogLevel::kInfo) {
      report +=
          fmt::format("  {} -> {}: {:.1f} MB in, {:.1f} MB out, {:.3f} s ({:.0f} MB/s)\n",
                      job.host_path, job.output_path, r.input_bytes / 1e6, r.output_bytes / 1e6,
                      r.seconds, r.seconds > 0 ? r.input_bytes / 1e6 / r.seconds : 0.0);
    }
    if (*level == LogLevel::kDebug) {
      const StageTimes& t = r.times;
      report += fmt::format(
          "  stage times (s): load host {:.3f}, load device {:.3f}, exclusive {:.3f}, gaps {:.3f}, "
          "launchers {:.3f}, link {:.3f}, write {:.3f}\n",
          t.load_host, t.load_device, t.exclusive, t.gaps, t.launchers, t.link, t.write);
    }
    std::fputs(report.c_str(), stderr);
  }
  return 0;
}

}  // namespace chakraflow
