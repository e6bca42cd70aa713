#include "stages/convert/python_repr.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <vector>

#include "stages/common/json_util.h"
#include "stages/common/short_copy.h"

namespace chakraflow::pyrepr {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// Code points that CPython's str.isprintable() rejects, apart from unassigned ones: categories Cc,
// Cf, Cs, Co, Zl, Zp and Zs other than the ASCII space (Unicode 15). Sorted, inclusive ranges.
struct Range {
  char32_t lo, hi;
};
constexpr Range kNonPrintable[] = {
    {0x0000, 0x001F},   {0x007F, 0x00A0},   {0x00AD, 0x00AD},    {0x0600, 0x0605},
    {0x061C, 0x061C},   {0x06DD, 0x06DD},   {0x070F, 0x070F},    {0x0890, 0x0891},
    {0x08E2, 0x08E2},   {0x1680, 0x1680},   {0x180E, 0x180E},    {0x2000, 0x200F},
    {0x2028, 0x202F},   {0x205F, 0x2064},   {0x2066, 0x206F},    {0x3000, 0x3000},
    {0xD800, 0xF8FF},   {0xFEFF, 0xFEFF},   {0xFFF9, 0xFFFB},    {0x110BD, 0x110BD},
    {0x110CD, 0x110CD}, {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3},  {0x1D173, 0x1D17A},
    {0xE0001, 0xE0001}, {0xE0020, 0xE007F}, {0xF0000, 0x10FFFF},
};

bool is_printable(char32_t cp) {
  size_t lo = 0, hi = std::size(kNonPrintable);
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (cp > kNonPrintable[mid].hi) {
      lo = mid + 1;
    } else if (cp < kNonPrintable[mid].lo) {
      hi = mid;
    } else {
      return false;
    }
  }
  return true;
}

void append_hex(std::string& out, char prefix, char32_t cp, int digits) {
  out.push_back('\\');
  out.push_back(prefix);
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4)
    out.push_back(kHex[(cp >> shift) & 15]);
}

// Python's unicode_repr, given the code points of the string.
void append_code_points(std::string& out, const std::vector<char32_t>& cps) {
  bool has_single = false, has_double = false;
  for (char32_t c : cps) {
    has_single |= c == U'\'';
    has_double |= c == U'"';
  }
  const char32_t quote = (has_single && !has_double) ? U'"' : U'\'';
  out.push_back(static_cast<char>(quote));
  for (char32_t c : cps) {
    if (c == quote || c == U'\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == U'\t') {
      out += "\\t";
    } else if (c == U'\n') {
      out += "\\n";
    } else if (c == U'\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      append_hex(out, 'x', c, 2);
    } else if (c < 0x7F) {
      out.push_back(static_cast<char>(c));
    } else if (is_printable(c)) {
      json::append_utf8(out, c);
    } else if (c <= 0xFF) {
      append_hex(out, 'x', c, 2);
    } else if (c <= 0xFFFF) {
      append_hex(out, 'u', c, 4);
    } else {
      append_hex(out, 'U', c, 8);
    }
  }
  out.push_back(static_cast<char>(quote));
}

// Invalid bytes decode to U+DC80..U+DCFF, as Python's surrogateescape has them. A surrogate
// encoded on its own (ED A0..BF xx, what json::unescape_literal writes for a lone \uD800) is kept
// as that surrogate: Python keeps lone surrogates from JSON escapes.
char32_t decode_utf8_or_escape(std::string_view s, size_t* i) {
  const auto b0 = static_cast<unsigned char>(s[*i]);
  if (b0 == 0xED && *i + 2 < s.size()) {
    const auto b1 = static_cast<unsigned char>(s[*i + 1]);
    const auto b2 = static_cast<unsigned char>(s[*i + 2]);
    if (b1 >= 0xA0 && b1 <= 0xBF && (b2 & 0xC0) == 0x80) {
      *i += 3;
      return 0xD000 | ((b1 & 0x3F) << 6) | (b2 & 0x3F);
    }
  }
  bool valid = true;
  char32_t cp = decode_utf8(s, i, &valid);
  return valid ? cp : 0xDC00 + b0;
}

