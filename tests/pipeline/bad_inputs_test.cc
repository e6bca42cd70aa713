// The bad-input corpus: every file of tests/bad_inputs/<format>/ against its expected outcome in
// tests/bad_inputs/expected.tsv (layout and manifest format: tests/bad_inputs/README.md).
//
// Each format is driven through the library the way a run uses it, so that a bad input meets every
// stage it can reach:
//   host_et       load_host_trace, linked with device_trace/baseline.json, the ET+ written, read
//                 back and converted (what `chakraflow run` does per rank);
//   device_trace  load_device_trace, then the same with host_et/baseline.json;
//   link_pair     host ET bytes, a NUL byte, device trace bytes (the fuzz_link_pair input): both
//                 parsed, then linked and converted as above;
//   et_plus       convert_file, then the .et it wrote fed back and every node decoded;
//   et            every record read raw (EtReader), then EtFeeder (ctrl_deps honoured): every
//                 node issued, decoded and completed;
//   yaml          load_run_config.
// Every case of the formats a rank's traces come in (host_et, device_trace, link_pair, et_plus)
// is also driven in pieces: its texts read in windows of a few hundred bytes and, where a text has
// room for a cut, in shards, on 2 and 16 workers, its ET+ and .et written in batches on them. The
// outcome must be the same: the same error (message and place) or the same results and warnings.
// An `error` must name the file and a place in it (byte offset, event, record, node id or
// line:column); an `ok` lists the results it must give and every warning counter that is not
// zero; a `stalled` .et names the nodes that can never be issued.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <oneapi/tbb/global_control.h>
#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "pipeline/parallel_batches.h"
#include "pipeline/run_config.h"
#include "proto/et_def.pb.h"
#include "stages/common/json_util.h"
#include "stages/convert/et_plus_nodes.h"
#include "stages/convert/pytorch_converter.h"
#include "stages/et/et_io.h"
#include "stages/feed/et_feeder.h"
#include "stages/link/device_trace_loader.h"
#include "stages/link/et_plus_writer.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/link.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

namespace fs = std::filesystem;

const fs::path& corpus_dir() {
  static const fs::path dir = fs::path(CHAKRAFLOW_SOURCE_DIR) / "tests" / "bad_inputs";
  return dir;
}

// ---------------------------------------------------------------------------------------------
// What a driver observed.

struct Outcome {
  enum Kind { kOk, kError, kStalled };
  Kind kind = kOk;
  std::string message;  // kError: the error; kStalled: the feeder's stall report
  // Results ("et_nodes") and the warning counters, as "stat:<key>".
  std::map<std::string, uint64_t> values;
};

const char* to_string(Outcome::Kind kind) {
  return kind == Outcome::kOk ? "ok" : kind == Outcome::kError ? "error" : "stalled";
}

Outcome failed(const Status& status) {
  return Outcome{Outcome::kError, status.message(), {}};
}

void add_stats(const DataProblems& stats, Outcome& out) {
  for (const auto& [kind, entry] : stats.entries()) {
    out.values["stat:" + std::string(stat_key(kind))] += entry.count;
  }
}

// ---------------------------------------------------------------------------------------------
// Drivers, one per format.

// How the drivers read and write a rank's texts: in one piece on the calling thread (null), or
// in windows of `window_bytes` and shards on `workers`, the ET+ and .et written in batches on them.
struct Pieces {
  size_t window_bytes = 0;
  const OrderedBatches* workers = nullptr;
  ParseShards shards;
};
const Pieces* g_pieces = nullptr;
// Windows and shards the drivers' texts were read in, past one each (pieces of their own).
size_t g_pieces_read = 0;

// g_pieces set to `pieces` while in scope (also when a driver throws: a test after it reads
// whole).
class InPieces {
 public:
  explicit InPieces(const Pieces& pieces) {
    g_pieces = &pieces;
    g_pieces_read = 0;
  }
  ~InPieces() { g_pieces = nullptr; }
  InPieces(const InPieces&) = delete;
  InPieces& operator=(const InPieces&) = delete;
};

template <typename Trace>
void count_pieces(const Trace& t) {
  g_pieces_read += t.parse_windows + t.parse_shards;
}

// `read`, its windows and shards counted when it read.
template <typename Trace>
StatusOr<Trace> counted(StatusOr<Trace> read) {
  if (read.ok()) count_pieces(*read);
  return read;
}

