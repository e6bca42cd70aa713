// `chakraflow tile`: repeats a real (host ET, Kineto) pair's recorded iteration N times, to scale
// real structure to big traces. The outputs link like the input, N times over (see
// stages/generate/trace_tiling.h for what is rewritten and what is kept once).
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "pipeline/cli_args.h"
#include "pipeline/commands.h"
#include "stages/common/file_io.h"
#include "stages/generate/trace_tiling.h"

namespace chakraflow {

int run_tile_command(int argc, char** argv, int first) {
  static const std::vector<cli::FlagSpec> specs = {
      {"host", true, "host execution trace (.json or .json.gz)", {}},
      {"device", true, "Kineto device trace of the same process (.json or .json.gz)", {}},
      {"times", true, "number of copies of the iteration (default 2)", {}},
      {"out", true, "output directory (DIR/host_et.json, DIR/kineto.json)", {}},
      {"period-us", true, "time between copies in us (default: the trace's length + 1%)", {}},
      {"gzip", false, "write .json.gz files", {}},
      {"help", false, "show this help", {"h"}},
  };
  const char* synopsis =
      "tile --host FILE --device FILE --times N --out DIR [--period-us P] [--gzip]";
  cli::Verb verb("tile", synopsis, specs);
  if (auto exit = verb.parse(argc, argv, first)) return *exit;
  if (auto exit = verb.no_positionals()) return *exit;
  const cli::Args& args = verb.args();
  // One missing flag at a time, in this order.
  for (const char* required : {"host", "device", "out"}) {
    if (auto exit = verb.require({required})) return *exit;
  }
  auto times = args.get_int("times", 2);
  if (!times.ok()) return verb.usage_error(times.status().message());
  if (*times < 1 || *times > 1000000)
    return verb.usage_error("--times must be between 1 and 1000000");
  auto period_us = args.get_double("period-us", 0);
  if (!period_us.ok()) return verb.usage_error(period_us.status().message());
  if (!(*period_us >= 0) || *period_us > 1e15) return verb.usage_error("--period-us must be >= 0");
  const auto period = static_cast<TimeNs>(*period_us * 1000.0 + 0.5);
  const std::string ext = args.has("gzip") ? ".json.gz" : ".json";
  const std::filesystem::path out_dir = *args.get("out");

  auto t0 = std::chrono::steady_clock::now();
  const std::string host_path = *args.get("host");
  const std::string device_path = *args.get("device");
  auto host_text = read_input_file(host_path);
  if (!host_text.ok()) return verb.failure(host_text.status());
  auto device_text = read_input_file(device_path);
  if (!device_text.ok()) return verb.failure(device_text.status());
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    return verb.failure(Status::errorf("{}: cannot create the output directory: {}",
                                       out_dir.string(), ec.message()));
  }
  for (const std::string& name : {"host_et" + ext, "kineto" + ext}) {
    Status s = check_output_is_not_input((out_dir / name).string(), {host_path, device_path});
    if (!s.ok()) return verb.usage_error(s.message());
  }
  auto host_out = OutputFile::open((out_dir / ("host_et" + ext)).string());
  if (!host_out.ok()) return verb.failure(host_out.status());
  auto device_out = OutputFile::open((out_dir / ("kineto" + ext)).string());
  if (!device_out.ok()) return verb.failure(device_out.status());
  auto summary = tile_trace_pair(
      host_path, std::move(*host_text), device_path, std::move(*device_text),
      static_cast<uint32_t>(*times), period, [&](std::string_view b) { host_out->write(b); },
      [&](std::string_view b) { device_out->write(b); });
  if (!summary.ok()) return verb.failure(summary.status());  // the temporary files are discarded
  // Both are committed or neither is visible as a new pair (a failed second commit removes the
  // first output too, so that DIR never holds a mismatched pair).
  Status committed = host_out->commit();
  if (committed.ok()) {
    committed = device_out->commit();
    if (!committed.ok()) std::filesystem::remove(host_out->path(), ec);
  }
  if (!committed.ok()) return verb.failure(committed);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "%s\n", format_tile_summary(*summary).c_str());
  std::fprintf(stderr, "tile: wrote %s and %s: %.1f MB of JSON in %.2f s\n",
               host_out->path().c_str(), device_out->path().c_str(),
               (host_out->bytes_written() + device_out->bytes_written()) / 1e6, seconds);
  return 0;
}

}  // namespace chakraflow