// True when `s` is plain printable ASCII without backslashes: its repr needs no decoding.
bool is_simple_ascii(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7E || c == '\\') return false;
  }
  return true;
}

void append_simple_ascii(std::string& out, std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  out.push_back(quote);
  if (!(has_single && has_double)) {
    out.append(s);
  } else {
    for (char c : s) {
      if (c == quote) out.push_back('\\');
      out.push_back(c);
    }
  }
  out.push_back(quote);
}

size_t skip_ws(std::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  return i;
}

// The end of the JSON string literal that starts at s[i] == '"', or npos.
size_t string_end(std::string_view s, size_t i) {
  for (size_t k = i + 1; k < s.size(); ++k) {
    if (s[k] == '\\') {
      ++k;
    } else if (s[k] == '"') {
      return k + 1;
    }
  }
  return std::string_view::npos;
}

// Scans a JSON number at s[i]. Returns its end, or i when there is none; *is_int when it has
// neither a fraction nor an exponent.
size_t number_end(std::string_view s, size_t i, bool* is_int) {
  size_t k = i;
  *is_int = true;
  if (k < s.size() && s[k] == '-') ++k;
  size_t digits = k;
  if (k < s.size() && s[k] == '0') {
    ++k;
  } else {
    while (k < s.size() && s[k] >= '0' && s[k] <= '9') ++k;
  }
  if (k == digits) return i;
  if (k < s.size() && s[k] == '.') {
    size_t f = ++k;
    while (k < s.size() && s[k] >= '0' && s[k] <= '9') ++k;
    if (k == f) return i;
    *is_int = false;
  }
  if (k < s.size() && (s[k] == 'e' || s[k] == 'E')) {
    ++k;
    if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
    size_t e = k;
    while (k < s.size() && s[k] >= '0' && s[k] <= '9') ++k;
    if (k == e) return i;
    *is_int = false;
  }
  return k;
}

double parse_double(std::string_view token) {
  double d = 0;
  auto r = std::from_chars(token.data(), token.data() + token.size(), d);
  if (r.ec == std::errc()) return d;
  // Out of range: overflow gives +-inf, underflow +-0 (what Python's float() returns).
  std::string copy(token);
  return std::strtod(copy.c_str(), nullptr);
}

bool starts_with_at(std::string_view s, size_t i, std::string_view word) {
  return s.size() - i >= word.size() && s.compare(i, word.size(), word) == 0;
}

}  // namespace

char32_t decode_utf8(std::string_view s, size_t* i, bool* valid) {
  const auto b0 = static_cast<unsigned char>(s[*i]);
  *valid = true;
  if (b0 < 0x80) {
    ++*i;
    return b0;
  }
  size_t need = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    need = 1, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    need = 2, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    need = 3, cp = b0 & 0x07, min = 0x10000;
  }
  bool ok = need > 0 && *i + need < s.size();
  for (size_t k = 1; ok && k <= need; ++k) {
    const auto b = static_cast<unsigned char>(s[*i + k]);
    ok = (b & 0xC0) == 0x80;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (!ok || cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    *valid = false;
    ++*i;
    return b0;
  }
  *i += need + 1;
  return cp;
}

void append_float(std::string& out, double v) {
  json::append_python_float(out, v);
}

void append_str(std::string& out, std::string_view s) {
  if (is_simple_ascii(s)) {
    append_simple_ascii(out, s);
    return;
  }
  std::vector<char32_t> cps;
  cps.reserve(s.size());
  for (size_t i = 0; i < s.size();) cps.push_back(decode_utf8_or_escape(s, &i));
  append_code_points(out, cps);
}

