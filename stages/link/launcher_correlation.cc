#include "stages/link/launcher_correlation.h"

#include "stages/common/ordered_batches.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <unordered_map>

#include <fmt/format.h>

#include "stages/common/key_index.h"
#include "stages/common/radix_sort.h"
#include "stages/link/exclusive_durations.h"

namespace chakraflow {
namespace {

constexpr std::array<std::string_view, 15> kChakraLaunchNames = {
    "cuLaunchKernel",        "cuLaunchKernelEx",    "cudaLaunchKernel",
    "cudaLaunchKernelExC",   "cudaMemcpy",          "cudaMemcpyAsync",
    "cudaMemcpyFromSymbol",  "cudaMemcpyToSymbol",  "cudaLaunchCooperativeKernel",
    "hipLaunchKernel",       "hipExtLaunchKernel",  "hipExtModuleLaunchKernel",
    "hipModuleLaunchKernel", "hipMemcpyWithStream", "hipMemcpyAsync",
};

constexpr std::array<std::string_view, 22> kExtraLaunchNames = {
    "cudaGraphLaunch",
    "cudaMemsetAsync",
    "cudaMemset",
    "cudaMemcpy2D",
    "cudaMemcpy2DAsync",
    "cudaMemcpyPeer",
    "cudaMemcpyPeerAsync",
    "cudaLaunchKernelEx",
    "cuLaunchCooperativeKernel",
    "cuGraphLaunch",
    "cuMemcpyAsync",
    "cuMemsetD8Async",
    "cuMemsetD32Async",
    "hipGraphLaunch",
    "hipMemsetAsync",
    "hipMemset",
    "hipMemcpy",
    "hipLaunchCooperativeKernel",
    "hipMemcpyDtoHAsync",
    "hipMemcpyHtoDAsync",
    "hipMemcpyDtoDAsync",
    "hipExtLaunchMultiKernelMultiDevice",
};

bool contains_nccl_ci(std::string_view s) {
  for (size_t i = 0; i + 4 <= s.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) == 'n' &&
        std::tolower(static_cast<unsigned char>(s[i + 1])) == 'c' &&
        std::tolower(static_cast<unsigned char>(s[i + 2])) == 'c' &&
        std::tolower(static_cast<unsigned char>(s[i + 3])) == 'l') {
      return true;
    }
  }
  return false;
}

struct ThreadIndex {
  std::vector<DeviceEventIdx> ops;  // (ts, file order)
  std::vector<TimeNs> ts;
  std::vector<int32_t> parent;  // enclosing op (position in ops), -1 for roots
  // (External id, position) sorted: the positions of one External id are a contiguous,
  // ascending run (one allocation instead of a vector per id).
  std::vector<std::pair<int64_t, uint32_t>> by_external_id;

  // Positions of ops with External id `ext`, as [first, last).
  std::pair<const std::pair<int64_t, uint32_t>*, const std::pair<int64_t, uint32_t>*>
  with_external_id(int64_t ext) const {
    auto lo = std::lower_bound(by_external_id.begin(), by_external_id.end(),
                               std::make_pair(ext, uint32_t{0}));
    auto hi = lo;
    while (hi != by_external_id.end() && hi->first == ext) ++hi;
    return {by_external_id.data() + (lo - by_external_id.begin()),
            by_external_id.data() + (hi - by_external_id.begin())};
  }
};

