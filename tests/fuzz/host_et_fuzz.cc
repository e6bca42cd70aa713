// Fuzz target: the host execution trace loader, and the ET+ writer on whatever it accepts.
#include <cstddef>
#include <cstdint>
#include <string>

#include "stages/link/host_et_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto trace = chakraflow::parse_host_trace("fuzz.json", std::move(text));
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