StatusOr<HostTrace> host_trace_of(const std::string& path) {
  if (g_pieces == nullptr) return load_host_trace(path);
  return counted(load_host_trace(path, nullptr, g_pieces->window_bytes, g_pieces->shards));
}

StatusOr<HostTrace> host_trace_in(std::string path, std::string text) {
  if (g_pieces == nullptr) return parse_host_trace(std::move(path), std::move(text));
  return counted(
      parse_host_trace(std::move(path), std::move(text), g_pieces->window_bytes, g_pieces->shards));
}

StatusOr<DeviceTrace> device_trace_in(std::string path, std::string text) {
  if (g_pieces == nullptr) return parse_device_trace(std::move(path), std::move(text));
  return counted(parse_device_trace(std::move(path), std::move(text), g_pieces->window_bytes,
                                    g_pieces->shards));
}

StatusOr<DeviceTrace> device_trace_of(const std::string& path) {
  if (g_pieces == nullptr) return load_device_trace(path);
  // The device loader takes no window size of its own: a plain text is read, then parsed.
  if (path.ends_with(".gz")) return counted(load_device_trace(path, g_pieces->shards));
  return device_trace_in(path, testing::read_text(path));
}

const OrderedBatches* workers() {
  return g_pieces == nullptr ? nullptr : g_pieces->workers;
}

// Links the pair, writes the ET+, reads it back and converts it, as `chakraflow run` does.
Outcome link_and_convert(const HostTrace& host, const DeviceTrace& device, Outcome out) {
  LinkOptions options;
  options.min_match_rate = 0;  // sequence mode (device traces without rf_ids) takes any match
  auto linked = link_traces(host, device, options);
  if (!linked.ok()) return failed(linked.status());
  std::string et_plus;
  Status written = write_et_plus(
      host, device, *linked, options, [&et_plus](std::string_view bytes) { et_plus.append(bytes); },
      workers());
  if (!written.ok()) return failed(written);
  out.values["et_plus_nodes"] = linked->node_count;
  out.values["gpu_ops_linked"] = linked->gpu_events.size();
  add_stats(linked->stats, out);

  const ConvertOptions convert_options;
  auto reread = g_pieces == nullptr
                    ? parse_et_plus(host.path + " (its ET+)", std::move(et_plus), convert_options)
                    : parse_et_plus(host.path + " (its ET+)", std::move(et_plus), convert_options,
                                    g_pieces->window_bytes);
  if (!reread.ok()) return failed(reread.status());
  if (g_pieces != nullptr) count_pieces(*reread->host);
  const EtPlusTrace& nodes = reread->trace;
  DataProblems convert_stats = nodes.stats;
  auto chakra = convert_et_plus(nodes, convert_options, convert_stats);
  if (!chakra.ok()) return failed(chakra.status());
  out.values["et_nodes"] = chakra->nodes.size();
  add_stats(convert_stats, out);
  return out;
}

// host_et/ and device_trace/ cases are linked with the other format's baseline: aten::add
// (rf_id 10) and aten::mul (rf_id 11) on thread 1 of process 1, each launching one kernel.
Outcome run_host_et(const std::string& path) {
  auto host = host_trace_of(path);
  if (!host.ok()) return failed(host.status());
  auto device = device_trace_of((corpus_dir() / "device_trace/baseline.json").string());
  if (!device.ok()) return failed(device.status());
  Outcome out;
  out.values["host_nodes"] = host->nodes.size();
  return link_and_convert(*host, *device, std::move(out));
}

Outcome run_device_trace(const std::string& path) {
  auto device = device_trace_of(path);
  if (!device.ok()) return failed(device.status());
  auto host = host_trace_of((corpus_dir() / "host_et/baseline.json").string());
  if (!host.ok()) return failed(host.status());
  Outcome out;
  out.values["device_events"] = device->events.size();
  return link_and_convert(*host, *device, std::move(out));
}

Outcome run_link_pair(const std::string& path) {
  std::string bytes = testing::read_text(path);
  const size_t nul = bytes.find('\0');
  if (nul == std::string::npos) {
    ADD_FAILURE() << path << " has no NUL byte between the host ET and the device trace";
    return Outcome{};
  }
  auto host = host_trace_in(path + " (host ET part)", bytes.substr(0, nul));
  if (!host.ok()) return failed(host.status());
  auto device = device_trace_in(path + " (device trace part)", bytes.substr(nul + 1));
  if (!device.ok()) return failed(device.status());
  Outcome out;
  out.values["host_nodes"] = host->nodes.size();
  out.values["device_events"] = device->events.size();
  return link_and_convert(*host, *device, std::move(out));
}

