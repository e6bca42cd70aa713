// Golden tests for sequence matching and the legacy ET+ layout on the real pairs
// (../shared/data/pairs): kineto.legacy.json.gz has no "Record function id"; kineto.modern.json.gz
// is the same trace with the rf_ids of the host ops matched by name order, so the rf_id path on it
// is the oracle for sequence mode. reference/et_plus.legacy.json.gz is the legacy linker's output.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>
#include <set>

#include "pipeline/rank_graph.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

using testing::shared_data_dir;

std::vector<std::string> all_pairs() {
  std::vector<std::string> c = {"simple_add", "resnet_1gpu"};
  for (int r = 0; r < 8; ++r) c.push_back("dlrm_8rank/rank" + std::to_string(r));
  return c;
}

std::string pair_dir(const std::string& name) {
  return (shared_data_dir() / "pairs" / name).string();
}

struct Linked {
  RankJobResult result;
  std::string text;
};

Linked link(const std::string& host, const std::string& device, LinkOptions options) {
  testing::TempDir tmp;
  RankJob job;
  job.host_path = host;
  job.device_path = device;
  job.et_plus_path = tmp.file("et_plus.json");
  job.link = std::move(options);
  Linked out;
  out.result = run_link_job(job);
  if (out.result.status.ok()) out.text = testing::read_text(job.et_plus_path);
  return out;
}

LinkOptions options(MatchMode mode, OutputFormat format = OutputFormat::kChakra) {
  LinkOptions o;
  o.mode = mode;
  o.format = format;
  return o;
}

std::vector<simdjson::dom::element> nodes_of(simdjson::dom::parser& p, const std::string& text) {
  simdjson::dom::element doc;
  EXPECT_EQ(p.parse(text).get(doc), simdjson::SUCCESS);
  std::vector<simdjson::dom::element> out;
  for (auto n : doc["nodes"].get_array()) out.push_back(n);
  return out;
}

std::string name_of(const std::string& pair) {
  std::string n = pair;
  for (auto& c : n)
    if (c == '/') c = '_';
  return n;
}

// ---------- sequence mode on the legacy trace == rf_id path on the modern trace ----------

class SequenceGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(SequenceGolden, SequenceModeGivesTheEtPlusOfTheRfIdPath) {
  CF_REQUIRE_SHARED_DATA("pairs/" + GetParam());
  const std::string dir = pair_dir(GetParam());
  Linked seq =
      link(dir + "/host_et.json.gz", dir + "/kineto.legacy.json.gz", options(MatchMode::kSequence));
  Linked rf =
      link(dir + "/host_et.json.gz", dir + "/kineto.modern.json.gz", options(MatchMode::kRfId));
  ASSERT_TRUE(seq.result.status.ok()) << seq.result.status.message();
  ASSERT_TRUE(rf.result.status.ok()) << rf.result.status.message();
  // --mode auto (the default) takes sequence mode for a trace without rf_ids.
  Linked automatic =
      link(dir + "/host_et.json.gz", dir + "/kineto.legacy.json.gz", options(MatchMode::kAuto));
  EXPECT_EQ(automatic.result.summary.mode, "sequence");
  EXPECT_EQ(automatic.text, seq.text);
  // Every host op found its device op.
  EXPECT_EQ(seq.result.summary.host_ops_linked, seq.result.summary.host_op_candidates);
  EXPECT_EQ(seq.result.summary.host_ops_linked, rf.result.summary.host_ops_linked);

  simdjson::dom::parser p1, p2;
  auto ours = nodes_of(p1, seq.text);
  auto oracle = nodes_of(p2, rf.text);
  ASSERT_EQ(ours.size(), oracle.size());
  size_t differ = 0;
  for (size_t i = 0; i < oracle.size(); ++i) {
    std::string a = simdjson::to_string(ours[i]), b = simdjson::to_string(oracle[i]);
    if (a != b && ++differ <= 5) ADD_FAILURE() << "node " << i << "\nseq: " << a << "\nrf:  " << b;
  }
  const double agreement = 1.0 - static_cast<double>(differ) / static_cast<double>(oracle.size());
  std::printf("[ %s ] sequence vs rf_id: %zu of %zu ET+ nodes identical (%.2f%%)%s\n",
              GetParam().c_str(), oracle.size() - differ, oracle.size(), 100.0 * agreement,
              seq.text == rf.text ? ", byte-identical" : "");
  EXPECT_GE(agreement, 0.995);
}

