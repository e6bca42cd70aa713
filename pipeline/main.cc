// chakraflow: one binary, one verb per stage group. Also installed as Chakra's executable names
// (chakra_trace_link, ...), which select their verb from argv[0] and accept Chakra's flags.
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "pipeline/commands.h"
#include "stages/json_util.h"

namespace {

struct Command {
  const char* verb;
  const char* alias;  // Chakra executable name that maps to this verb
  int (*run)(int argc, char** argv, int first);
  const char* help;
};

constexpr Command kCommands[] = {
    {"link", "chakra_trace_link", chakraflow::run_link_command,
     "merge a host execution trace with its device trace into ET+"},
    {"convert", "chakra_converter", chakraflow::run_convert_command,
     "convert ET+ (or a host execution trace) into a Chakra protobuf trace (.et)"},
    {"jsonize", "chakra_jsonizer", chakraflow::run_jsonize_command,
     "write a Chakra .et trace as JSON"},
    {"synth", "", chakraflow::run_synth_command,
     "generate a realistic multi-rank host ET + device trace set"},
    {"tile", "", chakraflow::run_tile_command,
     "repeat a real host ET + device trace pair's iteration N times (big real traces)"},
    {"run", "", chakraflow::run_run_command,
     "run every rank of a YAML configuration through link, convert (and simulate)"},
    {"feed", "", chakraflow::run_feed_command,
     "issue a Chakra .et trace in dependency order (end state, throughput)"},
    {"simulate", "", chakraflow::run_simulate_command,
     "predict every rank's step time from its Chakra traces (multi-rank replay)"},
};

void print_usage() {
  std::fprintf(
      stderr,
      "usage: chakraflow <command> [options]   (chakraflow <command> --help)\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(stderr, "  %-10s %s\n", c.verb, c.help);
}

}  // namespace

int main(int argc, char** argv) {
  std::string_view self = argv[0];
  if (auto slash = self.rfind('/'); slash != std::string_view::npos) self.remove_prefix(slash + 1);
  for (const auto& c : kCommands) {
    if (*c.alias != '\0' && self == c.alias) return c.run(argc, argv, 1);
  }
  if (argc < 2) {
    print_usage();
    return 2;
  }
  std::string_view verb = argv[1];
  if (verb == "--help" || verb == "-h" || verb == "help") {
    print_usage();
    return 0;
  }
  if (verb == "--version") {
    std::printf("chakraflow 0.1.0 (simdjson kernel: %s)\n",
                std::string(chakraflow::json::builtin_kernel()).c_str());
    return 0;
  }
  for (const auto& c : kCommands) {
    if (verb == c.verb) return c.run(argc, argv, 2);
  }
  std::fprintf(stderr, "chakraflow: unknown command '%s'\n", argv[1]);
  print_usage();
  return 2;
}
