// Golden tests of the converter and the jsonizer on real traces (../shared/data):
//  - host_et/*: `--compat chakra` gives the same messages as Chakra 1.0.0's reference/chakra.et
//    (decoded and compared field by field), the jsonizer's --concatenated output is Chakra's
//    text byte for byte, and the default mode differs only in documented ways;
//  - pairs/*: Chakra's own ET+ (schema 1.0.1) converts in both modes, with parents mapped back
//    from the pre-renumbering ids exactly as the host trace has them;
//  - every default-mode output: no dangling or self dependency, no cycle;
//  - our .et files are read by a reader that uses only the protobuf library, and by protoc;
//  - chakra_et/*.et are read and jsonized without loss (JSON parsed back into the same messages);
//  - the CLI: Chakra's spellings, exit codes.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "pipeline/rank_graph.h"
#include "proto/et_def.pb.h"
#include "stages/convert/et_plus_nodes.h"
#include "stages/convert/jsonizer.h"
#include "stages/convert/pytorch_converter.h"
#include "stages/et/et_io.h"
#include "stages/generate/synthetic_trace.h"
#include "stages/link/host_et_loader.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

namespace pb = ChakraProtoMsg;
using google::protobuf::util::MessageDifferencer;
using testing::shared_data_dir;

struct EtFile {
  pb::GlobalMetadata metadata;
  std::vector<pb::Node> nodes;
};

StatusOr<EtFile> read_et(const std::string& path) {
  CF_ASSIGN_OR_RETURN(EtReader reader, EtReader::open(path));
  EtFile f;
  CF_ASSIGN_OR_RETURN(bool have, reader.next(&f.metadata));
  if (!have) return Status::errorf("{}: empty", path);
  while (true) {
    pb::Node n;
    CF_ASSIGN_OR_RETURN(bool more, reader.next(&n));
    if (!more) break;
    f.nodes.push_back(std::move(n));
  }
  return f;
}

// A reader written against the protobuf library only: varint32 length, then the message.
bool read_with_protobuf_only(const std::string& bytes, EtFile* out) {
  google::protobuf::io::ArrayInputStream array(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&array);
  bool first = true;
  uint32_t size = 0;
  while (in.ReadVarint32(&size)) {
    auto limit = in.PushLimit(static_cast<int>(size));
    bool ok;
    if (first) {
      ok = out->metadata.ParseFromCodedStream(&in);
    } else {
      out->nodes.emplace_back();
      ok = out->nodes.back().ParseFromCodedStream(&in);
    }
    if (!ok || !in.ConsumedEntireMessage()) return false;
    in.PopLimit(limit);
    first = false;
  }
  return in.CurrentPosition() == static_cast<int>(bytes.size());
}

