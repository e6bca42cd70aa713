// `chakraflow run` converts a linked rank in memory (read_linked_nodes, here in ranges of 3 host
// nodes) instead of writing its ET+ and reading it back (write_et_plus + load_et_plus). The two
// must give the same .et bytes and count the same data problems: checked on every real pair in
// ../shared/data, on generated ranks
// (sync dependencies, collectives, both host layouts), on hand-made nodes whose fields the writer
// overrides, in every combination of link and convert compat modes; and through the CLI.
// In memory, the host nodes are read as `run` reads them: the converter's nodes made in the
// loader's pass (EtPlusNodeSink), which must also leave the loader the same nodes as without it.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "proto/et_def.pb.h"
#include "stages/common/file_io.h"
#include "stages/common/ordered_batches.h"
#include "stages/convert/et_plus_nodes.h"
#include "stages/convert/pytorch_converter.h"
#include "stages/et/et_io.h"
#include "stages/generate/synthetic_trace.h"
#include "stages/link/device_trace_loader.h"
#include "stages/link/et_plus_writer.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/link.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

namespace fs = std::filesystem;

struct Converted {
  std::string et;  // the .et bytes
  ConvertReport report;
};

struct Both {
  Converted via_file;  // write_et_plus → load_et_plus → convert
  Converted
      in_memory;  // the host trace loaded with an EtPlusNodeSink → read_linked_nodes → convert
};

// Loads the host trace again with a sink (the same text as the trace checked).
using Reload = std::function<StatusOr<HostTrace>(HostNodeSink* sink)>;

// The loader keeps the same nodes with a sink as without.
void expect_same_host(const HostTrace& a, const HostTrace& b) {
  EXPECT_EQ(a.schema, b.schema);
  EXPECT_EQ(a.layout, b.layout);
  EXPECT_EQ(a.top_level.size(), b.top_level.size());
  EXPECT_EQ(a.invalid_utf8_bytes, b.invalid_utf8_bytes);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  size_t differ = 0;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const HostNode& x = a.nodes[i];
    const HostNode& y = b.nodes[i];
    const bool same =
        x.id == y.id && x.parent == y.parent && x.rf_id == y.rf_id && x.tid == y.tid &&
        x.name == y.name && x.raw == y.raw && x.id_value.begin == y.id_value.begin &&
        x.id_value.end == y.id_value.end && x.name_value.begin == y.name_value.begin &&
        x.name_value.end == y.name_value.end && x.parent_value.begin == y.parent_value.begin &&
        x.parent_value.end == y.parent_value.end && x.parent_key == y.parent_key &&
        x.file_index == y.file_index && x.byte_offset == y.byte_offset;
    if (!same && differ++ < 3) ADD_FAILURE() << "host node " << x.id << " read differently";
  }
  EXPECT_EQ(differ, 0u);
}

// The node records of the .et at `path` (the records after the GlobalMetadata) are `expected`.
void expect_node_records(const std::string& path, const std::vector<std::string>& expected) {
  auto reader = EtReader::open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  std::string_view record;
  auto have = reader->next_raw(&record);  // GlobalMetadata
  ASSERT_TRUE(have.ok() && *have);
  size_t records = 0, differ = 0;
  while (true) {
    have = reader->next_raw(&record);
    ASSERT_TRUE(have.ok()) << have.status().message();
    if (!*have) break;
    differ += records >= expected.size() || record != expected[records];
    ++records;
  }
  EXPECT_EQ(records, expected.size());
  EXPECT_EQ(differ, 0u) << "records written unlike protobuf's";
}

