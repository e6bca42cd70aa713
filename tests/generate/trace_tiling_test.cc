// Trace tiling: tiled real pairs link T times over, T = 1 links exactly like the original, the
// rewritten values (ids, rf_ids, fw_parent, times, flow ids, ProfilerStep names) on small
// handwritten traces, and errors that name the file.
#include "stages/generate/trace_tiling.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <set>

#include "stages/generate/synthetic_trace.h"
#include "stages/link/device_trace_loader.h"
#include "stages/link/et_plus_writer.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/link.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

using testing::shared_data_dir;

struct Tiled {
  std::string host, device;
  TileSummary summary;
};

Tiled tile(const std::string& host, const std::string& device, uint32_t times, TimeNs period = 0) {
  Tiled t;
  auto s = tile_trace_pair(
      "host.json", host, "device.json", device, times, period,
      [&t](std::string_view b) { t.host.append(b); },
      [&t](std::string_view b) { t.device.append(b); });
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (s.ok()) t.summary = *s;
  return t;
}

struct LinkCounts {
  uint64_t host_nodes = 0;
  uint64_t host_ops_linked = 0;
  uint64_t gpu_ops = 0;
  uint64_t gpu_ops_linked = 0;
  uint64_t et_plus_nodes = 0;
  std::string et_plus;              // the ET+ text
  std::unique_ptr<HostTrace> host;  // as loaded
};

LinkCounts link_pair(const std::string& host_text, const std::string& device_text) {
  LinkCounts c;
  auto host = parse_host_trace("host.json", host_text);
  auto device = parse_device_trace("device.json", device_text);
  EXPECT_TRUE(host.ok()) << host.status().message();
  EXPECT_TRUE(device.ok()) << device.status().message();
  if (!host.ok() || !device.ok()) return c;
  LinkOptions options;
  auto linked = link_traces(*host, *device, options);
  EXPECT_TRUE(linked.ok()) << linked.status().message();
  if (!linked.ok()) return c;
  c.host_nodes = host->nodes.size();
  for (const LinkedHostOp& op : linked->ops) c.host_ops_linked += op.device_event.valid();
  c.gpu_ops = device->gpu_ops.size();
  c.gpu_ops_linked = linked->gpu_events.size();
  c.et_plus_nodes = linked->node_count;
  options.mode = resolve_mode(*device, options.mode);
  Status written = write_et_plus(*host, *device, *linked, options,
                                 [&c](std::string_view b) { c.et_plus.append(b); });
  EXPECT_TRUE(written.ok()) << written.message();
  c.host = std::make_unique<HostTrace>(std::move(*host));
  return c;
}

void expect_unique_ids_and_rf_ids(const HostTrace& host) {
  std::set<uint64_t> ids, rf_ids;
  for (const HostNode& n : host.nodes) {
    EXPECT_TRUE(ids.insert(n.id).second) << "duplicate id " << n.id;
    if (n.rf_id != 0) {
      EXPECT_TRUE(rf_ids.insert(n.rf_id).second) << "duplicate rf_id " << n.rf_id;
    }
  }
}

