// Google Benchmarks for each link stage and end to end, on resnet_1gpu (real trace: 1,313 host
// nodes, 111,631 device events, 23 MB of JSON) from ../shared/data. Results are checked before
// they are timed. Reports bytes/s of JSON input and items/s (events or nodes).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>

#include <oneapi/tbb/task_arena.h>
#include "bench/pair_fixture.h"

#include "pipeline/parallel_batches.h"
#include "pipeline/rank_graph.h"
#include "stages/common/file_io.h"
#include "stages/common/json_util.h"
#include "stages/generate/synthetic_trace.h"
#include "stages/link/device_trace_loader.h"
#include "stages/link/et_plus_writer.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/link.h"

namespace chakraflow {
namespace {

using bench::pair_dir;
using Fixture = bench::PairFixture;

Fixture& resnet() {
  static Fixture f("resnet_1gpu", "kineto.modern.json.gz");
  return f;
}

#define REQUIRE_DATA(f)                                                \
  if (!(f).ok) {                                                       \
    state.SkipWithError("../shared/data/pairs/resnet_1gpu is absent"); \
    return;                                                            \
  }

void BM_ParseHost(benchmark::State& state) {
  auto& f = resnet();
  REQUIRE_DATA(f);
  for (auto _ : state) {
    auto t = parse_host_trace("host", f.host_text);
    if (!t.ok() || t->nodes.size() != f.host.nodes.size()) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(t);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(f.host_text.size()));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(f.host.nodes.size()));
}
BENCHMARK(BM_ParseHost)->Unit(benchmark::kMillisecond);

void BM_ParseDevice(benchmark::State& state) {
  auto& f = resnet();
  REQUIRE_DATA(f);
  for (auto _ : state) {
    auto t = parse_device_trace("device", f.device_text);
    if (!t.ok() || t->events.size() != f.device.events.size()) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(t);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(f.device_text.size()));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(f.device.events.size()));
}
BENCHMARK(BM_ParseDevice)->Unit(benchmark::kMillisecond);

// A generated rank's traces (synth scale 3: host 17 MB, device 12 MB), each parsed on a task
// arena of N threads: in windows on one thread (N = 1), else in shards on the N workers
// (ParseShards, one shard per worker): the loaders' own scaling, without the other stages. The
// text's copy (the parser takes its text) is not timed.
const SynthRankText& generated_rank_text() {
  static const SynthRankText text = [] {
    SynthOptions opt;
    opt.ranks = 1;
    opt.scale = 3;
    return synthesize_rank_text(opt, 0);
  }();
  return text;
}

template <typename Parse>
void parse_in_shards(benchmark::State& state, const std::string& text, const Parse& parse) {
  const auto threads = static_cast<size_t>(state.range(0));
  oneapi::tbb::task_arena arena(static_cast<int>(threads));
  size_t items = 0, shards = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::string copy = text;
    state.ResumeTiming();
    arena.execute([&] {
      const ParallelBatches workers(2 * threads);
      if (!parse(std::move(copy), ParseShards{&workers, threads}, &items, &shards)) {
        state.SkipWithError("parse failed");
      }
    });
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.counters["items"] = static_cast<double>(items);
  state.counters["shards"] = static_cast<double>(shards);
}

void BM_ParseDeviceShards(benchmark::State& state) {
  parse_in_shards(state, generated_rank_text().device,
                  [](std::string text, const ParseShards& p, size_t* items, size_t* shards) {
                    auto t = parse_device_trace("device", std::move(text), kDeviceWindowBytes, p);
                    if (!t.ok()) return false;
                    *items = t->events.size();
                    *shards = t->parse_shards;
                    return true;
                  });
}
BENCHMARK(BM_ParseDeviceShards)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ParseHostShards(benchmark::State& state) {
  parse_in_shards(state, generated_rank_text().host,
                  [](std::string text, const ParseShards& p, size_t* items, size_t* shards) {
                    auto t = parse_host_trace("host", std::move(text), kHostWindowBytes, p);
                    if (!t.ok()) return false;
                    *items = t->nodes.size();
                    *shards = t->parse_shards;
                    return true;
                  });
}
BENCHMARK(BM_ParseHostShards)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ExclusiveDurations(benchmark::State& state) {
  auto& f = resnet();
  REQUIRE_DATA(f);
  for (auto _ : state)
    benchmark::DoNotOptimize(compute_exclusive_durations(f.device, Compat::kDefault));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(f.device.cpu_ops.size()));
}
BENCHMARK(BM_ExclusiveDurations)->Unit(benchmark::kMillisecond);

void BM_GapDependencies(benchmark::State& state) {
  auto& f = resnet();
  REQUIRE_DATA(f);
  for (auto _ : state) benchmark::DoNotOptimize(compute_gap_dependencies(f.device, 1000 * 1000));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(f.device.cpu_ops.size()));
}
BENCHMARK(BM_GapDependencies)->Unit(benchmark::kMillisecond);

void BM_LauncherCorrelation(benchmark::State& state) {
  auto& f = resnet();
  REQUIRE_DATA(f);
  for (auto _ : state) {
    DataProblems stats;
    auto r = correlate_launchers(f.device, Compat::kDefault, stats);
    if (r.linked == 0) state.SkipWithError("nothing linked");
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(f.device.gpu_ops.size()));
}
BENCHMARK(BM_LauncherCorrelation)->Unit(benchmark::kMillisecond);