Both convert_both_ways(const HostTrace& host, const DeviceTrace& device,
                       const LinkOptions& link_options, const ConvertOptions& convert_options,
                       const testing::TempDir& dir, const Reload& reload) {
  Both out;
  auto linked = link_traces(host, device, link_options);
  EXPECT_TRUE(linked.ok()) << linked.status().message();
  if (!linked.ok()) return out;
  LinkOptions resolved = link_options;
  resolved.mode = resolve_mode(device, link_options.mode);

  std::string et_plus;
  Status w = write_et_plus(host, device, *linked, resolved,
                           [&](std::string_view bytes) { et_plus.append(bytes); });
  EXPECT_TRUE(w.ok()) << w.message();
  testing::write_text(dir.file("et_plus.json"), et_plus);
  Status a = convert_file(dir.file("et_plus.json"), dir.file("file.et"), convert_options,
                          &out.via_file.report);
  EXPECT_TRUE(a.ok()) << a.message();
  out.via_file.et = testing::read_text(dir.file("file.et"));

  EtPlusNodeSink sink = EtPlusNodeSink::for_linking(host.path);
  auto again = reload(&sink);
  EXPECT_TRUE(again.ok()) << again.status().message();
  if (!again.ok()) return out;
  expect_same_host(host, *again);
  // The same nodes: the link's result holds for them too. Linked in ranges of 3 host nodes,
  // so that every trace's sync deps, communication names and exec_tids fall in many ranges.
  const OrderedBatches in_ranges_of_3(3);
  auto trace = read_linked_nodes(*again, std::move(sink), linked_device_facts(device, *linked),
                                 *linked, resolved, convert_options, &in_ranges_of_3);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  if (!trace.ok()) return out;
  Status b = convert_trace(*trace, dir.file("memory.et"), convert_options, &out.in_memory.report);
  EXPECT_TRUE(b.ok()) << b.message();
  // The writer encodes nodes without protobuf messages: the same bytes as the messages'.
  DataProblems stats;
  auto chakra = convert_et_plus(*trace, convert_options, stats);
  EXPECT_TRUE(chakra.ok());
  if (chakra.ok()) {
    std::string encoded;
    ChakraProtoMsg::Node node;
    size_t differ = 0;
    std::vector<std::string> expected;  // the node records protobuf would write
    for (const ChakraNodeRecord& rec : chakra->nodes) {
      EXPECT_TRUE(fill_node(*trace, *chakra, rec, &node).ok());
      EXPECT_TRUE(encode_node(*trace, *chakra, rec, encoded).ok());
      expected.push_back(node.SerializeAsString());
      differ += encoded != expected.back();
    }
    EXPECT_EQ(differ, 0u) << "nodes encoded unlike protobuf";
    // The file's records (after the metadata) are those, framed by their lengths.
    expect_node_records(dir.file("memory.et"), expected);
  }
  out.in_memory.et = testing::read_text(dir.file("memory.et"));
  return out;
}

void expect_same(const Converted& file, const Converted& memory, const std::string& what) {
  ASSERT_FALSE(file.et.empty()) << what;
  EXPECT_TRUE(file.et == memory.et)
      << what << ": .et differs (" << file.et.size() << " bytes via the ET+ file, "
      << memory.et.size() << " in memory)";
  const ConvertReport& f = file.report;
  const ConvertReport& m = memory.report;
  EXPECT_EQ(f.input_nodes, m.input_nodes) << what;
  EXPECT_EQ(f.output_nodes, m.output_nodes) << what;
  EXPECT_EQ(f.removed_dangling, m.removed_dangling) << what;
  EXPECT_EQ(f.gpu_stream_edges, m.gpu_stream_edges) << what;
  EXPECT_EQ(f.sync_edges, m.sync_edges) << what;
  // The same data problems, counted the same number of times.
  std::vector<std::pair<StatKind, uint64_t>> fc, mc;
  for (const auto& [k, e] : f.stats.entries()) fc.emplace_back(k, e.count);
  for (const auto& [k, e] : m.stats.entries()) mc.emplace_back(k, e.count);
  EXPECT_EQ(fc, mc) << what;
}

void expect_same(const Both& both, const std::string& what) {
  expect_same(both.via_file, both.in_memory, what);
}

constexpr Compat kModes[] = {Compat::kDefault, Compat::kChakra};

