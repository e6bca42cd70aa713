// Generated ranks (chakraflow synth's traces), written as files for the tests of `run` and of the
// rank graph, or in memory. Header-only: its users link chakraflow_generate.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "stages/generate/synthetic_trace.h"
#include "tests/testing/test_util.h"

namespace chakraflow::testing {

// Writes `ranks` generated ranks of `scale` to host_path(r) and device_path(r), creating their
// folders. The device trace of `cut_rank` (if any) is cut in half: that rank fails to load.
inline void write_generated_ranks(int ranks, const std::function<std::string(int)>& host_path,
                                  const std::function<std::string(int)>& device_path,
                                  int cut_rank = -1, double scale = 0.02) {
  SynthOptions opt;
  opt.ranks = ranks;
  opt.scale = scale;
  for (int r = 0; r < ranks; ++r) {
    auto [host, device, stats] = synthesize_rank_text(opt, r);
    if (r == cut_rank) device.resize(device.size() / 2);
    for (const std::string& path : {host_path(r), device_path(r)}) {
      std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    }
    write_text(host_path(r), host);
    write_text(device_path(r), device);
  }
}

// The texts of rank `rank` of a generated two-rank set of `scale`, in memory.
inline SynthRankText generated_rank_text(double scale, int rank = 1) {
  SynthOptions opt;
  opt.ranks = 2;
  opt.scale = scale;
  return synthesize_rank_text(opt, rank);
}

}  // namespace chakraflow::testing
