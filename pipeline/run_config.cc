#include "pipeline/run_config.h"

#include <malloc.h>
#include <sched.h>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "stages/common/file_io.h"
#include "stages/common/json_util.h"
#include "stages/convert/convert_options.h"
#include "stages/link/link_options.h"

namespace chakraflow {
namespace {

namespace fs = std::filesystem;

class Checker {
 public:
  explicit Checker(std::string path) : path_(std::move(path)) {}

  Status at(const YAML::Node& node, const std::string& what) const {
    YAML::Mark m = node.Mark();
    if (m.line < 0) return Status::errorf("{}: {}", path_, what);
    return Status::errorf("{}:{}:{}: {}", path_, m.line + 1, m.column + 1, what);
  }

  // Every key of `map` must be one of `allowed`.
  Status keys(const YAML::Node& map, const std::string& where,
              const std::vector<std::string>& allowed) const {
    if (!map.IsMap()) return at(map, fmt::format("'{}' must be a mapping", where));
    std::set<std::string> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      // YAML allows any node as a key ("? [a, b]"); as<std::string>() would throw on it.
      if (!it->first.IsScalar())
        return at(it->first, fmt::format("a key in '{}' is not a name", where));
      std::string key = it->first.as<std::string>();
      bool ok = false;
      for (const std::string& a : allowed) ok |= key == a;
      if (!ok) {
        return at(it->first, fmt::format("unknown key '{}' in '{}' (expected one of: {})", key,
                                         where, fmt::join(allowed, ", ")));
      }
      // yaml-cpp keeps both; lookups would see the first only.
      if (!seen.insert(key).second) {
        return at(it->first, fmt::format("key '{}' appears twice in '{}'", key, where));
      }
    }
    return Status();
  }

  StatusOr<std::string> string(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) return at(n, fmt::format("'{}' must be a string", key));
    return n.as<std::string>();
  }

  StatusOr<int64_t> integer(const YAML::Node& n, const std::string& key, int64_t lo,
                            int64_t hi) const {
    if (!n.IsScalar()) return at(n, fmt::format("'{}' must be an integer", key));
    std::string s = n.as<std::string>();
    int64_t v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
      return at(n, fmt::format("'{}' must be an integer, not '{}'", key, s));
    }
    if (v < lo || v > hi) return at(n, fmt::format("'{}' must be between {} and {}", key, lo, hi));
    return v;
  }

  StatusOr<double> number(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) return at(n, fmt::format("'{}' must be a number", key));
    std::string s = n.as<std::string>();
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size())
      return at(n, fmt::format("'{}' must be a number, not '{}'", key, s));
    // strtod takes "nan" and "inf", which no option means (and which cannot be converted).
    if (!std::isfinite(v))
      return at(n, fmt::format("'{}' must be a finite number, not '{}'", key, s));
    return v;
  }

  StatusOr<bool> boolean(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) return at(n, fmt::format("'{}' must be true or false", key));
    std::string s = n.as<std::string>();
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    return at(n, fmt::format("'{}' must be true or false, not '{}'", key, s));
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Counts the documents of a YAML stream (and where the second starts) without building them.
struct DocumentCounter : YAML::EventHandler {
  int documents = 0;
  YAML::Mark second;
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents == 2) second = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

std::string resolve(const std::string& base, const std::string& p) {
  if (p.empty() || fs::path(p).is_absolute()) return p;
  return (fs::path(base) / p).lexically_normal().string();
}

}  // namespace

bool RunConfig::has(RunStage s) const {
  return std::find(stages.begin(), stages.end(), s) != stages.end();
}

std::string expand_rank(const std::string& pattern, int rank) {
  std::string out;
  const std::string token = "{rank}";
  size_t pos = 0;
  while (true) {
    size_t hit = pattern.find(token, pos);
    if (hit == std::string::npos) {
      out.append(pattern, pos, std::string::npos);
      return out;
    }
    out.append(pattern, pos, hit - pos);
    out += std::to_string(rank);
    pos = hit + token.size();
  }
}

