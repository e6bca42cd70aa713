#include "stages/common/json_util.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <array>
#include <charconv>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace chakraflow::json {
namespace {

// What the writers got from simdjson::minify (the text as it is where minify fails: an
// unterminated string).
std::string reference_minified(std::string_view s) {
  std::string out(s.size() + 64, '\0');
  size_t len = 0;
  if (simdjson::minify(s.data(), s.size(), out.data(), len) != simdjson::SUCCESS) {
    return std::string(s);
  }
  out.resize(len);
  return out;
}

// append_minified drops the whitespace outside strings as simdjson::minify does, on random texts
// of quotes, backslashes, whitespace and bytes of every kind, of lengths across the 64-byte
// blocks, and on texts with long runs of each.
// Each kernel this CPU has is run (the one append_minified picks, and the others).
class MinifyKernels : public ::testing::TestWithParam<MinifyKernel> {};

TEST_P(MinifyKernels, MinifiesAsSimdjsonDoes) {
  const MinifyKernel kernel = GetParam();
  if (!has_minify_kernel(kernel)) GTEST_SKIP() << "this build or CPU lacks the kernel";
  auto append_minified = [kernel](std::string& out, std::string_view s) {
    ASSERT_TRUE(json::append_minified(out, s, kernel));
  };
  std::mt19937_64 rng(7);
  const std::string alphabet = std::string("\"\\ \n\r\t{}[]:,a1\xc3\xa9") + '\0';
  for (int round = 0; round < 20000; ++round) {
    const size_t len = rng() % 300;
    std::string text;
    // 0: uniform, 1: few quotes, 2: no backslash, 3: runs of backslashes across block ends
    const int bias = static_cast<int>(rng() % 4);
    for (size_t i = 0; i < len; ++i) {
      char c = alphabet[rng() % alphabet.size()];
      if (bias >= 1 && c == '"' && rng() % 4 != 0) c = ' ';
      if (bias == 2 && c == '\\') c = 'x';
      if (bias == 3 && c == '\\') text.append(rng() % 70, '\\');
      text.push_back(c);
    }
    std::string out = "prefix";
    append_minified(out, text);
    ASSERT_EQ(out, "prefix" + reference_minified(text)) << "round " << round;
  }
  // Long runs: a string across several blocks, spaces across blocks, escapes at block ends.
  for (const std::string& text :
       {std::string(200, ' '), "\"" + std::string(150, ' ') + "\"  x  ",
        "{\"a\":  \"" + std::string(61, 'b') + "\\\"  \"  , \"c\" : 1 }" + std::string(70, ' '),
        std::string(63, ' ') + "\"\\" + std::string(64, '\\') + "\"" + std::string(10, '\t')}) {
    std::string out;
    append_minified(out, text);
    EXPECT_EQ(out, reference_minified(text));
  }
}
INSTANTIATE_TEST_SUITE_P(JsonUtil, MinifyKernels,
                         ::testing::Values(MinifyKernel::kBest, MinifyKernel::kScalar,
                                           MinifyKernel::kAvx2, MinifyKernel::kAvx512),
                         [](const ::testing::TestParamInfo<MinifyKernel>& info) {
                           switch (info.param) {
                             case MinifyKernel::kBest:
                               return std::string("Best");
                             case MinifyKernel::kScalar:
                               return std::string("Scalar");
                             case MinifyKernel::kAvx2:
                               return std::string("Avx2");
                             case MinifyKernel::kAvx512:
                               return std::string("Avx512");
                           }
                           return std::string("Unknown");
                         });

TEST(JsonUtil, ParsesMicrosecondsAsNanoseconds) {
  TimeNs ns = 0;
  bool frac = false;
  ASSERT_TRUE(parse_micros_as_ns("1694128201428473", &ns, &frac));
  EXPECT_EQ(ns, 1694128201428473000);
  EXPECT_FALSE(frac);
  ASSERT_TRUE(parse_micros_as_ns("12.345", &ns, &frac));
  EXPECT_EQ(ns, 12345);
  EXPECT_TRUE(frac);
  ASSERT_TRUE(parse_micros_as_ns("12.5", &ns, &frac));
  EXPECT_EQ(ns, 12500);
  ASSERT_TRUE(parse_micros_as_ns("0.0006", &ns, &frac));  // rounds to the nearest ns
  EXPECT_EQ(ns, 1);
  ASSERT_TRUE(parse_micros_as_ns("-3", &ns, &frac));
  EXPECT_EQ(ns, -3000);
  ASSERT_TRUE(parse_micros_as_ns("1.5e3", &ns, &frac));
  EXPECT_EQ(ns, 1500000);
  EXPECT_FALSE(parse_micros_as_ns("nan", &ns, &frac));
  EXPECT_FALSE(parse_micros_as_ns("1e400", &ns, &frac));
  EXPECT_FALSE(parse_micros_as_ns("", &ns, &frac));
  // Past int64 nanoseconds: rejected, not wrapped (found by fuzz_device_trace).
  EXPECT_FALSE(parse_micros_as_ns("99999999999999999", &ns, &frac));
  EXPECT_FALSE(parse_micros_as_ns("-99999999999999999.5", &ns, &frac));
  EXPECT_FALSE(parse_micros_as_ns("18446744073709551616", &ns, &frac));
  ASSERT_TRUE(parse_micros_as_ns("9223372036854774", &ns, &frac));
  EXPECT_EQ(ns, 9223372036854774000);
}

// read_digits takes eight digits at a time where it can: every length and every stop position
// around the blocks, against a digit-by-digit reading.
TEST(JsonUtil, ReadsDigitsAndSmallIntegerTokens) {
  std::mt19937_64 rng(7);
  const std::string stops = ".e-\"x ,]/:";  // '/' and ':' lie either side of '0'..'9'
  for (int round = 0; round < 20000; ++round) {
    const size_t len = rng() % 24;
    std::string s;
    if (rng() % 4 == 0) s.push_back('-');
    for (size_t k = 0; k < len; ++k) s.push_back(static_cast<char>('0' + rng() % 10));
    if (rng() % 2 == 0) s.push_back(stops[rng() % stops.size()]);
    if (rng() % 2 == 0) s += "123456789";  // digits after the stop must not be read
    const size_t start = !s.empty() && s[0] == '-' ? 1 : 0;
    uint64_t expected = 0;
    size_t expected_n = 0;
    while (start + expected_n < s.size() && expected_n < 19 && s[start + expected_n] >= '0' &&
           s[start + expected_n] <= '9') {
      expected = expected * 10 + static_cast<uint64_t>(s[start + expected_n] - '0');
      ++expected_n;
    }
    uint64_t value = 0;
    ASSERT_EQ(read_digits(s, start, &value), expected_n) << s;
    EXPECT_EQ(value, expected) << s;

    // small_int_token: a whole JSON integer token of up to 18 digits, as from_chars reads it.
    int64_t got = 0;
    const bool json_int = expected_n > 0 && start + expected_n == s.size() && expected_n <= 18 &&
                          !(s[start] == '0' && expected_n > 1);
    ASSERT_EQ(small_int_token(s, &got), json_int) << s;
    if (json_int) {
      int64_t want = 0;
      ASSERT_EQ(std::from_chars(s.data(), s.data() + s.size(), want).ec, std::errc()) << s;
      EXPECT_EQ(got, want) << s;
    }
  }
  int64_t v = 0;
  EXPECT_FALSE(small_int_token("", &v));
  EXPECT_FALSE(small_int_token("-", &v));
  EXPECT_FALSE(small_int_token("01", &v));
  EXPECT_FALSE(small_int_token("1.0", &v));
  EXPECT_FALSE(small_int_token("1e3", &v));
  EXPECT_FALSE(small_int_token("\"12\"", &v));
  EXPECT_FALSE(small_int_token("1234567890123456789", &v));  // 19 digits: the parser decides
  ASSERT_TRUE(small_int_token("-0", &v));
  EXPECT_EQ(v, 0);
  ASSERT_TRUE(small_int_token("999999999999999999", &v));
  EXPECT_EQ(v, 999999999999999999);
  ASSERT_TRUE(small_int_token("-999999999999999999", &v));
  EXPECT_EQ(v, -999999999999999999);
}

// The fast path of parse_micros_as_ns against decimal arithmetic, for timestamps of every length.
TEST(JsonUtil, ParsesMicrosOfEveryLengthExactly) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 20000; ++round) {
    const size_t whole_len = 1 + rng() % 18;
    const size_t frac_len = rng() % 8;
    std::string s = rng() % 5 == 0 ? "-" : "";
    std::string whole, frac;
    for (size_t k = 0; k < whole_len; ++k) whole.push_back(static_cast<char>('0' + rng() % 10));
    for (size_t k = 0; k < frac_len; ++k) frac.push_back(static_cast<char>('0' + rng() % 10));
    s += whole;
    if (frac_len > 0) s += "." + frac;
    // whole * 1000 + the first three fraction digits, rounded half up on the fourth.
    uint64_t w = 0;  // 18 digits at most: no overflow
    for (char c : whole) w = w * 10 + static_cast<uint64_t>(c - '0');
    TimeNs ns = 0;
    bool fractional = false;
    const bool fits = w <= (INT64_MAX - 999) / 1000;
    ASSERT_EQ(parse_micros_as_ns(s, &ns, &fractional), fits) << s;
    if (!fits) continue;
    int64_t expected = static_cast<int64_t>(w) * 1000;
    const std::string f3 = (frac + "000").substr(0, 3);
    expected += std::stoi(f3);
    if (frac_len > 3 && frac[3] >= '5') expected += 1;
    EXPECT_EQ(ns, static_cast<TimeNs>(s[0] == '-' ? -expected : expected)) << s;
    EXPECT_EQ(fractional, expected % 1000 != 0) << s;
  }
}