// Tiles a real pair T = 3 times: it links 3 times over, ids and rf_ids stay unique.
void check_real_pair(const std::string& relative) {
  const std::string dir = (shared_data_dir() / "pairs" / relative).string();
  const std::string host = testing::read_text(dir + "/host_et.json.gz");
  const std::string device = testing::read_text(dir + "/kineto.modern.json.gz");
  LinkCounts original = link_pair(host, device);
  ASSERT_GT(original.host_ops_linked, 0u);
  ASSERT_GT(original.gpu_ops_linked, 0u);

  Tiled t = tile(host, device, 3);
  LinkCounts tiled = link_pair(t.host, t.device);
  ASSERT_NE(tiled.host, nullptr);
  EXPECT_EQ(tiled.host_ops_linked, 3 * original.host_ops_linked);
  EXPECT_EQ(tiled.gpu_ops_linked, 3 * original.gpu_ops_linked);
  EXPECT_EQ(tiled.gpu_ops, 3 * original.gpu_ops);
  // Every node 3 times but the process and thread roots, kept once.
  const uint64_t kept = t.summary.host_nodes_kept_once;
  EXPECT_GE(kept, 2u);
  EXPECT_LE(kept, 4u);
  EXPECT_EQ(tiled.host_nodes, 3 * original.host_nodes - 2 * kept);
  EXPECT_EQ(tiled.et_plus_nodes, 3 * original.et_plus_nodes - 2 * kept);
  expect_unique_ids_and_rf_ids(*tiled.host);
  EXPECT_EQ(t.summary.host_nodes_out, tiled.host_nodes);

  // T = 1 is the original: the same link, down to the ET+ bytes.
  Tiled once = tile(host, device, 1);
  LinkCounts same = link_pair(once.host, once.device);
  EXPECT_EQ(same.host_nodes, original.host_nodes);
  EXPECT_EQ(same.host_ops_linked, original.host_ops_linked);
  EXPECT_EQ(same.gpu_ops_linked, original.gpu_ops_linked);
  EXPECT_EQ(same.et_plus_nodes, original.et_plus_nodes);
  EXPECT_EQ(same.et_plus, original.et_plus);
}

TEST(TraceTiling, SimpleAddLinksThreeTimesOver) {
  CF_REQUIRE_SHARED_DATA("pairs/simple_add");
  check_real_pair("simple_add");
}

TEST(TraceTiling, DlrmRankLinksThreeTimesOver) {
  CF_REQUIRE_SHARED_DATA("pairs/dlrm_8rank/rank1");
  check_real_pair("dlrm_8rank/rank1");
}

// Schema 1.1.1 (attrs, ctrl_deps, process_group:init, ProfilerStep annotations): the generator's
// traces, so that this runs without ../shared/data.
TEST(TraceTiling, AttrsLayoutLinksThreeTimesOver) {
  SynthOptions opt;
  opt.ranks = 2;
  opt.scale = 0.05;
  auto [host, device, stats] = synthesize_rank_text(opt, 1);
  LinkCounts original = link_pair(host, device);
  Tiled t = tile(host, device, 3);
  LinkCounts tiled = link_pair(t.host, t.device);
  ASSERT_NE(tiled.host, nullptr);
  EXPECT_EQ(tiled.host->layout, HostLayout::kAttrs);
  EXPECT_EQ(tiled.host_ops_linked, 3 * original.host_ops_linked);
  EXPECT_EQ(tiled.gpu_ops_linked, 3 * original.gpu_ops_linked);
  expect_unique_ids_and_rf_ids(*tiled.host);
  EXPECT_EQ(t.summary.plan.step_span, opt.iterations);
  // The ProfilerStep annotations of copy k are numbered after those of copy k-1.
  std::set<std::string> steps;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(t.device).get(doc), simdjson::SUCCESS);
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    std::string_view name;
    if (e["name"].get(name) == simdjson::SUCCESS && name.starts_with("ProfilerStep#")) {
      EXPECT_TRUE(steps.insert(std::string(name)).second) << name;
    }
  }
  EXPECT_EQ(steps.size(), 3u * opt.iterations);
}