bool append_json_string_literal(std::string& out, std::string_view literal) {
  if (literal.size() < 2 || literal.front() != '"' || literal.back() != '"') return false;
  std::string_view body = literal.substr(1, literal.size() - 2);
  if (is_simple_ascii(body)) {
    append_simple_ascii(out, body);
    return true;
  }
  // JSON escapes as Python's json module decodes them: pairs combined, lone surrogates kept.
  std::deque<std::string> arena;
  std::optional<std::string_view> text = json::unescape_literal(literal, arena);
  if (!text) return false;
  append_str(out, *text);
  return true;
}

namespace {

// Writes through a pointer into room past `size` bytes of `out` (what lies beyond them is room,
// and is not given back: a caller that renders value after value into one string zeroes its room
// once, not for each value), instead of a push_back per character; `size` follows what is
// written. The room is made once for the worst case of every token but a float (each input byte
// gives at most two, as ", " for ","): a float (up to 25 characters from as few as 3) and a string
// that needs decoding (up to 6 per byte) are written to a scratch string first, and make room if
// they must, taking the value's size more, so that it is made only a few times per value.
class Writer {
 public:
  Writer(std::string& out, size_t& size, size_t input_size)
      : out_(out), size_(size), slack_(input_size), start_(size) {
    if (out_.size() < size_ + 2 * input_size + 8) out_.resize(size_ + 2 * input_size + 8);
    p_ = out_.data() + size_;
    end_ = out_.data() + out_.size();
  }
  ~Writer() { size_ = static_cast<size_t>(p_ - out_.data()); }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // What was written is dropped.
  void rewind() { p_ = out_.data() + start_; }
  void put(char c) { *p_++ = c; }
  void put(std::string_view s) {
    copy_short_or_long(p_, s.data(), s.size());
    p_ += s.size();
  }
  // Puts `s`, keeping room for the `rest` bytes of input still to come.
  void put_keeping_room(std::string_view s, size_t rest) {
    if (static_cast<size_t>(end_ - p_) < s.size() + 2 * rest + 8) {
      const auto used = static_cast<size_t>(p_ - out_.data());
      out_.resize(used + s.size() + 2 * rest + 8 + slack_);
      p_ = out_.data() + used;
      end_ = out_.data() + out_.size();
    }
    put(s);
  }

 private:
  std::string& out_;
  size_t& size_;
  size_t slack_;
  size_t start_;  // where this writer's output begins in the string
  char* p_ = nullptr;
  char* end_ = nullptr;
};

// The open containers ('[' or '{'): inline up to a depth that IOInfo lists never pass, a string
// beyond it.
class ContainerStack {
 public:
  bool empty() const { return size_ == 0; }
  char back() const { return size_ <= kInline ? inline_[size_ - 1] : deep_.back(); }
  void push(char c) {
    if (size_ < kInline) {
      inline_[size_] = c;
    } else {
      deep_.push_back(c);
    }
    ++size_;
  }
  void pop() {
    if (size_ > kInline) deep_.pop_back();
    --size_;
  }