// Converts both ways in every combination of link and convert compat modes, expects the same
// results, and hands each result to `more` for further checks.
void check_all_modes(const HostTrace& host, const DeviceTrace& device, const std::string& name,
                     const Reload& reload, const std::function<void(const Both&)>& more = {}) {
  testing::TempDir dir;
  for (Compat link_compat : kModes) {
    for (Compat convert_compat : kModes) {
      LinkOptions lo;
      lo.compat = link_compat;
      ConvertOptions co;
      co.compat = convert_compat;
      Both both = convert_both_ways(host, device, lo, co, dir, reload);
      expect_same(
          both, name + (link_compat == Compat::kChakra ? " link chakra" : " link default") +
                    (convert_compat == Compat::kChakra ? ", convert chakra" : ", convert default"));
      if (more) more(both);
    }
  }
}

void check_pair(const std::string& host_path, const std::string& device_path,
                const std::string& name) {
  auto host = load_host_trace(host_path);
  ASSERT_TRUE(host.ok()) << host.status().message();
  auto device = load_device_trace(device_path);
  ASSERT_TRUE(device.ok()) << device.status().message();
  check_all_modes(*host, *device, name, [&](HostNodeSink* sink) {
    // In windows, as `run` reads a large host ET.
    return load_host_trace(host_path, sink, 4096);
  });
}

TEST(LinkedConvert, RealPairsGiveTheSameEtAsTheEtPlusFile) {
  CF_REQUIRE_SHARED_DATA("pairs");
  const fs::path pairs = testing::shared_data_dir() / "pairs";
  int checked = 0;
  for (const char* pair : {"simple_add", "resnet_1gpu"}) {
    for (const char* device : {"kineto.modern.json.gz", "kineto.legacy.json.gz"}) {
      check_pair((pairs / pair / "host_et.json.gz").string(), (pairs / pair / device).string(),
                 std::string(pair) + "/" + device);
      ++checked;
    }
  }
  for (int r = 0; r < 8; ++r) {
    const fs::path dir = pairs / "dlrm_8rank" / ("rank" + std::to_string(r));
    check_pair((dir / "host_et.json.gz").string(), (dir / "kineto.legacy.json.gz").string(),
               "dlrm rank " + std::to_string(r));
    ++checked;
  }
  EXPECT_EQ(checked, 12);
}

// The newest traces (PyTorch 2.11, fractional µs near 5e12: Chakra's float arithmetic) and a
// gloo rank whose collectives run on gloo's own threads.
TEST(LinkedConvert, Pt211PairsGiveTheSameEtAsTheEtPlusFile) {
  CF_REQUIRE_SHARED_DATA("pt211_h200");
  const fs::path data = testing::shared_data_dir() / "pt211_h200";
  for (const char* pair : {"gpt2_eager", "ddp_1rank_capture_script", "gloo_4rank/rank0"}) {
    check_pair((data / pair / "host_et.json.gz").string(),
               (data / pair / "kineto.json.gz").string(), pair);
  }
}

TEST(LinkedConvert, GeneratedRanksGiveTheSameEt) {
  for (bool legacy : {false, true}) {
    SynthOptions opt;
    opt.ranks = 2;
    opt.iterations = 2;
    opt.scale = 0.05;
    opt.legacy = legacy;
    for (int rank = 0; rank < 2; ++rank) {
      // Named, not a structured binding: clang 14 does not capture a binding in the lambda below.
      const SynthRankText text = synthesize_rank_text(opt, rank);
      auto host = parse_host_trace("host.json", text.host);
      ASSERT_TRUE(host.ok()) << host.status().message();
      auto device = parse_device_trace("kineto.json", text.device);
      ASSERT_TRUE(device.ok()) << device.status().message();
      testing::TempDir dir;
      for (Compat link_compat : kModes) {
        LinkOptions lo;
        lo.compat = link_compat;
        Both both =
            convert_both_ways(*host, *device, lo, ConvertOptions(), dir, [&](HostNodeSink* sink) {
              // In windows, as `run` reads a large host ET.
              auto t = parse_host_trace("host.json", text.host, size_t{4096}, sink);
              EXPECT_TRUE(!t.ok() || t->parse_windows > 10);
              return t;
            });
        const std::string what = fmt::format("synth rank {}{}{}", rank, legacy ? " legacy" : "",
                                             link_compat == Compat::kChakra ? " chakra" : "");
        expect_same(both, what);
        // Not vacuous: GPU nodes, sync dependencies and stream edges were converted.
        EXPECT_GT(both.in_memory.report.output_nodes, 100u) << what;
        if (link_compat == Compat::kDefault) {
          EXPECT_GT(both.in_memory.report.sync_edges, 0u) << what;
          EXPECT_GT(both.in_memory.report.gpu_stream_edges, 0u) << what;
        }
      }
    }
  }
}