// One thread's index over its CPU ops `ops` (as cpu_ops_by_thread gives them), with the nesting
// forest for the default rule. What it reads of each op's event (which lie all over the trace:
// start, end, External id) is copied out once, in ranges on `workers` when given, into the
// index's own vectors and the ends beside them; the passes after read the copies.
ThreadIndex index_thread(const DeviceTrace& trace, Compat compat, std::vector<DeviceEventIdx>&& ops,
                         const OrderedBatches* workers) {
  constexpr size_t kRange = 65536;
  const OrderedBatches& run = batches_or_in_turn(workers);
  ThreadIndex t;
  t.ops = std::move(ops);
  const size_t n = t.ops.size();
  std::vector<TimeNs> end(n);
  t.ts.resize(n);
  t.by_external_id.resize(n);
  auto copy_out = [&] {
    for_each_range(run, n, run.range_size(kRange), [&](size_t, size_t from, size_t to) {
      for (size_t p = from; p < to; ++p) {
        const DeviceEvent& ev = trace[t.ops[p]];
        t.ts[p] = ev.ts;
        end[p] = ev.end();
        t.by_external_id[p] = {ev.external_id, static_cast<uint32_t>(p)};
      }
    });
  };
  copy_out();
  // Nesting order (parents before the ops they contain); Chakra's rule keeps file order. The ops
  // come in ts order: only a run of ops starting together can be out of nesting order, and a
  // thread rarely has one; sorted (and copied out again) only if so.
  if (compat == Compat::kDefault) {
    for (size_t p = 1; p < n; ++p) {
      if (t.ts[p] < t.ts[p - 1] || (t.ts[p] == t.ts[p - 1] && end[p] > end[p - 1])) {
        sort_in_nesting_order(trace, t.ops);
        copy_out();
        break;
      }
    }
  }
  // External ids count up with time: usually sorted already. Stable by id: the positions, added
  // in order, break ties.
  stable_radix_sort(
      t.by_external_id, [](const auto& e) { return e.first; }, workers);
  t.parent.assign(n, -1);
  // Ops are in ts order; an op's enclosing op is the innermost open op that contains it.
  std::vector<uint32_t> open;
  for (uint32_t p = 0; p < n; ++p) {
    while (!open.empty()) {
      const uint32_t top = open.back();
      if (t.ts[p] >= t.ts[top] && end[p] <= end[top]) break;
      open.pop_back();
    }
    if (!open.empty()) t.parent[p] = static_cast<int32_t>(open.back());
    open.push_back(p);
  }
  return t;
}

// Launches by correlation id (DenseKeyIndex: Kineto numbers a process's runtime calls in order).
DenseKeyIndex correlation_index(const DeviceTrace& trace,
                                const std::vector<DeviceEventIdx>& launches) {
  uint64_t least = UINT64_MAX, most = 0;
  for (DeviceEventIdx idx : launches) {
    const auto id = static_cast<uint64_t>(trace[idx].correlation);
    least = std::min(least, id);
    most = std::max(most, id);
  }
  return DenseKeyIndex(least, most, launches.size());
}

// Before the lookup of order[k]'s correlation: the table line of the key kAhead further, and the
// event twice as far ahead (the key is read from it).
void prefetch_ahead(const DeviceTrace& trace, const DenseKeyIndex& by_correlation,
                    const std::vector<DeviceEventIdx>& order, size_t k) {
  constexpr size_t kAhead = 8;
  if (k + 2 * kAhead < order.size()) __builtin_prefetch(&trace[order[k + 2 * kAhead]].correlation);
  if (k + kAhead < order.size())
    by_correlation.prefetch(static_cast<uint64_t>(trace[order[k + kAhead]].correlation));
}

// correlation -> launch event (the first one wins; later duplicates are counted).
DenseKeyIndex index_launches(const DeviceTrace& trace, Compat compat, LauncherLinks& out,
                             DataProblems& stats) {
  DenseKeyIndex launch_by_correlation = correlation_index(trace, trace.launches);
  for (size_t k = 0; k < trace.launches.size(); ++k) {
    prefetch_ahead(trace, launch_by_correlation, trace.launches, k);
    const DeviceEventIdx idx = trace.launches[k];
    const DeviceEvent& e = trace[idx];
    if (!is_launch_name(trace.name(e), compat)) continue;
    auto [first, inserted] =
        launch_by_correlation.try_emplace(static_cast<uint64_t>(e.correlation), idx.value);
    if (!inserted) {
      ++out.duplicate_correlations;
      stats.add(
          StatKind::kDuplicateCorrelationId,
          fmt::format("correlation {} on '{}' at byte {} (first at byte {})", e.correlation,
                      trace.name(e), e.byte_offset, trace[DeviceEventIdx{first}].byte_offset));
    }
  }
  return launch_by_correlation;
}

// The search for the CPU op of one thread that launched a GPU op (header comment: the rules).
class LauncherSearch {
 public:
  LauncherSearch(const DeviceTrace& trace, const ThreadIndex& thread, const DeviceEvent& gpu,
                 const DeviceEvent& launch)
      : trace_(trace), t_(thread), gpu_(gpu), launch_(launch) {}