// What is rewritten, on a handwritten pair: schema 1.0.2 attrs, a fw_parent to the thread root
// (kept) and one to an op (offset), fractional times, a flow event, metadata.
constexpr std::string_view kHost = R"({"schema": "1.0.2-chakra.0.0.4", "pid": 7, "time": "t",
 "start_ts": 100, "nodes": [
  {"id": 2, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 1, "extra": [1, {"a": 2}],
   "attrs": [{"name": "rf_id", "type": "uint64", "value": 0}, {"name": "tid", "type": "uint64", "value": 1}]},
  {"id": 5, "name": "aten::add", "ctrl_deps": 2, "inputs": {"values": [[9, 10, 0, 1, 4, "cuda:0"]]},
   "attrs": [{"name": "rf_id", "type": "uint64", "value": 3}, {"name": "fw_parent", "type": "uint64", "value": 2},
             {"name": "tid", "type": "uint64", "value": 1}]},
  {"id": 7, "name": "aten::mul", "ctrl_deps": 5,
   "attrs": [{"value": 5, "type": "uint64", "name": "fw_parent"}, {"name": "rf_id", "type": "uint64", "value": 4},
             {"name": "tid", "type": "uint64", "value": 1}]},
  {"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "ctrl_deps": 1,
   "attrs": [{"name": "rf_id", "type": "uint64", "value": 0}]}
 ], "finish_ts": 102})";

constexpr std::string_view kDevice = R"({"schemaVersion": 1, "traceEvents": [
  {"ph": "M", "name": "thread_name", "ts": 1000.5, "pid": 7, "tid": 1, "args": {"name": "main"}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 7, "tid": 1, "ts": 1000.500, "dur": 10,
   "args": {"External id": 3, "Record function id": 3, "Ev Idx": 0}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 7, "tid": 1, "ts": 1002, "dur": 2,
   "args": {"External id": 4, "Record function id": 4}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 1, "ts": 1003, "dur": 1,
   "args": {"External id": 4, "correlation": 11}},
  {"ph": "s", "id": 11, "pid": 7, "tid": 1, "ts": 1003, "cat": "ac2g", "name": "ac2g"},
  {"id": 11, "ph": "f", "pid": 0, "tid": 7, "ts": 1004, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1004, "dur": 6.25,
   "args": {"External id": 4, "correlation": 11, "stream": 7}}
 ], "deviceProperties": [{"id": 0}], "traceName": "x"})";