INSTANTIATE_TEST_SUITE_P(Pairs, SequenceGolden, ::testing::ValuesIn(all_pairs()),
                         [](const auto& info) { return name_of(info.param); });

TEST(SequenceGoldenResnet, FindsTheIterationOfTheHostTraceAmongThirty) {
  CF_REQUIRE_SHARED_DATA("pairs/resnet_1gpu");
  const std::string dir = pair_dir("resnet_1gpu");
  Linked seq =
      link(dir + "/host_et.json.gz", dir + "/kineto.legacy.json.gz", options(MatchMode::kSequence));
  ASSERT_TRUE(seq.result.status.ok()) << seq.result.status.message();
  const LinkSummary& s = seq.result.summary;
  EXPECT_EQ(s.host_ops_linked, 1310u);
  ASSERT_EQ(s.threads.size(), 2u);
  // Main thread: 704 ops in a device thread of 21,326 (30 iterations); the oracle's window starts
  // at op 2331. The autograd thread's window is the backward of that same iteration (op 1818),
  // not the first identical one (op 0).
  EXPECT_EQ(s.threads[0].matched, 704u);
  EXPECT_EQ(s.threads[0].device_ops, 21326u);
  EXPECT_LE(s.threads[0].window_begin, 2331u);
  EXPECT_GE(s.threads[0].window_end, 2331u + 704u);
  EXPECT_EQ(s.threads[1].matched, 606u);
  EXPECT_LE(s.threads[1].window_begin, 1818u);
  EXPECT_GE(s.threads[1].window_end, 1818u + 606u);
  EXPECT_LT(s.threads[1].window_end - s.threads[1].window_begin, 1000u);

  // --annotation DataLoader: the host trace is matched inside one DataLoader-delimited
  // iteration; the same ops are found.
  LinkOptions by_iteration = options(MatchMode::kSequence);
  by_iteration.annotation = "DataLoader";
  Linked it = link(dir + "/host_et.json.gz", dir + "/kineto.legacy.json.gz", by_iteration);
  ASSERT_TRUE(it.result.status.ok()) << it.result.status.message();
  EXPECT_EQ(it.text, seq.text);
  EXPECT_EQ(it.result.stats.count(StatKind::kSeqAnnotationIterations), 31u);
}

// ---------- pairs that do not belong together ----------

TEST(SequenceGoldenMismatch, HostAndDeviceOfDifferentProcessesAreRejectedOrMatchedAtTheirRate) {
  CF_REQUIRE_SHARED_DATA("pairs/dlrm_8rank/rank1");
  CF_REQUIRE_SHARED_DATA("pairs/simple_add");
  const std::string rank0 = pair_dir("dlrm_8rank/rank0"), rank1 = pair_dir("dlrm_8rank/rank1");
  const std::string add = pair_dir("simple_add");
  struct Case {
    std::string host, device;
    double true_rate_at_most;
  };
  // Rank 0's host ET with rank 1's device trace: the same program, so the names align fully,
  // but the timings belong to another process. simple_add's host ET with DLRM's device trace:
  // a third of the ops (aten::add, aten::to, ...) align by chance.
  for (const Case& c : {Case{rank0 + "/host_et.json.gz", rank1 + "/kineto.legacy.json.gz", 1.0},
                        Case{add + "/host_et.json.gz", rank0 + "/kineto.legacy.json.gz", 0.5}}) {
    Linked rejected = link(c.host, c.device, options(MatchMode::kSequence));
    ASSERT_FALSE(rejected.result.status.ok());
    const std::string& msg = rejected.result.status.message();
    EXPECT_NE(msg.find("different processes"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.host), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.device), std::string::npos) << msg;

    LinkOptions any = options(MatchMode::kSequence);
    any.min_match_rate = 0;
    Linked accepted = link(c.host, c.device, any);
    ASSERT_TRUE(accepted.result.status.ok()) << accepted.result.status.message();
    const LinkSummary& s = accepted.result.summary;
    const double rate =
        static_cast<double>(s.host_ops_linked) / static_cast<double>(s.host_op_candidates);
    std::printf("[ %s + %s ] forced: %llu of %llu host ops align (%.1f%%)\n", c.host.c_str(),
                c.device.c_str(), static_cast<unsigned long long>(s.host_ops_linked),
                static_cast<unsigned long long>(s.host_op_candidates), 100.0 * rate);
    EXPECT_LE(rate, c.true_rate_at_most);
    EXPECT_GT(s.host_ops_linked, 0u);
    EXPECT_EQ(accepted.result.stats.count(StatKind::kSeqHostPidNotInDevice), 1u);
  }
}

