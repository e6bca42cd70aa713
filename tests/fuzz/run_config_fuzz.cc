// Fuzz target: the YAML run configuration parser (`chakraflow run CONFIG.yaml`). Whatever the
// text, the parser returns a config or an error naming the file; no exception escapes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "pipeline/run_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto config = chakraflow::parse_run_config("configs/fuzz.yaml", text);
  if (!config.ok()) {
    if (config.status().message().find("configs/fuzz.yaml") == std::string::npos) __builtin_trap();
    return 0;
  }
  // What a valid config promises (pipeline/run_config.h).
  if (config->host_pattern.find("{rank}") == std::string::npos) __builtin_trap();
  if (config->device_pattern.find("{rank}") == std::string::npos) __builtin_trap();
  if (config->stages.empty() || config->stages.front() != chakraflow::RunStage::kLink) {
    __builtin_trap();
  }
  if (config->discover_ranks != config->ranks.empty()) __builtin_trap();
  for (size_t i = 1; i < config->ranks.size(); ++i) {
    if (config->ranks[i] <= config->ranks[i - 1]) __builtin_trap();
  }
  if (!config->ranks.empty()) {
    (void)config->host_path(config->ranks.front());
    (void)config->et_path(config->ranks.back());
  }
  (void)config->summary_path();
  return 0;
}