TEST(TraceTiling, RewritesIdsRfIdsTimesAndKeepsTheRest) {
  Tiled t = tile(std::string(kHost), std::string(kDevice), 2);
  const TilePlan& plan = t.summary.plan;
  EXPECT_EQ(plan.id_span, 8u);
  EXPECT_EQ(plan.rf_span, 5u);
  EXPECT_EQ(plan.corr_span, 12u);
  EXPECT_EQ(plan.ext_span, 5u);
  // 1000.5 .. 1010.5 us: 10 us + 1 us of gap.
  EXPECT_EQ(plan.length, 10'000);
  EXPECT_EQ(plan.period, 11'000);
  EXPECT_EQ(t.summary.host_nodes_out, 2u + 2 * 2);
  EXPECT_EQ(t.summary.device_events_out, 1u + 2 * 6);

  simdjson::dom::parser hp, dp;
  simdjson::dom::element host, device;
  ASSERT_EQ(hp.parse(t.host).get(host), simdjson::SUCCESS) << t.host;
  ASSERT_EQ(dp.parse(t.device).get(device), simdjson::SUCCESS) << t.device;
  EXPECT_EQ(int64_t(host["finish_ts"]), 103);  // + 1 period of 11 us, in ms rounded up
  EXPECT_EQ(int64_t(host["start_ts"]), 100);
  auto nodes = host["nodes"].get_array();
  ASSERT_EQ(nodes.size(), 6u);
  // Copy 0 as written, the thread root kept once, then copy 1, then the process root (last).
  std::vector<int64_t> ids;
  for (auto n : nodes) ids.push_back(int64_t(n["id"]));
  EXPECT_EQ(ids, (std::vector<int64_t>{2, 5, 7, 13, 15, 1}));
  auto attr = [](simdjson::dom::element n, std::string_view name) -> int64_t {
    for (auto a : n["attrs"].get_array()) {
      if (std::string_view(a["name"]) == name) return int64_t(a["value"]);
    }
    return -1;
  };
  simdjson::dom::element add1 = nodes.at(3), mul1 = nodes.at(4);
  EXPECT_EQ(int64_t(add1["ctrl_deps"]), 2);  // the thread root, kept
  EXPECT_EQ(attr(add1, "fw_parent"), 2);
  EXPECT_EQ(attr(add1, "rf_id"), 8);
  EXPECT_EQ(int64_t(mul1["ctrl_deps"]), 13);
  EXPECT_EQ(attr(mul1, "fw_parent"), 13);
  EXPECT_EQ(attr(mul1, "rf_id"), 9);
  EXPECT_EQ(attr(mul1, "tid"), 1);
  // Tensor ids and unknown fields are copied verbatim.
  EXPECT_EQ(simdjson::to_string(add1["inputs"]), R"({"values":[[9,10,0,1,4,"cuda:0"]]})");
  EXPECT_NE(t.host.find(R"("extra": [1, {"a": 2}])"), std::string::npos);

  auto events = device["traceEvents"].get_array();
  ASSERT_EQ(events.size(), 13u);
  // Copy 0 keeps the number formatting; copy 1 is shifted by 11 us.
  EXPECT_NE(t.device.find(R"("ts": 1000.500, "dur": 10,)"), std::string::npos);
  EXPECT_NE(t.device.find(R"("ts": 1011.5, "dur": 10,)"), std::string::npos);
  simdjson::dom::element add_copy = events.at(7), launch_copy = events.at(9);
  simdjson::dom::element flow_s = events.at(10), flow_f = events.at(11),
                         kernel_copy = events.at(12);
  EXPECT_EQ(int64_t(add_copy["args"]["External id"]), 8);
  EXPECT_EQ(int64_t(add_copy["args"]["Record function id"]), 8);
  EXPECT_EQ(int64_t(add_copy["args"]["Ev Idx"]), 0);
  EXPECT_EQ(int64_t(launch_copy["args"]["correlation"]), 23);
  EXPECT_EQ(int64_t(launch_copy["ts"]), 1014);
  EXPECT_EQ(int64_t(flow_s["id"]), 23);
  EXPECT_EQ(int64_t(flow_f["id"]), 23);
  EXPECT_EQ(int64_t(kernel_copy["args"]["correlation"]), 23);
  EXPECT_EQ(int64_t(kernel_copy["args"]["stream"]), 7);
  EXPECT_EQ(double(kernel_copy["dur"]), 6.25);
  EXPECT_EQ(std::string_view(events.at(0)["ph"]), "M");  // metadata once
  EXPECT_EQ(simdjson::to_string(device["deviceProperties"]), R"([{"id":0}])");
  EXPECT_EQ(std::string_view(device["traceName"]), "x");

  // Both link completely, the copy as well as the original.
  LinkCounts original = link_pair(std::string(kHost), std::string(kDevice));
  LinkCounts tiled = link_pair(t.host, t.device);
  EXPECT_EQ(original.host_ops_linked, 2u);
  EXPECT_EQ(original.gpu_ops_linked, 1u);
  EXPECT_EQ(tiled.host_ops_linked, 4u);
  EXPECT_EQ(tiled.gpu_ops_linked, 2u);

  // Deterministic.
  Tiled again = tile(std::string(kHost), std::string(kDevice), 2);
  EXPECT_EQ(again.host, t.host);
  EXPECT_EQ(again.device, t.device);
}

TEST(TraceTiling, PeriodOption) {
  Tiled t = tile(std::string(kHost), std::string(kDevice), 3, 20'400);  // rounded up to 21 us
  EXPECT_EQ(t.summary.plan.period, 21'000);
  EXPECT_NE(t.device.find(R"("ts": 1042.5, "dur": 10,)"), std::string::npos);
  auto host = parse_tile_host("h.json", std::string(kHost));
  auto device = parse_tile_device("d.json", std::string(kDevice));
  ASSERT_TRUE(host.ok() && device.ok());
  auto short_period = plan_tiling(*host, *device, 3, 5'000);
  ASSERT_FALSE(short_period.ok());
  EXPECT_NE(short_period.status().message().find("d.json"), std::string::npos);
  EXPECT_NE(short_period.status().message().find("overlap"), std::string::npos);
  EXPECT_FALSE(plan_tiling(*host, *device, 0).ok());
}

TEST(TraceTiling, ErrorsNameTheFileAndThePlace) {
  std::string host(kHost), device(kDevice);
  std::string sink_bytes;
  auto sink = [&sink_bytes](std::string_view b) { sink_bytes.append(b); };
  // Truncated host ET.
  auto r = tile_trace_pair("cut_host.json", host.substr(0, host.size() / 2), "device.json", device,
                           2, 0, sink, sink);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cut_host.json: byte "), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status().message();
  // Truncated device trace.
  r = tile_trace_pair("host.json", host, "cut_device.json", device.substr(0, device.size() - 40), 2,
                      0, sink, sink);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cut_device.json: byte "), std::string::npos)
      << r.status().message();
  // A node without an id; duplicate ids.
  std::string no_id = host;
  no_id.replace(no_id.find("\"id\": 7"), 7, "\"ID\": 7");
  r = tile_trace_pair("no_id.json", no_id, "device.json", device, 2, 0, sink, sink);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no_id.json: byte "), std::string::npos);
  EXPECT_NE(r.status().message().find("node #2"), std::string::npos) << r.status().message();
  std::string dup = host;
  dup.replace(dup.find("\"id\": 7"), 7, "\"id\": 5");
  r = tile_trace_pair("dup.json", dup, "device.json", device, 2, 0, sink, sink);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("duplicate node id 5"), std::string::npos);
  // Ids that would overflow int64 after the copies.
  std::string big = host;
  big.replace(big.find("\"id\": 7"), 7, "\"id\": 9000000000000000000");
  r = tile_trace_pair("big.json", big, "device.json", device, 2, 0, sink, sink);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("beyond int64"), std::string::npos) << r.status().message();
  // Nothing reached the sinks.
  EXPECT_TRUE(sink_bytes.empty());
}

// The CLI verb: gzip'd outputs that `chakraflow link` reads.
TEST(TraceTiling, Cli) {
  CF_REQUIRE_SHARED_DATA("pairs/simple_add");
  const std::string dir = (shared_data_dir() / "pairs/simple_add").string();
  testing::TempDir tmp;
  std::string output;
  const std::string bin = CHAKRAFLOW_BINARY;
  int rc =
      testing::run_command(bin + " tile --host " + dir + "/host_et.json.gz --device " + dir +
                               "/kineto.modern.json.gz --times 4 --gzip --out " + tmp.file("tiled"),
                           &output);
  ASSERT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("tile: 4 copies"), std::string::npos) << output;
  rc = testing::run_command(bin + " link --host " + tmp.file("tiled/host_et.json.gz") +
                                " --device " + tmp.file("tiled/kineto.json.gz") + " --output " +
                                tmp.file("et_plus.json") + " --threads 1",
                            &output);
  ASSERT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("host ops linked:   144 / 144"), std::string::npos) << output;
  EXPECT_NE(output.find("GPU ops linked:    16 / 16"), std::string::npos) << output;
  // Usage and input errors.
  EXPECT_EQ(testing::run_command(bin + " tile --host x --device y", &output), 2) << output;
  rc = testing::run_command(bin + " tile --host " + tmp.file("missing.json") + " --device " + dir +
                                "/kineto.modern.json.gz --out " + tmp.file("bad"),
                            &output);
  EXPECT_NE(rc, 0);
  EXPECT_NE(output.find("missing.json"), std::string::npos) << output;
}

}  // namespace
}  // namespace chakraflow
