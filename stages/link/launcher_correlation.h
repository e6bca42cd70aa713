// Stage 5: launcher correlation. For every GPU op (kernel, gpu_memcpy, gpu_memset): the runtime
// launch event with the same `correlation`, then the CPU op on the launching thread that launched
// it.
//
// Compat::kDefault: the CPU op with the GPU op's External id that encloses the launch, else the
// innermost CPU op enclosing the launch, else the nearest preceding op of that thread. Launch names
// are Chakra's list plus CUDA graphs, memsets and the HIP names; gpu_memset counts as a GPU op.
// Compat::kChakra: Chakra 1.0.0's rule: scanning back from the last CPU op that starts strictly
// before the launch, the first op of the thread with the GPU op's External id, else the nearest
// one of the thread (even if it has already finished; spec §5 #6). For NCCL kernels,
// `nccl:coalesced` ops are skipped in both modes.
//
// A GPU op without launch event, a launch without CPU op, and duplicate correlations are counted
// in DataProblems, never fatal.
#pragma once

#include <string_view>
#include <vector>

#include "stages/common/ordered_batches.h"
#include "stages/link/link_options.h"
#include "stages/link/trace_model.h"

namespace chakraflow {

struct LauncherLinks {
  // Indexed by DeviceEventIdx (meaningful for GPU ops).
  std::vector<DeviceEventIdx> launch_of;  // runtime/driver launch event
  std::vector<DeviceEventIdx> cpu_op_of;  // CPU op that launched it
  // GPU ops considered (kernel, gpu_memcpy, and gpu_memset in default mode), in ts order.
  std::vector<DeviceEventIdx> gpu_ops;
  uint64_t linked = 0;
  uint64_t no_launch_event = 0;  // correlation matches no launch event
  uint64_t no_cpu_op = 0;        // launch found, but no CPU op on its thread
  uint64_t duplicate_correlations = 0;
  uint64_t skipped_memsets = 0;  // gpu_memset ignored in Chakra mode
};

// True for runtime/driver API names that launch work on the GPU.
bool is_launch_name(std::string_view name, Compat compat);

// `workers`: the launches' and the threads' indexes built concurrently, then the GPU ops in
// ranges (null: one after another); the result and the problems' order are the same.
LauncherLinks correlate_launchers(const DeviceTrace& trace, Compat compat, DataProblems& stats,
                                  const OrderedBatches* workers = nullptr);

}  // namespace chakraflow