void BM_MapAndAssignIds(benchmark::State& state) {
  auto& f = resnet();
  REQUIRE_DATA(f);
  LinkOptions opt;
  DataProblems s0;
  auto excl = compute_exclusive_durations(f.device, opt.compat);
  auto gaps = compute_gap_dependencies(f.device, opt.gap_threshold);
  auto launch = correlate_launchers(f.device, opt.compat, s0);
  for (auto _ : state) {
    DataProblems stats;
    auto map = map_host_to_device(f.host, f.device, opt, stats);
    auto linked = assign_ids({f.host, f.device, excl, gaps, launch, *map}, opt, stats);
    if (linked.node_count < f.host.nodes.size()) state.SkipWithError("bad link");
    benchmark::DoNotOptimize(linked);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(f.host.nodes.size()));
}
BENCHMARK(BM_MapAndAssignIds)->Unit(benchmark::kMillisecond);

void BM_WriteEtPlus(benchmark::State& state) {
  auto& f = resnet();
  REQUIRE_DATA(f);
  auto linked = link_traces(f.host, f.device, {});
  if (!linked.ok()) {
    state.SkipWithError("link failed");
    return;
  }
  size_t bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    Status s = write_et_plus(f.host, f.device, *linked, {},
                             [&bytes](std::string_view b) { bytes += b.size(); });
    if (!s.ok() || bytes == 0) state.SkipWithError("write failed");
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(linked->node_count));
}
BENCHMARK(BM_WriteEtPlus)->Unit(benchmark::kMillisecond);

// The ET+ writers' minifier (json::append_minified) over a generated rank's host ET (17 MB, as
// synth indents it), with each kernel this CPU has (0 best, 1 scalar, 2 AVX2, 3 AVX-512).
void BM_Minify(benchmark::State& state) {
  const auto kernel = static_cast<json::MinifyKernel>(state.range(0));
  if (!json::has_minify_kernel(kernel)) {
    state.SkipWithError("this build or CPU lacks the kernel");
    return;
  }
  const std::string& text = generated_rank_text().host;
  std::string out;
  out.reserve(text.size() + 64);
  for (auto _ : state) {
    out.clear();
    json::append_minified(out, text, kernel);
    benchmark::DoNotOptimize(out.data());
  }
  if (out.empty() || out.size() >= text.size()) state.SkipWithError("nothing minified");
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_Minify)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

// A .gz output (OutputFile): the generated rank's host text (17 MB) written to a new .json.gz file
// in 1 MB writes, its blocks compressed on a task arena of N workers (compress_on; N = 1: on the
// writing thread). Bytes/s of text.
void BM_WriteGzip(benchmark::State& state) {
  const std::string& text = generated_rank_text().host;
  const auto threads = static_cast<size_t>(state.range(0));
  oneapi::tbb::task_arena arena(static_cast<int>(threads));
  const std::string path = std::filesystem::temp_directory_path() / "chakraflow_bench_out.json.gz";
  uint64_t compressed = 0;
  for (auto _ : state) {
    arena.execute([&] {
      const ParallelBatches workers(2 * threads);
      auto out = OutputFile::open(path);
      if (!out.ok()) return state.SkipWithError(out.status().message().c_str());
      if (threads > 1) out->compress_on(&workers);
      for (size_t at = 0; at < text.size(); at += size_t{1} << 20) {
        out->write(std::string_view(text).substr(at, size_t{1} << 20));
      }
      if (!out->commit().ok()) state.SkipWithError("write failed");
    });
    compressed = std::filesystem::file_size(path);
  }
  std::remove(path.c_str());
  if (compressed == 0 || compressed >= text.size()) state.SkipWithError("not compressed");
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.counters["ratio"] = static_cast<double>(compressed) / static_cast<double>(text.size());
}
BENCHMARK(BM_WriteGzip)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// A .gz output of ours read back (InputText::read): the generated rank's host text four times (68
// MB; a file of 1 MB or more compressed is mapped, then inflated), in one pass (N = 1) or in its
// blocks on a task arena of N workers (its block index). Bytes/s of text.
void BM_ReadGzip(benchmark::State& state) {
  std::string text;
  for (int k = 0; k < 4; ++k) text += generated_rank_text().host;
  const auto threads = static_cast<size_t>(state.range(0));
  oneapi::tbb::task_arena arena(static_cast<int>(threads));
  const std::string path = std::filesystem::temp_directory_path() / "chakraflow_bench_in.json.gz";
  if (!write_file_atomically(path, text).ok()) return state.SkipWithError("cannot write");
  bool same = true;
  bool in_blocks = false;
  for (auto _ : state) {
    arena.execute([&] {
      const ParallelBatches workers(2 * threads);
      auto read = InputText::read(path, threads > 1 ? &workers : nullptr);
      if (!read.ok()) return state.SkipWithError(read.status().message().c_str());
      same = same && read->size() == text.size();
      in_blocks = read->inflated_in_blocks();
    });
  }
  std::remove(path.c_str());
  if (!same) state.SkipWithError("not the text");
  if (in_blocks != (threads > 1)) state.SkipWithError("not read as asked");
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ReadGzip)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// End to end through the flow graph: read .json.gz, parse, link, write ET+ (plain JSON).
void BM_LinkEndToEnd(benchmark::State& state) {
  std::string dir = pair_dir("resnet_1gpu");
  if (dir.empty()) {
    state.SkipWithError("../shared/data/pairs/resnet_1gpu is absent");
    return;
  }
  std::string out = std::filesystem::temp_directory_path() / "chakraflow_bench_et_plus.json";
  uint64_t input = 0;
  for (auto _ : state) {
    RankJob job{dir + "/host_et.json.gz", dir + "/kineto.modern.json.gz", out, {}};
    const RankJobResult r = run_link_job(job);
    if (!r.status.ok()) state.SkipWithError(r.status.message().c_str());
    input = r.input_bytes;
  }
  std::remove(out.c_str());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(input));
}
BENCHMARK(BM_LinkEndToEnd)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace chakraflow
