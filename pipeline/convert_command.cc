// `chakraflow convert` (also `chakra_converter`) and `chakraflow jsonize` (also `chakra_jsonizer`),
// with Chakra's flag spellings.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "pipeline/cli_args.h"
#include "pipeline/comm_group_file.h"
#include "pipeline/commands.h"
#include "pipeline/parallel_batches.h"
#include "pipeline/rank_graph.h"
#include "stages/common/file_io.h"
#include "stages/common/profile.h"
#include "stages/convert/convert_options.h"
#include "stages/convert/jsonizer.h"
#include "stages/convert/pytorch_converter.h"

namespace chakraflow {
namespace {

const std::vector<cli::FlagSpec>& convert_flags() {
  static const std::vector<cli::FlagSpec> specs = {
      {"input",
       true,
       "ET+ or host execution trace, schema 1.0.1 to 1.1.1 (.json or .json.gz)",
       {"input_filename", "input-filename"}},
      {"output",
       true,
       "Chakra trace to write (.et, or .et.gz to compress)",
       {"output_filename", "output-filename"}},
      {"compat", true, "default, or chakra to reproduce chakra_converter 1.0.0 exactly", {}},
      {"keep-optimizer-step-duration",
       false,
       "do not zero the duration of Optimizer.step nodes (Chakra's rule, kept by default)",
       {}},
      {"metadata-node",
       true,
       "keep (default), or compute: write PyTorch's process-group METADATA node as a compute "
       "node (current ASTRA-sim asserts on METADATA nodes; docs/astra-sim.md)",
       {}},
      {"renumber-groups",
       false,
       "add 1 to every numeric pg_name (ASTRA-sim asserts on the group \"0\")",
       {}},
      {"comm-groups",
       true,
       "also write ASTRA-sim's communicator-group JSON for this trace to FILE",
       {}},
      {"rank", true, "this trace's rank, for --comm-groups (default 0)", {}},
      {"world-size",
       true,
       "ranks in the run, for --comm-groups (default: from the process-group metadata)",
       {}},
      {"input_type", true, "Chakra's older spelling of the PyTorch argument", {"input-type"}},
      {"log-filename",
       true,
       "accepted for Chakra compatibility (no log file is written)",
       {"log_filename"}},
      {"simulate", false, "accepted for Chakra compatibility (ignored)", {}},
      {"threads", true, "worker threads (default: all cores)", {}},
      {"profile",
       true,
       "also write a Chrome trace of where the command's time went to FILE (docs/performance.md)",
       {}},
      {"print-graph", false, "print the pipeline's flow graph (Graphviz dot) and exit", {}},
      {"quiet", false, "print nothing but errors", {"q"}},
      {"help", false, "show this help", {"h"}},
  };
  return specs;
}

const std::vector<cli::FlagSpec>& jsonize_flags() {
  static const std::vector<cli::FlagSpec> specs = {
      {"input", true, "Chakra trace (.et, gzip'd or not)", {"input_filename", "input-filename"}},
      {"output",
       true,
       "JSON output (.json, or .json.gz to compress)",
       {"output_filename", "output-filename"}},
      {"concatenated",
       false,
       "Chakra's layout: one indented object per message, back to back (not one JSON document)",
       {}},
      {"compat", true, "default, or chakra (same as --concatenated)", {}},
      {"quiet", false, "print nothing but errors", {"q"}},
      {"help", false, "show this help", {"h"}},
  };
  return specs;
}

std::string format_stats(const DataProblems& stats) {
  std::string out;
  for (const auto& [kind, entry] : stats.entries()) {
    out += fmt::format("  note: {} x {}: {}", entry.count, stat_key(kind), stat_description(kind));
    if (!entry.examples.empty()) out += fmt::format(" (e.g. {})", fmt::join(entry.examples, "; "));
    out += '\n';
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What both verbs require: --input and --output, two file names, the output not the input.
std::optional<int> require_input_and_output(const cli::Verb& verb) {
  if (auto exit = verb.require({"input", "output"})) return exit;
  const cli::Args& args = verb.args();
  for (const char* flag : {"input", "output"}) {
    if (auto path = args.get_path(flag); !path.ok()) {
      return verb.usage_error(path.status().message());
    }
  }
  if (Status s = check_output_is_not_input(*args.get("output"), {*args.get("input")}); !s.ok()) {
    return verb.usage_error(s.message());
  }
  return std::nullopt;
}

// What `chakraflow convert` was asked to do.
struct ConvertRequest {
  std::string input;
  std::string output;
  ConvertOptions options;
  std::optional<std::string> comm_groups;  // --comm-groups FILE
  int rank = 0;
  std::optional<int> world_size;
  size_t threads = 0;  // --threads; 0: every core
  bool quiet = false;
};

// The flags as a request; a usage error is returned as its message.
StatusOr<ConvertRequest> parse_convert_request(const cli::Args& args) {
  std::vector<std::string> input_types = args.positionals();
  if (auto t = args.get("input_type")) input_types.push_back(*t);
  if (input_types.size() > 1) return Status::errorf("unexpected argument '{}'", input_types[1]);
  if (!input_types.empty() && input_types[0] != "PyTorch" && input_types[0] != "pytorch") {
    return Status::error(
        input_types[0] == "Text"
            ? std::string("the Text input type is not supported (only PyTorch)")
            : fmt::format("unknown input type '{}' (only PyTorch)", input_types[0]));
  }
  ConvertRequest req;
  req.input = *args.get("input");
  req.output = *args.get("output");
  for (const char* flag : {"compat", "metadata-node"}) {
    if (auto value = args.get(flag)) {
      CF_RETURN_IF_ERROR(set_convert_option(req.options, std::string("--") + flag, *value));
    }
  }
  req.options.zero_optimizer_step = !args.has("keep-optimizer-step-duration");
  req.options.pg_name_offset = args.has("renumber-groups") ? 1 : 0;
  if (args.has("comm-groups")) {
    CF_ASSIGN_OR_RETURN(std::optional<std::string> path, args.get_path("comm-groups"));
    CF_RETURN_IF_ERROR(check_output_is_not_input(*path, {req.input, req.output}));
    req.comm_groups = *path;
  }
  CF_ASSIGN_OR_RETURN(int64_t rank, args.get_int_in("rank", 0, 0, INT32_MAX));
  CF_ASSIGN_OR_RETURN(int64_t world_size, args.get_int_in("world-size", 1, 1, INT32_MAX));
  if (!req.comm_groups && (args.has("rank") || args.has("world-size"))) {
    return Status::error("--rank and --world-size are for --comm-groups");
  }
  req.rank = static_cast<int>(rank);
  if (args.has("world-size")) req.world_size = static_cast<int>(world_size);
  CF_ASSIGN_OR_RETURN(int64_t threads, args.get_int_in("threads", 0, 0, cli::kMaxThreads));
  req.threads = static_cast<size_t>(threads);
  req.quiet = args.has("quiet");
  return req;
}

RankPlan convert_plan() {
  RankPlan plan;
  plan.input = RankInput::kEtPlus;
  plan.write_et_plus = false;
  plan.convert = true;
  return plan;
}

std::string convert_summary(const ConvertRequest& req, const ConvertReport& report,
                            double seconds) {
  std::string summary = fmt::format(
      "chakraflow convert{}: {} -> {}: {} nodes read, {} written ({} removed as dangling)",
      req.options.compat == Compat::kChakra ? " (--compat chakra)" : "", req.input, req.output,
      report.input_nodes, report.output_nodes, report.removed_dangling);
  if (req.options.compat == Compat::kDefault) {
    summary += fmt::format(", {} GPU stream edges, {} sync edges", report.gpu_stream_edges,
                           report.sync_edges);
  }
  summary += fmt::format("; {:.1f} MB in {:.3f} s\n", report.bytes_written / 1e6, seconds);
  summary += format_stats(report.stats);
  return summary;
}

// ASTRA-sim's communicator-group file for the converted trace (its groups as the conversion
// reported them). The world: --world-size, else every rank the metadata names (at least this
// one).
Status write_groups(const ConvertRequest& req, RankCommGroups groups) {
  groups.rank = req.rank;
  int size = req.world_size.value_or(0);
  if (!req.world_size) {
    size = req.rank + 1;
    for (const auto& [name, members] : groups.declared) {
      if (!members.empty()) size = std::max(size, members.back() + 1);
    }
  }
  std::vector<int> world;
  for (int r = 0; r < size; ++r) world.push_back(r);
  CommGroupFileReport report;
  CF_RETURN_IF_ERROR(write_comm_group_file({std::move(groups)}, world, req.options.pg_name_offset,
                                           *req.comm_groups, &report));
  if (!req.quiet) std::fprintf(stderr, "  %s\n", describe(report, *req.comm_groups).c_str());
  return Status();
}

}  // namespace

int run_convert_command(int argc, char** argv, int first) {
  cli::Verb verb("convert",
                 "convert [PyTorch] --input ET_PLUS.json[.gz] --output TRACE.et[.gz] "
                 "[--compat default|chakra] [--keep-optimizer-step-duration] "
                 "[--metadata-node keep|compute] [--renumber-groups] [--comm-groups FILE] "
                 "[--threads N] [--profile FILE] [--print-graph]",
                 convert_flags());
  if (auto exit = verb.parse(argc, argv, first)) return *exit;
  if (auto exit = verb.print_graph([] { return rank_graph_dot(convert_plan()); })) return *exit;
  if (auto exit = require_input_and_output(verb)) return *exit;
  auto req = parse_convert_request(verb.args());
  if (!req.ok()) return verb.usage_error(req.status().message());
  if (!req->quiet && verb.args().has("log-filename")) {
    verb.note(
        "--log-filename is accepted for compatibility with Chakra; no log file is written "
        "(messages go to stderr)");
  }
  if (!req->quiet && verb.args().has("simulate")) {
    verb.note(
        "--simulate is accepted for compatibility with Chakra and ignored (Chakra's simulation "
        "only logs)");
  }
  RankJob job;
  job.host_path = req->input;
  job.et_path = req->output;
  job.convert = req->options;
  const std::shared_ptr<void> limit = limit_threads(req->threads);
  std::vector<std::string> paths = {req->input, req->output};
  if (req->comm_groups) paths.push_back(*req->comm_groups);
  if (auto exit = verb.start_profile(paths)) return *exit;
  const auto start = std::chrono::steady_clock::now();
  RankJobResult result = [&] {
    const profile::Span span("convert");
    return std::move(run_rank_graph(convert_plan(), {job}, 1).front());
  }();
  if (!result.status.ok()) return verb.finish_profile(verb.failure(result.status));
  if (!req->quiet) {
    std::fputs(convert_summary(*req, result.convert, seconds_since(start)).c_str(), stderr);
  }
  if (req->comm_groups) {
    if (Status s = write_groups(*req, result.convert.comm_groups); !s.ok()) {
      return verb.finish_profile(verb.failure(s));
    }
  }
  return verb.finish_profile(0);
}

int run_jsonize_command(int argc, char** argv, int first) {
  cli::Verb verb("jsonize", "jsonize --input TRACE.et --output TRACE.json [--concatenated]",
                 jsonize_flags());
  if (auto exit = verb.parse(argc, argv, first)) return *exit;
  if (auto exit = require_input_and_output(verb)) return *exit;
  if (auto exit = verb.no_positionals()) return *exit;
  const cli::Args& args = verb.args();
  JsonizeOptions options;
  options.concatenated = args.has("concatenated");
  const std::string compat = args.get_or("compat", "default");
  if (compat == "chakra") {
    options.concatenated = true;
  } else if (compat != "default") {
    return verb.usage_error(fmt::format("--compat: unknown value '{}' (default, chakra)", compat));
  }
  const std::string input = *args.get("input");
  const std::string output = *args.get("output");
  const auto start = std::chrono::steady_clock::now();
  JsonizeReport report;
  if (Status s = jsonize_file(input, output, options, &report); !s.ok()) return verb.failure(s);
  if (report.metadata_missing) {
    // Counted like the feeder's note, printed even with --quiet: the output lacks a part.
    verb.note(
        fmt::format("{}: 1 x the file has no GlobalMetadata record (every record written "
                    "as a node; no \"globalMetadata\" in the output)",
                    input));
  }
  if (!args.has("quiet")) {
    std::fprintf(stderr, "chakraflow jsonize: %s -> %s: %llu nodes, %.1f MB in %.3f s\n",
                 input.c_str(), output.c_str(), static_cast<unsigned long long>(report.nodes),
                 report.bytes_written / 1e6, seconds_since(start));
  }
  return 0;
}

}  // namespace chakraflow
