// Golden tests: our linker against Chakra 1.0.0's chakra_trace_link output on real traces
// (../shared/data/pairs/*/reference/et_plus.modern.json.gz).
//  - Compat::kChakra must reproduce every node exactly (all keys, values and key order).
//  - The default mode differs only where Chakra is wrong (docs/compatibility.md); the test checks
//    that each difference is of a documented kind.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>
#include <set>

#include "pipeline/rank_graph.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

using testing::shared_data_dir;

std::vector<std::string> pair_cases() {
  std::vector<std::string> c = {"simple_add", "resnet_1gpu"};
  for (int r = 0; r < 8; ++r) c.push_back("dlrm_8rank/rank" + std::to_string(r));
  return c;
}

class LinkGolden : public ::testing::TestWithParam<std::string> {};

std::string link_to_file(const std::string& dir, const std::string& out, Compat compat) {
  RankJob job;
  job.host_path = dir + "/host_et.json.gz";
  job.device_path = dir + "/kineto.modern.json.gz";
  job.et_plus_path = out;
  job.link.compat = compat;
  const RankJobResult results = run_link_job(job);
  EXPECT_TRUE(results.status.ok()) << results.status.message();
  return testing::read_text(out);
}

TEST_P(LinkGolden, ChakraModeReproducesEveryNode) {
  CF_REQUIRE_SHARED_DATA("pairs/" + GetParam());
  std::string dir = (shared_data_dir() / "pairs" / GetParam()).string();
  testing::TempDir tmp;
  std::string ours_text = link_to_file(dir, tmp.file("out.json"), Compat::kChakra);
  std::string ref_text = testing::read_text(dir + "/reference/et_plus.modern.json.gz");
  simdjson::dom::parser p1, p2;
  simdjson::dom::element ours, ref;
  ASSERT_EQ(p1.parse(ours_text).get(ours), simdjson::SUCCESS);
  ASSERT_EQ(p2.parse(ref_text).get(ref), simdjson::SUCCESS);
  // Top-level keys in the same order with the same values (nodes aside).
  std::vector<std::string> ours_keys, ref_keys;
  for (auto [k, v] : ours.get_object()) ours_keys.emplace_back(k);
  for (auto [k, v] : ref.get_object()) ref_keys.emplace_back(k);
  EXPECT_EQ(ours_keys, ref_keys);
  auto on = ours["nodes"].get_array();
  auto rn = ref["nodes"].get_array();
  ASSERT_EQ(on.size(), rn.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < rn.size(); ++i) {
    std::string a = simdjson::to_string(on.at(i).value());
    std::string b = simdjson::to_string(rn.at(i).value());
    if (a != b && ++mismatches <= 5)
      ADD_FAILURE() << "node " << i << "\nours: " << a << "\nref:  " << b;
  }
  EXPECT_EQ(mismatches, 0u);
}

struct Node {
  int64_t id;
  std::string name;
  bool gpu;
  std::string cat;
  int64_t ctrl = -1;
  double ts = -1, inclusive = -1, exclusive = -1;
  int64_t stream = -1;
};

std::vector<Node> read_nodes(simdjson::dom::parser& p, const std::string& text) {
  simdjson::dom::element doc;
  EXPECT_EQ(p.parse(text).get(doc), simdjson::SUCCESS);
  std::vector<Node> out;
  for (auto n : doc["nodes"].get_array()) {
    Node x;
    x.id = int64_t(n["id"]);
    x.name = std::string(std::string_view(n["name"]));
    std::string_view cat;
    x.gpu = n["cat"].get(cat) == simdjson::SUCCESS;
    x.cat = std::string(cat);
    int64_t c;
    if (n["ctrl_deps"].get(c) == simdjson::SUCCESS) x.ctrl = c;
    double d;
    if (n["ts"].get(d) == simdjson::SUCCESS) x.ts = d;
    if (n["inclusive_dur"].get(d) == simdjson::SUCCESS) x.inclusive = d;
    if (n["exclusive_dur"].get(d) == simdjson::SUCCESS) x.exclusive = d;
    if (n["stream"].get(c) == simdjson::SUCCESS) x.stream = c;
    out.push_back(x);
  }
  return out;
}