std::string RunConfig::host_path(int rank) const {
  return resolve(base_dir, expand_rank(host_pattern, rank));
}
std::string RunConfig::device_path(int rank) const {
  return resolve(base_dir,
                 expand_rank(timing_pattern.empty() ? device_pattern : timing_pattern, rank));
}
std::string RunConfig::step_time_path(int rank) const {
  if (!step_time_pattern.empty()) return resolve(base_dir, expand_rank(step_time_pattern, rank));
  std::error_code ec;
  const fs::path beside = fs::path(host_path(rank)).parent_path() / "step_time.json";
  return fs::is_regular_file(beside, ec) ? beside.string() : std::string();
}
std::string RunConfig::et_plus_path(int rank) const {
  return resolve(base_dir, fmt::format("{}/et_plus/{}.{}.json.gz", out_dir, prefix, rank));
}
std::string RunConfig::et_path(int rank) const {
  return resolve(base_dir, fmt::format("{}/{}.{}.et", out_dir, prefix, rank));
}
std::string RunConfig::summary_path() const {
  return resolve(base_dir, fmt::format("{}/{}", out_dir, summary));
}
std::string RunConfig::simulation_path() const {
  return fs::path(summary_path()).replace_filename("simulation.json").string();
}
std::string RunConfig::comm_group_path() const {
  return resolve(base_dir, fmt::format("{}/{}.comm_group.json", out_dir, prefix));
}

StatusOr<std::vector<int>> parse_rank_list(const std::string& text) {
  // Far beyond any cluster; bounds the work on a hostile list ("0-999999,0-999999,...").
  constexpr int64_t kMaxRanks = int64_t{1} << 20;
  std::vector<std::pair<int, int>> ranges;  // [lo, hi] as listed
  int64_t total = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string part =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    part.erase(std::remove(part.begin(), part.end(), ' '), part.end());
    if (part.empty()) return Status::errorf("empty item in rank list '{}'", text);
    int lo = 0, hi = 0;
    size_t dash = part.find('-');
    auto parse = [](const std::string& s, int* v) {
      auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
      return r.ec == std::errc() && r.ptr == s.data() + s.size() && *v >= 0;
    };
    if (dash == std::string::npos) {
      if (!parse(part, &lo)) return Status::errorf("'{}' is not a rank", part);
      hi = lo;
    } else if (!parse(part.substr(0, dash), &lo) || !parse(part.substr(dash + 1), &hi) || hi < lo) {
      return Status::errorf("'{}' is not a rank range (like 0-7)", part);
    }
    const int64_t count = int64_t{hi} - lo + 1;
    if (count > kMaxRanks) return Status::errorf("rank range '{}' is too large", part);
    total += count;
    if (total > kMaxRanks) {
      return Status::errorf("rank list '{}' names more than {} ranks", text, kMaxRanks);
    }
    ranges.emplace_back(lo, hi);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  // A rank named twice is a mistake in the list (two ranges that overlap), not something to drop
  // silently. With the ranges in order, the first that starts within what came before starts at
  // the smallest rank named twice; then the ranks come out in order without sorting them.
  std::sort(ranges.begin(), ranges.end());
  int64_t covered = -1;  // the largest rank of the ranges so far
  for (const auto& [lo, hi] : ranges) {
    if (lo <= covered) return Status::errorf("rank {} is listed twice in '{}'", lo, text);
    covered = hi;
  }
  std::vector<int> ranks;
  ranks.reserve(static_cast<size_t>(total));
  for (const auto& [lo, hi] : ranges) {
    for (int64_t r = lo; r <= hi; ++r) ranks.push_back(static_cast<int>(r));  // hi may be INT_MAX
  }
  return ranks;
}

