// Google Benchmarks of the converter and the .et tools on gpt2_1.1.0 (real host trace: 27,156
// nodes, 24 MB of JSON, 803 KB gzip'd) from ../shared/data. Chakra 1.0.0's chakra_converter takes
// 5.4 s and 278 MB on it. Results are checked before they are timed (the --compat chakra output
// must equal reference/chakra.et). Reports items/s = nodes/s and bytes/s of input.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "proto/et_def.pb.h"
#include "stages/common/file_io.h"
#include "stages/convert/et_plus_nodes.h"
#include "stages/convert/jsonizer.h"
#include "stages/convert/pytorch_converter.h"
#include "stages/et/et_io.h"
#include "stages/generate/synthetic_trace.h"
#include "stages/link/device_trace_loader.h"
#include "stages/link/et_plus_writer.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/link.h"

namespace chakraflow {
namespace {

std::string temp_file(const char* name) {
  return (std::filesystem::temp_directory_path() /
          ("chakraflow_bench_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

struct Gpt2 {
  std::string dir, input, reference;
  uint64_t input_bytes = 0;  // decompressed
  uint64_t nodes = 0;        // in the host trace
  uint64_t reference_nodes = 0;
  uint64_t reference_bytes = 0;
  std::string error;

  Gpt2() {
    dir = std::string(CHAKRAFLOW_SHARED_DATA) + "/host_et/gpt2_1.1.0";
    input = dir + "/host_et.json.gz";
    reference = dir + "/reference/chakra.et";
    if (!std::filesystem::exists(input)) {
      error = "../shared/data/host_et/gpt2_1.1.0 is absent";
      return;
    }
    auto host = load_host_trace(input);
    if (!host.ok()) {
      error = host.status().message();
      return;
    }
    input_bytes = host->text.size();
    nodes = host->nodes.size();
    reference_bytes = std::filesystem::file_size(reference);
    // Check before timing: Chakra mode reproduces the reference file.
    ConvertOptions options;
    options.compat = Compat::kChakra;
    const std::string out = temp_file("check.et");
    ConvertReport report;
    Status s = convert_file(input, out, options, &report);
    if (!s.ok()) {
      error = s.message();
      return;
    }
    auto ours = read_input_file(out);
    auto ref = read_input_file(reference);
    std::filesystem::remove(out);
    if (!ours.ok() || !ref.ok() || *ours != *ref) {
      error = "--compat chakra output differs from reference/chakra.et";
      return;
    }
    reference_nodes = report.output_nodes;
  }
};

Gpt2& gpt2() {
  static Gpt2 g;
  return g;
}

#define REQUIRE_GPT2(g)                     \
  if (!(g).error.empty()) {                 \
    state.SkipWithError((g).error.c_str()); \
    return;                                 \
  }

void set_counters(benchmark::State& state, uint64_t items, uint64_t bytes) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * items));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

// The whole `chakraflow convert`: gunzip, parse, convert, write the .et file.
void BM_ConvertGpt2(benchmark::State& state) {
  auto& g = gpt2();
  REQUIRE_GPT2(g);
  ConvertOptions options;
  options.compat = state.range(0) ? Compat::kChakra : Compat::kDefault;
  const std::string out = temp_file("convert.et");
  for (auto _ : state) {
    ConvertReport report;
    Status s = convert_file(g.input, out, options, &report);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(report.output_nodes);
  }
  std::filesystem::remove(out);
  set_counters(state, g.nodes, g.input_bytes);
  state.SetLabel(options.compat == Compat::kChakra ? "compat=chakra" : "default");
}
BENCHMARK(BM_ConvertGpt2)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The stages alone, on a trace already in memory.
struct Loaded {
  EtPlusFile file;
  const EtPlusTrace& trace = file.trace;
  bool ok = false;
  Loaded() {
    auto& g = gpt2();
    if (!g.error.empty()) return;
    auto f = load_et_plus(g.input, ConvertOptions());
    if (!f.ok()) return;
    file = std::move(f).value();
    ok = true;
  }
};

Loaded& loaded() {
  static Loaded l;
  return l;
}

void BM_LoadHostTrace(benchmark::State& state) {
  auto& g = gpt2();
  REQUIRE_GPT2(g);
  for (auto _ : state) {
    auto h = load_host_trace(g.input);
    benchmark::DoNotOptimize(h.ok());
  }
  set_counters(state, g.nodes, g.input_bytes);
}
BENCHMARK(BM_LoadHostTrace)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LoadEtPlus(benchmark::State& state) {
  auto& g = gpt2();
  REQUIRE_GPT2(g);
  for (auto _ : state) {
    auto t = load_et_plus(g.input, ConvertOptions());
    benchmark::DoNotOptimize(t.ok());
  }
  set_counters(state, g.nodes, g.input_bytes);
}
BENCHMARK(BM_LoadEtPlus)->Unit(benchmark::kMillisecond)->UseRealTime();

// A generated rank (chakraflow synth, scale 1: about 10 MB of JSON), linked into ET+ once; then
// the whole conversion, file to file. Needs no ../shared/data. Checked before timing: every node
// but the process root converts.
struct SynthEtPlus {
  std::string path = temp_file("synth_et_plus.json");
  uint64_t bytes = 0, nodes = 0;
  std::string error;
  SynthEtPlus() {
    SynthOptions opt;
    opt.ranks = 1;
    opt.scale = 1;
    auto [host_text, device_text, stats] = synthesize_rank_text(opt, 0);
    auto host = parse_host_trace("synth_host.json", std::move(host_text));
    auto device = parse_device_trace("synth_device.json", std::move(device_text));
    if (!host.ok() || !device.ok()) {
      error = !host.ok() ? host.status().message() : device.status().message();
      return;
    }
    auto linked = link_traces(*host, *device, LinkOptions());
    if (!linked.ok()) {
      error = linked.status().message();
      return;
    }
    std::string text;
    Status s = write_et_plus(*host, *device, *linked, LinkOptions(),
                             [&](std::string_view b) { text.append(b); });
    if (s.ok()) s = write_file_atomically(path, text);
    if (!s.ok()) {
      error = s.message();
      return;
    }
    bytes = text.size();
    ConvertReport report;
    s = convert_file(path, temp_file("synth_check.et"), ConvertOptions(), &report);
    std::remove(temp_file("synth_check.et").c_str());
    if (!s.ok()) {
      error = s.message();
    } else if (report.output_nodes + 1 < report.input_nodes || report.output_nodes == 0) {
      error = "check failed: only " + std::to_string(report.output_nodes) + " of " +
              std::to_string(report.input_nodes) + " nodes converted";
    }
    nodes = report.input_nodes;
  }
  ~SynthEtPlus() { std::remove(path.c_str()); }
};

void BM_ConvertSynthetic(benchmark::State& state) {
  static SynthEtPlus synth;
  if (!synth.error.empty()) {
    state.SkipWithError(synth.error.c_str());
    return;
  }
  const std::string out = temp_file("synth.et");
  for (auto _ : state) {
    Status s = convert_file(synth.path, out, ConvertOptions(), nullptr);
    benchmark::DoNotOptimize(s.ok());
  }
  std::remove(out.c_str());
  set_counters(state, synth.nodes, synth.bytes);
}
BENCHMARK(BM_ConvertSynthetic)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ConvertStages(benchmark::State& state) {
  auto& g = gpt2();
  REQUIRE_GPT2(g);
  auto& l = loaded();
  for (auto _ : state) {
    DataProblems stats;
    auto c = convert_et_plus(l.trace, ConvertOptions(), stats);
    benchmark::DoNotOptimize(c.ok());
  }
  set_counters(state, g.nodes, g.input_bytes);
}
BENCHMARK(BM_ConvertStages)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_WriteEt(benchmark::State& state) {
  auto& g = gpt2();
  REQUIRE_GPT2(g);
  auto& l = loaded();
  DataProblems stats;
  auto c = convert_et_plus(l.trace, ConvertOptions(), stats);
  if (!c.ok()) {
    state.SkipWithError(c.status().message().c_str());
    return;
  }
  const std::string out = temp_file("write.et");
  uint64_t bytes = 0;
  for (auto _ : state) {
    auto w = EtWriter::open(out);
    if (!w.ok()) state.SkipWithError(w.status().message().c_str());
    Status s = write_chakra_trace(l.trace, *c, ConvertOptions(), *w);
    s = w->commit();
    bytes = w->bytes_written();
  }
  std::filesystem::remove(out);
  set_counters(state, c->nodes.size(), bytes);
}
BENCHMARK(BM_WriteEt)->Unit(benchmark::kMillisecond)->UseRealTime();

// Reading Chakra's own .et file (11 MB) into Node messages.
void BM_ReadEt(benchmark::State& state) {
  auto& g = gpt2();
  REQUIRE_GPT2(g);
  uint64_t nodes = 0;
  for (auto _ : state) {
    auto r = EtReader::open(g.reference);
    if (!r.ok()) state.SkipWithError(r.status().message().c_str());
    ChakraProtoMsg::GlobalMetadata md;
    ChakraProtoMsg::Node node;
    (void)r->next(&md);
    nodes = 0;
    while (true) {
      auto more = r->next(&node);
      if (!more.ok() || !*more) break;
      ++nodes;
    }
  }
  if (nodes != g.reference_nodes) state.SkipWithError("node count differs from the reference");
  set_counters(state, nodes, g.reference_bytes);
}
BENCHMARK(BM_ReadEt)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_JsonizeEt(benchmark::State& state) {
  auto& g = gpt2();
  REQUIRE_GPT2(g);
  JsonizeOptions options;
  options.concatenated = state.range(0) != 0;
  const std::string out = temp_file("out.json");
  for (auto _ : state) {
    JsonizeReport report;
    Status s = jsonize_file(g.reference, out, options, &report);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
  }
  std::filesystem::remove(out);
  set_counters(state, g.reference_nodes, g.reference_bytes);
  state.SetLabel(options.concatenated ? "concatenated" : "document");
}
BENCHMARK(BM_JsonizeEt)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace chakraflow