// A generated rank linked and converted (default modes) both ways.
void convert_synth_rank(const SynthOptions& opt, int rank, const testing::TempDir& dir, Both* both,
                        SynthRankStats* stats) {
  std::string host_text, device_text;
  *stats = synthesize_rank(
      opt, rank, [&](std::string_view s) { host_text.append(s); },
      [&](std::string_view s) { device_text.append(s); });
  auto host = parse_host_trace("host.json", host_text);
  ASSERT_TRUE(host.ok()) << host.status().message();
  auto device = parse_device_trace("kineto.json", device_text);
  ASSERT_TRUE(device.ok()) << device.status().message();
  *both = convert_both_ways(
      *host, *device, LinkOptions(), ConvertOptions(), dir,
      [&](HostNodeSink* sink) { return parse_host_trace("host.json", host_text, sink); });
}

// Generated collectives carry their bucket's size, as PyTorch records it on the nccl: op: every
// collective node's comm_size is its input tensor's bytes (numel from its shapes, 4-byte floats),
// never 0.
TEST(LinkedConvert, GeneratedCollectivesCarryTheirTensorBytes) {
  for (bool legacy : {false, true}) {
    SynthOptions opt;
    opt.ranks = 2;
    opt.iterations = 2;
    opt.scale = 0.05;
    opt.legacy = legacy;
    testing::TempDir dir;
    Both both;
    SynthRankStats stats;
    ASSERT_NO_FATAL_FAILURE(convert_synth_rank(opt, 1, dir, &both, &stats));
    const std::string et = dir.file("collectives.et");
    testing::write_text(et, both.in_memory.et);
    auto reader = EtReader::open(et);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    ChakraProtoMsg::GlobalMetadata metadata;
    ASSERT_TRUE(*reader->next(&metadata));
    ChakraProtoMsg::Node node;
    uint64_t collectives = 0;
    while (*reader->next(&node)) {
      if (node.type() != ChakraProtoMsg::COMM_COLL_NODE) continue;
      ++collectives;
      int64_t comm_size = -1;
      for (const auto& a : node.attr()) {
        if (a.name() == "comm_size") comm_size = a.int64_val();
      }
      const std::string& shapes = node.inputs().shapes();  // "[[numel]]"
      ASSERT_EQ(shapes.rfind("[[", 0), 0u) << node.name() << ": " << shapes;
      const int64_t numel = std::stoll(shapes.substr(2));
      EXPECT_GT(comm_size, 0) << node.name() << " (node " << node.id() << ")";
      EXPECT_EQ(comm_size, numel * 4) << node.name() << " (node " << node.id() << ")";
    }
    EXPECT_EQ(collectives, stats.collectives) << (legacy ? "legacy" : "modern");
    EXPECT_GT(collectives, 0u);
  }
}

// A host ET the windows cannot read (invalid UTF-8 halfway, which the whole parse repairs): the
// loader reads it again whole, and the sink forgets what it received in the windows before.
TEST(LinkedConvert, OnePassAfterTheWindowsGiveUp) {
  SynthOptions opt;
  opt.ranks = 2;
  opt.scale = 0.05;
  SynthRankText text = synthesize_rank_text(opt, 0);  // no structured binding: see above
  const size_t name = text.host.find("\"name\": \"", text.host.size() / 2);
  ASSERT_NE(name, std::string::npos);
  text.host.insert(name + 9, "\xff");
  auto host = parse_host_trace("host.json", text.host);
  ASSERT_TRUE(host.ok()) << host.status().message();
  EXPECT_EQ(host->invalid_utf8_bytes, 1u);
  auto device = parse_device_trace("kineto.json", text.device);
  ASSERT_TRUE(device.ok()) << device.status().message();
  check_all_modes(*host, *device, "invalid UTF-8 halfway", [&](HostNodeSink* sink) {
    auto t = parse_host_trace("host.json", text.host, size_t{4096}, sink);
    EXPECT_TRUE(!t.ok() || t->parse_windows == 0);  // the whole parse took over
    return t;
  });
}