namespace {

// The one YAML document of `text`, checked to be valid UTF-8.
StatusOr<YAML::Node> parse_yaml_document(const std::string& path, const std::string& text) {
  // YAML text is Unicode; yaml-cpp would pass other bytes on into names and paths.
  if (!simdjson::validate_utf8(text.data(), text.size())) {
    std::string repaired = text;
    json::repair_utf8(repaired);
    const auto at = static_cast<size_t>(
        std::mismatch(text.begin(), text.end(), repaired.begin()).first - text.begin());
    const size_t line_start = text.rfind('\n', at) + 1;  // 0 when there is none
    return Status::errorf("{}:{}:{}: invalid UTF-8 (byte {})", path,
                          std::count(text.begin(), text.begin() + at, '\n') + 1,
                          at - line_start + 1, at);
  }
  // YAML::Load would read the first document and drop the others unseen, and YAML::LoadAll never
  // returns on some malformed text (",: s\n-n": yaml-cpp 0.7 yields empty documents forever
  // without consuming it). So the documents are counted first, up to two, without building them.
  DocumentCounter counter;
  YAML::Node root;
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    while (counter.documents < 2 && parser.HandleNextDocument(counter)) {
    }
    if (counter.documents == 1) root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::errorf("{}:{}:{}: invalid YAML: {}", path, e.mark.line + 1, e.mark.column + 1,
                          e.msg);
  }
  if (counter.documents == 0) {
    return Status::errorf("{}: empty file, expected a mapping (inputs:, stages:, outputs:)", path);
  }
  if (counter.documents > 1) {
    return Status::errorf("{}:{}:{}: a second YAML document: the configuration is one document",
                          path, counter.second.line + 1, counter.second.column + 1);
  }
  return root;
}

// inputs: host and device patterns, ranks.
Status read_inputs(const Checker& c, const YAML::Node& root, RunConfig& cfg) {
  const YAML::Node inputs = root["inputs"];
  if (!inputs) return c.at(root, "missing 'inputs' (host:, device:, ranks:)");
  CF_RETURN_IF_ERROR(c.keys(inputs, "inputs", {"host", "device", "timing", "step_time", "ranks"}));
  if (!inputs["host"] || (!inputs["device"] && !inputs["timing"]))
    return c.at(inputs, "'inputs' needs a 'host' pattern and a 'device' (or 'timing') pattern");
  CF_ASSIGN_OR_RETURN(cfg.host_pattern, c.string(inputs["host"], "host"));
  if (inputs["device"]) {
    CF_ASSIGN_OR_RETURN(cfg.device_pattern, c.string(inputs["device"], "device"));
  }
  if (inputs["timing"]) {
    CF_ASSIGN_OR_RETURN(cfg.timing_pattern, c.string(inputs["timing"], "timing"));
    set_timing_trace(cfg.link);
  }
  if (inputs["step_time"]) {
    CF_ASSIGN_OR_RETURN(cfg.step_time_pattern, c.string(inputs["step_time"], "step_time"));
  }
  for (const auto& [key, pattern] :
       {std::pair{"host", cfg.host_pattern}, std::pair{"device", cfg.device_pattern},
        std::pair{"timing", cfg.timing_pattern}, std::pair{"step_time", cfg.step_time_pattern}}) {
    if (!pattern.empty() && pattern.find("{rank}") == std::string::npos) {
      return c.at(
          inputs[key],
          fmt::format("'{}' must contain {{rank}}, e.g. traces/rank{{rank}}/host_et.json.gz", key));
    }
  }
  if (const YAML::Node r = inputs["ranks"]) {
    if (r.IsSequence()) {
      std::set<int> ranks;
      for (const auto& item : r) {
        CF_ASSIGN_OR_RETURN(int64_t v, c.integer(item, "ranks[]", 0, INT32_MAX));
        if (!ranks.insert(static_cast<int>(v)).second) {
          return c.at(item, fmt::format("rank {} is listed twice", v));
        }
      }
      cfg.ranks.assign(ranks.begin(), ranks.end());
    } else if (r.IsScalar()) {
      // Sorted and distinct already: a range of a million ranks costs a million ints, no tree.
      auto list = parse_rank_list(r.as<std::string>());
      if (!list.ok()) return c.at(r, list.status().message());
      cfg.ranks = std::move(*list);
    } else {
      return c.at(
          r, "'ranks' must be a range like 0-7, a list, or absent (discovered from the pattern)");
    }
    if (cfg.ranks.empty()) return c.at(r, "'ranks' is empty");
  } else {
    cfg.discover_ranks = true;
  }
  return Status();
}

