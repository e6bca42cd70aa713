#include "pipeline/cli_args.h"

#include <cstdio>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pipeline/parallel_batches.h"
#include "stages/common/file_io.h"
#include "stages/common/profile.h"

namespace chakraflow::cli {

StatusOr<Args> Args::parse(int argc, char** argv, int first, const std::vector<FlagSpec>& specs) {
  Args args;
  auto find = [&specs](const std::string& name) -> const FlagSpec* {
    for (const auto& s : specs) {
      if (s.name == name) return &s;
      for (const auto& a : s.aliases) {
        if (a == name) return &s;
      }
    }
    return nullptr;
  };
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
      std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
      std::optional<std::string> inline_value;
      auto eq = body.find('=');
      if (eq != std::string::npos) {
        inline_value = body.substr(eq + 1);
        body = body.substr(0, eq);
      }
      const FlagSpec* spec = find(body);
      if (spec == nullptr) return Status::errorf("unknown option '{}' (see --help)", arg);
      if (!spec->takes_value) {
        if (inline_value) return Status::errorf("option '--{}' takes no value", body);
        args.values_[spec->name] = "1";
        continue;
      }
      if (inline_value) {
        args.values_[spec->name] = *inline_value;
      } else {
        if (i + 1 >= argc) return Status::errorf("option '--{}' needs a value", body);
        args.values_[spec->name] = argv[++i];
      }
      continue;
    }
    args.positionals_.push_back(arg);
  }
  return args;
}

std::optional<std::string> Args::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Args::get_or(const std::string& name, const std::string& fallback) const {
  auto v = get(name);
  return v ? *v : fallback;
}

StatusOr<int64_t> Args::get_int(const std::string& name, int64_t fallback) const {
  auto v = get(name);
  if (!v) return fallback;
  int64_t out = 0;
  auto r = std::from_chars(v->data(), v->data() + v->size(), out);
  if (r.ec != std::errc() || r.ptr != v->data() + v->size()) {
    return Status::errorf("option '--{}': '{}' is not an integer", name, *v);
  }
  return out;
}

StatusOr<int64_t> Args::get_int_in(const std::string& name, int64_t fallback, int64_t lo,
                                   int64_t hi) const {
  CF_ASSIGN_OR_RETURN(int64_t v, get_int(name, fallback));
  if (v < lo || v > hi) {
    return Status::errorf("option '--{}': {} is out of range (between {} and {})", name, v, lo, hi);
  }
  return v;
}

StatusOr<std::optional<std::string>> Args::get_path(const std::string& name) const {
  auto v = get(name);
  if (v && v->empty()) return Status::errorf("option '--{}': the file name is empty", name);
  return v;
}

StatusOr<double> Args::get_double(const std::string& name, double fallback) const {
  auto v = get(name);
  if (!v) return fallback;
  char* end = nullptr;
  double out = std::strtod(v->c_str(), &end);
  if (v->empty() || end != v->c_str() + v->size()) {
    return Status::errorf("option '--{}': '{}' is not a number", name, *v);
  }
  if (!std::isfinite(out)) {
    return Status::errorf("option '--{}': '{}' is not a finite number", name, *v);
  }
  return out;
}

std::string usage(const std::string& command, const std::string& synopsis,
                  const std::vector<FlagSpec>& specs) {
  std::string out = fmt::format("usage: {} {}\n\noptions:\n", command, synopsis);
  for (const auto& s : specs) {
    std::string names = "--" + s.name;
    for (const auto& a : s.aliases) names += ", --" + a;
    if (s.takes_value) names += " V";
    out += fmt::format("  {:<34} {}\n", names, s.help);
  }
  return out;
}

std::optional<int> Verb::parse(int argc, char** argv, int first) {
  auto parsed = Args::parse(argc, argv, first, specs_);
  if (!parsed.ok()) {
    const std::string why = parsed.status().message();
    return parse_errors_ == ParseErrors::kWithUsage ? usage_error(why) : value_error(why);
  }
  args_ = std::move(parsed).value();
  command_line_ = "chakraflow " + name_;
  for (int i = first; i < argc; ++i) command_line_ += std::string(" ") + argv[i];
  if (args_.has("help")) {
    std::fputs(usage("chakraflow", synopsis_, specs_).c_str(), stdout);
    return 0;
  }
  return std::nullopt;
}

std::optional<int> Verb::start_profile(const std::vector<std::string>& paths) {
  const std::optional<std::string> path = args_.get("profile");
  if (!path) return std::nullopt;
  if (path->empty()) return value_error("--profile: the path is empty");
  if (Status s = check_output_is_not_input(*path, paths); !s.ok()) {
    return value_error("--profile: " + s.message());
  }
  // A profile that could not be written is reported before the command runs: its folder must be
  // one (a stream, "-" or a device, is written as any output is).
  std::error_code ec;
  const std::filesystem::path folder = std::filesystem::path(*path).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder, ec)) {
    return value_error(fmt::format("--profile: {}: no such folder", folder.string()));
  }
  // An output not written yet is the same file when its path is.
  const std::filesystem::path mine = std::filesystem::weakly_canonical(*path, ec);
  for (const std::string& other : paths) {
    std::error_code other_ec;
    if (!ec && std::filesystem::weakly_canonical(other, other_ec) == mine && !other_ec) {
      return value_error(
          fmt::format("--profile: {} is also an input or output of the command", *path));
    }
  }
  profile::start();
  profile_started_ = true;
  return std::nullopt;
}

int Verb::finish_profile(int exit, const std::string& suffix, size_t threads) {
  if (!profile_started_) return exit;
  profile_started_ = false;
  const Status written = profile::write(
      *args_.get("profile") + suffix,
      {{"command", command_line_},
       {"threads", std::to_string(threads > 0 ? threads : ParallelBatches::workers())},
       {"exit_code", std::to_string(exit)}});
  if (written.ok()) return exit;
  if (exit == 0) return failure(written);
  note("profile not written: " + written.message());
  return exit;
}

std::optional<int> Verb::print_graph(const std::function<StatusOr<std::string>()>& dot) const {
  if (!args_.has("print-graph")) return std::nullopt;
  StatusOr<std::string> graph = dot();
  if (!graph.ok()) return value_error(graph.status().message());
  std::fputs(graph->c_str(), stdout);
  return 0;
}

std::optional<int> Verb::require(std::initializer_list<const char*> flags) const {
  std::vector<std::string> missing;
  for (const char* flag : flags) {
    if (!args_.has(flag)) missing.push_back(std::string("--") + flag);
  }
  if (missing.empty()) return std::nullopt;
  return usage_error(fmt::format("missing {}", fmt::join(missing, ", ")));
}

std::optional<int> Verb::no_positionals() const {
  if (args_.positionals().empty()) return std::nullopt;
  return usage_error("unexpected argument '" + args_.positionals().front() + "'");
}

int Verb::usage_error(const std::string& why) const {
  std::fprintf(stderr, "chakraflow %s: %s\n%s", name_.c_str(), why.c_str(),
               usage("chakraflow", synopsis_, specs_).c_str());
  return 2;
}

int Verb::value_error(const std::string& why) const {
  message(why);
  return 2;
}

int Verb::failure(const Status& status) const {
  message("error: " + status.message());
  return 1;
}

void Verb::note(const std::string& text) const {
  message("note: " + text);
}

void Verb::message(const std::string& text) const {
  std::fprintf(stderr, "chakraflow %s: %s\n", name_.c_str(), text.c_str());
}

}  // namespace chakraflow::cli