// Reads every record of a .et raw (the framing: length prefixes, truncation, gzip), then issues
// every node in dependency order, decoding each as a simulator would.
Outcome feed(const std::string& path) {
  auto reader = EtReader::open(path);
  if (!reader.ok()) return failed(reader.status());
  std::string_view record;
  for (;;) {
    auto more = reader->next_raw(&record);
    if (!more.ok()) return failed(more.status());
    if (!*more) break;
  }
  FeederOptions options;
  options.ctrl_deps = true;
  auto opened = EtFeeder::open(path, options);
  if (!opened.ok()) return failed(opened.status());
  EtFeeder& feeder = **opened;
  ChakraProtoMsg::Node node;
  uint64_t issued = 0;
  while (const FeederNode* n = feeder.issue()) {
    const NodeId id = n->id;
    Status parsed = n->parse(&node);
    if (!parsed.ok()) return failed(parsed.with_context(path));
    ++issued;
    Status completed = feeder.complete(id);
    if (!completed.ok()) return failed(completed);
  }
  Outcome out;
  out.values["nodes"] = issued;
  out.values["metadata_missing"] = feeder.stats().metadata_missing ? 1 : 0;
  switch (feeder.state()) {
    case FeedState::kDone:
      return out;
    case FeedState::kError:
      return failed(feeder.error());
    case FeedState::kStalled:
      out.kind = Outcome::kStalled;
      out.message = feeder.stall_report().to_string();
      return out;
    case FeedState::kRunning:
      break;
  }
  ADD_FAILURE() << path << ": the feeder is still running with nothing to issue";
  return out;
}

// convert_file, its input read in g_pieces' windows and shards, the .et written in batches on its
// workers.
Status convert_in_pieces(const std::string& path, const std::string& output,
                         ConvertReport* report) {
  const ConvertOptions options;
  CF_ASSIGN_OR_RETURN(EtPlusFile input,
                      load_et_plus(path, options, g_pieces->window_bytes, g_pieces->shards));
  count_pieces(*input.host);
  return convert_trace(input.trace, output, options, report, g_pieces->workers);
}

Outcome run_et_plus(const std::string& path) {
  testing::TempDir dir;
  const std::string output = dir.file("out.et");
  ConvertReport report;
  Status converted = g_pieces == nullptr ? convert_file(path, output, ConvertOptions{}, &report)
                                         : convert_in_pieces(path, output, &report);
  if (!converted.ok()) {
    // Outputs are written to a temporary name and renamed: a failure leaves nothing behind.
    EXPECT_TRUE(fs::is_empty(dir.path())) << path << ": a failed conversion left a file behind";
    return failed(converted);
  }
  Outcome out;
  out.values["input_nodes"] = report.input_nodes;
  out.values["output_nodes"] = report.output_nodes;
  out.values["removed_dangling"] = report.removed_dangling;
  out.values["sync_edges"] = report.sync_edges;
  add_stats(report.stats, out);
  // What was written must be a trace a simulator can run to the end.
  Outcome fed = feed(output);
  if (fed.kind != Outcome::kOk) {
    return failed(Status::errorf("{}: its conversion cannot be fed ({}): {}", path,
                                 to_string(fed.kind), fed.message));
  }
  out.values["fed_nodes"] = fed.values["nodes"];
  return out;
}

Outcome run_yaml(const std::string& path) {
  auto config = load_run_config(path);
  if (!config.ok()) return failed(config.status());
  Outcome out;
  out.values["ranks"] = config->ranks.size();
  if (!config->ranks.empty()) {
    out.values["first_rank"] = static_cast<uint64_t>(config->ranks.front());
    out.values["last_rank"] = static_cast<uint64_t>(config->ranks.back());
  }
  out.values["stages"] = config->stages.size();
  out.values["threads"] = static_cast<uint64_t>(config->threads);
  return out;
}

using Driver = Outcome (*)(const std::string&);
const std::map<std::string, Driver>& drivers() {
  static const std::map<std::string, Driver> by_format = {
      {"host_et", run_host_et},
      {"device_trace", run_device_trace},
      {"link_pair", run_link_pair},
      {"et_plus", run_et_plus},
      {"et", feed},
      {"yaml", run_yaml},
  };
  return by_format;
}

// ---------------------------------------------------------------------------------------------
// The manifest.