 private:
  static constexpr size_t kInline = 32;
  char inline_[kInline];
  std::string deep_;
  size_t size_ = 0;
};

// The position of the '"' that ends a string literal whose body starts at s[k], when the body is
// printable ASCII without backslashes (*has_single: it holds a '); npos otherwise, or when the
// text ends first.
size_t plain_string_end(std::string_view s, size_t k, bool* has_single) {
#if defined(__SSE2__)
  // 16 bytes at a time, the last 16 of the text where fewer are left (a value is rarely shorter):
  // the first '"', and whether a byte before it is outside printable ASCII (as signed chars: below
  // 0x20, which takes 0x80 and up, or 0x7F) or a backslash, or a single quote.
  if (s.size() >= 16) {
    const __m128i dquote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i single = _mm_set1_epi8('\'');
    const __m128i space = _mm_set1_epi8(0x20);
    const __m128i del = _mm_set1_epi8(0x7F);
    while (k < s.size()) {
      const size_t at = k + 16 <= s.size() ? k : s.size() - 16;
      const auto skip = static_cast<unsigned>(k - at);  // bytes of the block before s[k]
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + at));
      const __m128i bad =
          _mm_or_si128(_mm_or_si128(_mm_cmplt_epi8(v, space), _mm_cmpeq_epi8(v, del)),
                       _mm_cmpeq_epi8(v, backslash));
      const auto mask = [&](__m128i m) {
        return static_cast<unsigned>(_mm_movemask_epi8(m)) >> skip;
      };
      const unsigned ends = mask(_mm_cmpeq_epi8(v, dquote));
      // The bytes before the first '"' (all the block's when there is none).
      const unsigned body = ends == 0 ? 0xFFFFu >> skip : (ends & (0u - ends)) - 1;
      if ((mask(bad) & body) != 0) return std::string_view::npos;
      *has_single |= (mask(_mm_cmpeq_epi8(v, single)) & body) != 0;
      if (ends != 0) return k + static_cast<size_t>(__builtin_ctz(ends));
      k += 16 - skip;
    }
    return std::string_view::npos;
  }
#endif
  for (; k < s.size(); ++k) {
    const char c = s[k];
    if (c == '"') return k;
    if (c < 0x20 || c > 0x7E || c == '\\') return std::string_view::npos;
    *has_single |= c == '\'';
  }
  return std::string_view::npos;
}

// A string literal at s[i] == '"' of printable ASCII without backslashes (nearly all of them):
// writes its repr and returns its end, or returns npos and writes nothing.
size_t write_simple_string(Writer& w, std::string_view s, size_t i) {
  bool has_single = false;
  const size_t k = plain_string_end(s, i + 1, &has_single);
  if (k == std::string_view::npos) return k;
  // A '"' inside would need a backslash in JSON: the body has none, so no quote is escaped.
  const std::string_view body = s.substr(i + 1, k - i - 1);
  const char quote = has_single ? '"' : '\'';
  w.put(quote);
  w.put(body);
  w.put(quote);
  return k + 1;
}

// A JSON string at s[i] as Python's repr writes it; returns the position after it, or npos with
// `*why` set.
size_t write_string(Writer& w, std::string_view s, size_t i, std::string& scratch,
                    const char** why) {
  const size_t simple = write_simple_string(w, s, i);
  if (simple != std::string_view::npos) return simple;
  const size_t end = string_end(s, i);
  if (end == std::string_view::npos) {
    *why = "unterminated string";
    return end;
  }
  scratch.clear();
  if (!append_json_string_literal(scratch, s.substr(i, end - i))) {
    *why = "invalid string escape";
    return std::string_view::npos;
  }
  w.put_keeping_room(scratch, s.size() - end);
  return end;
}

// The float `token` as Python prints it (written to `scratch` first: up to 25 characters from as
// few as 3), keeping room for the `rest` bytes of input after it.
void put_float(Writer& w, std::string_view token, size_t rest, std::string& scratch) {
  scratch.clear();
  append_float(scratch, parse_double(token));
  w.put_keeping_room(scratch, rest);
}

// A word (true, false, null, NaN, Infinity, -Infinity) at s[i] as Python prints it (no longer
// than the word); returns the position after it, or npos when there is none.
size_t write_word(Writer& w, std::string_view s, size_t i) {
  static constexpr std::pair<std::string_view, std::string_view> kWords[] = {
      {"true", "True"}, {"false", "False"},  {"null", "None"},
      {"NaN", "nan"},   {"Infinity", "inf"}, {"-Infinity", "-inf"},
  };
  for (const auto& [json_word, python_word] : kWords) {
    if (starts_with_at(s, i, json_word)) {
      w.put(python_word);
      return i + json_word.size();
    }
  }
  return std::string_view::npos;
}

