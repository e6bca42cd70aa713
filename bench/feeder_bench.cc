// Feeder benchmarks: nodes issued per second (items_per_second) through the synchronous loop
// issue -> complete, on chakra.0.et (3,664 nodes, 181,878 data dependencies) and on a trace of
// >= 10M nodes made by tiling it (copies with ids shifted, so each copy is an independent graph).
// Every run checks the node count and the end state before its time is reported.
//
// The tiled trace (~8 GB for 2,731 copies) is written once per run to $TMPDIR and removed at exit
// (CHAKRAFLOW_BENCH_TILES sets the number of copies; CHAKRAFLOW_BENCH_KEEP=1 keeps the file).
// `feeder_bench --write_tiled=PATH --tiles=K` only writes a tiled trace (for /usr/bin/time -v
// chakraflow feed PATH --window N: peak RSS against trace size).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "proto/et_def.pb.h"
#include "stages/et/et_io.h"
#include "stages/feed/compat/et_feeder.h"
#include "stages/feed/et_feeder.h"
#include "stages/feed/multi_feeder.h"

namespace chakraflow {
namespace {

const std::string kChakra0 =
    std::string(CHAKRAFLOW_SHARED_DATA) + "/chakra_et/resnet_ddp_rank0/chakra.0.et";
constexpr uint64_t kChakra0Nodes = 3664;

// Writes `tiles` copies of `source`, node ids (and dependency ids) of copy k shifted by
// k * (max id + 1). Returns the number of nodes written.
StatusOr<uint64_t> write_tiled(const std::string& source, const std::string& out, uint64_t tiles) {
  CF_ASSIGN_OR_RETURN(EtReader reader, EtReader::open(source));
  ChakraProtoMsg::GlobalMetadata metadata;
  CF_ASSIGN_OR_RETURN(bool have, reader.next(&metadata));
  if (!have) return Status::errorf("{}: empty", source);
  // Per node: id, deps, and the serialized rest; a copy is then a few varints and a memcpy.
  struct Template {
    uint64_t id;
    std::vector<uint64_t> ctrl, data;
    std::string rest;
  };
  std::vector<Template> nodes;
  uint64_t max_id = 0;
  ChakraProtoMsg::Node node;
  while (true) {
    CF_ASSIGN_OR_RETURN(have, reader.next(&node));
    if (!have) break;
    Template t{node.id(),
               {node.ctrl_deps().begin(), node.ctrl_deps().end()},
               {node.data_deps().begin(), node.data_deps().end()},
               {}};
    max_id = std::max(max_id, t.id);
    node.clear_id();
    node.clear_ctrl_deps();
    node.clear_data_deps();
    t.rest = node.SerializeAsString();
    nodes.push_back(std::move(t));
  }
  CF_ASSIGN_OR_RETURN(EtWriter writer, EtWriter::open(out));
  writer.write(metadata);
  std::string record, packed;
  auto put_list = [&](int field, const std::vector<uint64_t>& ids, uint64_t shift) {
    if (ids.empty()) return;
    packed.clear();
    for (uint64_t id : ids) append_varint(packed, id + shift);
    append_varint(record, (static_cast<uint64_t>(field) << 3) | 2);
    append_varint(record, packed.size());
    record += packed;
  };
  for (uint64_t k = 0; k < tiles; ++k) {
    const uint64_t shift = k * (max_id + 1);
    for (const Template& t : nodes) {
      record.clear();
      append_varint(record, (1 << 3) | 0);
      append_varint(record, t.id + shift);
      put_list(4, t.ctrl, shift);
      put_list(5, t.data, shift);
      record += t.rest;
      writer.write_raw(record);
    }
  }
  CF_RETURN_IF_ERROR(writer.commit());
  return tiles * nodes.size();
}

// The synchronous loop; returns the nodes issued, or an error if the feed did not end "done".
StatusOr<uint64_t> feed_all(const std::string& path, const FeederOptions& options,
                            uint64_t* checksum = nullptr) {
  CF_ASSIGN_OR_RETURN(std::unique_ptr<EtFeeder> feeder, EtFeeder::open(path, options));
  uint64_t issued = 0;
  IssueChecksum sum;
  while (const FeederNode* node = feeder->issue()) {
    sum.add(node->id);
    CF_RETURN_IF_ERROR(feeder->complete(node->id));
    ++issued;
  }
  if (feeder->state() != FeedState::kDone) {
    return Status::errorf("{}: feed ended {}", path, to_string(feeder->state()));
  }
  if (checksum) *checksum = sum.value();
  return issued;
}

void BM_Feed_Chakra0(benchmark::State& state) {
  FeederOptions options;
  options.window = static_cast<uint64_t>(state.range(0));
  uint64_t nodes = 0;
  for (auto _ : state) {
    auto issued = feed_all(kChakra0, options);
    if (!issued.ok() || *issued != kChakra0Nodes) {
      state.SkipWithError(issued.ok() ? "wrong node count" : issued.status().message().c_str());
      return;
    }
    nodes += *issued;
  }
  state.SetItemsProcessed(static_cast<int64_t>(nodes));
  state.counters["window"] = static_cast<double>(options.window);
}
BENCHMARK(BM_Feed_Chakra0)->Arg(1 << 20)->Arg(1024)->Arg(16)->Unit(benchmark::kMillisecond);

// Chakra's API (compat layer: a protobuf Node and an ETFeederNode per node), driven as ASTRA-sim
// does: get -> freeChildren -> remove.
void BM_Compat_Chakra0(benchmark::State& state) {
  uint64_t nodes = 0;
  for (auto _ : state) {
    Chakra::ETFeeder feeder(kChakra0);
    uint64_t issued = 0;
    while (auto node = feeder.getNextIssuableNode()) {
      feeder.freeChildrenNodes(node->id());
      feeder.removeNode(node->id());
      ++issued;
    }
    if (issued != kChakra0Nodes || feeder.hasNodesToIssue()) {
      state.SkipWithError("compat feed did not issue every node");
      return;
    }
    nodes += issued;
  }
  state.SetItemsProcessed(static_cast<int64_t>(nodes));
}
BENCHMARK(BM_Compat_Chakra0)->Unit(benchmark::kMillisecond);

// 8 ranks of chakra.0.et on the MultiFeeder: parallel release, one shared queue.
void BM_Multi_Chakra0x8(benchmark::State& state) {
  const std::vector<std::string> paths(8, kChakra0);
  uint64_t nodes = 0;
  for (auto _ : state) {
    auto feeder = MultiFeeder::open(paths);
    if (!feeder.ok()) {
      state.SkipWithError(feeder.status().message().c_str());
      return;
    }
    uint64_t issued = 0;
    std::vector<Completion> batch;
    while (true) {
      (*feeder)->release_ready();
      batch.clear();
      ReadyNode ready;
      while ((*feeder)->try_pop(&ready)) {
        batch.push_back(Completion{ready.rank, ready.id,
                                   ready.time + static_cast<int64_t>(ready.node->duration_micros)});
      }
      if (batch.empty()) break;
      issued += batch.size();
      if (!(*feeder)->complete_all(batch).ok()) {
        state.SkipWithError("complete_all failed");
        return;
      }
    }
    if (issued != 8 * kChakra0Nodes || (*feeder)->state() != FeedState::kDone) {
      state.SkipWithError("multi feed did not issue every node");
      return;
    }
    nodes += issued;
  }
  state.SetItemsProcessed(static_cast<int64_t>(nodes));
}
BENCHMARK(BM_Multi_Chakra0x8)->Unit(benchmark::kMillisecond)->UseRealTime();

// The tiled trace, written on first use.
struct Tiled {
  std::string path;
  uint64_t nodes = 0;
  std::string error;
  bool keep = false;
  ~Tiled() {
    std::error_code ec;
    if (!path.empty() && !keep) std::filesystem::remove(path, ec);
  }
};
Tiled& tiled() {
  static Tiled t = [] {
    Tiled t;
    const char* tiles_env = std::getenv("CHAKRAFLOW_BENCH_TILES");
    const uint64_t tiles = tiles_env ? std::strtoull(tiles_env, nullptr, 10) : 2731;  // >= 10M
    t.keep = std::getenv("CHAKRAFLOW_BENCH_KEEP") != nullptr;
    t.path = (std::filesystem::temp_directory_path() /
              fmt::format("chakraflow_bench_tiled_{}.et", tiles))
                 .string();
    auto written = write_tiled(kChakra0, t.path, tiles);
    if (written.ok()) {
      t.nodes = *written;
    } else {
      t.error = written.status().message();
    }
    return t;
  }();
  return t;
}

void BM_Feed_Tiled(benchmark::State& state) {
  Tiled& t = tiled();
  if (!t.error.empty()) {
    state.SkipWithError(t.error.c_str());
    return;
  }
  FeederOptions options;
  options.window = static_cast<uint64_t>(state.range(0));
  uint64_t nodes = 0;
  for (auto _ : state) {
    auto issued = feed_all(t.path, options);
    if (!issued.ok() || *issued != t.nodes) {
      state.SkipWithError(issued.ok() ? "wrong node count" : issued.status().message().c_str());
      return;
    }
    nodes += *issued;
  }
  state.SetItemsProcessed(static_cast<int64_t>(nodes));
  state.counters["nodes"] = static_cast<double>(t.nodes);
  state.counters["window"] = static_cast<double>(options.window);
}
BENCHMARK(BM_Feed_Tiled)->Arg(1 << 20)->Arg(1024)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace chakraflow

int main(int argc, char** argv) {
  std::string write_path;
  uint64_t tiles = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--write_tiled=", 14) == 0) write_path = argv[i] + 14;
    if (std::strncmp(argv[i], "--tiles=", 8) == 0) tiles = std::strtoull(argv[i] + 8, nullptr, 10);
  }
  if (!write_path.empty()) {
    auto written = chakraflow::write_tiled(chakraflow::kChakra0, write_path, tiles ? tiles : 1);
    if (!written.ok()) {
      std::fprintf(stderr, "feeder_bench: %s\n", written.status().message().c_str());
      return 1;
    }
    std::printf("%s: %llu nodes\n", write_path.c_str(), static_cast<unsigned long long>(*written));
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