struct Expectation {
  std::string key;
  bool at_least = false;  // ">=" rather than "="
  uint64_t value = 0;
};

struct Case {
  std::string file;    // relative to the corpus directory
  std::string format;  // its first path component
  Outcome::Kind outcome = Outcome::kOk;
  std::string substring;                  // error / stalled: must appear in the message
  std::vector<Expectation> expectations;  // ok
  int line = 0;
  std::string problem;  // why the manifest line is malformed, if it is
};

std::string trim(std::string s) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), space));
  s.erase(std::find_if_not(s.rbegin(), s.rend(), space).base(), s.end());
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!s.empty() && s.back() == sep) parts.emplace_back();
  return parts;
}

// "key=N" or "key>=N"; the key may hold anything but ';' (stats kinds are sentences).
bool parse_expectation(const std::string& text, Expectation* e) {
  const size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0) return false;
  const std::string number = trim(text.substr(eq + 1));
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), e->value);
  if (number.empty() || error != std::errc() || end != number.data() + number.size()) return false;
  e->at_least = text[eq - 1] == '>';
  e->key = trim(text.substr(0, e->at_least ? eq - 1 : eq));
  return !e->key.empty();
}

Case parse_case(const std::string& line, int line_number) {
  Case c;
  c.line = line_number;
  const std::vector<std::string> fields = split(line, '\t');
  if (fields.size() != 3) {
    c.problem = "expected 3 tab-separated fields: file, outcome, detail";
    return c;
  }
  c.file = fields[0];
  c.format = c.file.substr(0, c.file.find('/'));
  const std::string& outcome = fields[1];
  const std::string detail = trim(fields[2]);
  if (outcome == "error" || outcome == "stalled") {
    c.outcome = outcome == "error" ? Outcome::kError : Outcome::kStalled;
    c.substring = detail;
    if (c.substring.empty()) c.problem = "an error needs the text its message must contain";
  } else if (outcome == "ok") {
    for (const std::string& part : split(detail, ';')) {
      Expectation e;
      if (!parse_expectation(trim(part), &e)) {
        c.problem = "cannot read the expectation '" + part + "' (key=N or key>=N)";
        return c;
      }
      c.expectations.push_back(e);
    }
    const bool has_result =
        std::any_of(c.expectations.begin(), c.expectations.end(),
                    [](const Expectation& e) { return e.key.rfind("stat:", 0) != 0; });
    if (!has_result) c.problem = "an ok case needs at least one result that is not a stat";
  } else {
    c.problem = "unknown outcome '" + outcome + "' (ok, error, stalled)";
  }
  if (c.outcome == Outcome::kStalled && c.format != "et") c.problem = "only a .et can stall";
  if (drivers().count(c.format) == 0) c.problem = "no driver for the format '" + c.format + "'";
  return c;
}

std::vector<Case> load_manifest() {
  std::vector<Case> cases;
  std::ifstream in(corpus_dir() / "expected.tsv");
  if (!in) {
    Case c;
    c.problem = "cannot read " + (corpus_dir() / "expected.tsv").string();
    cases.push_back(c);
    return cases;
  }
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (trim(line).empty() || line[0] == '#') continue;
    cases.push_back(parse_case(line, n));
  }
  return cases;
}

// The corpus files: everything under the format directories.
std::set<std::string> corpus_files() {
  std::set<std::string> files;
  for (const auto& dir : fs::directory_iterator(corpus_dir())) {
    if (!dir.is_directory()) continue;
    for (const auto& entry : fs::recursive_directory_iterator(dir.path())) {
      if (entry.is_regular_file())
        files.insert(fs::relative(entry.path(), corpus_dir()).generic_string());
    }
  }
  return files;
}

// ---------------------------------------------------------------------------------------------
// Checks.

// Whether `message` names a place in its input: a byte offset (in a gzip'd file: "after N
// decompressed bytes"), an event or record index, a node id, or a line:column.
bool names_a_place(std::string_view m) {
  for (std::string_view prefix : {"byte ", "node ", "node id ", "node #", "node(s): ", "record #",
                                  "traceEvents[", "id ", "after "}) {
    for (size_t p = m.find(prefix); p != std::string_view::npos; p = m.find(prefix, p + 1)) {
      const size_t q = p + prefix.size();
      if (q < m.size() && std::isdigit(static_cast<unsigned char>(m[q]))) return true;
    }
  }
  // ":<line>:<column>"
  for (size_t p = m.find(':'); p != std::string_view::npos; p = m.find(':', p + 1)) {
    size_t q = p + 1;
    size_t digits = 0;
    while (q < m.size() && std::isdigit(static_cast<unsigned char>(m[q]))) ++q, ++digits;
    if (digits == 0 || q >= m.size() || m[q] != ':') continue;
    ++q;
    if (q < m.size() && std::isdigit(static_cast<unsigned char>(m[q]))) return true;
  }
  return false;
}