TEST(JsonUtil, FormatsMicrosecondsThatRoundTrip) {
  for (TimeNs ns : {TimeNs{0}, TimeNs{1000}, TimeNs{1}, TimeNs{12345}, TimeNs{12300}, TimeNs{-2500},
                    TimeNs{1694128201428473123}}) {
    std::string s;
    append_micros(s, ns);
    TimeNs back = 0;
    bool frac = false;
    ASSERT_TRUE(parse_micros_as_ns(s, &back, &frac)) << s;
    EXPECT_EQ(back, ns) << s;
  }
  // The fraction cut after its last nonzero digit, at each of its three lengths.
  for (const auto& [ns, text] : std::vector<std::pair<TimeNs, std::string>>{{12300, "12.3"},
                                                                            {5000, "5"},
                                                                            {12340, "12.34"},
                                                                            {12345, "12.345"},
                                                                            {1, "0.001"},
                                                                            {10, "0.01"},
                                                                            {100, "0.1"},
                                                                            {-2500, "-2.5"},
                                                                            {-1, "-0.001"}}) {
    std::string s = "x";
    append_micros(s, ns);
    EXPECT_EQ(s, "x" + text) << ns;
  }
}

TEST(JsonUtil, RepairsInvalidUtf8InPlace) {
  std::string ok = "plain \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
  std::string copy = ok;
  EXPECT_EQ(repair_utf8(copy), 0u);
  EXPECT_EQ(copy, ok);
  std::string bad =
      "a\xff"
      "b\xc3(\xed\xa0\x80z\xc0\xaf";  // stray, truncated, surrogate, overlong
  size_t size = bad.size();
  EXPECT_EQ(repair_utf8(bad), 7u);
  EXPECT_EQ(bad.size(), size);
  EXPECT_EQ(bad, "a?b?(???z??");
}

