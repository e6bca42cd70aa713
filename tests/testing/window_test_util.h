// Shared checks of the loaders' windowed parse (json::read_array_in_windows): a trace read in
// windows must equal the trace read whole, or fail with exactly the same error.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <initializer_list>
#include <string>

namespace chakraflow::testing {

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
    EXPECT_EQ(whole.ok(), windowed.ok())
        << label << ": " << (whole.ok() ? windowed : whole).status().message();
    if (!whole.ok() || !windowed.ok()) {
      if (!whole.ok() && !windowed.ok()) {
        EXPECT_EQ(whole.status().message(), windowed.status().message()) << label;
      }
      continue;
    }
    EXPECT_EQ(whole->parse_windows, 0u);
    expect_same(*whole, *windowed, label);
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
