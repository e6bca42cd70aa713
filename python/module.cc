// The extension module _chakraflow: the toolchain's verbs called in-process (the same library
// calls as the CLI's pipeline/*_command.cc), with the GIL released while traces are read and
// written. python/chakraflow/__init__.py is the public face; this file keeps to typed arguments.
#include <oneapi/tbb/task_arena.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/commands.h"
#include "pipeline/rank_graph.h"
#include "pipeline/run_command.h"
#include "pipeline/run_config.h"
#include "pipeline/run_report.h"
#include "pipeline/synth_set.h"
#include "python/binding.h"
#include "stages/common/file_io.h"
#include "stages/convert/convert_options.h"
#include "stages/convert/pytorch_converter.h"
#include "stages/link/link_options.h"
#include "stages/simulate/sim_config.h"
#include "stages/simulate/simulator.h"

namespace chakraflow::python {
namespace {

// Runs `work` on at most `threads` worker threads (0: all cores). An arena scoped to the call, not
// a process-wide limit: calls from several Python threads keep their own limits.
template <typename Work>
auto with_threads(int threads, Work&& work) {
  if (threads < 0) throw py::value_error("threads must be 0 (all cores) or more");
  if (threads == 0) return work();
  oneapi::tbb::task_arena arena(threads);
  return arena.execute(work);
}

// CLOCK_MONOTONIC in seconds, the clock of Python's time.monotonic().
double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void set_option(LinkOptions& options, const char* name, const std::string& value) {
  if (Status s = set_link_option(options, name, value); !s.ok()) {
    throw py::value_error(s.message());
  }
}

// What the link did about profiler overhead (stages/link/profiler_overhead.h), or None.
py::object profiler_dict(const std::optional<ProfilerOverheadNote>& note) {
  if (!note) return py::none();
  py::dict d;
  d["removed"] = note->removed;
  d["recorded_with"] = note->recorded_with == RecordedWith::kKineto ? "kineto" : "et_kineto";
  d["us_per_op"] = static_cast<double>(note->costs.per_op) / 1000.0;
  d["us_per_runtime_call"] = static_cast<double>(note->costs.per_runtime_call) / 1000.0;
  d["recorded_step_us"] = note->recorded_step_us;
  d["step_us"] = note->step_us;
  if (note->unprofiled) {
    py::dict u;
    u["median"] = note->unprofiled->median_us;
    u["min"] = note->unprofiled->min_us;
    u["n"] = note->unprofiled->n;
    d["unprofiled_step_us"] = u;
  } else {
    d["unprofiled_step_us"] = py::none();
  }
  return d;
}

// The job's inputs: the device trace, or a timing trace in its place, and a step_time.json.
void set_link_inputs(RankJob& job, const std::optional<std::string>& device,
                     const std::optional<std::string>& timing,
                     const std::optional<std::string>& step_time) {
  if (timing) {
    job.device_path = *timing;
    set_timing_trace(job.link);
  } else if (device) {
    job.device_path = *device;
  } else {
    throw py::value_error("a device trace, or timing= (a Kineto-only trace of the same step)");
  }
  if (step_time) job.step_time_path = *step_time;
}

// What link_rank reports of the link (LinkSummary), added to `out` as Python values.
void add_link_summary(py::dict& out, const LinkSummary& s) {
  out["mode"] = s.mode;
  out["host_nodes"] = s.host_nodes;
  out["host_ops_linked"] = s.host_ops_linked;
  out["host_ops_with_rf_id"] = s.host_ops_with_rf_id;
  out["host_op_candidates"] = s.host_op_candidates;
  out["device_cpu_ops"] = s.device_cpu_ops;
  out["gpu_ops"] = s.gpu_ops;
  out["gpu_ops_linked"] = s.gpu_ops_linked;
  out["gpu_ops_orphaned"] = s.gpu_ops_orphaned;
  out["et_plus_nodes"] = s.et_plus_nodes;
  out["gap_groups"] = s.gap_groups;
  py::dict sync;
  sync["calls"] = s.sync.calls;
  sync["calls_resolved"] = s.sync.calls_resolved;
  sync["calls_emitted"] = s.sync.calls_emitted;
  sync["inferred"] = s.sync.inferred;
  sync["host_deps"] = s.sync.host_deps;
  sync["gpu_deps"] = s.sync.gpu_deps;
  sync["dropped_orphan_target"] = s.sync.dropped_orphan_target;
  sync["dropped_unlinked_waiter"] = s.sync.dropped_unlinked_waiter;
  out["sync"] = sync;
  py::list thread_matches;
  for (const ThreadMatch& t : s.threads) {
    py::dict d;
    d["host_tid"] = t.host_tid;
    d["paired"] = t.paired;
    d["device_pid"] = t.device_pid;
    d["device_tid"] = t.device_tid;
    d["host_ops"] = t.host_ops;
    d["matched"] = t.matched;
    d["device_ops"] = t.device_ops;
    thread_matches.append(d);
  }
  out["threads"] = thread_matches;
}

py::dict link_rank(const std::string& host, const std::optional<std::string>& device,
                   const std::string& output, std::optional<int> rank, const std::string& mode,
                   const std::string& compat, double gap_threshold_us, int threads,
                   const std::string& format, const std::string& annotation,
                   std::optional<double> min_match_rate, const std::optional<std::string>& timing,
                   const std::optional<std::string>& step_time,
                   const std::string& profiler_overhead) {
  RankJob job;
  job.host_path = host;
  job.et_plus_path = output;
  set_link_inputs(job, device, timing, step_time);
  if (timing && mode != "auto" && mode != "sequence") {
    throw py::value_error("timing= is matched by operator order: mode must be sequence");
  }
  job.link.rank = rank.value_or(-1);
  if (!timing) set_option(job.link, "mode", mode);
  set_option(job.link, "profiler_overhead", profiler_overhead);
  set_option(job.link, "compat", compat);
  set_option(job.link, "format", format);
  set_option(job.link, "gap_threshold_us", fmt::format("{}", gap_threshold_us));
  if (!annotation.empty()) set_option(job.link, "annotation", annotation);
  if (min_match_rate) set_option(job.link, "min_match_rate", fmt::format("{}", *min_match_rate));
  for (const std::string& path : {host, job.device_path, output}) {
    if (path.empty()) throw py::value_error("an empty path");
  }
  if (Status s = check_output_is_not_input(output, {host, job.device_path, job.step_time_path});
      !s.ok()) {
    throw py::value_error(s.message());
  }
  RankJobResult r;
  double started = 0, finished = 0;  // steady clock: Python's time.monotonic()
  {
    py::gil_scoped_release release;
    started = monotonic_seconds();
    r = with_threads(threads, [&] { return run_link_job(job); });
    finished = monotonic_seconds();
  }
  if (!r.status.ok()) raise(r.status);
  py::dict out;
  out["host"] = host;
  out["device"] = job.device_path;
  out["profiler_overhead"] = profiler_dict(r.profiler);
  out["output"] = output;
  out["rank"] = rank ? py::object(py::int_(*rank)) : py::none();
  add_link_summary(out, r.summary);
  out["problems"] = stats_to_dict(r.stats);
  out["input_bytes"] = r.input_bytes;
  out["output_bytes"] = r.output_bytes;
  out["seconds"] = r.seconds;
  // When the work ran, without the GIL (tests check that two calls overlap).
  out["started"] = started;
  out["finished"] = finished;
  out["report"] = format_link_report(r.summary, r.stats);
  return out;
}

py::dict convert_file_py(const std::string& input, const std::string& output,
                         const std::string& compat, bool keep_optimizer_step_duration,
                         const std::string& metadata_node, bool renumber_groups) {
  ConvertOptions options;
  for (const auto& [name, value] :
       {std::pair<const char*, std::string>{"compat", compat},
        {"metadata_node", metadata_node},
        {"keep_optimizer_step_duration", keep_optimizer_step_duration ? "true" : "false"},
        {"renumber_groups", renumber_groups ? "true" : "false"}}) {
    if (Status s = set_convert_option(options, name, value); !s.ok()) {
      throw py::value_error(s.message());
    }
  }
  if (input.empty() || output.empty()) throw py::value_error("an empty path");
  if (Status s = check_output_is_not_input(output, {input}); !s.ok()) {
    throw py::value_error(s.message());
  }
  ConvertReport report;
  run_released([&] { return convert_file(input, output, options, &report); });
  py::dict out;
  out["input"] = input;
  out["output"] = output;
  out["input_nodes"] = report.input_nodes;
  out["output_nodes"] = report.output_nodes;
  out["removed_dangling"] = report.removed_dangling;
  out["gpu_stream_edges"] = report.gpu_stream_edges;
  out["sync_edges"] = report.sync_edges;
  out["bytes_written"] = report.bytes_written;
  out["warnings"] = stats_to_dict(report.stats);
  return out;
}

py::dict synth(const std::string& out_dir, int ranks, int iterations, double scale, uint64_t seed,
               bool legacy, bool gzip) {
  if (out_dir.empty()) throw py::value_error("an empty out_dir");
  if (ranks < 1 || ranks > 1000000) throw py::value_error("ranks must be between 1 and 1000000");
  if (iterations < 1 || iterations > 100000) {
    throw py::value_error("iterations must be between 1 and 100000");
  }
  if (!(scale > 0) || scale > 100000) throw py::value_error("scale must be > 0 and at most 1e5");
  SynthOptions options;
  options.ranks = ranks;
  options.iterations = iterations;
  options.scale = scale;
  options.seed = seed;
  options.legacy = legacy;
  uint64_t bytes = 0;
  run_released([&] { return write_synth_set(options, out_dir, gzip, &bytes); });
  py::dict out;
  out["out_dir"] = out_dir;
  out["ranks"] = ranks;
  out["bytes_written"] = bytes;
  return out;
}

// The --report-json document of `chakraflow simulate` (parsed by the Python side).
std::string simulate_json(const std::string& traces, int ranks, std::optional<std::string> config,
                          std::optional<uint64_t> window, int threads) {
  if (ranks < 1 || ranks > (1 << 20)) throw py::value_error("ranks must be between 1 and 1048576");
  if (window && *window < 1) throw py::value_error("window must be at least 1");
  SimOptions options;
  if (window) options.feeder.window = *window;
  std::string report;
  run_released([&] {
    return with_threads(threads, [&]() -> Status {
      if (config) {
        CF_ASSIGN_OR_RETURN(options.config, load_sim_config(*config));
      }
      const std::vector<std::string> paths =
          expand_trace_paths(traces, static_cast<uint32_t>(ranks));
      CF_ASSIGN_OR_RETURN(std::unique_ptr<Simulation> sim, Simulation::open(paths, options));
      CF_RETURN_IF_ERROR(sim->run());
      report = report_json(sim->result(), options.config);
      return Status();
    });
  });
  return report;
}

// `chakraflow run` in-process: (exit status, summary.json's path or "", failed rank count).
// A configuration, output or simulation problem raises chakraflow.Error with its message.
py::tuple run_config(const std::string& config_path, bool resume, bool quiet) {
  RunRequest request;
  request.config_path = config_path;
  request.resume = resume;
  request.quiet = quiet;
  RunOutcome outcome;
  {
    py::gil_scoped_release release;
    outcome = run_batch(request);
  }
  if (!outcome.error.ok()) raise(outcome.error);
  return py::make_tuple(outcome.exit_code, outcome.summary_path, outcome.ranks_failed);
}

// The declaration of a rank's row in cf.run's summary (pipeline/run_report.h), in summary.json's
// order: key, presence ("always", "if_set", "if_ran"), text-table column (None: not in the
// table), description.
py::list run_report_fields() {
  py::list fields;
  for (const RankRowField& f : kRankRowFields) {
    py::dict d;
    d["key"] = std::string(f.key);
    d["presence"] = std::string(presence_key(f.presence));
    d["column"] = f.column == TableColumn::kNone
                      ? py::object(py::none())
                      : py::object(py::str(std::string(column_header(f.column))));
    d["description"] = std::string(f.description);
    fields.append(d);
  }
  return fields;
}

}  // namespace
}  // namespace chakraflow::python

