// The batch configuration of `chakraflow run CONFIG.yaml` (documented in configs/README.md):
// which rank files to read, which stages to run with which options, where to write.
// Unknown keys and wrong types are errors that name the file, line and column.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stages/common/status.h"
#include "stages/convert/convert_model.h"
#include "stages/link/link_options.h"

namespace chakraflow {

enum class RunStage : uint8_t { kLink, kConvert, kSimulate };

struct RunConfig {
  std::string path;      // of the YAML file
  std::string base_dir;  // relative paths are resolved against it
  // inputs
  std::string host_pattern;    // contains "{rank}"
  std::string device_pattern;  // contains "{rank}"
  // A Kineto-only trace of the same code per rank (contains "{rank}"; empty: none): the link
  // takes the timings from it (LinkOptions::other_process), not from the device trace.
  std::string timing_pattern;
  // The capture's step_time.json per rank (contains "{rank}"); empty: step_time.json beside the
  // host trace, when there is one.
  std::string step_time_pattern;
  std::vector<int> ranks;  // sorted, unique; empty until resolve_ranks()
  bool discover_ranks = false;
  // stages, in pipeline order
  std::vector<RunStage> stages;
  LinkOptions link;
  ConvertOptions convert;       // the `convert:` section
  std::string simulate_config;  // path to a simulation YAML (may be empty)
  // outputs
  std::string out_dir = "out";
  std::string prefix = "trace";
  bool keep_et_plus = false;  // keep out/et_plus/{prefix}.{rank}.json.gz
  std::string summary = "summary.json";
  bool comm_groups = true;  // write {prefix}.comm_group.json when converting
  // run
  uint64_t memory_budget_bytes = uint64_t{4} << 30;
  int max_ranks_in_flight = 0;  // 0: derived from the budget
  int threads = 0;              // 0: all cores

  bool has(RunStage s) const;
  std::string host_path(int rank) const;
  // The device trace the link reads: the timing trace when there is one.
  std::string device_path(int rank) const;
  // The rank's step_time.json, or empty when there is none.
  std::string step_time_path(int rank) const;
  std::string et_plus_path(int rank) const;
  std::string et_path(int rank) const;
  std::string summary_path() const;
  std::string simulation_path() const;  // simulation.json, beside the summary
  std::string comm_group_path() const;
  // Whether the ranks' ET+ files are kept: asked for, or the run ends at link.
  bool writes_et_plus() const { return keep_et_plus || !has(RunStage::kConvert); }
};

// Parses and validates a configuration file.
StatusOr<RunConfig> load_run_config(const std::string& path);
// Same, from text (`path` names it in messages and anchors relative paths).
StatusOr<RunConfig> parse_run_config(const std::string& path, const std::string& text);

// "0-7", "0-3,8,10-12" -> sorted unique ranks.
StatusOr<std::vector<int>> parse_rank_list(const std::string& text);

// Fills config.ranks from the host pattern when the config did not list them (once: a config whose
// ranks were discovered is left as it is).
Status discover_ranks(RunConfig& config);

// A configuration `main` loaded (and whose ranks it discovered) before the command ran, to size
// malloc from its inputs: `run` takes it instead of loading the file again. take_ returns it once,
// if it was loaded from `path`.
void keep_loaded_run_config(RunConfig config);
std::optional<RunConfig> take_loaded_run_config(const std::string& path);

// Whether glibc's malloc asks for transparent huge pages in this process (GLIBC_TUNABLES, read at
// start-up only; main re-executes the process with it for big inputs). `--version` and run's
// summary.json say so.
bool malloc_huge_pages();

// With at most two CPUs to run on (the process's affinity), makes every thread allocate from
// malloc's main arena (M_ARENA_MAX 1): glibc gives a thread that allocates while another holds
// the arena an arena of its own, a heap of fresh 4 KB pages where the memory other threads freed
// is not reused, for a lock two threads seldom contend for (docs/performance.md, "One malloc
// arena on two CPUs"). With more CPUs, or GLIBC_TUNABLES naming arena_max, malloc is left as it
// is. main calls it at start-up, before any other thread runs.
void use_one_malloc_arena_on_few_cpus();
// Whether use_one_malloc_arena_on_few_cpus did. `--version` and run's summary.json say so.
bool malloc_one_arena();

// Replaces every "{rank}" in `pattern`.
std::string expand_rank(const std::string& pattern, int rank);

}  // namespace chakraflow
