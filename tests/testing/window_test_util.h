// Shared checks of the loaders' windowed parse (json::read_array_in_windows): a trace read in
// windows must equal the trace read whole, or fail with exactly the same error.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stages/common/json_util.h"
#include "stages/common/ordered_batches.h"
#include "stages/common/status.h"
#include "tests/testing/test_util.h"

namespace chakraflow::testing {

// Whether `other` read a text as `whole` did: both fail with the same message, or both succeed
// and expect_same(whole, other, label) holds. True when both succeeded.
template <typename Trace, typename ExpectSame>
bool expect_read_as_whole(const StatusOr<Trace>& whole, const StatusOr<Trace>& other,
                          const std::string& label, const ExpectSame& expect_same) {
  EXPECT_EQ(whole.ok(), other.ok())
      << label << ": " << (whole.ok() ? other : whole).status().message();
  if (!whole.ok() || !other.ok()) {
    if (!whole.ok() && !other.ok()) {
      EXPECT_EQ(whole.status().message(), other.status().message()) << label;
    }
    return false;
  }
  expect_same(*whole, *other, label);
  return true;
}

// The files under each of ../shared/data's `dirs` (recursively) that `keep(path)` accepts, not
// in a reference folder: the real traces the window and shard checks read.
template <typename Keep>
std::vector<std::string> shared_trace_files(std::initializer_list<const char*> dirs,
                                            const Keep& keep) {
  std::vector<std::string> files;
  for (const char* dir : dirs) {
    const auto root = shared_data_dir() / dir;
    if (!std::filesystem::exists(root)) continue;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
      const std::string path = entry.path().string();
      if (entry.is_regular_file() && path.find("reference") == std::string::npos &&
          keep(path, std::string_view(dir))) {
        files.push_back(path);
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Reads each of `files` of at least 32 KB through `shards(text, path)`, which checks the reads in
// shards against the whole read and returns how many shards the last one had: at least ten files,
// most of them read in shards.
template <typename Shards>
void expect_real_traces_read_in_shards(const std::vector<std::string>& files,
                                       const Shards& shards) {
  size_t read = 0, sharded = 0;
  for (const std::string& path : files) {
    const std::string text = read_text(path);
    if (text.size() < 8 * 4096) continue;
    if (shards(text, path) > 1) ++sharded;
    ++read;
  }
  EXPECT_GE(read, 10u);
  EXPECT_GE(sharded, read / 2) << "most real traces should be read in shards";
}

// Parses `text` whole (`parse(text, 0)`) and in windows of each size (`parse(text, size)`) and
// compares each windowed trace with the whole one (`expect_same(whole, windowed, label)`), or the
// errors' messages. Returns the number of windows of the smallest size (0: read whole).
template <typename Parse, typename ExpectSame>
size_t expect_windows_read_as_whole(const Parse& parse, const ExpectSame& expect_same,
                                    const std::string& text, const std::string& what,
                                    std::initializer_list<size_t> window_sizes) {
  auto whole = parse(text, size_t{0});
  size_t smallest_windows = 0;
  bool first = true;
  for (size_t window : window_sizes) {
    auto windowed = parse(text, window);
    const std::string label = fmt::format("{}, windows of {} bytes", what, window);
    if (!expect_read_as_whole(whole, windowed, label, expect_same)) continue;
    EXPECT_EQ(whole->parse_windows, 0u);
    if (first) smallest_windows = windowed->parse_windows;
    first = false;
  }
  return smallest_windows;
}

// The i-th of six string values that hold what a window's cut looks for (`},{`, `}, {`, escaped
// quotes and backslashes, a \u escape), some longer than a small window.
inline std::string hard_cut_string(int i) {
  switch (i % 6) {
    case 0:
      return "plain";
    case 1:
      return "a},{b";
    case 2:
      return R"(q\"},{\"ph\": \"X\"}, {\")";
    case 3:
      return R"(back\\)";
    case 4:
      return std::string(i % 12 == 4 ? 3000 : 40, 'x') + "}, {";
    default:
      return R"(\u00e9},)";
  }
}

// A text read with the loaders' default windows (sized by the text: json::window_bytes_for) and
// with 256 KB ones, by parse(text, window) (kWindowBySize asks for the default): both read, the
// default in about text/window windows, fewer than the 256 KB ones; the text must be large
// enough to get windows larger than 256 KB. The two traces, to compare.
template <typename Parse>
auto read_in_sized_and_fixed_windows(const std::string& text, const Parse& parse) {
  const size_t window = json::window_bytes_for(text.size());
  EXPECT_GT(window, size_t{256} << 10) << "the text is too small to get a larger window";
  auto sized = parse(text, kWindowBySize);
  auto fixed = parse(text, size_t{256} << 10);
  EXPECT_TRUE(sized.ok()) << sized.status().message();
  EXPECT_TRUE(fixed.ok()) << fixed.status().message();
  if (sized.ok() && fixed.ok()) {
    const size_t expected = text.size() / window;  // give or take the last one
    EXPECT_GE(sized->parse_windows + 1, expected) << text.size();
    EXPECT_LE(sized->parse_windows, expected + 1) << text.size();
    EXPECT_GT(fixed->parse_windows, sized->parse_windows);
  }
  return std::make_pair(std::move(sized), std::move(fixed));
}

// The separators between array elements, in every style.
inline const char* hard_cut_separator(int i) {
  static const char* const kSeparators[] = {",", ",\n  ", " , ", ",\n"};
  return kSeparators[i % 4];
}

// A JSON array of objects written with ", " between its elements, and the broken texts the
// window checks make of it.
struct ArrayText {
  std::string text;
  // Where an element starts, after byte n.
  size_t element_after(size_t n) const { return text.find("}, {", n) + 3; }
  // `what` inserted at byte `at`.
  std::string inserted(size_t at, const std::string& what) const {
    return text.substr(0, at) + what + text.substr(at);
  }
  // The text without the comma between the two elements that meet after byte n.
  std::string without_comma_after(size_t n) const {
    const size_t comma = text.find("}, {", n) + 1;
    return text.substr(0, comma) + text.substr(comma + 1);
  }
};

}  // namespace chakraflow::testing