TEST(JsonUtil, UnescapesAndEscapes) {
  std::deque<std::string> arena;
  auto plain = unescape_literal("\"aten::mm\"", arena);
  ASSERT_TRUE(plain);
  EXPECT_EQ(*plain, "aten::mm");
  EXPECT_TRUE(arena.empty());  // no copy without escapes
  auto esc = unescape_literal(R"("a\"b\\c\n\u00e9\ud83d\ude00")", arena);
  ASSERT_TRUE(esc);
  EXPECT_EQ(*esc, "a\"b\\c\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_FALSE(unescape_literal(R"("bad \q")", arena));
  std::string out;
  append_escaped(out, std::string("q\"\\\n\x01", 5));
  EXPECT_EQ(out, R"("q\"\\\n\u0001")");
}

// The on-demand code must not silently compile to simdjson's scalar kernel on a CPU that has
// AVX2 (it did, with -march=x86-64-v3 alone: that target lacks PCLMUL).
TEST(JsonUtil, BuildsAFastKernelWhenTheTargetHasAvx2) {
#if defined(__AVX2__)
  EXPECT_NE(json::builtin_kernel(), "fallback");
#else
  GTEST_SKIP() << "SKIPPED: built without AVX2 (CHAKRAFLOW_ARCH): kernel "
               << json::builtin_kernel();
#endif
}

// Keys as written (raw_key) and unescaped (unescaped_key), with escaped quotes and backslashes.
TEST(JsonUtil, ReadsKeysRawAndUnescaped) {
  const std::string text =
      R"({"plain": 1, "a\"b": 2, "back\\": 3, "n\u0061me": 4, "": 5, "x\\\"y": 6,)"
      // Whitespace on both sides of the colon, before values of every kind (raw_key steps back
      // from the value to the key's closing quote), and a key holding a colon and quotes.
      R"( "ws" :1, "tab"	:	"s", "nl"
:
{"in": []}, "k:\"v\"" :[1], "t"   :   true})";
  simdjson::padded_string padded(text);
  od::parser parser;
  od::document doc;
  ASSERT_EQ(parser.iterate(padded).get(doc), simdjson::SUCCESS);
  od::object obj;
  ASSERT_EQ(doc.get_object().get(obj), simdjson::SUCCESS);
  std::vector<std::string> raw, unescaped;
  for (auto field_result : obj) {
    od::field field;
    ASSERT_EQ(std::move(field_result).get(field), simdjson::SUCCESS);
    raw.emplace_back(raw_key(field));
    std::string_view key;
    ASSERT_EQ(unescaped_key(field, &key), simdjson::SUCCESS);
    unescaped.emplace_back(key);
  }
  EXPECT_EQ(raw, (std::vector<std::string>{"plain", R"(a\"b)", R"(back\\)", R"(n\u0061me)", "",
                                           R"(x\\\"y)", "ws", "tab", "nl", R"(k:\"v\")", "t"}));
  EXPECT_EQ(unescaped, (std::vector<std::string>{"plain", "a\"b", "back\\", "name", "", "x\\\"y",
                                                 "ws", "tab", "nl", "k:\"v\"", "t"}));
  EXPECT_TRUE(equals("name", "name"));
  EXPECT_FALSE(equals("names", "name"));
  EXPECT_FALSE(equals("nam", "name"));
  EXPECT_TRUE(equals("", ""));
}

