// A generator of realistic multi-rank PyTorch trace sets: per rank a host execution trace (schema
// 1.1.1, or 1.0.1 with `legacy`) and a Kineto device trace with rf_ids that link completely.
// Structure per iteration: a forward pass on the main thread (linear/addmm/relu, GEMM and
// elementwise kernels on the compute stream, a memset), a backward pass on the autograd thread
// after a gap (mm kernels, all-reduce buckets: record_param_comms -> nccl:all_reduce with an event
// record + stream wait onto the NCCL stream), then the optimizer after the compute stream waits on
// the NCCL stream, and a device synchronization; ProfilerStep#k annotations in the device trace.
// Collectives are issued in the same order with the same sizes on every rank.
//
// Output is streamed to sinks in bounded memory; the bytes depend only on the options, the rank and
// the seed. Size grows linearly with `scale` (about 10 MB of JSON per rank at scale 1, 2
// iterations).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace chakraflow {

struct SynthOptions {
  int ranks = 2;
  int iterations = 2;
  double scale = 1.0;
  uint64_t seed = 1;
  bool legacy = false;  // host ET schema 1.0.1 (flat layout)
};

using TextSink = std::function<void(std::string_view)>;

struct SynthRankStats {
  uint64_t host_nodes = 0;
  uint64_t device_events = 0;
  uint64_t kernels = 0;
  uint64_t collectives = 0;
};

// Layers per iteration for `scale` (at least 1).
int synth_layers(double scale);

SynthRankStats synthesize_rank(const SynthOptions& options, int rank, const TextSink& host,
                               const TextSink& device);

// One rank's two texts in memory (tests and benchmarks that write, cut or parse them).
struct SynthRankText {
  std::string host;
  std::string device;
  SynthRankStats stats;
};
SynthRankText synthesize_rank_text(const SynthOptions& options, int rank);

}  // namespace chakraflow