// By rf_id, rank 0's host ET with rank 1's device trace would link every op (the ranks number
// their ops alike): the process check rejects it, names both pids, and Chakra mode links it (as
// Chakra does) with a counted warning.
TEST(SequenceGoldenMismatch, RfIdModeRejectsAnotherRanksDeviceTrace) {
  CF_REQUIRE_SHARED_DATA("pairs/dlrm_8rank/rank1");
  const std::string host = pair_dir("dlrm_8rank/rank0") + "/host_et.json.gz";
  const std::string device = pair_dir("dlrm_8rank/rank1") + "/kineto.modern.json.gz";
  Linked rejected = link(host, device, options(MatchMode::kRfId));
  ASSERT_FALSE(rejected.result.status.ok());
  const std::string& msg = rejected.result.status.message();
  EXPECT_NE(msg.find("different processes"), std::string::npos) << msg;
  EXPECT_NE(msg.find(host), std::string::npos) << msg;
  EXPECT_NE(msg.find(device), std::string::npos) << msg;

  LinkOptions chakra = options(MatchMode::kRfId);
  chakra.compat = Compat::kChakra;
  Linked accepted = link(host, device, chakra);
  ASSERT_TRUE(accepted.result.status.ok()) << accepted.result.status.message();
  EXPECT_EQ(accepted.result.stats.count(StatKind::kHostPidNotInDevice), 1u);
  // Its own device trace passes the check.
  Linked own = link(host, pair_dir("dlrm_8rank/rank0") + "/kineto.modern.json.gz",
                    options(MatchMode::kRfId));
  ASSERT_TRUE(own.result.status.ok()) << own.result.status.message();
}

// ---------- the legacy layout against the legacy linker ----------

struct Kineto {
  std::map<int64_t, double> gpu_ts;  // correlation -> ts of the GPU op
  std::set<int64_t> launch_corr;     // correlations of runtime/driver events
};

Kineto read_kineto(simdjson::dom::parser& p, const std::string& path) {
  Kineto k;
  simdjson::dom::element doc = testing::load_json(p, path);
  for (auto e : doc["traceEvents"].get_array()) {
    std::string_view cat;
    if (e["cat"].get(cat) != simdjson::SUCCESS) continue;
    int64_t corr;
    if (e["args"]["correlation"].get(corr) != simdjson::SUCCESS) continue;
    if (cat == "cuda_runtime" || cat == "cuda_driver") k.launch_corr.insert(corr);
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset")
      k.gpu_ts[corr] = double(e["ts"]);
  }
  return k;
}

int64_t correlation(simdjson::dom::element n) {
  return int64_t(n["args"]["correlation"]);
}
bool is_gpu(simdjson::dom::element n) {
  return n["cat"].error() == simdjson::SUCCESS;
}

// Every key but the given ones, in order, as JSON text.
std::string without(simdjson::dom::element n, std::set<std::string_view> skip) {
  std::string out;
  for (auto [k, v] : n.get_object()) {
    if (skip.count(k)) continue;
    out += std::string(k) + "=" + simdjson::to_string(v) + ";";
  }
  return out;
}

struct LegacyDiffs {
  size_t gpu_ts_fixed = 0;       // F1: the GPU op's own ts instead of the launch call's end
  size_t cpu_rematched = 0;      // F2: the legacy linker paired the host op with another event
  size_t memsets_added = 0;      // L3: gpu_memset nodes
  size_t no_launch_dropped = 0;  // F3: GPU ops without launch event (legacy: via the flow end)
};

class LegacyGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(LegacyGolden, EqualsTheLegacyLinkerNodeForNodeExceptDocumentedFixes) {
  CF_REQUIRE_SHARED_DATA("pairs/" + GetParam());
  const std::string dir = pair_dir(GetParam());
  Linked seq = link(dir + "/host_et.json.gz", dir + "/kineto.legacy.json.gz",
                    options(MatchMode::kSequence, OutputFormat::kLegacy));
  ASSERT_TRUE(seq.result.status.ok()) << seq.result.status.message();
  // The layout does not depend on how the ops were matched: the rf_id path gives the same bytes.
  Linked rf = link(dir + "/host_et.json.gz", dir + "/kineto.modern.json.gz",
                   options(MatchMode::kRfId, OutputFormat::kLegacy));
  ASSERT_TRUE(rf.result.status.ok()) << rf.result.status.message();
  EXPECT_EQ(seq.text, rf.text);

  simdjson::dom::parser p1, p2, p3;
  simdjson::dom::element ours_doc, ref_doc;
  ASSERT_EQ(p1.parse(seq.text).get(ours_doc), simdjson::SUCCESS);
  ref_doc = testing::load_json(p2, dir + "/reference/et_plus.legacy.json.gz");
  Kineto kineto = read_kineto(p3, dir + "/kineto.legacy.json.gz");
  // Top level: the same keys and values.
  EXPECT_EQ(without(ours_doc, {"nodes"}), without(ref_doc, {"nodes"}));
  std::vector<simdjson::dom::element> ours, ref;
  for (auto n : ours_doc["nodes"].get_array()) ours.push_back(n);
  for (auto n : ref_doc["nodes"].get_array()) ref.push_back(n);

  // Correspondence: host nodes by position (both in file order), GPU nodes by correlation.
  std::vector<simdjson::dom::element> ours_host, ref_host;
  std::map<int64_t, simdjson::dom::element> ours_gpu, ref_gpu;
  for (auto n : ours)
    is_gpu(n) ? void(ours_gpu.emplace(correlation(n), n)) : ours_host.push_back(n);
  for (auto n : ref) is_gpu(n) ? void(ref_gpu.emplace(correlation(n), n)) : ref_host.push_back(n);
  ASSERT_EQ(ours_host.size(), ref_host.size());
  // The ids differ where an added or dropped GPU node shifted the numbering: translate ours.
  std::map<int64_t, int64_t> to_ref;
  for (size_t i = 0; i < ours_host.size(); ++i)
    to_ref[int64_t(ours_host[i]["id"])] = int64_t(ref_host[i]["id"]);
  for (auto& [corr, n] : ours_gpu) {
    auto it = ref_gpu.find(corr);
    if (it != ref_gpu.end()) to_ref[int64_t(n["id"])] = int64_t(it->second["id"]);
  }
  auto translated = [&](simdjson::dom::element n, const char* key) {
    return to_ref.at(int64_t(n[key]));
  };