// Field-by-field comparison; reports the first differences.
void expect_same_messages(const EtFile& ours, const EtFile& ref) {
  std::string report;
  MessageDifferencer md;
  md.ReportDifferencesToString(&report);
  EXPECT_TRUE(md.Compare(ours.metadata, ref.metadata)) << "GlobalMetadata: " << report;
  ASSERT_EQ(ours.nodes.size(), ref.nodes.size());
  int shown = 0;
  size_t mismatches = 0;
  for (size_t i = 0; i < ref.nodes.size(); ++i) {
    // Equal messages re-serialize to equal bytes: a fast path before the field-by-field diff.
    if (ours.nodes[i].SerializeAsString() == ref.nodes[i].SerializeAsString()) continue;
    std::string diff;
    MessageDifferencer d;
    d.ReportDifferencesToString(&diff);
    if (!d.Compare(ours.nodes[i], ref.nodes[i])) {
      ++mismatches;
      if (shown++ < 5)
        ADD_FAILURE() << "node #" << i << " (id " << ref.nodes[i].id() << "): " << diff;
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

// What every default-mode output guarantees.
void expect_valid_graph(const EtFile& f) {
  std::set<uint64_t> ids;
  for (const pb::Node& n : f.nodes)
    EXPECT_TRUE(ids.insert(n.id()).second) << "duplicate " << n.id();
  size_t dangling = 0, self = 0, duplicate = 0, gpu_without_dep = 0;
  std::map<uint64_t, std::vector<uint64_t>> dependents;
  std::map<uint64_t, size_t> indegree;
  for (const pb::Node& n : f.nodes) {
    std::set<uint64_t> seen;
    for (uint64_t d : n.data_deps()) {
      dangling += ids.count(d) == 0;
      self += d == n.id();
      duplicate += !seen.insert(d).second;
      dependents[d].push_back(n.id());
    }
    for (uint64_t c : n.ctrl_deps()) {
      dangling += ids.count(c) == 0;
      self += c == n.id();
    }
    indegree[n.id()] = n.data_deps_size();
    bool is_cpu = true;
    for (const auto& a : n.attr()) {
      if (a.name() == "is_cpu_op") is_cpu = a.bool_val();
    }
    gpu_without_dep += !is_cpu && n.data_deps_size() == 0;
  }
  EXPECT_EQ(dangling, 0u);
  EXPECT_EQ(self, 0u);
  EXPECT_EQ(duplicate, 0u);
  EXPECT_EQ(gpu_without_dep, 0u);
  // Acyclic: Kahn's algorithm must consume every node.
  std::vector<uint64_t> ready;
  for (const auto& [id, deg] : indegree) {
    if (deg == 0) ready.push_back(id);
  }
  size_t done = 0;
  while (!ready.empty()) {
    uint64_t id = ready.back();
    ready.pop_back();
    ++done;
    for (uint64_t c : dependents[id]) {
      if (--indegree[c] == 0) ready.push_back(c);
    }
  }
  EXPECT_EQ(done, f.nodes.size()) << "the data dependencies have a cycle";
}

std::string param_name(const std::string& s) {
  std::string out;
  for (char c : s) out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out;
}

StatusOr<EtFile> convert_and_read(const std::string& input, const std::string& output,
                                  Compat compat, ConvertReport* report = nullptr) {
  ConvertOptions options;
  options.compat = compat;
  ConvertReport local;
  CF_RETURN_IF_ERROR(convert_file(input, output, options, report ? report : &local));
  return read_et(output);
}

// ---------- host_et ----------
const std::vector<std::string> kHostEtCases = {
    "allgather_1.0.2",   "gpt2_1.1.0",        "pt2_compile_1.1.1",      "resnet_1gpu_1.0.3",
    "resnet_1gpu_1.1.1", "resnet_2gpu_1.1.0", "resnet_ddp_1.0.2_rank0",
};

class ConvertHostEt : public ::testing::TestWithParam<std::string> {
 protected:
  std::string dir() const { return (shared_data_dir() / "host_et" / GetParam()).string(); }
};

TEST_P(ConvertHostEt, ChakraModeMatchesReference) {
  CF_REQUIRE_SHARED_DATA("host_et/" + GetParam());
  testing::TempDir tmp;
  auto ours = convert_and_read(dir() + "/host_et.json.gz", tmp.file("out.et"), Compat::kChakra);
  ASSERT_TRUE(ours.ok()) << ours.status().message();
  auto ref = read_et(dir() + "/reference/chakra.et");
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  ASSERT_GT(ref->nodes.size(), 0u);
  expect_same_messages(*ours, *ref);
}

TEST_P(ConvertHostEt, PlainProtobufReaderReadsOurOutput) {
  CF_REQUIRE_SHARED_DATA("host_et/" + GetParam());
  testing::TempDir tmp;
  auto ours = convert_and_read(dir() + "/host_et.json.gz", tmp.file("out.et"), Compat::kDefault);
  ASSERT_TRUE(ours.ok()) << ours.status().message();
  EtFile plain;
  ASSERT_TRUE(read_with_protobuf_only(testing::read_text(tmp.file("out.et")), &plain));
  expect_same_messages(plain, *ours);
}

TEST_P(ConvertHostEt, JsonizeConcatenatedIsChakrasText) {
  CF_REQUIRE_SHARED_DATA("host_et/" + GetParam());
  testing::TempDir tmp;
  JsonizeOptions options;
  options.concatenated = true;
  JsonizeReport report;
  ASSERT_TRUE(
      jsonize_file(dir() + "/reference/chakra.et", tmp.file("out.txt"), options, &report).ok());
  const std::string ours = testing::read_text(tmp.file("out.txt"));
  const std::string ref = testing::read_text(dir() + "/reference/chakra.jsonized.txt.gz");
  ASSERT_EQ(ours.size(), ref.size());
  EXPECT_TRUE(ours == ref) << "first difference at byte "
                           << (std::mismatch(ours.begin(), ours.end(), ref.begin()).first -
                               ours.begin());
}

TEST_P(ConvertHostEt, DefaultModeIsValidAndDiffersOnlyAsDocumented) {
  CF_REQUIRE_SHARED_DATA("host_et/" + GetParam());
  testing::TempDir tmp;
  ConvertReport report;
  auto def = convert_and_read(dir() + "/host_et.json.gz", tmp.file("default.et"), Compat::kDefault,
                              &report);
  ASSERT_TRUE(def.ok()) << def.status().message();
  auto chakra =
      convert_and_read(dir() + "/host_et.json.gz", tmp.file("chakra.et"), Compat::kChakra);
  ASSERT_TRUE(chakra.ok());
  expect_valid_graph(*def);
  EXPECT_EQ(def->metadata.version(), "1.0.0");
  EXPECT_EQ(chakra->metadata.version(), "");
  EXPECT_EQ(def->metadata.attr_size(), chakra->metadata.attr_size());
  std::map<uint64_t, const pb::Node*> by_id;
  for (const pb::Node& n : def->nodes) by_id[n.id()] = &n;
  std::set<uint64_t> chakra_ids;
  for (const pb::Node& n : chakra->nodes) chakra_ids.insert(n.id());
  size_t chain_changes = 0;
  for (const pb::Node& c : chakra->nodes) {
    SCOPED_TRACE("node " + std::to_string(c.id()));
    ASSERT_TRUE(by_id.count(c.id())) << "default mode dropped a node Chakra writes";
    const pb::Node& d = *by_id[c.id()];
    EXPECT_EQ(d.name(), c.name());
    EXPECT_EQ(d.type(), c.type());
    EXPECT_EQ(d.duration_micros(), c.duration_micros());  // host traces carry no durations
    EXPECT_TRUE(MessageDifferencer::Equals(d.inputs(), c.inputs()));
    EXPECT_TRUE(MessageDifferencer::Equals(d.outputs(), c.outputs()));
    // Attributes: the same, except that CPU nodes lose Chakra's stream = 0.
    std::vector<std::string> c_attrs, d_attrs;
    for (const auto& a : c.attr()) {
      if (a.name() != "stream") c_attrs.push_back(a.SerializeAsString());
    }
    for (const auto& a : d.attr()) {
      EXPECT_NE(a.name(), "stream");
      d_attrs.push_back(a.SerializeAsString());
    }
    EXPECT_EQ(c_attrs, d_attrs);
    // ctrl_deps: Chakra's (when its target is written) are kept.
    for (uint64_t p : c.ctrl_deps()) {
      if (chakra_ids.count(p)) {
        EXPECT_EQ(std::vector<uint64_t>(d.ctrl_deps().begin(), d.ctrl_deps().end()),
                  std::vector<uint64_t>{p});
      }
    }
    // data_deps: Chakra's come first; only a node kept by default mode alone (an orphan attached
    // to its thread root) may change a chain.
    const bool prefix =
        c.data_deps_size() <= d.data_deps_size() &&
        std::equal(c.data_deps().begin(), c.data_deps().end(), d.data_deps().begin());
    if (!prefix) {
      ++chain_changes;
      bool via_orphan = false;
      for (uint64_t x : d.data_deps()) via_orphan |= chakra_ids.count(x) == 0;
      EXPECT_TRUE(via_orphan) << "the dependency chain changed without a reattached orphan";
    }
  }
  EXPECT_LE(chain_changes, report.stats.count(StatKind::kConvertParentMissingAttached));
}

INSTANTIATE_TEST_SUITE_P(convert_golden, ConvertHostEt, ::testing::ValuesIn(kHostEtCases),
                         [](const auto& info) { return param_name(info.param); });

// ---------- pairs: Chakra's own ET+ ----------
std::vector<std::string> pair_cases() {
  std::vector<std::string> c = {"simple_add", "resnet_1gpu"};
  for (int r = 0; r < 8; ++r) c.push_back("dlrm_8rank/rank" + std::to_string(r));
  return c;
}

class ConvertEtPlus : public ::testing::TestWithParam<std::string> {
 protected:
  std::string dir() const { return (shared_data_dir() / "pairs" / GetParam()).string(); }
};

TEST_P(ConvertEtPlus, BothModesConvertAndDefaultIsValid) {
  CF_REQUIRE_SHARED_DATA("pairs/" + GetParam());
  testing::TempDir tmp;
  const std::string input = dir() + "/reference/et_plus.modern.json.gz";
  ConvertReport chakra_report, default_report;
  auto chakra = convert_and_read(input, tmp.file("chakra.et"), Compat::kChakra, &chakra_report);
  ASSERT_TRUE(chakra.ok()) << chakra.status().message();
  auto def = convert_and_read(input, tmp.file("default.et"), Compat::kDefault, &default_report);
  ASSERT_TRUE(def.ok()) << def.status().message();
  expect_valid_graph(*def);
  // Every GPU node of the ET+ has its launcher, so both modes write all of them.
  size_t gpu_chakra = 0, gpu_default = 0, stream_deps = 0, colls = 0;
  for (const pb::Node& n : chakra->nodes) {
    for (const auto& a : n.attr()) gpu_chakra += a.name() == "is_cpu_op" && !a.bool_val();
  }
  for (const pb::Node& n : def->nodes) {
    bool gpu = false;
    for (const auto& a : n.attr()) gpu |= a.name() == "is_cpu_op" && !a.bool_val();
    gpu_default += gpu;
    stream_deps += gpu && n.data_deps_size() == 2;
    colls += n.type() == pb::COMM_COLL_NODE;
  }
  EXPECT_GT(gpu_chakra, 0u);
  EXPECT_EQ(gpu_default, gpu_chakra);
  EXPECT_GT(stream_deps, 0u) << "no GPU op waits for the previous op of its stream";
  EXPECT_EQ(default_report.gpu_stream_edges, stream_deps);
  if (GetParam().find("dlrm") != std::string::npos) {
    EXPECT_GT(colls, 0u);
  }
}

// Our own linker's ET+ (default mode: sync_dep on host and GPU nodes, remapped parents, memsets)
// from both device traces of every pair converts in both modes, and the default output is a valid
// graph in which the sync dependencies became data dependencies.
TEST_P(ConvertEtPlus, OurLinkerOutputConvertsInBothModes) {
  CF_REQUIRE_SHARED_DATA("pairs/" + GetParam());
  testing::TempDir tmp;
  for (const char* device : {"kineto.modern.json.gz", "kineto.legacy.json.gz"}) {
    SCOPED_TRACE(device);
    RankJob job{dir() + "/host_et.json.gz", dir() + "/" + device, tmp.file("et_plus.json"), {}};
    const RankJobResult linked = run_link_job(job);
    ASSERT_TRUE(linked.status.ok()) << linked.status.message();
    ConvertReport chakra_report, default_report;
    auto chakra =
        convert_and_read(job.et_plus_path, tmp.file("chakra.et"), Compat::kChakra, &chakra_report);
    ASSERT_TRUE(chakra.ok()) << chakra.status().message();
    auto def = convert_and_read(job.et_plus_path, tmp.file("default.et"), Compat::kDefault,
                                &default_report);
    ASSERT_TRUE(def.ok()) << def.status().message();
    expect_valid_graph(*def);
    EXPECT_GT(def->nodes.size(), 0u);
    EXPECT_EQ(default_report.sync_edges,
              linked.summary.sync.host_deps + linked.summary.sync.gpu_deps);
    if (GetParam().find("dlrm") != std::string::npos) {
      EXPECT_GT(default_report.sync_edges, 0u);
    }
  }
}

// Chakra's 1.0.1 ET+ keeps `parent` in the host trace's ids; the ids it recovers must be the
// ones the host trace has.
TEST_P(ConvertEtPlus, RenumberedParentsMatchTheHostTrace) {
  CF_REQUIRE_SHARED_DATA("pairs/" + GetParam());
  auto host = load_host_trace(dir() + "/host_et.json.gz");
  ASSERT_TRUE(host.ok()) << host.status().message();
  auto et_plus = load_et_plus(dir() + "/reference/et_plus.modern.json.gz", ConvertOptions());
  ASSERT_TRUE(et_plus.ok()) << et_plus.status().message();
  const EtPlusTrace* t = &et_plus->trace;
  EXPECT_TRUE(t->parents_renumbered);
  // trace_link numbered the host nodes in host-id order: the k-th CPU node of the ET+ is the
  // k-th host node.
  std::vector<uint32_t> cpu;
  for (uint32_t i = 0; i < t->nodes.size(); ++i) {
    if (t->nodes[i].kind != OpKind::kGpu) cpu.push_back(i);
  }
  ASSERT_EQ(cpu.size(), host->nodes.size());
  std::map<uint64_t, uint64_t> new_id_of;
  for (size_t k = 0; k < cpu.size(); ++k) new_id_of[host->nodes[k].id] = t->nodes[cpu[k]].id;
  size_t checked = 0, wrong = 0;
  for (size_t k = 0; k < cpu.size(); ++k) {
    const HostNode& h = host->nodes[k];
    const EtPlusNode& n = t->nodes[cpu[k]];
    ASSERT_EQ(h.name, n.name) << "ET+ node " << n.id;
    if (h.parent == h.id || !new_id_of.count(h.parent)) {
      EXPECT_EQ(n.parent, kNoNode) << "ET+ node " << n.id;
      continue;
    }
    ++checked;
    if (n.parent == kNoNode || t->nodes[n.parent].id != new_id_of[h.parent]) {
      if (wrong++ < 5)
        ADD_FAILURE() << "ET+ node " << n.id << ": parent should be " << new_id_of[h.parent];
    }
  }
  EXPECT_GT(checked, 0u);
  EXPECT_EQ(wrong, 0u);
}

INSTANTIATE_TEST_SUITE_P(convert_golden, ConvertEtPlus, ::testing::ValuesIn(pair_cases()),
                         [](const auto& info) { return param_name(info.param); });

// ---------- chakra_et: files written by Chakra's tools ----------
std::vector<std::string> chakra_et_files() {
  std::vector<std::string> files;
  auto root = shared_data_dir();
  if (root.empty() || !std::filesystem::exists(root / "chakra_et")) return {"(absent)"};
  for (const auto& e : std::filesystem::recursive_directory_iterator(root / "chakra_et")) {
    if (e.is_regular_file() && e.path().extension() == ".et") {
      files.push_back(std::filesystem::relative(e.path(), root / "chakra_et").string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

class ChakraEtFile : public ::testing::TestWithParam<std::string> {};

TEST_P(ChakraEtFile, ReadAndJsonizedWithoutLoss) {
  CF_REQUIRE_SHARED_DATA("chakra_et/" + GetParam());
  const std::string path = (shared_data_dir() / "chakra_et" / GetParam()).string();
  auto original = read_et(path);
  ASSERT_TRUE(original.ok()) << original.status().message();
  ASSERT_FALSE(original->nodes.empty());
  // Writing the messages back gives the file's bytes: nothing was dropped when reading.
  testing::TempDir tmp;
  {
    auto w = EtWriter::open(tmp.file("copy.et"));
    ASSERT_TRUE(w.ok());
    w->write(original->metadata);
    for (const auto& n : original->nodes) w->write(n);
    ASSERT_TRUE(w->commit().ok());
  }
  EXPECT_TRUE(testing::read_text(tmp.file("copy.et")) == testing::read_text(path));
  // The JSON document parses, and each object converts back into the same message.
  JsonizeReport report;
  ASSERT_TRUE(jsonize_file(path, tmp.file("out.json"), JsonizeOptions(), &report).ok());
  EXPECT_EQ(report.nodes, original->nodes.size());
  simdjson::dom::parser parser;
  simdjson::dom::element doc = testing::load_json(parser, tmp.file("out.json"));
  pb::GlobalMetadata md;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(
                  simdjson::to_string(doc["globalMetadata"].value()), &md)
                  .ok());
  EXPECT_TRUE(MessageDifferencer::Equals(md, original->metadata));
  simdjson::dom::array nodes = doc["nodes"].get_array().value();
  ASSERT_EQ(nodes.size(), original->nodes.size());
  size_t i = 0, lost = 0;
  for (simdjson::dom::element e : nodes) {
    pb::Node n;
    auto status = google::protobuf::util::JsonStringToMessage(simdjson::to_string(e), &n);
    ASSERT_TRUE(status.ok()) << status.ToString();
    if (!MessageDifferencer::Equals(n, original->nodes[i])) {
      if (lost++ < 3) ADD_FAILURE() << "node #" << i << " differs after the JSON round trip";
    }
    ++i;
  }
  EXPECT_EQ(lost, 0u);
}

INSTANTIATE_TEST_SUITE_P(convert_golden, ChakraEtFile, ::testing::ValuesIn(chakra_et_files()),
                         [](const auto& info) { return param_name(info.param); });

// ---------- protoc reads our records against the schema ----------
TEST(convert_golden, ProtocDecodesOurRecords) {
  CF_REQUIRE_SHARED_DATA("host_et/pt2_compile_1.1.1");
  if (testing::run_command("protoc --version") != 0) GTEST_SKIP() << "protoc not found";
  testing::TempDir tmp;
  ConvertReport report;
  ASSERT_TRUE(
      convert_file((shared_data_dir() / "host_et/pt2_compile_1.1.1/host_et.json.gz").string(),
                   tmp.file("out.et"), ConvertOptions(), &report)
          .ok());
  // Split the file into records with the protobuf library, decode record 2 with protoc.
  const std::string bytes = testing::read_text(tmp.file("out.et"));
  google::protobuf::io::ArrayInputStream array(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&array);
  std::string records[2];
  for (auto& r : records) {
    uint32_t size = 0;
    ASSERT_TRUE(in.ReadVarint32(&size));
    ASSERT_TRUE(in.ReadString(&r, static_cast<int>(size)));
  }
  testing::write_text(tmp.file("metadata.bin"), records[0]);
  testing::write_text(tmp.file("node.bin"), records[1]);
  const std::string proto_dir = std::string(CHAKRAFLOW_SOURCE_DIR) + "/proto";
  std::string out;
  ASSERT_EQ(testing::run_command("protoc --decode=ChakraProtoMsg.Node --proto_path=" + proto_dir +
                                     " " + proto_dir + "/et_def.proto < " + tmp.file("node.bin"),
                                 &out),
            0)
      << out;
  EXPECT_NE(out.find("name: \"[pytorch|profiler|execution_trace|thread]\""), std::string::npos)
      << out;
  EXPECT_NE(out.find("type: COMP_NODE"), std::string::npos) << out;
  EXPECT_NE(out.find("bool_val: true"), std::string::npos) << out;
  ASSERT_EQ(testing::run_command(
                "protoc --decode=ChakraProtoMsg.GlobalMetadata --proto_path=" + proto_dir + " " +
                    proto_dir + "/et_def.proto < " + tmp.file("metadata.bin"),
                &out),
            0);
  EXPECT_NE(out.find("string_val: \"1.1.1-chakra.0.0.4\""), std::string::npos) << out;
  ASSERT_EQ(testing::run_command("protoc --decode_raw < " + tmp.file("node.bin"), &out), 0);
  EXPECT_NE(out.find("3: 4"), std::string::npos) << out;  // field 3 (type) = COMP_NODE
}

// ---------- the CLI ----------
TEST(convert_cli, ChakraSpellingsAndExitCodes) {
  CF_REQUIRE_SHARED_DATA("host_et/allgather_1.0.2");
  const std::string bin = CHAKRAFLOW_BINARY;
  const std::string dir = (shared_data_dir() / "host_et/allgather_1.0.2").string();
  testing::TempDir tmp;
  std::string out;
  // Chakra's form: `chakra_converter [--log-filename F] PyTorch --input X --output Y`, through the
  // installed name.
  std::filesystem::create_symlink(bin, tmp.file("chakra_converter"));
  std::filesystem::create_symlink(bin, tmp.file("chakra_jsonizer"));
  EXPECT_EQ(
      testing::run_command(tmp.file("chakra_converter") + " --log-filename " +
                               tmp.file("debug.log") + " PyTorch --input " + dir +
                               "/host_et.json.gz --output " + tmp.file("a.et") + " --compat chakra",
                           &out),
      0)
      << out;
  EXPECT_NE(out.find("--log-filename is accepted"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(tmp.file("debug.log")));
  EXPECT_TRUE(testing::read_text(tmp.file("a.et")) ==
              testing::read_text(dir + "/reference/chakra.et"));
  // Our form, gzip'd output.
  EXPECT_EQ(testing::run_command(bin + " convert -q --input " + dir + "/host_et.json.gz --output " +
                                     tmp.file("b.et.gz"),
                                 &out),
            0)
      << out;
  EXPECT_TRUE(out.empty()) << out;
  auto b = read_et(tmp.file("b.et.gz"));
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->nodes.size(), 262u);
  // Jsonizer with Chakra's flag names, default (one JSON document) and --concatenated.
  EXPECT_EQ(testing::run_command(tmp.file("chakra_jsonizer") + " --input_filename " +
                                     tmp.file("a.et") + " --output_filename " + tmp.file("a.json"),
                                 &out),
            0)
      << out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = testing::load_json(parser, tmp.file("a.json"));
  EXPECT_EQ(doc["nodes"].get_array().value().size(), 262u);
  EXPECT_EQ(testing::run_command(bin + " jsonize --concatenated -q --input " + tmp.file("a.et") +
                                     " --output " + tmp.file("a.txt"),
                                 &out),
            0);
  EXPECT_TRUE(testing::read_text(tmp.file("a.txt")) ==
              testing::read_text(dir + "/reference/chakra.jsonized.txt.gz"));
  // Usage errors: 2. Bad input: 1, naming the file.
  EXPECT_EQ(testing::run_command(bin + " convert --input x.json", &out), 2);
  EXPECT_NE(out.find("missing --output"), std::string::npos) << out;
  EXPECT_EQ(testing::run_command(bin + " convert Text --input x --output y", &out), 2);
  EXPECT_EQ(testing::run_command(bin + " convert --input x --output y --bogus", &out), 2);
  EXPECT_EQ(testing::run_command(bin + " convert --input x --output y --compat python", &out), 2);
  EXPECT_EQ(testing::run_command(bin + " jsonize --input x.et", &out), 2);
  testing::write_text(tmp.file("bad.json"),
                      R"({"schema": "1.0.2-chakra.0.0.4", "nodes": [{"id": 1}]})");
  EXPECT_EQ(testing::run_command(bin + " convert --input " + tmp.file("bad.json") + " --output " +
                                     tmp.file("bad.et"),
                                 &out),
            1);
  EXPECT_NE(out.find(tmp.file("bad.json")), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(tmp.file("bad.et")));
  testing::write_text(tmp.file("bad.et"), std::string("\x00\x10\x08", 3));
  EXPECT_EQ(testing::run_command(
                bin + " jsonize --input " + tmp.file("bad.et") + " --output " + tmp.file("bad.txt"),
                &out),
            1);
  EXPECT_NE(out.find("record #1 at byte 1"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(tmp.file("bad.txt")));
}

// ---------- load_et_plus with the nodes read in windows ----------

// Loads `path` whole and in windows of each size, converts each: the same .et bytes and data
// problems, or the same error. Returns the number of windows of the smallest size.
size_t expect_windowed_load_converts_as_whole(const std::string& path,
                                              std::initializer_list<size_t> window_sizes) {
  testing::TempDir dir;
  auto convert = [&](size_t window, std::string* et, DataProblems* stats, size_t* windows) {
    auto file = load_et_plus(path, ConvertOptions(), window);
    if (!file.ok()) return file.status();
    *windows = file->host->parse_windows;
    ConvertReport report;
    CF_RETURN_IF_ERROR(convert_trace(file->trace, dir.file("out.et"), ConvertOptions(), &report));
    *et = testing::read_text(dir.file("out.et"));
    *stats = report.stats;
    return Status();
  };
  std::string whole_et;
  DataProblems whole_stats;
  size_t whole_windows = 0;
  const Status whole = convert(0, &whole_et, &whole_stats, &whole_windows);
  EXPECT_EQ(whole_windows, 0u);
  size_t smallest_windows = 0;
  bool first = true;
  for (size_t window : window_sizes) {
    std::string et;
    DataProblems stats;
    size_t windows = 0;
    const Status windowed = convert(window, &et, &stats, &windows);
    const std::string label = fmt::format("{}, windows of {} bytes", path, window);
    EXPECT_EQ(whole.ok(), windowed.ok())
        << label << ": " << (whole.ok() ? windowed : whole).message();
    if (!whole.ok() || !windowed.ok()) {
      if (!whole.ok() && !windowed.ok()) {
        EXPECT_EQ(whole.message(), windowed.message()) << label;
      }
      continue;
    }
    EXPECT_TRUE(et == whole_et) << label << ": the .et differs";
    EXPECT_EQ(stats.entries().size(), whole_stats.entries().size()) << label;
    for (const auto& [kind, entry] : whole_stats.entries()) {
      EXPECT_EQ(stats.count(kind), entry.count) << label << ": " << stat_key(kind);
    }
    if (first) smallest_windows = windows;
    first = false;
  }
  return smallest_windows;
}

TEST(LoadEtPlusWindows, RealTracesConvertAsWhole) {
  CF_REQUIRE_SHARED_DATA("host_et");
  size_t files = 0;
  for (const char* sub : {"host_et", "pairs"}) {
    const auto root = testing::shared_data_dir() / sub;
    if (!std::filesystem::exists(root)) continue;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
      const std::string path = entry.path().string();
      const std::string name = entry.path().filename().string();
      if (!entry.is_regular_file() ||
          (name.rfind("host_et.json", 0) != 0 && name.rfind("et_plus.", 0) != 0)) {
        continue;
      }
      const size_t windows = expect_windowed_load_converts_as_whole(path, {333, 1 << 16});
      EXPECT_GT(windows, 1u) << path << ": the windows were not used";
      ++files;
    }
  }
  EXPECT_GE(files, 12u);  // host ETs and the ET+ references
}

TEST(LoadEtPlusWindows, GeneratedTracesConvertAsWhole) {
  testing::TempDir dir;
  for (bool legacy : {false, true}) {
    SynthOptions opt;
    opt.ranks = 2;
    opt.scale = 0.03;
    opt.legacy = legacy;
    std::string host;
    synthesize_rank(
        opt, 0, [&](std::string_view b) { host.append(b); }, [](std::string_view) {});
    const std::string path = dir.file(legacy ? "legacy.json" : "host.json");
    testing::write_text(path, host);
    EXPECT_GT(expect_windowed_load_converts_as_whole(path, {100, 4096}), host.size() / 4096);
  }
}

// What a node's fields leave before a window's end cuts it (sync deps, data problems, attrs) is
// taken back: the node read again from its start counts once.
TEST(LoadEtPlusWindows, CutNodesCountOnce) {
  std::string nodes;
  for (int i = 1; i <= 200; ++i) {
    if (i > 1) nodes += ",\n";
    nodes += fmt::format(
        R"({{"id": {}, "name": "op{}", "ctrl_deps": {}, "sync_dep": [{}], )"
        R"("attrs": [{{"name": "pg_name", "type": "int", "value": 3}}, )"
        R"({{"name": "rf_id", "type": "uint64", "value": {}}}, {{"name": "x", "value": {{"a": "}},{{"}}}}], )"
        R"("inputs": {{"values": [[{{"b": 1}}], "s"], "shapes": [[1]], "types": ["Tensor"]}}, )"
        R"("outputs": {{"values": [], "shapes": [], "types": []}}, "ts": {}, "exclusive_dur": 1}})",
        i, i, i > 1 ? 1 : 0, i > 1 ? i - 1 : 7, i, 10 * i);
  }
  testing::TempDir dir;
  const std::string path = dir.file("et_plus.json");
  testing::write_text(path,
                      R"({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [)" + nodes + "]}");
  EXPECT_GT(expect_windowed_load_converts_as_whole(path, {64, 200, 1000}), 30u);
  auto file = load_et_plus(path, ConvertOptions(), 200);
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->trace.stats.count(StatKind::kEtPlusPgNameNotString), 200u);
  EXPECT_EQ(file->trace.sync_dep_ids.size(), 200u);
  EXPECT_EQ(file->trace.nodes.size(), 200u);
}

TEST(LoadEtPlusWindows, BadInputCorpusConvertsAsWhole) {
  size_t files = 0;
  for (const char* sub : {"host_et", "et_plus"}) {
    const auto dir = std::filesystem::path(CHAKRAFLOW_SOURCE_DIR) / "tests" / "bad_inputs" / sub;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".json") continue;
      expect_windowed_load_converts_as_whole(entry.path().string(), {16, 64, 256});
      ++files;
    }
  }
  EXPECT_GE(files, 20u);
}

}  // namespace
}  // namespace chakraflow