  // Chakra 1.0.0's rule: ops starting strictly before the launch, the last with the GPU op's
  // External id (positions ascending), else the nearest one.
  DeviceEventIdx chakra() {
    const uint32_t upper = static_cast<uint32_t>(
        std::lower_bound(t_.ts.begin(), t_.ts.end(), launch_.ts) - t_.ts.begin());
    auto [first, last] = t_.with_external_id(gpu_.external_id);
    for (auto it = last; it != first;) {
      --it;
      if (it->second < upper && usable(it->second)) return t_.ops[it->second];
    }
    return nearest_before(upper);
  }

  // The default rule: ops starting at or before the launch, the last with the GPU op's External
  // id that encloses the launch, else the innermost enclosing op, else (`*outside` set) the
  // nearest one.
  DeviceEventIdx by_default(bool* outside) {
    const uint32_t upper = static_cast<uint32_t>(
        std::upper_bound(t_.ts.begin(), t_.ts.end(), launch_.ts) - t_.ts.begin());
    if (gpu_.has(kHasExternalId)) {
      auto [first, last] = t_.with_external_id(gpu_.external_id);
      for (auto it = last; it != first;) {
        --it;
        if (it->second < upper && usable(it->second) && encloses(it->second)) {
          return t_.ops[it->second];
        }
      }
    }
    if (upper == 0) return {};
    // Innermost enclosing op: walk up the nesting forest from the last op starting before.
    for (int32_t p = static_cast<int32_t>(upper - 1); p >= 0;
         p = t_.parent[static_cast<size_t>(p)]) {
      if (encloses(static_cast<uint32_t>(p)) && usable(static_cast<uint32_t>(p))) {
        return t_.ops[static_cast<size_t>(p)];
      }
    }
    const DeviceEventIdx nearest = nearest_before(upper);
    *outside = nearest.valid();
    return nearest;
  }

 private:
  // NCCL kernels skip `nccl:coalesced` ops; the (long) kernel name is only scanned when such an
  // op is a candidate.
  bool usable(uint32_t p) {
    if (trace_.name(t_.ops[p]) != "nccl:coalesced") return true;
    if (nccl_ < 0) nccl_ = contains_nccl_ci(trace_.name(gpu_)) ? 1 : 0;
    return nccl_ == 0;
  }
  bool encloses(uint32_t p) const {
    const DeviceEvent& c = trace_[t_.ops[p]];
    return c.ts <= launch_.ts && c.end() >= launch_.ts;
  }
  // The last usable op before position `upper`.
  DeviceEventIdx nearest_before(uint32_t upper) {
    for (uint32_t p = upper; p-- > 0;) {
      if (usable(p)) return t_.ops[p];
    }
    return {};
  }

  const DeviceTrace& trace_;
  const ThreadIndex& t_;
  const DeviceEvent& gpu_;
  const DeviceEvent& launch_;
  int nccl_ = -1;
};

}  // namespace

bool is_launch_name(std::string_view name, Compat compat) {
  for (auto n : kChakraLaunchNames) {
    if (n == name) return true;
  }
  if (compat == Compat::kChakra) return false;
  for (auto n : kExtraLaunchNames) {
    if (n == name) return true;
  }
  return false;
}

