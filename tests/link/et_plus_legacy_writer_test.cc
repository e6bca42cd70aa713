#include "stages/link/et_plus_legacy_writer.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <set>

#include "stages/link/device_trace_loader.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/link.h"
#include "tests/testing/trace_builder.h"

namespace chakraflow {
namespace {

using testing::HostBuilder;
using testing::KinetoBuilder;

// Host nodes written in exit order as the observer does (children before parents, the process
// root last): 2 (thread), 4 (mm), 5 (add), 3 (fwd), 1 (process), and 6 whose parent is missing.
std::string host_json(bool flat) {
  return HostBuilder(flat)
      .node(2, "[pytorch|profiler|execution_trace|thread]", 1, 0, 1)
      .node(4, "aten::mm", 3, 2, 1)
      .node(5, "aten::add", 3, 3, 1)
      .node(3, "fwd", 2, 1, 1)
      .node(6, "lost", 99, 4, 1)
      .node(1, "[pytorch|profiler|execution_trace|process]", 1, 0, 0)
      .json();
}

// fwd [10, 110) encloses mm [20, 50) (two kernels, the second one starting first on the GPU) and
// add [60, 70); "lost" at 80.
std::string device_json() {
  return KinetoBuilder()
      .cpu_op("fwd", 100, 10, 100, 0, -1, "user_annotation")
      .cpu_op("aten::mm", 100, 20, 30, 0, 1)
      .runtime("cudaLaunchKernel", 100, 25, 2, 500)
      .runtime("cudaLaunchKernel", 100, 30, 2, 501)
      .cpu_op("aten::add", 100, 60, 10, 0, 2)
      .cpu_op("lost", 100, 80, 1.5, 0, 3)
      .gpu("k1", 52, 5, 500, 7)
      .gpu("k2", 40, 3.25, 501, 8)
      .json();
}

struct Output {
  std::string text;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::vector<simdjson::dom::element> nodes;
};

void write_legacy(const std::string& host_text, Output& out) {
  auto h = parse_host_trace("h.json", host_text);
  auto d = parse_device_trace("d.json", device_json());
  ASSERT_TRUE(h.ok() && d.ok());
  LinkOptions o;
  o.mode = MatchMode::kSequence;
  o.format = OutputFormat::kLegacy;
  auto linked = link_traces(*h, *d, o);
  ASSERT_TRUE(linked.ok()) << linked.status().message();
  ASSERT_TRUE(write_et_plus_legacy(*h, *d, *linked, o, [&](std::string_view b) {
                out.text.append(b);
              }).ok());
  ASSERT_EQ(out.parser.parse(out.text).get(out.doc), simdjson::SUCCESS) << out.text;
  for (auto n : out.doc["nodes"].get_array()) out.nodes.push_back(n);
}

std::vector<std::string> keys(simdjson::dom::element e) {
  std::vector<std::string> k;
  for (auto [key, value] : e.get_object()) k.emplace_back(key);
  return k;
}

int64_t get_int(simdjson::dom::element e, const char* key) {
  return int64_t(e[key]);
}

TEST(EtPlusLegacyWriter, RenumbersInFileOrderAndAppendsGpuNodesAsKinetoEvents) {
  Output out;
  write_legacy(host_json(true), out);
  ASSERT_EQ(out.nodes.size(), 8u);
  // Host nodes in file order. Ids: a node keeps its id unless taken; mm's GPU nodes take 5 and 6,
  // so add (5) becomes 7.
  std::vector<std::pair<std::string, int64_t>> got;
  for (size_t i = 0; i < 6; ++i) {
    got.emplace_back(std::string(std::string_view(out.nodes[i]["name"])),
                     get_int(out.nodes[i], "id"));
  }
  EXPECT_EQ(got, (std::vector<std::pair<std::string, int64_t>>{
                     {"[pytorch|profiler|execution_trace|thread]", 2},
                     {"aten::mm", 4},
                     {"aten::add", 7},
                     {"fwd", 3},
                     {"lost", 8},
                     {"[pytorch|profiler|execution_trace|process]", 1}}));
  // Parents point at the new ids; a missing parent (the legacy linker raised KeyError) goes to
  // the thread root, as in the default ET+.
  EXPECT_EQ(get_int(out.nodes[1], "parent"), 3);
  EXPECT_EQ(get_int(out.nodes[3], "parent"), 2);
  EXPECT_EQ(get_int(out.nodes[4], "parent"), 2);
  EXPECT_EQ(get_int(out.nodes[5], "parent"), 1);
  // Matched host nodes gain dur and ts (us, as Kineto wrote them), last.
  auto mm = out.nodes[1];
  EXPECT_EQ(keys(mm).back(), "ts");
  EXPECT_EQ(keys(mm)[keys(mm).size() - 2], "dur");
  EXPECT_EQ(get_int(mm, "dur"), 30);
  EXPECT_EQ(get_int(mm, "ts"), 20);
  EXPECT_EQ(double(out.nodes[4]["dur"]), 1.5);
  EXPECT_EQ(keys(out.nodes[1])[0], "name");  // host keys verbatim, in their order
  // No Chakra keys in this layout.
  EXPECT_EQ(mm["inclusive_dur"].error(), simdjson::NO_SUCH_FIELD);
  EXPECT_EQ(mm["inter_thread_dep"].error(), simdjson::NO_SUCH_FIELD);
  // The annotations span the matched ops: fwd's [10, 110) for the thread and the process.
  for (size_t i : {size_t{0}, size_t{5}}) {
    EXPECT_EQ(get_int(out.nodes[i], "ts"), 10);
    EXPECT_EQ(get_int(out.nodes[i], "dur"), 100);
  }

  // GPU nodes last, in GPU ts order per host node: the Kineto event as written, then parent, id
  // and the host node's tensors.
  auto k2 = out.nodes[6];
  auto k1 = out.nodes[7];
  EXPECT_EQ(std::string_view(k2["name"]), "k2");
  EXPECT_EQ(std::string_view(k1["name"]), "k1");
  EXPECT_EQ(keys(k1),
            (std::vector<std::string>{"ph", "cat", "name", "pid", "tid", "ts", "dur", "args",
                                      "parent", "id", "inputs", "input_shapes", "input_types",
                                      "outputs", "output_shapes", "output_types"}));
  EXPECT_EQ(get_int(k2, "id"), 5);
  EXPECT_EQ(get_int(k1, "id"), 6);
  EXPECT_EQ(get_int(k1, "parent"), 4);
  EXPECT_EQ(std::string_view(k1["cat"]), "kernel");
  EXPECT_EQ(get_int(k1["args"], "correlation"), 500);
  EXPECT_EQ(double(k2["dur"]), 3.25);
  // Deliberate fix: ts is the GPU op's own start; the legacy linker wrote the end of its launch
  // call (27 and 32 here), a side effect of how it searched for the launcher.
  EXPECT_EQ(get_int(k1, "ts"), 52);
  EXPECT_EQ(get_int(k2, "ts"), 40);

  // Top-level keys as in the host trace.
  EXPECT_EQ(keys(out.doc),
            (std::vector<std::string>{"schema", "pid", "time", "start_ts", "nodes", "finish_ts"}));
}

TEST(EtPlusLegacyWriter, AttrsLayoutRenumbersCtrlDepsAndCopiesInputsAndOutputs) {
  Output out;
  write_legacy(host_json(false), out);
  ASSERT_EQ(out.nodes.size(), 8u);
  EXPECT_EQ(get_int(out.nodes[2], "id"), 7);
  EXPECT_EQ(get_int(out.nodes[2], "ctrl_deps"), 3);
  EXPECT_EQ(out.nodes[2]["parent"].error(), simdjson::NO_SUCH_FIELD);
  auto k1 = out.nodes[7];
  EXPECT_EQ(keys(k1), (std::vector<std::string>{"ph", "cat", "name", "pid", "tid", "ts", "dur",
                                                "args", "parent", "id", "inputs", "outputs"}));
  EXPECT_EQ(keys(k1["inputs"]), (std::vector<std::string>{"values", "shapes", "types"}));
}

TEST(EtPlusLegacyWriter, LongRunsOfTakenIdsStayLinear) {
  // One host op launching 3000 kernels: every later node's id probes past the run.
  KinetoBuilder kb;
  kb.cpu_op("aten::big", 100, 0, 100000, 0, 1);
  for (int k = 0; k < 3000; ++k) kb.runtime("cudaLaunchKernel", 100, 1 + k, 1, 1000 + k);
  for (int k = 0; k < 3000; ++k) kb.gpu("k", 5000 + k, 0.5, 1000 + k);
  HostBuilder hb(true);
  hb.node(2, "[pytorch|profiler|execution_trace|thread]", 1, 0, 1).node(3, "aten::big", 2, 1, 1);
  for (uint64_t id = 4; id < 2000; ++id) hb.node(id, "aten::view", 3, id, 1);
  hb.node(1, "[pytorch|profiler|execution_trace|process]", 1, 0, 0);
  auto h = parse_host_trace("h.json", hb.json());
  auto d = parse_device_trace("d.json", kb.json());
  ASSERT_TRUE(h.ok() && d.ok());
  LinkOptions o;
  o.mode = MatchMode::kSequence;
  o.min_match_rate = 0;  // the views are not in the device trace
  auto linked = link_traces(*h, *d, o);
  ASSERT_TRUE(linked.ok()) << linked.status().message();
  std::string text;
  ASSERT_TRUE(
      write_et_plus_legacy(*h, *d, *linked, o, [&](std::string_view b) { text.append(b); }).ok());
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_EQ(p.parse(text).get(doc), simdjson::SUCCESS);
  std::set<int64_t> ids;
  size_t count = 0;
  for (auto n : doc["nodes"].get_array()) {
    ids.insert(int64_t(n["id"]));
    ++count;
  }
  EXPECT_EQ(count, 1999u + 3000u);  // host nodes 1 .. 1999, 3000 GPU nodes
  EXPECT_EQ(ids.size(), count);     // unique
  EXPECT_EQ(*ids.begin(), 1);       // and dense
  EXPECT_EQ(*ids.rbegin(), 4999);
}

}  // namespace
}  // namespace chakraflow