// stages: a prefix of [link, convert, simulate].
Status read_stages(const Checker& c, const YAML::Node& root, RunConfig& cfg) {
  if (const YAML::Node s = root["stages"]) {
    if (!s.IsSequence()) return c.at(s, "'stages' must be a list, e.g. [link, convert, simulate]");
    for (const auto& item : s) {
      CF_ASSIGN_OR_RETURN(std::string name, c.string(item, "stages[]"));
      RunStage st;
      if (name == "link")
        st = RunStage::kLink;
      else if (name == "convert")
        st = RunStage::kConvert;
      else if (name == "simulate")
        st = RunStage::kSimulate;
      else
        return c.at(item, fmt::format("unknown stage '{}' (link, convert, simulate)", name));
      if (cfg.has(st)) return c.at(item, fmt::format("stage '{}' is listed twice", name));
      if (!cfg.stages.empty() && static_cast<int>(st) < static_cast<int>(cfg.stages.back())) {
        return c.at(item, "stages must be in pipeline order: link, convert, simulate");
      }
      cfg.stages.push_back(st);
    }
    if (cfg.stages.empty()) return c.at(s, "'stages' is empty");
    if (cfg.stages.front() != RunStage::kLink) {
      return c.at(s, "the pipeline starts from traces: 'stages' must begin with link");
    }
    for (size_t i = 1; i < cfg.stages.size(); ++i) {
      if (static_cast<int>(cfg.stages[i]) != static_cast<int>(cfg.stages[i - 1]) + 1) {
        return c.at(
            s,
            "stages cannot be skipped: use [link], [link, convert] or [link, convert, simulate]");
      }
    }
  } else {
    cfg.stages = {RunStage::kLink, RunStage::kConvert};
  }
  return Status();
}

// link: the options `chakraflow link` takes (stages/link/link_options.h).
Status read_link(const Checker& c, const YAML::Node& root, RunConfig& cfg) {
  if (const YAML::Node l = root["link"]) {
    CF_RETURN_IF_ERROR(c.keys(l, "link", link_option_names()));
    for (const std::string& name : link_option_names()) {
      if (!l[name]) continue;
      const bool numeric = name == "gap_threshold_us" || name == "min_match_rate";
      std::string text;
      if (numeric) {
        CF_ASSIGN_OR_RETURN(double v, c.number(l[name], name.c_str()));
        text = fmt::format("{}", v);
      } else {
        CF_ASSIGN_OR_RETURN(text, c.string(l[name], name.c_str()));
      }
      if (Status s = set_link_option(cfg.link, name, text); !s.ok()) {
        return c.at(l[name], s.message());
      }
    }
    // A timing trace comes from another step or process: its rf_ids are not the host trace's.
    if (!cfg.timing_pattern.empty() && cfg.link.mode != MatchMode::kSequence) {
      return c.at(l["mode"],
                  "a timing trace (inputs.timing) is matched by operator order: 'mode' must be "
                  "sequence, or absent");
    }
  }
  return Status();
}

// convert: compat, metadata_node, renumber_groups.
Status read_convert(const Checker& c, const YAML::Node& root, RunConfig& cfg) {
  if (const YAML::Node v = root["convert"]) {
    CF_RETURN_IF_ERROR(c.keys(v, "convert", {"compat", "metadata_node", "renumber_groups"}));
    for (const char* key : {"compat", "metadata_node"}) {
      if (!v[key]) continue;
      CF_ASSIGN_OR_RETURN(std::string m, c.string(v[key], key));
      if (Status s = set_convert_option(cfg.convert, key, m); !s.ok()) {
        return c.at(v[key], s.message());
      }
    }
    if (v["renumber_groups"]) {
      CF_ASSIGN_OR_RETURN(bool renumber, c.boolean(v["renumber_groups"], "renumber_groups"));
      cfg.convert.pg_name_offset = renumber ? 1 : 0;
    }
  }
  return Status();
}