namespace {

// What one range of the GPU ops gave: their part of LauncherLinks::gpu_ops, counts and problems
// (the links themselves are written in place: each GPU op's own slots).
struct RangeLinks {
  std::vector<DeviceEventIdx> gpu_ops;
  uint64_t linked = 0, no_launch_event = 0, no_cpu_op = 0, skipped_memsets = 0;
  DataProblems stats;
};

// The GPU ops trace.gpu_ops[begin, end): their launch and launching CPU op.
void link_gpu_ops(const DeviceTrace& trace, Compat compat,
                  const DenseKeyIndex& launch_by_correlation,
                  const std::unordered_map<int64_t, ThreadIndex>& threads, size_t begin, size_t end,
                  LauncherLinks& out, RangeLinks& r) {
  for (size_t k = begin; k < end; ++k) {
    prefetch_ahead(trace, launch_by_correlation, trace.gpu_ops, k);
    const DeviceEventIdx idx = trace.gpu_ops[k];
    const DeviceEvent& g = trace[idx];
    if (compat == Compat::kChakra && g.cat == DeviceCategory::kGpuMemset) {
      ++r.skipped_memsets;
      continue;
    }
    r.gpu_ops.push_back(idx);
    const DeviceEventIdx launch_idx{
        launch_by_correlation.find(static_cast<uint64_t>(g.correlation))};
    if (!launch_idx.valid()) {
      ++r.no_launch_event;
      r.stats.add(StatKind::kGpuOpWithoutLaunchEvent,
                  fmt::format("'{}' correlation {} at byte {}", trace.name(g), g.correlation,
                              g.byte_offset));
      continue;
    }
    const DeviceEvent& launch = trace[launch_idx];
    out.launch_of[idx.value] = launch_idx;
    DeviceEventIdx parent;
    if (auto tit = threads.find(launch.tid); tit != threads.end()) {
      LauncherSearch search(trace, tit->second, g, launch);
      bool outside = false;
      parent = compat == Compat::kChakra ? search.chakra() : search.by_default(&outside);
      if (outside) {
        r.stats.add(StatKind::kGpuOpLaunchedOutsideCpuOp,
                    fmt::format("'{}' launched at byte {}; nearest preceding CPU op used",
                                trace.name(g), launch.byte_offset));
      }
    }
    if (!parent.valid()) {
      ++r.no_cpu_op;
      r.stats.add(StatKind::kGpuOpWithoutCpuOp,
                  fmt::format("'{}' (launch '{}' at byte {}, tid {})", trace.name(g),
                              trace.name(launch), launch.byte_offset, launch.tid));
      continue;
    }
    out.cpu_op_of[idx.value] = parent;
    ++r.linked;
  }
}

// GPU ops per range when they are split over workers.
constexpr size_t kGpuOpsPerRange = 8192;

}  // namespace

LauncherLinks correlate_launchers(const DeviceTrace& trace, Compat compat, DataProblems& stats,
                                  const OrderedBatches* workers) {
  const OrderedBatches& run = batches_or_in_turn(workers);
  LauncherLinks out;
  out.launch_of.assign(trace.events.size(), DeviceEventIdx{});
  out.cpu_op_of.assign(trace.events.size(), DeviceEventIdx{});
  // The launches by correlation and each thread's index, concurrently (task 0, then one per
  // thread), their problems counted in that order.
  std::vector<std::vector<DeviceEventIdx>> by_thread = cpu_ops_by_thread(trace);
  std::vector<ThreadIndex> indexed(by_thread.size());
  DenseKeyIndex launch_by_correlation;
  DataProblems launch_stats;
  run.for_each(by_thread.size() + 1, [&](size_t task) {
    if (task == 0) {
      launch_by_correlation = index_launches(trace, compat, out, launch_stats);
    } else {
      indexed[task - 1] = index_thread(trace, compat, std::move(by_thread[task - 1]), workers);
    }
  });
  stats.merge(launch_stats);
  std::unordered_map<int64_t, ThreadIndex> threads;
  for (ThreadIndex& t : indexed) {
    const int64_t tid = trace[t.ops.front()].tid;
    threads[tid] = std::move(t);
  }
  // The GPU ops in ranges, concurrently; their lists, counts and problems joined in order.
  const size_t n = trace.gpu_ops.size();
  const size_t ranges = range_count_on(workers, n, kGpuOpsPerRange);
  std::vector<RangeLinks> parts(ranges);
  run.for_each(parts.size(), [&](size_t r) {
    const size_t begin = n * r / parts.size();
    const size_t end = n * (r + 1) / parts.size();
    link_gpu_ops(trace, compat, launch_by_correlation, threads, begin, end, out, parts[r]);
  });
  out.gpu_ops.reserve(n);
  for (RangeLinks& r : parts) {
    out.gpu_ops.insert(out.gpu_ops.end(), r.gpu_ops.begin(), r.gpu_ops.end());
    out.linked += r.linked;
    out.no_launch_event += r.no_launch_event;
    out.no_cpu_op += r.no_cpu_op;
    out.skipped_memsets += r.skipped_memsets;
    stats.merge(r.stats);
  }
  return out;
}

}  // namespace chakraflow