// Host nodes whose own fields the ET+ writer's keys replace or must not replace: an existing ts,
// exclusive_dur, stream and inter_thread_dep; a pg_name attr (wins over the kernel's pg_name);
// both parent and ctrl_deps; no inputs/outputs; an op_schema with an escaped lone surrogate; a
// collective without the attr in a later range than one with it (its kernel's pg_name is new).
TEST(LinkedConvert, OverriddenFieldsFollowTheWriter) {
  const std::string host =
      R"J({"schema": "1.1.1-chakra.0.0.4", "pid": 7, "time": "t", "start_ts": 1,
  "finish_ts": 2, "nodes": [
  {"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "ctrl_deps": 1, "inputs": {"values": [], "shapes": [], "types": []}, "outputs": {"values": [], "shapes": [], "types": []}, "attrs": [{"name": "rf_id", "type": "uint64", "value": 0}, {"name": "tid", "type": "uint64", "value": 0}]},
  {"id": 2, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 1, "inputs": {"values": [], "shapes": [], "types": []}, "outputs": {"values": [], "shapes": [], "types": []}, "attrs": [{"name": "rf_id", "type": "uint64", "value": 0}, {"name": "tid", "type": "uint64", "value": 1}]},
  {"id": 3, "name": "aten::mm", "ctrl_deps": 2, "parent": 1, "ts": 5, "exclusive_dur": 99, "stream": null, "inter_thread_dep": 2, "inputs": {"values": [[1,2]], "shapes": [[2]], "types": ["Tensor(float)"]}, "outputs": {"values": [], "shapes": [], "types": []}, "attrs": [{"name": "rf_id", "type": "uint64", "value": 10}, {"name": "tid", "type": "uint64", "value": 1}, {"name": "op_schema", "type": "string", "value": "mm\udc80"}]},
  {"id": 4, "name": "record_param_comms", "ctrl_deps": 2, "attrs": [{"name": "rf_id", "type": "uint64", "value": 11}, {"name": "tid", "type": "uint64", "value": 1}, {"name": "pg_name", "type": "string", "value": "attr_pg"}]},
  {"id": 5, "name": "aten::add", "parent": 2, "cat": null, "inputs": {"values": [], "shapes": [], "types": []}, "outputs": {"values": [], "shapes": [], "types": []}, "attrs": [{"name": "rf_id", "type": "uint64", "value": 12}, {"name": "tid", "type": "uint64", "value": 1}]},
  {"id": 6, "name": "record_param_comms", "ctrl_deps": 2, "attrs": [{"name": "rf_id", "type": "uint64", "value": 13}, {"name": "tid", "type": "uint64", "value": 1}]}
  ]})J";
  const std::string device = R"J({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 1, "ts": 100.5, "dur": 10, "args": {"External id": 1, "Record function id": 10}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 1, "ts": 101, "dur": 2, "args": {"External id": 1, "correlation": 21}},
  {"ph": "X", "cat": "kernel", "name": "gemm\udc80", "pid": 0, "tid": 7, "ts": 105.25, "dur": 3, "args": {"External id": 1, "correlation": 21, "stream": 7, "device": 0}},
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 7, "tid": 1, "ts": 120, "dur": 5, "args": {"External id": 2, "Record function id": 11, "Process Group Name": "0"}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 1, "ts": 121, "dur": 1, "args": {"External id": 2, "correlation": 22}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "pid": 0, "tid": 8, "ts": 130, "dur": 20, "args": {"External id": 2, "correlation": 22, "stream": 8, "device": 0, "Process Group Name": "kernel_pg"}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 7, "tid": 1, "ts": 160, "dur": 4, "args": {"External id": 3, "Record function id": 12}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 1, "ts": 161, "dur": 1, "args": {"External id": 3, "correlation": 23}},
  {"ph": "X", "cat": "kernel", "name": "add_kernel", "pid": 0, "tid": 7, "ts": 170, "dur": 0.5, "args": {"External id": 3, "correlation": 23, "stream": 7, "device": 0}},
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 7, "tid": 1, "ts": 180, "dur": 5, "args": {"External id": 4, "Record function id": 13}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 1, "ts": 181, "dur": 1, "args": {"External id": 4, "correlation": 24}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather", "pid": 0, "tid": 8, "ts": 190, "dur": 9, "args": {"External id": 4, "correlation": 24, "stream": 8, "device": 0, "Process Group Name": "second_pg"}}
  ]})J";
  auto h = parse_host_trace("host.json", host);
  ASSERT_TRUE(h.ok()) << h.status().message();
  auto d = parse_device_trace("kineto.json", device);
  ASSERT_TRUE(d.ok()) << d.status().message();
  auto reload = [&](HostNodeSink* sink) { return parse_host_trace("host.json", host, sink); };
  check_all_modes(*h, *d, "hand-made", reload, [](const Both& both) {
    EXPECT_EQ(both.in_memory.report.input_nodes, 10u);  // 6 host nodes, 4 GPU nodes
    // Not vacuous: the lone surrogate and the missing lists were counted.
    EXPECT_GT(both.in_memory.report.stats.count(StatKind::kEtPlusStringNotUtf8), 0u);
    EXPECT_GT(both.in_memory.report.stats.count(StatKind::kEtPlusNodeWithoutIo), 1u);
  });
}