// simulate: the simulator's configuration file.
Status read_simulate(const Checker& c, const YAML::Node& root, RunConfig& cfg) {
  if (const YAML::Node v = root["simulate"]) {
    CF_RETURN_IF_ERROR(c.keys(v, "simulate", {"config"}));
    if (v["config"]) {
      CF_ASSIGN_OR_RETURN(std::string p, c.string(v["config"], "config"));
      cfg.simulate_config = resolve(cfg.base_dir, p);
    }
  }
  return Status();
}

// outputs: where the files go.
Status read_outputs(const Checker& c, const YAML::Node& root, RunConfig& cfg) {
  if (const YAML::Node o = root["outputs"]) {
    CF_RETURN_IF_ERROR(
        c.keys(o, "outputs", {"dir", "prefix", "keep_et_plus", "summary", "comm_groups"}));
    if (o["comm_groups"]) {
      CF_ASSIGN_OR_RETURN(cfg.comm_groups, c.boolean(o["comm_groups"], "comm_groups"));
    }
    if (o["dir"]) {
      CF_ASSIGN_OR_RETURN(cfg.out_dir, c.string(o["dir"], "dir"));
    }
    if (o["prefix"]) {
      CF_ASSIGN_OR_RETURN(cfg.prefix, c.string(o["prefix"], "prefix"));
    }
    if (o["keep_et_plus"]) {
      CF_ASSIGN_OR_RETURN(cfg.keep_et_plus, c.boolean(o["keep_et_plus"], "keep_et_plus"));
    }
    if (o["summary"]) {
      CF_ASSIGN_OR_RETURN(cfg.summary, c.string(o["summary"], "summary"));
    }
    if (cfg.prefix.empty() || cfg.prefix.find('/') != std::string::npos) {
      return c.at(o["prefix"], "'prefix' must be a non-empty file name prefix");
    }
  }
  return Status();
}

// run: memory budget, ranks in flight, threads.
Status read_run(const Checker& c, const YAML::Node& root, RunConfig& cfg) {
  if (const YAML::Node r = root["run"]) {
    CF_RETURN_IF_ERROR(c.keys(r, "run", {"memory_budget_mb", "max_ranks_in_flight", "threads"}));
    if (r["memory_budget_mb"]) {
      CF_ASSIGN_OR_RETURN(
          int64_t v, c.integer(r["memory_budget_mb"], "memory_budget_mb", 16, int64_t{1} << 30));
      cfg.memory_budget_bytes = static_cast<uint64_t>(v) << 20;
    }
    if (r["max_ranks_in_flight"]) {
      CF_ASSIGN_OR_RETURN(int64_t v,
                          c.integer(r["max_ranks_in_flight"], "max_ranks_in_flight", 0, 1 << 20));
      cfg.max_ranks_in_flight = static_cast<int>(v);
    }
    if (r["threads"]) {
      CF_ASSIGN_OR_RETURN(int64_t v, c.integer(r["threads"], "threads", 0, 4096));
      cfg.threads = static_cast<int>(v);
    }
  }
  return Status();
}

}  // namespace

StatusOr<RunConfig> parse_run_config(const std::string& path, const std::string& text) {
  const Checker c(path);
  CF_ASSIGN_OR_RETURN(YAML::Node root, parse_yaml_document(path, text));
  if (!root.IsMap())
    return c.at(root, "the configuration must be a mapping (inputs:, stages:, outputs:)");
  CF_RETURN_IF_ERROR(c.keys(root, "top level",
                            {"inputs", "stages", "link", "convert", "simulate", "outputs", "run"}));
  RunConfig cfg;
  cfg.path = path;
  cfg.base_dir = fs::path(path).parent_path().string();
  if (cfg.base_dir.empty()) cfg.base_dir = ".";
  for (auto read :
       {read_inputs, read_stages, read_link, read_convert, read_simulate, read_outputs, read_run}) {
    CF_RETURN_IF_ERROR(read(c, root, cfg));
  }
  return cfg;
}

