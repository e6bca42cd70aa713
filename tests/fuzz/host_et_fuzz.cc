// Fuzz target: the host execution trace loader, and the ET+ writer on whatever it accepts; the
// same text read in small windows and in shards (its sort by id in ranges of two items) gives the
// same nodes, or the same error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "stages/common/ordered_batches.h"
#include "stages/link/host_et_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  const chakraflow::OrderedBatches fine(2);
  auto sharded =
      chakraflow::parse_host_trace("fuzz.json", text, 64, chakraflow::ParseShards{&fine, 4, 64});
  auto trace = chakraflow::parse_host_trace("fuzz.json", std::move(text));
  if (trace.ok() != sharded.ok()) __builtin_trap();
  if (!trace.ok() && trace.status().message() != sharded.status().message()) __builtin_trap();
  if (trace.ok()) {
    if (trace->nodes.size() != sharded->nodes.size() ||
        trace->top_level.size() != sharded->top_level.size() || trace->schema != sharded->schema) {
      __builtin_trap();
    }
    for (size_t i = 0; i < trace->nodes.size(); ++i) {
      const auto& a = trace->nodes[i];
      const auto& b = sharded->nodes[i];
      if (a.id != b.id || a.raw != b.raw || a.name != b.name || a.file_index != b.file_index) {
        __builtin_trap();
      }
    }
  }
  if (trace.ok()) {
    // Invariants the writer relies on.
    for (const auto& n : trace->nodes) {
      if (n.raw.empty() || n.raw.front() != '{' || n.raw.back() != '}') __builtin_trap();
      if (n.id_value.end > n.raw.size() || n.name_value.end > n.raw.size()) __builtin_trap();
    }
  } else if (trace.status().message().find("fuzz.json") == std::string::npos) {
    __builtin_trap();  // every error names the file
  }
  return 0;
}
