// Helpers for tests: locating ../shared/data (tests skip loudly when it is absent), temporary
// directories, reading (gzip'd) JSON files into simdjson DOM documents.
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <string>

namespace chakraflow::testing {

// ../shared/data, or empty when it is absent.
std::filesystem::path shared_data_dir();

// Skips the current test with a loud message when ../shared/data (or `relative` inside it) is
// absent. Use as: CF_REQUIRE_SHARED_DATA("pairs/simple_add");
#define CF_REQUIRE_SHARED_DATA(relative)                                                    \
  do {                                                                                      \
    auto cf_dir = ::chakraflow::testing::shared_data_dir();                                 \
    if (cf_dir.empty() || !std::filesystem::exists(cf_dir / (relative))) {                  \
      std::fprintf(stderr,                                                                  \
                   "\n*** SKIPPED: ../shared/data/%s is absent; golden test not run ***\n", \
                   std::string(relative).c_str());                                          \
      GTEST_SKIP() << "../shared/data/" << (relative) << " is absent";                      \
    }                                                                                       \
  } while (0)

// A fresh empty directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Writes `content` to `path` (plain).
void write_text(const std::string& path, const std::string& content);
// Reads a file, gunzipping when needed. Fails the test on error.
std::string read_text(const std::string& path);
// Parses a (gzip'd) JSON file into a DOM document owned by `parser`.
simdjson::dom::element load_json(simdjson::dom::parser& parser, const std::string& path);

// Runs a shell command, returns its exit status; stdout+stderr go to *output when given.
int run_command(const std::string& command, std::string* output = nullptr);

}  // namespace chakraflow::testing