  LegacyDiffs d;
  for (size_t i = 0; i < ours_host.size(); ++i) {
    auto a = ours_host[i], b = ref_host[i];
    ASSERT_EQ(std::string_view(a["name"]), std::string_view(b["name"])) << i;
    EXPECT_EQ(translated(a, "id"), int64_t(b["id"]));
    EXPECT_EQ(translated(a, "parent"), int64_t(b["parent"])) << std::string_view(a["name"]);
    if (without(a, {"id", "parent"}) == without(b, {"id", "parent"})) continue;
    // F2: only dur/ts differ, and ours are those of the oracle (checked above: rf path == ours).
    EXPECT_EQ(without(a, {"id", "parent", "dur", "ts"}), without(b, {"id", "parent", "dur", "ts"}));
    ++d.cpu_rematched;
  }
  for (auto& [corr, a] : ours_gpu) {
    auto it = ref_gpu.find(corr);
    if (it == ref_gpu.end()) {
      EXPECT_EQ(std::string_view(a["cat"]), "gpu_memset") << "unexpected GPU node " << corr;
      ++d.memsets_added;
      continue;
    }
    auto b = it->second;
    EXPECT_EQ(translated(a, "parent"), int64_t(b["parent"])) << corr;
    EXPECT_EQ(without(a, {"id", "parent", "ts"}), without(b, {"id", "parent", "ts"})) << corr;
    EXPECT_EQ(double(a["ts"]), kineto.gpu_ts.at(corr)) << corr;  // F1
    d.gpu_ts_fixed += double(a["ts"]) != double(b["ts"]);
  }
  for (auto& [corr, b] : ref_gpu) {
    if (ours_gpu.count(corr)) continue;
    // F3: the device trace has no launch call for it; the legacy linker attached it to the CPU
    // op running when it started on the GPU.
    EXPECT_EQ(kineto.launch_corr.count(corr), 0u) << "GPU op lost: " << corr;
    ++d.no_launch_dropped;
  }
  std::printf(
      "[ %s ] legacy format vs legacy linker: %zu nodes; %zu GPU ts fixed, %zu host ops "
      "re-matched, %zu memsets added, %zu GPU ops without launch call dropped\n",
      GetParam().c_str(), ref.size(), d.gpu_ts_fixed, d.cpu_rematched, d.memsets_added,
      d.no_launch_dropped);
  // Pinned per case (docs/compatibility.md, "Sequence matching and the legacy format").
  const std::string& c = GetParam();
  EXPECT_EQ(d.cpu_rematched, c == "dlrm_8rank/rank2" ? 2u : 0u);
  EXPECT_EQ(d.memsets_added, c == "dlrm_8rank/rank3" || c == "dlrm_8rank/rank4" ? 6u : 0u);
  EXPECT_EQ(d.no_launch_dropped, c == "dlrm_8rank/rank1" || c == "dlrm_8rank/rank3" ? 64u : 0u);
  EXPECT_GT(d.gpu_ts_fixed, 0u);
}

std::vector<std::string> legacy_cases() {
  std::vector<std::string> c = {"simple_add"};
  for (int r = 0; r < 8; ++r) c.push_back("dlrm_8rank/rank" + std::to_string(r));
  return c;
}

INSTANTIATE_TEST_SUITE_P(Pairs, LegacyGolden, ::testing::ValuesIn(legacy_cases()),
                         [](const auto& info) { return name_of(info.param); });

// ---------- the command line ----------

TEST(SequenceGoldenCli, PrintsThePerThreadReportAndWritesTheLegacyFormat) {
  CF_REQUIRE_SHARED_DATA("pairs/simple_add");
  const std::string dir = pair_dir("simple_add");
  testing::TempDir tmp;
  std::string out;
  int rc = testing::run_command(std::string(CHAKRAFLOW_BINARY) + " link --chakra-host-trace " +
                                    dir + "/host_et.json.gz --chakra-device-trace " + dir +
                                    "/kineto.legacy.json.gz --output-file " + tmp.file("o.json") +
                                    " --format legacy --annotation ProfilerStep "
                                    "--min-match-rate 99.5",
                                &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("link report (sequence mode)"), std::string::npos) << out;
  EXPECT_NE(out.find("host tid 1 -> device pid 563677 tid 563677: 36 / 36 ops matched (100.0%)"),
            std::string::npos)
      << out;
  // No ProfilerStep in this trace: said so, and the window is found by names.
  EXPECT_NE(out.find("--annotation not in the device trace"), std::string::npos) << out;
  simdjson::dom::parser p;
  auto nodes = nodes_of(p, testing::read_text(tmp.file("o.json")));
  ASSERT_EQ(nodes.size(), 42u);
  EXPECT_EQ(int64_t(nodes[0]["dur"]), 19814157);  // the thread annotation spans the trace

  for (const char* bad : {" --format json", " --min-match-rate 150"}) {
    rc =
        testing::run_command(std::string(CHAKRAFLOW_BINARY) + " link --chakra-host-trace " + dir +
                                 "/host_et.json.gz --chakra-device-trace " + dir +
                                 "/kineto.legacy.json.gz --output-file " + tmp.file("o.json") + bad,
                             &out);
    EXPECT_EQ(rc, 2) << bad << "\n" << out;
  }
}

}  // namespace
}  // namespace chakraflow
