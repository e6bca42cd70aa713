// stages/convert/python_repr: Python's str() of JSON values. Hand-made cases from CPython's rules,
// plus a randomized comparison against a real python3 when one is installed.
#include "stages/convert/python_repr.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <sstream>

#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

std::string repr(std::string_view json) {
  std::string out;
  Status s = pyrepr::append_json_value(out, json);
  EXPECT_TRUE(s.ok()) << json << ": " << s.message();
  return out;
}

std::string float_repr(double v) {
  std::string out;
  pyrepr::append_float(out, v);
  return out;
}

TEST(python_repr, ContainersUsePythonSeparators) {
  EXPECT_EQ(repr("[]"), "[]");
  EXPECT_EQ(repr("{}"), "{}");
  EXPECT_EQ(repr(" [ 1 ,2,\n 3 ] "), "[1, 2, 3]");
  EXPECT_EQ(repr(R"({"a":1,"b":[true,false,null]})"), "{'a': 1, 'b': [True, False, None]}");
  EXPECT_EQ(repr("[[[]],[{}]]"), "[[[]], [{}]]");
  // The example of reference/chakra_spec.md §2.5, verified against Chakra.
  EXPECT_EQ(repr(R"([[1,2,0,16,4,"cuda:0"],3,"x'y",true,null,1.5])"),
            "[[1, 2, 0, 16, 4, 'cuda:0'], 3, \"x'y\", True, None, 1.5]");
}

TEST(python_repr, IntegersAreWrittenAsTheyAre) {
  EXPECT_EQ(repr("0"), "0");
  EXPECT_EQ(repr("-17"), "-17");
  EXPECT_EQ(repr("-0"), "0");
  EXPECT_EQ(repr("123456789012345678901234567890"), "123456789012345678901234567890");
}

TEST(python_repr, FloatsFollowPythonRepr) {
  EXPECT_EQ(repr("1.0"), "1.0");
  EXPECT_EQ(repr("1e2"), "100.0");
  EXPECT_EQ(repr("0.01"), "0.01");
  EXPECT_EQ(repr("0.0001"), "0.0001");
  EXPECT_EQ(repr("0.00001"), "1e-05");
  EXPECT_EQ(repr("1e-5"), "1e-05");
  EXPECT_EQ(repr("-0.0"), "-0.0");
  EXPECT_EQ(repr("1e15"), "1000000000000000.0");
  EXPECT_EQ(repr("1e16"), "1e+16");
  EXPECT_EQ(repr("1E22"), "1e+22");
  EXPECT_EQ(repr("123456789012345678.0"), "1.2345678901234568e+17");
  EXPECT_EQ(repr("-3.4028234663852886e+38"), "-3.4028234663852886e+38");
  EXPECT_EQ(repr("0.30000000000000004"), "0.30000000000000004");
  EXPECT_EQ(repr("1e400"), "inf");
  EXPECT_EQ(repr("-1e400"), "-inf");
  EXPECT_EQ(repr("1e-400"), "0.0");
  EXPECT_EQ(repr("[NaN, Infinity, -Infinity]"), "[nan, inf, -inf]");
  EXPECT_EQ(float_repr(5e-324), "5e-324");
  EXPECT_EQ(float_repr(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(float_repr(0.1), "0.1");
  EXPECT_EQ(float_repr(123.456), "123.456");
  EXPECT_EQ(float_repr(9999999999999998.0), "9999999999999998.0");
}

TEST(python_repr, StringsChooseQuotesAndEscapeLikePython) {
  EXPECT_EQ(repr(R"("abc")"), "'abc'");
  EXPECT_EQ(repr(R"("")"), "''");
  EXPECT_EQ(repr(R"("x'y")"), "\"x'y\"");
  EXPECT_EQ(repr(R"("a\"b")"), "'a\"b'");
  EXPECT_EQ(repr(R"("a'b\"c")"), "'a\\'b\"c'");
  EXPECT_EQ(repr(R"("back\\slash")"), "'back\\\\slash'");
  EXPECT_EQ(repr(R"("a\nb\tc\rd")"), "'a\\nb\\tc\\rd'");
  EXPECT_EQ(repr(R"("\u0001\u001f\u007f")"), "'\\x01\\x1f\\x7f'");
  EXPECT_EQ(repr(R"("\/")"), "'/'");
  // Printable non-ASCII stays as UTF-8; non-printable is escaped.
  EXPECT_EQ(repr("\"caf\xc3\xa9\""), "'caf\xc3\xa9'");
  EXPECT_EQ(repr(R"("caf\u00e9")"), "'caf\xc3\xa9'");
  EXPECT_EQ(repr(R"("\u00a0\u00ad\u0085")"), "'\\xa0\\xad\\x85'");
  EXPECT_EQ(repr(R"("\u200b\u2028\ufeff")"), "'\\u200b\\u2028\\ufeff'");
  EXPECT_EQ(repr(R"("\ud83d\ude00")"), "'\xf0\x9f\x98\x80'");  // a surrogate pair: one emoji
  EXPECT_EQ(repr(R"("\ud800")"), "'\\ud800'");                 // a lone surrogate
  EXPECT_EQ(repr(R"("\ue000")"), "'\\ue000'");                 // private use
  // The process-group list of `## process_group:init ##`, as ASTRA-sim parses it.
  EXPECT_EQ(repr(R"(["[{\"pg_name\": \"0\", \"ranks\": []}]"])"),
            R"(['[{"pg_name": "0", "ranks": []}]'])");
  // Invalid UTF-8 is written as Python's surrogateescape would show it.
  std::string out;
  pyrepr::append_str(out, "a\xff");
  EXPECT_EQ(out, "'a\\udcff'");
}

TEST(python_repr, MalformedJsonIsAnErrorWithTheOffset) {
  for (std::string_view bad :
       {"[1,", "[1 2]", "{1: 2}", "\"abc", "[1]]", "tru", "{\"a\" 1}", "[1,]", "", "01",
        "[\"\\x\"]",
        // Minified arrays of integers and strings (the one-pass path's domain), malformed.
        "[1,,2]", "[,1]", "[1][2]", "[[1]", "[01]", "[-]", "[-a]", "[\"a", "[1\"a\"]", "[\"a\"1]",
        "[]]", "[[]][]", "[1]x", "[[1],[2]", "[1.]", "[1e]", "[\"a\",]",
        // Its floats and words, malformed.
        "[1.5.2]", "[1e+]", "[-01]", "[.5]", "[truex]", "[true1]", "[tru]", "[fals]", "[nul]",
        "[1,true false]", "[null[]]", "[0.5\"a\"]", "[-Infinit]"}) {
    std::string out;
    Status s = pyrepr::append_json_value(out, bad);
    EXPECT_FALSE(s.ok()) << "accepted: " << bad;
    EXPECT_NE(s.message().find("byte"), std::string::npos) << s.message();
  }
}

// write_json_value renders at a size into a string whose bytes past it are room left by values
// before (here garbage): what it writes is what append_json_value appends, whatever was there,
// and a failed value leaves the values before it in place.
TEST(python_repr, WritesAtASizeIntoTheRoomLeftBefore) {
  const std::vector<std::string> values = {
      "[[1,2,0,16,4,\"cuda:0\"],3,\"x'y\",true,null,1.5]",
      "[]",
      "[1e300,-0,\"\\u00e9\"]",
      "{\"a\": [1, 2]}",
      "[\"GenericList[Tensor(c10::BFloat16),Tensor(c10::BFloat16)]\"]",
      "7"};
  std::string room(4096, '#');
  size_t size = 0;
  std::string expected;
  for (int round = 0; round < 3; ++round) {
    size = 0;
    expected.clear();
    for (const std::string& v : values) {
      ASSERT_TRUE(pyrepr::write_json_value(room, size, v).ok()) << v;
      ASSERT_TRUE(pyrepr::append_json_value(expected, v).ok()) << v;
      ASSERT_GE(room.size(), size);
      EXPECT_EQ(room.substr(0, size), expected) << v;
    }
  }
  // A string smaller than the output grows.
  std::string small = "ab";
  size = 1;
  ASSERT_TRUE(pyrepr::write_json_value(small, size, values[0]).ok());
  EXPECT_EQ(small.substr(0, size), "a" + repr(values[0]));
  // Malformed: an error; what came before stays, the size past it (and a partial result).
  size = 0;
  ASSERT_TRUE(pyrepr::write_json_value(room, size, "[1]").ok());
  EXPECT_FALSE(pyrepr::write_json_value(room, size, "[1,,2]").ok());
  EXPECT_GE(size, 3u);
  EXPECT_EQ(room.substr(0, 3), "[1]");
}

// The writer makes room for the worst case of most tokens at once: floats and strings that need
// decoding can write more than twice their input, and must make room for themselves.
TEST(python_repr, AppendsAfterWhatTheStringHoldsWhateverTheOutputGrowth) {
  // `n` times `element` in a list: `sep` between them, "[" + `last` + "]" around.
  auto list = [](const std::string& element, const std::string& sep, int n,
                 const std::string& last = "") {
    std::string out = "[";
    for (int i = 0; i < n; ++i) out += (i ? sep : "") + element;
    return out + last + "]";
  };
  const std::string many_floats = list("1e5", ",", 3000, ",1e15");
  EXPECT_EQ(repr(many_floats), list("100000.0", ", ", 3000, ", 1000000000000000.0"));
  EXPECT_EQ(repr("1e15"), "1000000000000000.0");  // 4 bytes in, 18 out, no container

  // Compact JSON: every ',' and ':' writes two characters.
  const std::string compact = list(R"({"a":[7,8]})", ",", 3000);
  EXPECT_EQ(repr(compact), list("{'a': [7, 8]}", ", ", 3000));

  // Each byte of invalid UTF-8 gives six characters (\udcXX).
  std::string bad_bytes = "[\"" + std::string(500, '\xff') + "\"]";
  std::string bad_repr = "['";
  for (int i = 0; i < 500; ++i) bad_repr += "\\udcff";
  bad_repr += "']";
  EXPECT_EQ(repr(bad_bytes), bad_repr);

  // Values appended one after another to one string, as the converter does: each keeps what the
  // string held, and gives back the room it did not use.
  const std::vector<std::string> values = {"[1,2,[3]]", R"(["a'b", "\u00e9", "\n"])",
                                           "1e-7",      "[]",
                                           many_floats, "{\"k\":null}",
                                           bad_bytes,   "\"plain\"",
                                           "-0",        compact};
  std::string all = "prefix:";
  std::string expected = "prefix:";
  for (const std::string& v : values) {
    ASSERT_TRUE(pyrepr::append_json_value(all, v).ok()) << v;
    expected += repr(v);
    ASSERT_EQ(all, expected) << v;
  }
}

TEST(python_repr, DeepNestingNeedsNoRecursion) {
  const int depth = 200000;
  std::string json(depth, '[');
  json.append(depth, ']');
  std::string out;
  ASSERT_TRUE(pyrepr::append_json_value(out, json).ok());
  EXPECT_EQ(out, json);
}

// A list's strings are scanned 16 bytes at a time: a character that takes them off the plain path
// (an escape, a byte past ASCII, DEL) or that picks the other quote (') at every position of
// strings of every length about those blocks, with little or much of the list after them (other
// strings among it, plain or not), give what the string's own repr (append_json_string_literal,
// one byte at a time) gives.
TEST(python_repr, ListStringsAgreeWithTheStringReprAtEveryPosition) {
  const std::vector<std::string> specials = {"'", "\\n", "\\\"", "\x7f", "\xc3\xa9", "\\u00e9"};
  for (size_t len = 0; len <= 40; ++len) {
    for (const std::string tail :
         {",1]", ",1,23456789012345678901234567890]", ",\"it's\",1]", ",\"a\\nb\",\"\\u00e9\"]"}) {
      for (size_t pos = 0; pos <= len; ++pos) {
        for (const std::string& special : specials) {
          std::string body(len, 'a');
          for (size_t k = 0; k < len; ++k) body[k] = static_cast<char>('a' + k % 26);
          if (pos < len) body.replace(pos, 1, special);
          const std::string literal = "\"" + body + "\"";
          std::string expected = "[7, ";
          const std::string json = "[7," + literal + tail;
          ASSERT_TRUE(pyrepr::append_json_string_literal(expected, literal)) << literal;
          // What follows as the list of it alone gives it.
          expected += ", " + repr("[" + tail.substr(1)).substr(1);
          EXPECT_EQ(repr(json), expected) << json;
        }
      }
    }
  }
}

// Minified arrays of numbers, words and strings, as PyTorch writes IOInfo lists (a path of their
// own), and their near misses (escapes, whitespace, objects, NaN, Infinity) mixed in, against
// CPython, when python3 is installed.
TEST(python_repr, PlainArraysAgreeWithPython3) {
  if (testing::run_command("python3 -c 'print(1)'") != 0) GTEST_SKIP() << "python3 not found";
  std::mt19937_64 rng(20261127);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  // The one-pass path's tokens first, then its near misses.
  const std::vector<std::string> scalars = {"0",
                                            "7",
                                            "-3",
                                            "65536",
                                            "-9223372036854775808",
                                            "\"cuda:0\"",
                                            "\"it's\"",
                                            "\"\"",
                                            "\"Tensor(c10::BFloat16)\"",
                                            "\"<None>\"",
                                            "1.5",
                                            "0.100000",
                                            "-0.5",
                                            "1e-05",
                                            "2.5E+3",
                                            "1e3",
                                            "-0.0",
                                            "-0",
                                            "true",
                                            "false",
                                            "null",
                                            "\"a\\\"b\"",
                                            "\"\\u00e9\"",
                                            "\" sp ace \"",
                                            "{\"k\":1}",
                                            "NaN",
                                            "-Infinity"};
  const size_t one_pass = 21;
  std::function<std::string(int)> value = [&](int depth) -> std::string {
    if (depth == 0 || pick(3) == 0) {
      // Mostly the one-pass path's tokens; a near miss one time in six.
      return scalars[pick(6) == 0 ? pick(scalars.size()) : pick(one_pass)];
    }
    std::string out = "[";
    const size_t n = pick(5);
    for (size_t i = 0; i < n; ++i) out += (i ? "," : "") + value(depth - 1);
    return out + "]";
  };
  std::vector<std::string> values;
  for (int i = 0; i < 3000; ++i) values.push_back("[" + value(3) + "]");
  values.push_back("[1, 2]");  // whitespace: the scanner's
  // One JSON document of all of them, one per line of Python's output.
  std::string doc = "[";
  for (size_t i = 0; i < values.size(); ++i) doc += (i ? "," : "") + values[i];
  doc += "]";
  testing::TempDir tmp;
  testing::write_text(tmp.file("in.json"), doc);
  std::string python;
  ASSERT_EQ(testing::run_command("python3 -c 'import json,sys; [print(str(v)) for v in "
                                 "json.load(open(\"" +
                                     tmp.file("in.json") + "\"))]'",
                                 &python),
            0)
      << python;
  std::string ours;
  for (const std::string& v : values) ours += repr(v) + "\n";
  EXPECT_EQ(ours, python);
}

// Compares with CPython itself on random doubles and strings, when python3 is installed.
TEST(python_repr, AgreesWithPython3OnRandomValues) {
  if (testing::run_command("python3 -c 'print(1)'") != 0) GTEST_SKIP() << "python3 not found";
  std::mt19937_64 rng(20240611);
  std::vector<double> values;
  for (int i = 0; i < 2000; ++i) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof(d));
    if (!std::isfinite(d)) continue;
    values.push_back(d);
  }
  std::uniform_real_distribution<double> small(-1e6, 1e6);
  for (int i = 0; i < 1000; ++i) values.push_back(small(rng));
  for (int e = -30; e <= 30; ++e) values.push_back(std::pow(10.0, e) * 1.5);
  std::ostringstream json;
  json.precision(17);
  json << "[";
  for (size_t i = 0; i < values.size(); ++i) json << (i ? "," : "") << values[i];
  json << ",\"it's\",\"\\u00e9\\u0007\",\"tab\\there\",\"q\\\"q\"]";
  testing::TempDir tmp;
  testing::write_text(tmp.file("in.json"), json.str());
  std::string python;
  ASSERT_EQ(
      testing::run_command("python3 -c 'import json,sys; sys.stdout.write(str(json.load(open(\"" +
                               tmp.file("in.json") + "\"))))'",
                           &python),
      0)
      << python;
  EXPECT_EQ(repr(json.str()), python);
}

}  // namespace
}  // namespace chakraflow