// A number or a word (true, false, null, NaN, Infinity, -Infinity) at s[i], as Python prints it;
// returns the position after it, or npos when there is none.
size_t write_scalar(Writer& w, std::string_view s, size_t i, std::string& scratch) {
  const char c = s[i];
  // Numbers first (most values of IOInfo lists are): no word starts with a digit, and only
  // -Infinity with a '-'.
  const bool number = (c >= '0' && c <= '9') || (c == '-' && !starts_with_at(s, i, "-I"));
  if (!number) return write_word(w, s, i);
  bool is_int = true;
  const size_t end = number_end(s, i, &is_int);
  if (end == i) return std::string_view::npos;
  std::string_view token = s.substr(i, end - i);
  if (!is_int) {
    put_float(w, token, s.size() - end, scratch);
  } else if (token.size() == 2 && token[0] == '-' && token[1] == '0') {
    w.put('0');  // Python ints print as written; "-0" is 0
  } else {
    w.put(token);
  }
  return end;
}

// The common case of IOInfo lists in one pass with no token states: a minified array (no
// whitespace) of arrays, numbers, true, false, null and strings of printable ASCII without
// backslashes, as PyTorch writes shapes, types, tensor tuples and scalar arguments. Writes its
// repr and returns true, or returns false at anything else (objects, escapes, NaN and Infinity, a
// leading zero, whitespace, malformed text), the caller then rewinding `w` and leaving the value
// to rewrite_value, whose output it is otherwise.
bool rewrite_plain_array(Writer& w, std::string_view s) {
  // A list ends with its ']': no run of digits or letters reads past it (no bounds to check).
  if (s.size() < 2 || s[0] != '[' || s.back() != ']') return false;
  size_t depth = 0;
  enum { kValue, kValueOrClose, kCommaOrClose } expect = kValue;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '[') {
      if (expect == kCommaOrClose) return false;
      w.put('[');
      ++i;
      ++depth;
      expect = kValueOrClose;
    } else if (c == ']') {
      if (expect == kValue) return false;
      w.put(']');
      ++i;
      expect = kCommaOrClose;
      if (--depth == 0) break;
    } else if (c == ',') {
      if (expect != kCommaOrClose) return false;
      w.put(", ");
      ++i;
      expect = kValue;
    } else if (c == '"') {
      if (expect == kCommaOrClose) return false;
      i = write_simple_string(w, s, i);
      if (i == std::string_view::npos) return false;
      expect = kCommaOrClose;
    } else if ((c >= '0' && c <= '9') || c == '-') {
      if (expect == kCommaOrClose) return false;
      // As write_scalar (an integer as written, "-0" as 0, a float through put_float), its digits
      // scanned without write_scalar's bounds checks: the list's ']' ends them.
      size_t k = c == '-' ? i + 1 : i;
      auto digit = [&](size_t at) { return s[at] >= '0' && s[at] <= '9'; };
      // "-" alone and "-Infinity" are left to rewrite_value, as a leading zero (an error).
      if (!digit(k) || (s[k] == '0' && digit(k + 1))) return false;
      while (digit(k)) ++k;
      if (k < s.size() && (s[k] == '.' || s[k] == 'e' || s[k] == 'E')) {
        bool is_int = true;
        k = number_end(s, i, &is_int);
        if (k == i) return false;  // "1." or "1e": an error
        std::string scratch;       // short: no allocation
        put_float(w, s.substr(i, k - i), s.size() - k, scratch);
      } else if (k == i + 2 && c == '-' && s[i + 1] == '0') {
        w.put('0');
      } else {
        w.put(s.substr(i, k - i));
      }
      i = k;
      expect = kCommaOrClose;
    } else if (c == 't' || c == 'f' || c == 'n') {
      if (expect == kCommaOrClose) return false;
      i = write_word(w, s, i);
      if (i == std::string_view::npos) return false;
      expect = kCommaOrClose;
    } else {
      return false;
    }
  }
  return depth == 0 && i == s.size();
}

