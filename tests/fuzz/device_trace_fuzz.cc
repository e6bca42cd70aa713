// Fuzz target: the Kineto device trace loader and the per-thread stages on what it accepts; the
// same text read in small windows and in shards, its indices and launcher correlation in ranges of
// two items, gives the same events, indices and links, or the same error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "stages/common/ordered_batches.h"
#include "stages/link/device_trace_loader.h"
#include "stages/link/exclusive_durations.h"
#include "stages/link/gap_dependencies.h"
#include "stages/link/launcher_correlation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  const chakraflow::OrderedBatches fine(2);
  auto sharded =
      chakraflow::parse_device_trace("fuzz.json", text, 64, chakraflow::ParseShards{&fine, 4, 64});
  auto trace = chakraflow::parse_device_trace("fuzz.json", std::move(text));
  if (trace.ok() != sharded.ok()) __builtin_trap();
  if (!trace.ok()) {
    if (trace.status().message().find("fuzz.json") == std::string::npos) __builtin_trap();
    if (trace.status().message() != sharded.status().message()) __builtin_trap();
    return 0;
  }
  if (trace->events.size() != sharded->events.size() ||
      trace->pg_names.size() != sharded->pg_names.size() ||
      trace->flow_events != sharded->flow_events) {
    __builtin_trap();
  }
  for (size_t i = 0; i < trace->events.size(); ++i) {
    const auto& a = trace->events[i];
    const auto& b = sharded->events[i];
    if (a.byte_offset != b.byte_offset || a.ts != b.ts || a.dur != b.dur ||
        trace->name(a) != sharded->name(b) || trace->pg_name(a) != sharded->pg_name(b)) {
      __builtin_trap();
    }
  }
  if (trace->cpu_ops != sharded->cpu_ops || trace->launches != sharded->launches ||
      trace->gpu_ops != sharded->gpu_ops || trace->other_with_args != sharded->other_with_args ||
      trace->cpu_ops_by_thread != sharded->cpu_ops_by_thread ||
      trace->thread_begin != sharded->thread_begin || trace->has_rf_ids != sharded->has_rf_ids) {
    __builtin_trap();
  }
  for (auto compat : {chakraflow::Compat::kDefault, chakraflow::Compat::kChakra}) {
    auto x = chakraflow::compute_exclusive_durations(*trace, compat);
    for (auto idx : trace->cpu_ops) {
      // Exclusive time is never negative nor larger than the duration (for non-negative durations).
      const auto& e = (*trace)[idx];
      if (e.dur >= 0 && (x[idx] < 0 || x[idx] > e.dur)) __builtin_trap();
    }
    chakraflow::DataProblems stats;
    auto l = chakraflow::correlate_launchers(*trace, compat, stats);
    if (l.linked + l.no_launch_event + l.no_cpu_op != l.gpu_ops.size()) __builtin_trap();
    chakraflow::DataProblems fine_stats;
    auto f = chakraflow::correlate_launchers(*trace, compat, fine_stats, &fine);
    if (f.launch_of != l.launch_of || f.cpu_op_of != l.cpu_op_of || f.gpu_ops != l.gpu_ops ||
        f.linked != l.linked || fine_stats.entries().size() != stats.entries().size()) {
      __builtin_trap();
    }
  }
  auto g = chakraflow::compute_gap_dependencies(*trace, 1000 * 1000);
  for (auto idx : trace->cpu_ops) {
    auto dep = g[idx];
    if (dep.valid() && (*trace)[dep].tid == (*trace)[idx].tid) __builtin_trap();
  }
  return 0;
}
