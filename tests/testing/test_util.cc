#include "tests/testing/test_util.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <random>

#include "stages/common/file_io.h"

namespace chakraflow::testing {

std::filesystem::path shared_data_dir() {
  if (const char* env = std::getenv("CHAKRAFLOW_SHARED_DATA")) {
    if (std::filesystem::exists(env)) return env;
  }
  std::filesystem::path p = CHAKRAFLOW_SHARED_DATA;
  if (std::filesystem::exists(p)) return std::filesystem::canonical(p);
  return {};
}

TempDir::TempDir() {
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto candidate = std::filesystem::temp_directory_path() /
                     ("chakraflow_test_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
    if (std::filesystem::create_directory(candidate)) {
      path_ = candidate;
      return;
    }
  }
  ADD_FAILURE() << "cannot create a temporary directory";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

void write_text(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

std::string read_text(const std::string& path) {
  auto r = read_input_file(path);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : std::string();
}

simdjson::dom::element load_json(simdjson::dom::parser& parser, const std::string& path) {
  std::string text = read_text(path);
  simdjson::dom::element doc;
  auto err = parser.parse(text).get(doc);
  EXPECT_EQ(err, simdjson::SUCCESS) << path << ": " << simdjson::error_message(err);
  return doc;
}

int run_command(const std::string& command, std::string* output) {
  std::string cmd = command + " 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return -1;
  std::array<char, 4096> buf;
  std::string out;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int status = ::pclose(pipe);
  if (output) *output = out;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace chakraflow::testing
