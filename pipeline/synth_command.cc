// `chakraflow synth`: generates a realistic multi-rank trace set (host ET + Kineto per rank).
#include <oneapi/tbb/parallel_for.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include "pipeline/cli_args.h"
#include "pipeline/commands.h"
#include "pipeline/synth_set.h"
#include "stages/common/file_io.h"
#include "stages/generate/synthetic_trace.h"

namespace chakraflow {

Status write_synth_set(const SynthOptions& opt, const std::string& out_dir_text, bool gzip,
                       uint64_t* bytes_written) {
  const std::string ext = gzip ? ".json.gz" : ".json";
  const std::filesystem::path out_dir = out_dir_text;
  std::atomic<uint64_t> bytes{0};
  std::mutex error_mutex;
  std::string first_error;
  oneapi::tbb::parallel_for(0, opt.ranks, [&](int rank) {
    std::filesystem::path dir = out_dir / fmt::format("rank{}", rank);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    auto host = OutputFile::open((dir / ("host_et" + ext)).string());
    auto device = OutputFile::open((dir / ("kineto" + ext)).string());
    Status status =
        ec ? Status::errorf("{}: cannot create the directory: {}", dir.string(), ec.message())
        : !host.ok() ? host.status()
                     : device.status();
    if (status.ok()) {
      synthesize_rank(
          opt, rank, [&](std::string_view b) { host->write(b); },
          [&](std::string_view b) { device->write(b); });
      status = host->commit();
      if (status.ok()) status = device->commit();
      bytes += host->bytes_written() + device->bytes_written();
    }
    if (!status.ok()) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (first_error.empty()) first_error = status.message();
    }
  });
  if (bytes_written) *bytes_written += bytes.load();
  return first_error.empty() ? Status() : Status::error(first_error);
}

int run_synth_command(int argc, char** argv, int first) {
  static const std::vector<cli::FlagSpec> specs = {
      {"ranks", true, "number of ranks (default 2)", {}},
      {"iterations", true, "training iterations per rank (default 2)", {}},
      {"scale", true, "size factor: about 10 MB of JSON per rank at 1 (default 1)", {}},
      {"out", true, "output directory (DIR/rank{r}/host_et.json, DIR/rank{r}/kineto.json)", {}},
      {"seed", true, "random seed (default 1)", {}},
      {"legacy", false, "write host ETs in schema 1.0.1 (flat layout)", {}},
      {"gzip", false, "write .json.gz files", {}},
      {"help", false, "show this help", {"h"}},
  };
  const char* synopsis =
      "synth --out DIR [--ranks N] [--iterations K] [--scale S] [--seed N] [--legacy] [--gzip]";
  cli::Verb verb("synth", synopsis, specs);
  if (auto exit = verb.parse(argc, argv, first)) return *exit;
  if (auto exit = verb.require({"out"})) return *exit;
  const cli::Args& args = verb.args();
  SynthOptions opt;
  auto ranks = args.get_int("ranks", 2);
  auto iterations = args.get_int("iterations", 2);
  auto scale = args.get_double("scale", 1.0);
  auto seed = args.get_int("seed", 1);
  for (const Status& s : {ranks.status(), iterations.status(), scale.status(), seed.status()}) {
    if (!s.ok()) return verb.usage_error(s.message());
  }
  if (*ranks < 1 || *ranks > 1000000)
    return verb.usage_error("--ranks must be between 1 and 1000000");
  if (*iterations < 1 || *iterations > 100000)
    return verb.usage_error("--iterations must be between 1 and 100000");
  if (!(*scale > 0) || *scale > 100000) return verb.usage_error("--scale must be > 0");
  opt.ranks = static_cast<int>(*ranks);
  opt.iterations = static_cast<int>(*iterations);
  opt.scale = *scale;
  opt.seed = static_cast<uint64_t>(*seed);
  opt.legacy = args.has("legacy");
  const std::filesystem::path out_dir = *args.get("out");

  auto t0 = std::chrono::steady_clock::now();
  uint64_t bytes = 0;
  if (Status s = write_synth_set(opt, *args.get("out"), args.has("gzip"), &bytes); !s.ok()) {
    return verb.failure(s);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr,
               "synth: %d ranks x %d iterations (%d layers) -> %s: %.1f MB of JSON in %.2f s\n",
               opt.ranks, opt.iterations, synth_layers(opt.scale), out_dir.string().c_str(),
               bytes / 1e6, seconds);
  return 0;
}

}  // namespace chakraflow