TEST_P(LinkGolden, DefaultModeDiffersOnlyInDocumentedWays) {
  CF_REQUIRE_SHARED_DATA("pairs/" + GetParam());
  std::string dir = (shared_data_dir() / "pairs" / GetParam()).string();
  testing::TempDir tmp;
  std::string ours_text = link_to_file(dir, tmp.file("out.json.gz"), Compat::kDefault);
  std::string ref_text = testing::read_text(dir + "/reference/et_plus.modern.json.gz");
  simdjson::dom::parser p1, p2;
  auto ours = read_nodes(p1, ours_text);
  auto ref = read_nodes(p2, ref_text);

  // 1. The host nodes are the same, in the same order, with the same timing, except that
  //    exclusive durations also subtract children that start with their parent (never larger).
  std::vector<const Node*> oh, rh;
  for (auto& n : ours)
    if (!n.gpu) oh.push_back(&n);
  for (auto& n : ref)
    if (!n.gpu) rh.push_back(&n);
  ASSERT_EQ(oh.size(), rh.size());
  size_t exclusive_fixed = 0;
  for (size_t i = 0; i < oh.size(); ++i) {
    ASSERT_EQ(oh[i]->name, rh[i]->name) << i;
    EXPECT_EQ(oh[i]->ts, rh[i]->ts) << oh[i]->name;
    EXPECT_EQ(oh[i]->inclusive, rh[i]->inclusive) << oh[i]->name;
    EXPECT_LE(oh[i]->exclusive, rh[i]->exclusive) << oh[i]->name;
    exclusive_fixed += oh[i]->exclusive != rh[i]->exclusive;
  }

  // 2. Every GPU op Chakra linked is linked by us too; the extra ones are memsets (Chakra drops
  //    gpu_memset) or launched through APIs Chakra does not know.
  std::map<std::pair<double, std::string>, const Node*> ours_gpu, ref_gpu;
  for (auto& n : ours)
    if (n.gpu) ours_gpu[{n.ts, n.name}] = &n;
  for (auto& n : ref)
    if (n.gpu) ref_gpu[{n.ts, n.name}] = &n;
  size_t extra_memsets = 0, extra_other = 0;
  for (auto& [key, n] : ours_gpu) {
    if (ref_gpu.count(key)) continue;
    (n->cat == "gpu_memset" ? extra_memsets : extra_other)++;
  }
  EXPECT_EQ(extra_other, 0u);
  // 3. Where our launching CPU op differs, Chakra's choice started inside ours: it picked the
  //    nearest preceding op, a finished child of the op that really encloses the launch.
  std::map<int64_t, const Node*> ours_by_id, ref_by_id;
  for (auto& n : ours) ours_by_id[n.id] = &n;
  for (auto& n : ref) ref_by_id[n.id] = &n;
  size_t reparented = 0;
  for (auto& [key, rn] : ref_gpu) {
    auto it = ours_gpu.find(key);
    ASSERT_NE(it, ours_gpu.end()) << "GPU op lost: " << key.second << " at " << key.first;
    const Node* our_parent = ours_by_id.at(it->second->ctrl);
    const Node* ref_parent = ref_by_id.at(rn->ctrl);
    EXPECT_EQ(it->second->stream, rn->stream);
    EXPECT_EQ(it->second->inclusive, rn->inclusive);
    if (our_parent->name == ref_parent->name && our_parent->ts == ref_parent->ts) continue;
    ++reparented;
    EXPECT_GE(ref_parent->ts, our_parent->ts) << key.second;
    EXPECT_LE(ref_parent->ts, our_parent->ts + our_parent->inclusive) << key.second;
  }
  std::printf(
      "[ %s ] default vs chakra: %zu exclusive durations fixed, %zu GPU ops re-parented to "
      "their enclosing op, %zu memsets added\n",
      GetParam().c_str(), exclusive_fixed, reparented, extra_memsets);
}

INSTANTIATE_TEST_SUITE_P(Pairs, LinkGolden, ::testing::ValuesIn(pair_cases()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n)
                             if (c == '/') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace chakraflow