// equals compares in words that may overlap, chosen by the literal's length: every length up to
// 25, with one byte changed at every position, and views one byte shorter or longer.
template <size_t N>
void check_equals_at_length() {
  char literal[N];
  for (size_t k = 0; k + 1 < N; ++k) literal[k] = static_cast<char>('a' + (k * 7) % 26);
  literal[N - 1] = '\0';
  const std::string same(literal, N - 1);
  EXPECT_TRUE(equals(same, literal)) << same;
  for (size_t k = 0; k + 1 < N; ++k) {
    std::string changed = same;
    changed[k] ^= 0x20;
    EXPECT_FALSE(equals(changed, literal)) << changed;
  }
  const std::string longer = same + literal[0];
  EXPECT_FALSE(equals(longer, literal));
  if (N > 1) {
    EXPECT_FALSE(equals(std::string_view(same).substr(1), literal));
  }
}

template <size_t... N>
void check_equals_at_lengths(std::index_sequence<N...>) {
  (check_equals_at_length<N + 1>(), ...);
}

TEST(JsonUtil, EqualsALiteralOfEveryLength) {
  check_equals_at_lengths(std::make_index_sequence<26>());
}

// micros_value is the double the ET+ text of the same nanoseconds reads back as: checked against
// parsing append_micros's text, at every magnitude, on ties, and on negative times.
TEST(JsonUtil, MicrosValueIsWhatTheTextReadsBackAs) {
  auto via_text = [](TimeNs ns) {
    std::string text;
    append_micros(text, ns);
    double v = 0;
    std::from_chars(text.data(), text.data() + text.size(), v);
    return v;
  };
  std::mt19937_64 rng(11);
  size_t checked = 0;
  for (int bits = 1; bits <= 63; ++bits) {
    for (int k = 0; k < 2000; ++k) {
      TimeNs ns = static_cast<TimeNs>(rng() >> (64 - bits));
      if (k % 5 == 0)
        ns = ns / 1000 * 1000 + std::array<int, 5>{125, 375, 500, 625, 875}[k % 25 / 5];
      if (k % 2 == 1) ns = -ns;
      ASSERT_EQ(micros_value(ns), via_text(ns)) << ns;
      ++checked;
    }
  }
  for (TimeNs ns : {TimeNs{0}, (TimeNs{1} << 53) - 1, TimeNs{1} << 53, (TimeNs{1} << 53) + 1,
                    (TimeNs{1} << 62) - 1, TimeNs{1} << 62, INT64_MAX, INT64_MIN + 1}) {
    EXPECT_EQ(micros_value(ns), via_text(ns)) << ns;
  }
  EXPECT_GT(checked, 100000u);
}