StatusOr<RunConfig> load_run_config(const std::string& path) {
  CF_ASSIGN_OR_RETURN(std::string text, read_input_file(path));
  return parse_run_config(path, text);
}

namespace {
std::optional<RunConfig>& loaded_run_config() {
  static std::optional<RunConfig> config;
  return config;
}
}  // namespace

void keep_loaded_run_config(RunConfig config) {
  loaded_run_config() = std::move(config);
}

std::optional<RunConfig> take_loaded_run_config(const std::string& path) {
  std::optional<RunConfig> out;
  if (loaded_run_config() && loaded_run_config()->path == path) out.swap(loaded_run_config());
  loaded_run_config().reset();
  return out;
}

Status discover_ranks(RunConfig& config) {
  if (!config.discover_ranks || !config.ranks.empty()) return Status();
  // The host pattern over absolute paths (a configuration given as `c.yaml` has the base "."):
  // literal pieces around each {rank}, which must all be the same decimal number.
  std::error_code cwd_error;
  const fs::path base = fs::absolute(config.base_dir, cwd_error);
  if (cwd_error) {
    return Status::errorf("{}: cannot discover ranks: {}", config.path, cwd_error.message());
  }
  std::string abs_pattern = (base / config.host_pattern).lexically_normal().string();
  const std::string token = "{rank}";
  auto match = [&](const std::string& p) -> int {
    size_t first = abs_pattern.find(token);
    if (p.compare(0, first, abs_pattern, 0, first) != 0) return -1;
    size_t end = first;
    while (end < p.size() && end - first < 9 && p[end] >= '0' && p[end] <= '9') ++end;
    if (end == first) return -1;
    int rank = std::stoi(p.substr(first, end - first));
    return expand_rank(abs_pattern, rank) == p ? rank : -1;
  };
  // Walk from the deepest directory without {rank}.
  fs::path root = fs::path(abs_pattern.substr(0, abs_pattern.find(token))).parent_path();
  if (root.empty()) root = ".";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return Status::errorf("{}: cannot discover ranks: directory '{}' does not exist", config.path,
                          root.string());
  }
  size_t depth = static_cast<size_t>(std::count(
      abs_pattern.begin() + static_cast<long>(root.string().size()), abs_pattern.end(), '/'));
  std::set<int> ranks;
  for (auto it = fs::recursive_directory_iterator(
           root, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (static_cast<size_t>(it.depth()) + 1 > depth) {
      it.disable_recursion_pending();
      continue;
    }
    std::string p = it->path().lexically_normal().string();
    if (it->is_regular_file(ec)) {
      int r = match(p);
      if (r >= 0) ranks.insert(r);
    }
  }
  if (ranks.empty()) {
    return Status::errorf(
        "{}: no file matches the host pattern '{}': set inputs.ranks or fix the pattern",
        config.path, config.host_pattern);
  }
  config.ranks.assign(ranks.begin(), ranks.end());
  return Status();
}

namespace {
bool one_malloc_arena = false;
}  // namespace

void use_one_malloc_arena_on_few_cpus() {
#ifdef __GLIBC__
  constexpr int kOneArenaUpToCpus = 2;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.arena_max") != nullptr) return;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0 || CPU_COUNT(&cpus) > kOneArenaUpToCpus) {
    return;
  }
  one_malloc_arena = mallopt(M_ARENA_MAX, 1) == 1;
#endif
}

bool malloc_one_arena() {
  return one_malloc_arena;
}

bool malloc_huge_pages() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr && (std::strstr(tunables, "glibc.malloc.hugetlb=1") != nullptr ||
                                 std::strstr(tunables, "glibc.malloc.hugetlb=2") != nullptr);
}

}  // namespace chakraflow
