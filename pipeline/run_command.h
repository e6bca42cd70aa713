// `chakraflow run CONFIG.yaml` as a function: the CLI verb and the Python module (`cf.run`) call
// it. Under mpirun every process calls it; process 0 writes the summary and runs the simulation.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "stages/common/status.h"

namespace chakraflow {

struct RunRequest {
  std::string config_path;
  bool resume = false;  // skip ranks whose outputs are newer than their inputs
  bool quiet = false;   // print only errors and the final summary
};

struct RunOutcome {
  // As the CLI's exit status: 0 every rank (and the simulation) succeeded; 1 a rank, the summary
  // or the simulation failed; 2 the configuration is unusable (nothing was run).
  int exit_code = 0;
  // Why, when the cause is not a rank (whose errors are in the summary): the configuration, an
  // output, the simulation. Empty on processes other than 0.
  Status error;
  std::string summary_path;  // set once process 0 has written summary.json
  size_t ranks_failed = 0;
  // This process among the run's (mpirun), and the worker threads it ran with (0: not run).
  int process = 0;
  int processes = 1;
  size_t threads = 0;
};

RunOutcome run_batch(const RunRequest& request);

// The configuration file a `run` command line (argv[first..argc)) names, as the verb parses it;
// nullopt when it names none or does not parse (the verb reports that). `main` sizes malloc from
// the inputs it lists.
std::optional<std::string> run_config_argument(int argc, char** argv, int first);

// The flow graph the configuration would run, as Graphviz dot (`run --print-graph`).
StatusOr<std::string> run_graph_dot(const std::string& config_path);

}  // namespace chakraflow