// The windowed parse sizes its parser once, before the first window, for the largest window it
// may parse: the windows, cut at element ends, differ in size by a few bytes, and a parser asked
// to parse a document larger than any before frees its structural index and string buffer and
// takes new ones (fresh pages, for windows of a megabyte). Elements of random sizes give windows
// of many sizes; the parser's capacity is the same at every element.
TEST(JsonUtil, WindowedParseSizesItsParserOnce) {
  std::mt19937 rng(7);
  std::string text = "{\"before\": 1, \"nodes\": [";
  for (int i = 0; i < 4000; ++i) {
    if (i > 0) text += ",\n";
    text += "{\"id\": " + std::to_string(i) + ", \"name\": \"" +
            std::string(std::uniform_int_distribution<size_t>(1, 300)(rng), 'a' + i % 26) + "\"}";
  }
  text += "], \"after\": 2}";
  const size_t size = text.size();
  text.append(kInputPadding, '\0');

  struct Reader final : ArrayWindowReader {
    od::parser* parser = nullptr;
    std::vector<size_t> capacities;
    size_t elements = 0;
    bool root_field(od::field& field) override {
      std::string_view raw;
      return raw_value(field.value(), &raw) == simdjson::SUCCESS;
    }
    bool element(od::document&, od::value& value, const char*) override {
      std::string_view raw;
      if (raw_value(value, &raw) != simdjson::SUCCESS) return false;
      if (capacities.empty() || capacities.back() != parser->capacity()) {
        capacities.push_back(parser->capacity());
      }
      ++elements;
      return true;
    }
  };
  for (size_t window : {size_t{4096}, size_t{16384}, size_t{50000}}) {
    od::parser parser;
    Reader reader;
    reader.parser = &parser;
    const size_t windows =
        read_array_in_windows(parser, text.data(), size, text.size(), "\"nodes\"", window, reader);
    EXPECT_GT(windows, 3u) << window;
    EXPECT_EQ(reader.elements, 4000u) << window;
    ASSERT_FALSE(reader.capacities.empty()) << window;
    EXPECT_EQ(reader.capacities.size(), 1u)
        << window << ": the parser was sized again after the first window ("
        << reader.capacities.front() << " -> " << reader.capacities.back() << " bytes)";
    EXPECT_GE(reader.capacities.front(), window + window / 2) << window;
  }
}

}  // namespace
}  // namespace chakraflow::json