// Errors about the file as a whole have no better place than the file itself.
bool whole_file_error(std::string_view m) {
  for (std::string_view what : {"empty file", "no \"nodes\" array", "no \"traceEvents\" array"}) {
    if (m.find(what) != std::string_view::npos) return true;
  }
  return false;
}

std::string describe(const Outcome& o) {
  std::string s = to_string(o.kind);
  if (!o.message.empty()) s += ": " + o.message;
  for (const auto& [key, value] : o.values) s += "\n    " + key + " = " + std::to_string(value);
  return s;
}

// Peak resident memory of the process so far.
uint64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // KiB on Linux
}
constexpr uint64_t kMaxPeakGrowthBytes = uint64_t{256} << 20;

// gtest prints a failing parameter with this.
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.file;
}

class BadInput : public ::testing::TestWithParam<Case> {};

TEST_P(BadInput, GivesItsExpectedOutcome) {
  const Case& c = GetParam();
  ASSERT_TRUE(c.problem.empty()) << "expected.tsv line " << c.line << ": " << c.problem;
  const std::string path = (corpus_dir() / c.file).string();
  ASSERT_TRUE(fs::is_regular_file(path)) << path << " is listed in expected.tsv but missing";
  ASSERT_LT(fs::file_size(path), 50u * 1024) << path << ": corpus files stay small";

  Outcome got;
  const uint64_t peak_before = peak_rss_bytes();
  try {
    got = drivers().at(c.format)(path);
  } catch (const std::exception& e) {
    FAIL() << path << ": an exception escaped: " << e.what();
  }
  // Memory follows the input, not what the input announces (a record length, a count).
  EXPECT_LT(peak_rss_bytes() - peak_before, kMaxPeakGrowthBytes) << "memory peak grew";
  SCOPED_TRACE(c.file + " gave " + describe(got));
  ASSERT_EQ(to_string(got.kind), std::string(to_string(c.outcome)));

  if (got.kind == Outcome::kError) {
    EXPECT_NE(got.message.find(c.substring), std::string::npos)
        << "the message lacks \"" << c.substring << "\"";
    EXPECT_NE(got.message.find(path), std::string::npos) << "the message does not name the file";
    EXPECT_TRUE(names_a_place(got.message) || whole_file_error(got.message))
        << "the message names no place in the file";
    return;
  }
  if (got.kind == Outcome::kStalled) {
    EXPECT_NE(got.message.find(c.substring), std::string::npos)
        << "the stall report lacks \"" << c.substring << "\"";
    return;
  }
  std::set<std::string> listed;
  for (const Expectation& e : c.expectations) {
    listed.insert(e.key);
    auto it = got.values.find(e.key);
    const bool is_stat = e.key.rfind("stat:", 0) == 0;
    if (it == got.values.end() && !is_stat) {
      ADD_FAILURE() << "no result named \"" << e.key << "\"";
      continue;
    }
    const uint64_t value = it == got.values.end() ? 0 : it->second;
    if (e.at_least) {
      EXPECT_GE(value, e.value) << e.key;
    } else {
      EXPECT_EQ(value, e.value) << e.key;
    }
  }
  // Every warning is accounted for: a data problem the manifest does not expect is a failure.
  for (const auto& [key, value] : got.values) {
    if (key.rfind("stat:", 0) == 0 && value != 0) {
      EXPECT_TRUE(listed.count(key)) << "unexpected warning counter " << key << " = " << value;
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string name =
      info.param.file.empty() ? "line" + std::to_string(info.param.line) : info.param.file;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

class BadRankText : public ::testing::TestWithParam<Case> {};

// The cases of the formats a rank's texts come in (not .et records, not configurations).
std::vector<Case> rank_text_cases() {
  std::vector<Case> cases = load_manifest();
  std::erase_if(cases, [](const Case& c) { return c.format == "et" || c.format == "yaml"; });
  return cases;
}

// The same outcome when a rank's texts are read in windows of 64 and 300 bytes and in up to three
// shards (where the text has room for a cut: the corpus's texts are small) on 2 and 16 workers, and
// its outputs written in batches on them (g_pieces): the same error, or the same results and
// warning counts.
TEST_P(BadRankText, GivesTheSameOutcomeInWindowsAndShards) {
  const Case& c = GetParam();
  ASSERT_TRUE(c.problem.empty()) << "expected.tsv line " << c.line << ": " << c.problem;
  const std::string path = (corpus_dir() / c.file).string();
  const Outcome whole = drivers().at(c.format)(path);
  // A text with bytes that are not UTF-8 is repaired and parsed whole, not in pieces.
  std::string bytes = path.ends_with(".gz") ? std::string() : testing::read_text(path);
  const bool utf8 = !path.ends_with(".gz") && json::repair_utf8(bytes) == 0;
  for (int threads : {2, 16}) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    const ParallelBatches batches(2 * static_cast<size_t>(threads));
    for (size_t piece : {size_t{64}, size_t{300}}) {
      const Pieces pieces{piece, &batches, ParseShards{&batches, 3, piece}};
      Outcome in_pieces;
      {
        const InPieces scope(pieces);
        in_pieces = drivers().at(c.format)(path);
      }
      SCOPED_TRACE(fmt::format("{} threads, pieces of {} bytes", threads, piece));
      EXPECT_EQ(to_string(in_pieces.kind), std::string(to_string(whole.kind)));
      EXPECT_EQ(in_pieces.message, whole.message);
      EXPECT_EQ(in_pieces.values, whole.values);
      // Read in pieces indeed: a text that parses (small as it is) takes several.
      if (whole.kind == Outcome::kOk && utf8) {
        EXPECT_GT(g_pieces_read, 0u);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadInput, ::testing::ValuesIn(load_manifest()), case_name);
INSTANTIATE_TEST_SUITE_P(Corpus, BadRankText, ::testing::ValuesIn(rank_text_cases()), case_name);

TEST(BadInputCorpus, ManifestListsEveryFileOnce) {
  const std::set<std::string> files = corpus_files();
  std::set<std::string> listed;
  for (const Case& c : load_manifest()) {
    EXPECT_TRUE(listed.insert(c.file).second) << c.file << " is listed twice in expected.tsv";
    EXPECT_TRUE(files.count(c.file))
        << c.file << " is listed in expected.tsv but not in the corpus";
  }
  for (const std::string& f : files) {
    EXPECT_TRUE(listed.count(f)) << f << " is in the corpus but not in expected.tsv";
  }
  // Every format has its cases (a directory that went missing is not silently skipped).
  for (const auto& entry : drivers()) {
    const std::string& format = entry.first;  // not a structured binding: the lambda captures it
    EXPECT_TRUE(std::any_of(files.begin(), files.end(),
                            [&](const std::string& f) { return f.rfind(format + "/", 0) == 0; }))
        << "no corpus file for " << format;
  }
}

// ---------------------------------------------------------------------------------------------
// The CLI: a failing command exits non-zero and leaves no output file behind.

TEST(BadInputCli, ConvertFailsWithoutLeavingAnOutput) {
  testing::TempDir dir;
  const std::string input = (corpus_dir() / "et_plus/inter_thread_cycle.json").string();
  std::string output;
  const int rc = testing::run_command(std::string(CHAKRAFLOW_BINARY) + " convert --input " + input +
                                          " --output " + dir.file("trace.et"),
                                      &output);
  EXPECT_NE(rc, 0) << output;
  EXPECT_NE(output.find(input), std::string::npos) << output;
  EXPECT_TRUE(fs::is_empty(dir.path()))
      << "left behind: " << fs::directory_iterator(dir.path())->path();
}

TEST(BadInputCli, LinkFailsWithoutLeavingAnOutput) {
  testing::TempDir dir;
  const std::string host = (corpus_dir() / "host_et/baseline.json").string();
  const std::string device = (corpus_dir() / "device_trace/truncated.json").string();
  std::string output;
  const int rc =
      testing::run_command(std::string(CHAKRAFLOW_BINARY) + " link --host " + host + " --device " +
                               device + " --output " + dir.file("et_plus.json"),
                           &output);
  EXPECT_NE(rc, 0) << output;
  EXPECT_NE(output.find(device), std::string::npos) << output;
  EXPECT_TRUE(fs::is_empty(dir.path()))
      << "left behind: " << fs::directory_iterator(dir.path())->path();
}

}  // namespace
}  // namespace chakraflow