PYBIND11_MODULE(_chakraflow, m) {
  namespace py = pybind11;
  using namespace chakraflow::python;
  m.doc() = "chakraflow's C++ toolchain, in-process (use the chakraflow package).";
  m.attr("__version__") = CHAKRAFLOW_VERSION;
  py::register_exception<CfError>(m, "Error", PyExc_Exception);
  m.def("link", &link_rank, py::arg("host"), py::arg("device"), py::arg("output"), py::kw_only(),
        py::arg("rank") = py::none(), py::arg("mode") = "auto", py::arg("compat") = "default",
        py::arg("gap_threshold_us") = 1000.0, py::arg("threads") = 0, py::arg("format") = "chakra",
        py::arg("annotation") = "", py::arg("min_match_rate") = py::none(),
        py::arg("timing") = py::none(), py::arg("step_time") = py::none(),
        py::arg("profiler_overhead") = "auto");
  m.def("convert", &convert_file_py, py::arg("input"), py::arg("output"), py::kw_only(),
        py::arg("compat") = "default", py::arg("keep_optimizer_step_duration") = false,
        py::arg("metadata_node") = "keep", py::arg("renumber_groups") = false);
  m.def("synth", &synth, py::arg("out_dir"), py::kw_only(), py::arg("ranks") = 1,
        py::arg("iterations") = 1, py::arg("scale") = 1.0, py::arg("seed") = 0,
        py::arg("legacy") = false, py::arg("gzip") = false);
  m.def("_simulate_json", &simulate_json, py::arg("traces"), py::arg("ranks"), py::kw_only(),
        py::arg("config") = py::none(), py::arg("window") = py::none(), py::arg("threads") = 0);
  m.def("_run", &run_config, py::arg("config_path"), py::kw_only(), py::arg("resume") = false,
        py::arg("quiet") = true);
  m.def("_run_report_fields", &run_report_fields);
  bind_trace(m);
  bind_feeder(m);
}
