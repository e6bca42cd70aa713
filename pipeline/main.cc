// chakraflow: one binary, one verb per stage group. Also installed as Chakra's executable names
// (chakra_trace_link, ...), which select their verb from argv[0] and accept Chakra's flags.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>

#include "pipeline/commands.h"
#include "pipeline/run_command.h"
#include "pipeline/run_config.h"
#include "stages/common/file_io.h"
#include "stages/common/json_util.h"

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

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CHAKRAFLOW_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CHAKRAFLOW_SANITIZED 1
#endif

// The size of the largest input text the command names (a gzip'd file counts as what it
// inflates to: the memory it takes is that): for `run CONFIG`, the first rank's host ET or
// device trace (a config that does not load gives 0: the run itself reports it); otherwise the
// largest file among the arguments.
uint64_t largest_input(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "run") {
    const auto path = chakraflow::run_config_argument(argc, argv, 2);
    if (!path) return 0;
    auto cfg = chakraflow::load_run_config(*path);
    if (!cfg.ok() || !chakraflow::discover_ranks(*cfg).ok() || cfg->ranks.empty()) return 0;
    const int rank = cfg->ranks.front();
    const uint64_t size = std::max(chakraflow::input_text_size(cfg->host_path(rank)),
                                   chakraflow::input_text_size(cfg->device_path(rank)));
    chakraflow::keep_loaded_run_config(std::move(*cfg));  // for `run`, if no re-execution
    return size;
  }
  uint64_t largest = 0;
  for (int i = 1; i < argc; ++i) largest = std::max(largest, chakraflow::input_text_size(argv[i]));
  return largest;
}

// Big traces spend a fifth of their CPU time in the kernel faulting in 4 KiB pages of freshly
// allocated buffers (text, parser index, records). With transparent huge pages in "madvise" mode
// (Debian's default), glibc asks for them only when GLIBC_TUNABLES says so, and reads it only at
// start-up: so the process re-executes itself once with the tunable added, when the inputs are
// big enough. Off with CHAKRAFLOW_HUGE_PAGES=0 (on for any input with 1), under sanitizers (their
// allocator ignores it), and where the kernel would not honour it. Returns when it does not
// re-execute.
void reexec_with_huge_pages(char** argv, uint64_t input) {
#if defined(__GLIBC__) && !defined(CHAKRAFLOW_SANITIZED)
  // Huge pages pay for a second start (about 3 ms) and for zeroing 2 MB pages whole from inputs
  // of 16 MiB: `run` of a 10 MB rank takes 13% longer with them, of a 30 MB rank as long, of a
  // 100 MB rank 7% less (docs/performance.md). Declared here, under the #if: a sanitized build
  // does not use them (clang warns of an unused constant).
  constexpr uint64_t kHugePagesFrom = uint64_t{16} << 20;
  constexpr const char* kHugePageTunable = "glibc.malloc.hugetlb=1";
  const char* opt = std::getenv("CHAKRAFLOW_HUGE_PAGES");
  if ((opt == nullptr || std::string_view(opt) != "1") && input < kHugePagesFrom) return;
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  if (!std::getline(thp, mode) || mode.find("[madvise]") == std::string::npos) return;
  const char* old = std::getenv("GLIBC_TUNABLES");
  std::string value = old != nullptr && *old != '\0' ? std::string(old) + ":" : std::string();
  value += kHugePageTunable;
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // exec failed (no /proc): go on without, and do not leave the variable to child processes.
  if (old != nullptr) {
    setenv("GLIBC_TUNABLES", old, 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
#else
  (void)argv;
  (void)input;
#endif
}

// Sets up malloc for the command's inputs (huge pages for big ones) and the CPUs it runs on. A
// process that sees glibc.malloc.hugetlb in GLIBC_TUNABLES was re-executed by this, or was set up
// by its user: it leaves the huge pages as the tunables say.
void set_up_malloc(int argc, char** argv) {
#ifndef CHAKRAFLOW_SANITIZED
  chakraflow::use_one_malloc_arena_on_few_cpus();
#endif
  const char* set = std::getenv("GLIBC_TUNABLES");
  if (set != nullptr && std::strstr(set, "glibc.malloc.hugetlb") != nullptr) return;
  const char* opt = std::getenv("CHAKRAFLOW_HUGE_PAGES");
  if (opt != nullptr && std::string_view(opt) == "0") return;
  reexec_with_huge_pages(argv, largest_input(argc, argv));
}

}  // namespace

int main(int argc, char** argv) {
  set_up_malloc(argc, argv);
  // An interrupted command leaves no temporary file behind (stages/common/file_io.h).
  chakraflow::install_cleanup_on_signals();
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
    std::printf("chakraflow " CHAKRAFLOW_VERSION
                " (simdjson kernel: %s, malloc huge pages: %s, malloc arenas: %s)\n",
                std::string(chakraflow::json::builtin_kernel()).c_str(),
                chakraflow::malloc_huge_pages() ? "on" : "off",
                chakraflow::malloc_one_arena() ? "one" : "per thread");
    return 0;
  }
  for (const auto& c : kCommands) {
    if (verb == c.verb) return c.run(argc, argv, 2);
  }
  std::fprintf(stderr, "chakraflow: unknown command '%s'\n", argv[1]);
  print_usage();
  return 2;
}
