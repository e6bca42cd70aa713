// A small command-line parser: "--name value", "--name=value", boolean "--flag", positionals.
// Unknown flags are errors that name the flag. Not thread-safe; used once per process.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "stages/common/status.h"

namespace chakraflow::cli {

// --threads N: 0 (all cores) to this, as `run: threads:` in a configuration.
inline constexpr int64_t kMaxThreads = 4096;

struct FlagSpec {
  std::string name;  // without dashes; aliases share one canonical name
  bool takes_value = true;
  std::string help;
  std::vector<std::string> aliases;
};

class Args {
 public:
  // Parses argv[first..argc).
  static StatusOr<Args> parse(int argc, char** argv, int first, const std::vector<FlagSpec>& specs);

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::optional<std::string> get(const std::string& name) const;
  std::string get_or(const std::string& name, const std::string& fallback) const;
  StatusOr<int64_t> get_int(const std::string& name, int64_t fallback) const;
  // get_int, and an error naming the range when the value is outside [lo, hi].
  StatusOr<int64_t> get_int_in(const std::string& name, int64_t fallback, int64_t lo,
                               int64_t hi) const;
  // The value of a flag that names a file: an error when it is given but empty (--output "").
  StatusOr<std::optional<std::string>> get_path(const std::string& name) const;
  StatusOr<double> get_double(const std::string& name, double fallback) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positionals_;
};

std::string usage(const std::string& command, const std::string& synopsis,
                  const std::vector<FlagSpec>& specs);

// The frame every verb shares (one per command line): parses its flags, answers --help on stdout
// (exit 0), and reports a usage error as "chakraflow VERB: why" followed by the usage on stderr
// (exit 2); failures (exit 1) and notes are worded by it too. Every `*_command.cc` reads its
// command line through one. `specs` must outlive the Verb.
class Verb {
 public:
  // How a command line that does not parse (an unknown option, a missing value) is reported:
  // with the usage after the message, or the message alone (`link`, as chakra_trace_link's
  // users have always seen it).
  enum class ParseErrors : uint8_t { kWithUsage, kMessageOnly };

  Verb(std::string name, std::string synopsis, const std::vector<FlagSpec>& specs,
       ParseErrors parse_errors = ParseErrors::kWithUsage)
      : name_(std::move(name)),
        synopsis_(std::move(synopsis)),
        specs_(specs),
        parse_errors_(parse_errors) {}
  // nullopt: go on with args(); otherwise the exit code to return at once.
  std::optional<int> parse(int argc, char** argv, int first);
  const Args& args() const { return args_; }

  // With --print-graph: prints `dot()` on stdout (0), or its error as a message (2).
  std::optional<int> print_graph(const std::function<StatusOr<std::string>()>& dot) const;
  // Usage error unless every flag is given: "missing --a, --b" (all that are missing).
  std::optional<int> require(std::initializer_list<const char*> flags) const;
  // Usage error unless there is no positional argument.
  std::optional<int> no_positionals() const;

  // --profile FILE (link, convert, run): a Chrome trace of where the command's time went
  // (stages/common/profile.h), recorded from start_profile() to finish_profile(). Usage error
  // (2) when FILE is one of `paths` (the command's inputs and outputs); nothing without the flag.
  std::optional<int> start_profile(const std::vector<std::string>& paths);
  // Writes the profile, if one was started, to FILE followed by `suffix`, noting `threads` workers
  // (0: the process's workers now); returns `exit`, or 1 when the command succeeded (`exit` 0) and
  // the profile could not be written (the message printed).
  int finish_profile(int exit, const std::string& suffix = {}, size_t threads = 0);

  // Prints the error and the usage; returns 2.
  int usage_error(const std::string& why) const;
  // Prints the error alone (a flag's value is wrong, the usage would not help); returns 2.
  int value_error(const std::string& why) const;
  // Prints "chakraflow VERB: error: why"; returns 1.
  int failure(const Status& status) const;
  // Prints "chakraflow VERB: note: text".
  void note(const std::string& text) const;
  // Prints "chakraflow VERB: text".
  void message(const std::string& text) const;

 private:
  std::string name_;
  std::string synopsis_;
  const std::vector<FlagSpec>& specs_;
  ParseErrors parse_errors_;
  Args args_;
  std::string command_line_;  // as parsed, for the profile
  bool profile_started_ = false;
};

}  // namespace chakraflow::cli