TEST(LinkedConvert, RunWritesTheSameEtAsLinkThenConvert) {
  CF_REQUIRE_SHARED_DATA("pairs/dlrm_8rank/rank0");
  testing::TempDir dir;
  const fs::path pairs = testing::shared_data_dir() / "pairs" / "dlrm_8rank";
  const std::string bin = CHAKRAFLOW_BINARY;
  testing::write_text(dir.file("run.yaml"),
                      fmt::format("inputs:\n  host: {}/rank{{rank}}/host_et.json.gz\n"
                                  "  device: {}/rank{{rank}}/kineto.legacy.json.gz\n"
                                  "  ranks: [0, 3]\n"
                                  "stages: [link, convert]\noutputs:\n  dir: {}\n",
                                  pairs.string(), pairs.string(), dir.file("out")));
  std::string log;
  ASSERT_EQ(testing::run_command(bin + " run " + dir.file("run.yaml"), &log), 0) << log;
  for (int rank : {0, 3}) {
    const fs::path in = pairs / ("rank" + std::to_string(rank));
    const std::string et_plus = dir.file("et_plus." + std::to_string(rank) + ".json");
    const std::string et = dir.file("cli." + std::to_string(rank) + ".et");
    ASSERT_EQ(testing::run_command(
                  bin + " link --chakra-host-trace " + (in / "host_et.json.gz").string() +
                      " --chakra-device-trace " + (in / "kineto.legacy.json.gz").string() +
                      " --output-file " + et_plus,
                  &log),
              0)
        << log;
    ASSERT_EQ(testing::run_command(bin + " convert --input " + et_plus + " --output " + et, &log),
              0)
        << log;
    const std::string ran =
        testing::read_text(dir.file("out/trace." + std::to_string(rank) + ".et"));
    EXPECT_FALSE(ran.empty());
    EXPECT_TRUE(ran == testing::read_text(et)) << "rank " << rank;
  }
  // No ET+ was left beside the .et (none is written unless outputs.keep_et_plus).
  for (const auto& entry : fs::directory_iterator(dir.file("out"))) {
    EXPECT_EQ(entry.path().string().find("et_plus"), std::string::npos) << entry.path();
  }
}

}  // namespace
}  // namespace chakraflow
