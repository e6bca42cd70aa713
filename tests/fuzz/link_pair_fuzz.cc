// Fuzz target: the whole linker on a (host ET, device trace) pair. The input is split at the first
// NUL byte: host text before it, device text after it. Linked and written again with every stage's
// ranges and batches cut to two items (what large traces on workers cross): the same ET+ bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "stages/common/ordered_batches.h"
#include "stages/link/device_trace_loader.h"
#include "stages/link/et_plus_writer.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/link.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* p = reinterpret_cast<const char*>(data);
  const void* nul = std::memchr(p, 0, size);
  if (nul == nullptr) return 0;
  size_t split = static_cast<size_t>(static_cast<const char*>(nul) - p);
  auto host = chakraflow::parse_host_trace("host.json", std::string(p, split));
  auto device =
      chakraflow::parse_device_trace("device.json", std::string(p + split + 1, size - split - 1));
  if (!host.ok() || !device.ok()) return 0;
  for (auto compat : {chakraflow::Compat::kDefault, chakraflow::Compat::kChakra}) {
    chakraflow::LinkOptions opt;
    opt.compat = compat;
    opt.mode = chakraflow::MatchMode::kRfId;
    auto linked = chakraflow::link_traces(*host, *device, opt);
    if (!linked.ok()) continue;
    std::string out;
    auto s = chakraflow::write_et_plus(*host, *device, *linked, opt,
                                       [&out](std::string_view b) { out.append(b); });
    if (!s.ok() || out.empty() || out.front() != '{') __builtin_trap();
    const chakraflow::OrderedBatches fine(2);
    auto linked_fine = chakraflow::link_traces(*host, *device, opt, &fine);
    if (!linked_fine.ok()) __builtin_trap();
    std::string out_fine;
    s = chakraflow::write_et_plus(
        *host, *device, *linked_fine, opt, [&out_fine](std::string_view b) { out_fine.append(b); },
        &fine);
    if (!s.ok() || out_fine != out) __builtin_trap();
    // Ids are dense: the node count matches what the writer was told.
    if (linked->node_count < host->nodes.size()) __builtin_trap();
  }
  return 0;
}
