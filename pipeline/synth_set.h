// Writing a generated trace set to a directory: what `chakraflow synth` does after parsing its
// flags, shared with the Python module (python/module.cc).
#pragma once

#include <cstdint>
#include <string>

#include "stages/common/status.h"
#include "stages/generate/synthetic_trace.h"

namespace chakraflow {

// Writes DIR/rank{r}/host_et.json and DIR/rank{r}/kineto.json (".json.gz" with `gzip`) for every
// rank of `options`, ranks in parallel (oneTBB), each file atomically. Adds the bytes written to
// `*bytes` when not null. The error is the first rank's failure, naming the file or directory.
Status write_synth_set(const SynthOptions& options, const std::string& out_dir, bool gzip,
                       uint64_t* bytes);

}  // namespace chakraflow