// An iterative scanner: the output is a token-by-token rewrite of the input, so only the container
// kinds need a stack (no recursion, whatever the nesting depth).
Status rewrite_value(std::string& out, size_t& size, std::string_view s) {
  enum class Expect { kValue, kValueOrClose, kKeyOrClose, kKey, kColon, kCommaOrClose, kDone };
  ContainerStack stack;
  Expect expect = Expect::kValue;
  Writer w(out, size, s.size());
  std::string scratch;  // a float's or a decoded string's repr
  auto after_value = [&] { expect = stack.empty() ? Expect::kDone : Expect::kCommaOrClose; };
  auto error = [&](size_t at, std::string_view what) {
    return Status::errorf("byte {} of the value: {}", at, what);
  };
  size_t i = skip_ws(s, 0);
  while (i < s.size()) {
    char c = s[i];
    const bool want_value = expect == Expect::kValue || expect == Expect::kValueOrClose;
    switch (c) {
      case '[':
      case '{':
        if (!want_value) return error(i, "unexpected container");
        w.put(c);
        stack.push(c);
        expect = c == '[' ? Expect::kValueOrClose : Expect::kKeyOrClose;
        ++i;
        break;
      case ']':
      case '}': {
        char open = c == ']' ? '[' : '{';
        bool empty_ok = (c == ']' && expect == Expect::kValueOrClose) ||
                        (c == '}' && expect == Expect::kKeyOrClose);
        if (stack.empty() || stack.back() != open || !(empty_ok || expect == Expect::kCommaOrClose))
          return error(i, "unexpected closing bracket");
        w.put(c);
        stack.pop();
        after_value();
        ++i;
        break;
      }
      case ',':
        if (expect != Expect::kCommaOrClose) return error(i, "unexpected ','");
        w.put(", ");
        expect = stack.back() == '[' ? Expect::kValue : Expect::kKey;
        ++i;
        break;
      case ':':
        if (expect != Expect::kColon) return error(i, "unexpected ':'");
        w.put(": ");
        expect = Expect::kValue;
        ++i;
        break;
      case '"': {
        bool is_key = expect == Expect::kKey || expect == Expect::kKeyOrClose;
        if (!is_key && !want_value) return error(i, "unexpected string");
        const char* why = nullptr;
        const size_t end = write_string(w, s, i, scratch, &why);
        if (end == std::string_view::npos) return error(i, why);
        i = end;
        if (is_key) {
          expect = Expect::kColon;
        } else {
          after_value();
        }
        break;
      }
      default: {
        if (!want_value) return error(i, "unexpected value");
        const size_t end = write_scalar(w, s, i, scratch);
        if (end == std::string_view::npos) return error(i, "invalid value");
        i = end;
        after_value();
        break;
      }
    }
    i = skip_ws(s, i);
  }
  if (expect != Expect::kDone) return error(s.size(), "unexpected end of the value");
  return Status();
}

}  // namespace

Status write_json_value(std::string& out, size_t& size, std::string_view s) {
  // An empty list, as most outputs lists are: no scan.
  if (s.size() == 2 && s[0] == '[' && s[1] == ']') {
    if (out.size() < size + 2) out.resize(size + 2);
    out[size] = '[';
    out[size + 1] = ']';
    size += 2;
    return Status();
  }
  {
    Writer w(out, size, s.size());  // room for twice the input: a plain array's repr fits
    if (rewrite_plain_array(w, s)) return Status();
    w.rewind();
  }
  return rewrite_value(out, size, s);
}

Status append_json_value(std::string& out, std::string_view s) {
  size_t size = out.size();
  Status status = write_json_value(out, size, s);
  out.resize(size);
  return status;
}

}  // namespace chakraflow::pyrepr
