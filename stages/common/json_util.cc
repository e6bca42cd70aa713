#include "stages/common/json_util.h"

#include "stages/common/ordered_batches.h"

#if defined(__AVX2__) && defined(__PCLMUL__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

namespace chakraflow::json {
namespace {

bool hex4(std::string_view s, size_t i, uint32_t* v) {
  if (i + 4 > s.size()) return false;
  uint32_t r = 0;
  for (size_t k = 0; k < 4; ++k) {
    char c = s[i + k];
    r <<= 4;
    if (c >= '0' && c <= '9')
      r |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      r |= static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      r |= static_cast<uint32_t>(c - 'A' + 10);
    else
      return false;
  }
  *v = r;
  return true;
}

}  // namespace

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string_view string_literal(const char* after_quote, const char* limit) {
  const char* p = after_quote;
  while (p < limit) {
    const void* q = std::memchr(p, '"', static_cast<size_t>(limit - p));
    if (q == nullptr) return {};
    const char* quote = static_cast<const char*>(q);
    // The quote is escaped when preceded by an odd number of backslashes.
    size_t backslashes = 0;
    for (const char* b = quote; b > after_quote && b[-1] == '\\'; --b) ++backslashes;
    if (backslashes % 2 == 0) {
      return std::string_view(after_quote - 1, static_cast<size_t>(quote + 1 - (after_quote - 1)));
    }
    p = quote + 1;
  }
  return {};
}

std::optional<std::string_view> unescape_escaped(std::string_view body,
                                                 std::deque<std::string>& arena) {
  std::string out;
  out.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (++i >= body.size()) return std::nullopt;
    switch (body[i]) {
      case '"':
        out.push_back('"');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '/':
        out.push_back('/');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        uint32_t cp;
        if (!hex4(body, i + 1, &cp)) return std::nullopt;
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 < body.size() + 0 && body[i + 1] == '\\' &&
            body[i + 2] == 'u') {
          uint32_t lo;
          if (hex4(body, i + 3, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
          }
        }
        append_utf8(out, cp);
        break;
      }
      default:
        return std::nullopt;
    }
  }
  arena.push_back(std::move(out));
  return std::string_view(arena.back());
}

void append_escaped(std::string& out, std::string_view s) {
  out.push_back('"');
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default: {
        static const char* kHex = "0123456789abcdef";
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
      }
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

namespace {

bool is_json_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// The minifier's state between blocks: inside a string, and whether the next byte is escaped.
// As simdjson's minify (which the writers used before, and whose output they keep): a backslash
// escapes the next byte inside strings and outside them alike, and an escaped byte is no quote;
// whitespace outside strings is dropped, escaped or not.
struct MinifyState {
  bool in_string = false;
  bool escaped = false;
};

// Copies [p, end) to `o` without the whitespace outside strings, one byte at a time; returns the
// end of what was written.
char* minify_scalar(const char* p, const char* end, char* o, MinifyState& st) {
  for (; p < end; ++p) {
    const char c = *p;
    const bool escaped = st.escaped;
    st.escaped = !escaped && c == '\\';
    if (!escaped && c == '"') st.in_string = !st.in_string;
    if (st.in_string || !is_json_space(c)) *o++ = c;
  }
  return o;
}

#if defined(__AVX2__) && defined(__PCLMUL__)
// For each 8-bit keep mask, the pshufb indices that gather the kept bytes of 8 to the front.
struct CompactTable {
  alignas(16) uint8_t index[256][16];
  CompactTable() {
    for (int m = 0; m < 256; ++m) {
      int k = 0;
      for (int b = 0; b < 8; ++b) {
        if (m & (1 << b)) index[m][k++] = static_cast<uint8_t>(b);
      }
      for (; k < 16; ++k) index[m][k] = 0x80;  // zero
    }
  }
};
const CompactTable kCompact;

uint64_t byte_mask(__m256i lo, __m256i hi, char c) {
  const __m256i v = _mm256_set1_epi8(c);
  const uint32_t a = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, v)));
  const uint32_t b = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, v)));
  return a | (uint64_t{b} << 32);
}

// The bytes of a 64-byte block escaped by a backslash before them (in it, or carried in
// `st.escaped` from the last one), and in `st.escaped` whether the next block's first byte is.
// Each run of backslashes escapes the byte after it when its length is odd.
uint64_t escaped_bytes(uint64_t backslashes, MinifyState& st) {
  uint64_t escaped = 0;
  uint64_t b = backslashes;
  if (st.escaped) {  // byte 0 is escaped: a backslash there escapes nothing
    escaped = 1;
    b &= ~uint64_t{1};
  }
  st.escaped = false;
  while (b != 0) {
    const int start = __builtin_ctzll(b);
    const uint64_t from = b >> start;
    const int len = from == (~uint64_t{0} >> start) ? 64 - start : __builtin_ctzll(~from);
    const int end = start + len;
    if (len & 1) {
      if (end < 64) {
        escaped |= uint64_t{1} << end;
      } else {
        st.escaped = true;
      }
    }
    if (end >= 64) break;
    b &= ~uint64_t{0} << end;
  }
  return escaped;
}

// 64 bytes at a time: a block's strings are found by the prefix XOR of its unescaped quotes (a
// carry-less multiply by all ones) and the whitespace outside them dropped, 8 bytes per shuffle;
// the last bytes one at a time. `o` may be written up to 16 bytes past what is kept.
char* minify_simd(const char* p, const char* end, char* o, MinifyState& st) {
  for (; end - p >= 64; p += 64) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
    uint64_t quotes = byte_mask(lo, hi, '"');
    const uint64_t backslashes = byte_mask(lo, hi, '\\');
    if (backslashes != 0 || st.escaped) quotes &= ~escaped_bytes(backslashes, st);
    const __m128i q = _mm_set_epi64x(0, static_cast<long long>(quotes));
    uint64_t inside = static_cast<uint64_t>(
        _mm_cvtsi128_si64(_mm_clmulepi64_si128(q, _mm_set1_epi8(static_cast<char>(0xFF)), 0)));
    if (st.in_string) inside = ~inside;
    st.in_string = (inside >> 63) != 0;
    const uint64_t space = byte_mask(lo, hi, ' ') | byte_mask(lo, hi, '\n') |
                           byte_mask(lo, hi, '\r') | byte_mask(lo, hi, '\t');
    const uint64_t keep = ~(space & ~inside);
    if (keep == ~uint64_t{0}) {
      std::memcpy(o, p, 64);
      o += 64;
      continue;
    }
    for (int k = 0; k < 8; ++k) {
      const auto m = static_cast<uint8_t>(keep >> (8 * k));
      const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * k));
      const __m128i idx = _mm_load_si128(reinterpret_cast<const __m128i*>(kCompact.index[m]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o), _mm_shuffle_epi8(bytes, idx));
      o += __builtin_popcount(m);
    }
  }
  return minify_scalar(p, end, o, st);
}

// The same with AVX-512 (VBMI2's byte compress keeps a block's bytes in one instruction, where
// the AVX2 loop above shuffles 8 bytes at a time): chosen at run time where the CPU has it, the
// build targeting x86-64-v3. `o` may be written up to 64 bytes past what is kept.
#if defined(__GNUC__) && defined(__x86_64__)
#define CHAKRAFLOW_MINIFY_AVX512 1
__attribute__((target("avx512f,avx512bw,avx512vbmi2,pclmul"))) char* minify_avx512(
    const char* p, const char* end, char* o, MinifyState& st) {
  const __m512i quote = _mm512_set1_epi8('"');
  const __m512i backslash = _mm512_set1_epi8('\\');
  const __m512i space = _mm512_set1_epi8(' ');
  const __m512i newline = _mm512_set1_epi8('\n');
  const __m512i cr = _mm512_set1_epi8('\r');
  const __m512i tab = _mm512_set1_epi8('\t');
  const __m128i ones = _mm_set1_epi8(static_cast<char>(0xFF));
  // The last block (under 64 bytes) is loaded under a mask, its missing bytes as zeros: no byte
  // at a time, which the writers' short pieces (a node's text between its spliced values) would
  // spend most of their time in.
  while (p < end) {
    const auto left = static_cast<size_t>(end - p);
    const uint64_t valid = left >= 64 ? ~uint64_t{0} : (uint64_t{1} << left) - 1;
    const __m512i v = _mm512_maskz_loadu_epi8(valid, p);
    uint64_t quotes = _mm512_cmpeq_epi8_mask(v, quote);
    const uint64_t backslashes = _mm512_cmpeq_epi8_mask(v, backslash);
    if (backslashes != 0 || st.escaped) quotes &= ~escaped_bytes(backslashes, st);
    const __m128i q = _mm_set_epi64x(0, static_cast<long long>(quotes));
    uint64_t inside = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_clmulepi64_si128(q, ones, 0)));
    if (st.in_string) inside = ~inside;
    const uint64_t blank = _mm512_cmpeq_epi8_mask(v, space) | _mm512_cmpeq_epi8_mask(v, newline) |
                           _mm512_cmpeq_epi8_mask(v, cr) | _mm512_cmpeq_epi8_mask(v, tab);
    const uint64_t keep = ~(blank & ~inside) & valid;
    // Compressed in a register and stored whole: a compressing store to memory is slow on some
    // CPUs that have it.
    _mm512_storeu_si512(o, _mm512_maskz_compress_epi8(keep, v));
    o += __builtin_popcountll(keep);
    // The bytes past the text read as zeros: no quote there flips `inside`, and an escape past
    // the last byte is of no use to anyone.
    st.in_string = (inside >> 63) != 0;
    if (left <= 64) break;
    p += 64;
  }
  return o;
}

bool has_avx512_minify() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vbmi2");
  return has;
}
#endif
#endif

}  // namespace

bool has_minify_kernel(MinifyKernel kernel) {
  switch (kernel) {
    case MinifyKernel::kBest:
    case MinifyKernel::kScalar:
      return true;
    case MinifyKernel::kAvx2:
#if defined(__AVX2__) && defined(__PCLMUL__)
      return true;
#else
      return false;
#endif
    case MinifyKernel::kAvx512:
#ifdef CHAKRAFLOW_MINIFY_AVX512
      return has_avx512_minify();
#else
      return false;
#endif
  }
  return false;
}

bool append_minified(std::string& out, std::string_view s, MinifyKernel kernel) {
  if (!has_minify_kernel(kernel)) return false;
  if (kernel == MinifyKernel::kBest) {
#ifdef CHAKRAFLOW_MINIFY_AVX512
    kernel = has_avx512_minify() ? MinifyKernel::kAvx512 : MinifyKernel::kAvx2;
#elif defined(__AVX2__) && defined(__PCLMUL__)
    kernel = MinifyKernel::kAvx2;
#else
    kernel = MinifyKernel::kScalar;
#endif
  }
  const size_t old = out.size();
  out.resize(old + s.size() + 64);  // room for the block stores past the end
  const char* from = s.data();
  char* to = out.data() + old;
  MinifyState st;
  char* end = nullptr;
  switch (kernel) {
#ifdef CHAKRAFLOW_MINIFY_AVX512
    case MinifyKernel::kAvx512:
      end = minify_avx512(from, from + s.size(), to, st);
      break;
#endif
#if defined(__AVX2__) && defined(__PCLMUL__)
    case MinifyKernel::kAvx2:
      end = minify_simd(from, from + s.size(), to, st);
      break;
#endif
    default:
      end = minify_scalar(from, from + s.size(), to, st);
  }
  if (st.in_string) {  // an unterminated string: not JSON, kept as it is (as simdjson did)
    out.resize(old);
    out.append(s);
    return true;
  }
  out.resize(static_cast<size_t>(end - out.data()));
  return true;
}

void append_minified(std::string& out, std::string_view s) {
  append_minified(out, s, MinifyKernel::kBest);
}

void append_uint(std::string& out, uint64_t v) {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof(tmp), v);
  out.append(tmp, static_cast<size_t>(r.ptr - tmp));
}

void append_int(std::string& out, int64_t v) {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof(tmp), v);
  out.append(tmp, static_cast<size_t>(r.ptr - tmp));
}

simdjson::error_code raw_value(od::value& v, std::string_view* out) {
  od::json_type type;
  auto err = v.type().get(type);
  if (err) return err;
  if (type == od::json_type::object) {
    od::object o;
    if ((err = v.get_object().get(o))) return err;
    return o.raw_json().get(*out);
  }
  if (type == od::json_type::array) {
    od::array a;
    if ((err = v.get_array().get(a))) return err;
    return a.raw_json().get(*out);
  }
  *out = token(v);
  // Consume a string: the parser skips a string left unread as if it were a key when a ':'
  // follows, so `"a": "b": 1` would pass unnoticed. (Other scalars are skipped safely.)
  if (type == od::json_type::string) {
    od::raw_json_string consumed;
    if ((err = v.get_raw_json_string().get(consumed))) return err;
  }
  return simdjson::SUCCESS;
}

bool parse_micros_as_ns(std::string_view token, TimeNs* ns, bool* fractional, bool* is_float) {
  *fractional = false;
  // A JSON float has a '.' or an exponent: after the integer digits, whatever follows.
  auto float_after_digits = [&](size_t k) {
    while (k < token.size() && token[k] >= '0' && token[k] <= '9') ++k;
    return k < token.size();
  };
  if (token.empty()) {
    if (is_float != nullptr) *is_float = false;
    return false;
  }
  // Fast path: [-]digits[.digits] with at most 18 integer digits.
  size_t i = 0;
  bool negative = false;
  if (token[0] == '-') {
    negative = true;
    i = 1;
  }
  size_t int_begin = i;
  uint64_t digits_value = 0;
  i += read_digits(token, i, &digits_value);
  if (i == int_begin || i - int_begin > 18) {
    if (is_float != nullptr) *is_float = float_after_digits(i);
    goto slow;
  }
  // read_digits stopped at the first byte that is not a digit.
  if (is_float != nullptr) *is_float = i < token.size();
  {
    const auto whole = static_cast<int64_t>(digits_value);
    int64_t frac_ns = 0;
    if (i < token.size() && token[i] == '.') {
      ++i;
      int digits = 0;
      bool extra_nonzero = false;
      int next_digit = -1;
      size_t frac_begin = i;
      while (i < token.size() && token[i] >= '0' && token[i] <= '9') {
        if (digits < 3) {
          frac_ns = frac_ns * 10 + (token[i] - '0');
          ++digits;
        } else {
          if (next_digit < 0) next_digit = token[i] - '0';
          if (token[i] != '0') extra_nonzero = true;
        }
        ++i;
      }
      if (i == frac_begin) goto slow;
      while (digits < 3) {
        frac_ns *= 10;
        ++digits;
      }
      if (next_digit >= 5) frac_ns += 1;  // round half up on the first dropped digit
      (void)extra_nonzero;
    }
    if (i != token.size()) goto slow;
    if (whole > (INT64_MAX - 999) / 1000) return false;  // beyond int64 nanoseconds
    int64_t total = whole * 1000 + frac_ns;
    *fractional = (total % 1000) != 0;
    *ns = negative ? -total : total;
    return true;
  }
slow : {
  double d = 0;
  auto res = std::from_chars(token.data(), token.data() + token.size(), d);
  if (res.ec != std::errc() || res.ptr != token.data() + token.size() || !std::isfinite(d)) {
    return false;
  }
  double scaled = std::round(d * 1000.0);
  if (std::fabs(scaled) > 9.2e18) return false;
  *ns = static_cast<TimeNs>(scaled);
  *fractional = (*ns % 1000) != 0;
  return true;
}
}

double micros_value(TimeNs ns) {
  constexpr TimeNs kExact = TimeNs{1} << 53;
  constexpr TimeNs kLimit = TimeNs{1} << 62;  // the loaders' bound on times
  if (ns > -kExact && ns < kExact) return static_cast<double>(ns) / 1000.0;
  if (ns > -kLimit && ns < kLimit) {
    return static_cast<double>(ns / 1000) + static_cast<double>(ns % 1000) / 1000.0;
  }
  std::string text;  // beyond the bound, parse the text
  append_micros(text, ns);
  double v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

void append_micros(std::string& out, TimeNs ns) {
  char buf[48];
  bool negative = ns < 0;
  uint64_t mag = negative ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  uint64_t whole = mag / 1000;
  uint64_t frac = mag % 1000;
  char* p = buf;
  if (negative) *p++ = '-';
  p = std::to_chars(p, buf + sizeof(buf), whole).ptr;
  if (frac != 0) {
    // ".ddd" stored at once, then cut after its last nonzero digit (a writer makes three of these
    // per node).
    const auto d0 = static_cast<uint32_t>(frac / 100);
    const auto d1 = static_cast<uint32_t>(frac / 10 % 10);
    const auto d2 = static_cast<uint32_t>(frac % 10);
    const char text[4] = {'.', static_cast<char>('0' + d0), static_cast<char>('0' + d1),
                          static_cast<char>('0' + d2)};
    std::memcpy(p, text, 4);
    p += d2 != 0 ? 4 : d1 != 0 ? 3 : 2;
  }
  out.append(buf, static_cast<size_t>(p - buf));
}

void append_python_float(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "nan";
    return;
  }
  if (std::isinf(v)) {
    out += v < 0 ? "-inf" : "inf";
    return;
  }
  if (v == 0) {
    out += std::signbit(v) ? "-0.0" : "0.0";
    return;
  }
  // Shortest round-trip digits in scientific form: [-]d[.ddd]e(+|-)XX.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(r.ptr - buf));
  bool negative = sci[0] == '-';
  if (negative) sci.remove_prefix(1);
  size_t e_pos = sci.find('e');
  std::string_view mantissa = sci.substr(0, e_pos);
  int exp10 = 0;
  std::from_chars(sci.data() + e_pos + 1 + (sci[e_pos + 1] == '+' ? 1 : 0), sci.data() + sci.size(),
                  exp10);
  char digits[32];
  size_t n = 0;
  for (char c : mantissa) {
    if (c != '.') digits[n++] = c;
  }
  if (negative) out.push_back('-');
  // CPython's float_repr_style 'short': exponent form when the decimal point position
  // (decpt = exp10 + 1) is <= -4 or > 16.
  int decpt = exp10 + 1;
  if (decpt <= -4 || decpt > 16) {
    out.push_back(digits[0]);
    if (n > 1) {
      out.push_back('.');
      out.append(digits + 1, n - 1);
    }
    out.push_back('e');
    out.push_back(exp10 < 0 ? '-' : '+');
    int mag = exp10 < 0 ? -exp10 : exp10;
    if (mag < 10) out.push_back('0');
    char eb[8];
    auto er = std::to_chars(eb, eb + sizeof(eb), mag);
    out.append(eb, static_cast<size_t>(er.ptr - eb));
    return;
  }
  if (decpt <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-decpt), '0');
    out.append(digits, n);
  } else if (static_cast<size_t>(decpt) >= n) {
    out.append(digits, n);
    out.append(static_cast<size_t>(decpt) - n, '0');
    out += ".0";
  } else {
    out.append(digits, static_cast<size_t>(decpt));
    out.push_back('.');
    out.append(digits + decpt, n - static_cast<size_t>(decpt));
  }
}

void append_python_number(std::string& out, double v, bool is_float) {
  if (is_float) {
    append_python_float(out, v);
    return;
  }
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), static_cast<int64_t>(v));
  out.append(buf, static_cast<size_t>(r.ptr - buf));
}

uint64_t repair_utf8(std::string& text) {
  return repair_utf8(text.data(), text.size());
}

uint64_t repair_utf8(char* text, size_t n) {
  uint64_t replaced = 0;
  auto* b = reinterpret_cast<unsigned char*>(text);
  size_t i = 0;
  while (i < n) {
    unsigned char c = b[i];
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) ok = (b[i + k] & 0xC0) == 0x80;
    if (ok && len > 1) {
      uint32_t cp = c & (0xFF >> (len + 1));
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (b[i + k] & 0x3F);
      // Overlong forms, surrogates and values past U+10FFFF are invalid too.
      static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= kMin[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (!ok) {
      b[i] = '?';
      ++replaced;
      ++i;
      continue;
    }
    i += len;
  }
  return replaced;
}

namespace {

// Parses `data` (readable up to `capacity`); on invalid UTF-8, repairs the bytes that
// `writable()` returns in place, counts them, and parses again.
template <typename Writable>
simdjson::error_code iterate_repairing(od::parser& parser, const char* data, size_t size,
                                       size_t capacity, Writable writable, od::document* doc,
                                       uint64_t* repaired) {
  auto err = parser.iterate(simdjson::padded_string_view(data, size, capacity)).get(*doc);
  if (err == simdjson::UTF8_ERROR) {
    // Real traces carry stray bytes in names (HTA #324): repair them in place, count them, go on.
    *repaired += repair_utf8(writable(), size);
    err = parser.iterate(simdjson::padded_string_view(data, size, capacity)).get(*doc);
  }
  return err;
}

}  // namespace

simdjson::error_code iterate_document(od::parser& parser, std::string& text, od::document* doc,
                                      uint64_t* repaired) {
  return iterate_repairing(
      parser, text.data(), text.size(), text.capacity(), [&text] { return text.data(); }, doc,
      repaired);
}

simdjson::error_code iterate_document(od::parser& parser, InputText& text, od::document* doc,
                                      uint64_t* repaired) {
  // A mapped file gets private copies of the pages written.
  return iterate_repairing(
      parser, text.data(), text.size(), text.capacity(), [&text] { return text.mutable_data(); },
      doc, repaired);
}

uint64_t locate_document_error(std::string_view text, simdjson::error_code err) {
  if (err == simdjson::UNCLOSED_STRING) return text.size();
  if (err != simdjson::UNESCAPED_CHARS) return 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (!in_string) {
      in_string = c == '"';
    } else if (c == '\\') {
      ++i;  // the escaped character
    } else if (c == '"') {
      in_string = false;
    } else if (c < 0x20) {
      return i;
    }
  }
  return 0;
}

uint64_t unclosed_depth(std::string_view text) {
  int64_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return static_cast<uint64_t>(depth);
}

Status explain_truncation(Status error, std::string_view path, std::string_view text) {
  if (error.ok() || unclosed_depth(text) == 0) return error;
  constexpr std::string_view kEnds = "the input ends inside an unclosed object or array";
  std::string_view why = error.message();
  if (why.find(kEnds) != std::string_view::npos) return error;
  if (why.substr(0, path.size()) == path && why.substr(path.size(), 2) == ": ") {
    why.remove_prefix(path.size() + 2);
  }
  return Status::errorf("{}: byte {}: {}: the file is truncated (reading stopped at: {})", path,
                        text.size(), kEnds, why);
}

uint64_t offset_in(std::string_view text, const char* p) {
  if (p == nullptr || p < text.data() || p > text.data() + text.size()) return text.size();
  return static_cast<uint64_t>(p - text.data());
}

uint64_t current_offset(od::document& doc, std::string_view text) {
  const char* p = nullptr;
  if (doc.current_location().get(p)) return text.size();
  return offset_in(text, p);
}

bool get_int64_slow(od::value& v, int64_t* out) {
  od::number_type nt;
  if (v.get_number_type().get(nt)) return false;
  if (nt == od::number_type::signed_integer) return !v.get_int64().get(*out);
  if (nt == od::number_type::unsigned_integer) {
    uint64_t u;
    if (v.get_uint64().get(u) || u > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  double d;
  if (v.get_double().get(d) || !std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.2e18) {
    return false;
  }
  *out = static_cast<int64_t>(d);
  return true;
}

// from_chars alone also takes "00", ".5", "1." and "inf", which the loader's parser rejects.
bool is_number_token(std::string_view token) {
  size_t i = 0;
  auto digits = [&] {
    const size_t start = i;
    while (i < token.size() && token[i] >= '0' && token[i] <= '9') ++i;
    return i - start;
  };
  if (i < token.size() && token[i] == '-') ++i;
  if (i < token.size() && token[i] == '0') {
    ++i;
  } else if (digits() == 0) {
    return false;
  }
  if (i < token.size() && token[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  }
  if (i < token.size() && (token[i] == 'e' || token[i] == 'E')) {
    ++i;
    if (i < token.size() && (token[i] == '+' || token[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == token.size();
}

bool parse_int_token(std::string_view token, int64_t* out) {
  if (small_int_token(token, out)) return true;  // nearly every one
  if (!is_number_token(token)) return false;
  auto r = std::from_chars(token.data(), token.data() + token.size(), *out);
  if (r.ec == std::errc() && r.ptr == token.data() + token.size()) return true;
  double d = 0;
  auto rd = std::from_chars(token.data(), token.data() + token.size(), d);
  if (rd.ec != std::errc() || rd.ptr != token.data() + token.size() || !std::isfinite(d) ||
      d != std::floor(d) || std::fabs(d) > 9.2e18) {
    return false;
  }
  *out = static_cast<int64_t>(d);
  return true;
}

bool parse_uint_token(std::string_view token, uint64_t* out) {
  if (!is_number_token(token)) return false;
  auto r = std::from_chars(token.data(), token.data() + token.size(), *out);
  if (r.ec == std::errc() && r.ptr == token.data() + token.size()) return true;
  int64_t i = 0;
  if (!parse_int_token(token, &i) || i < 0) return false;
  *out = static_cast<uint64_t>(i);
  return true;
}

bool get_uint64_slow(od::value& v, uint64_t* out) {
  od::number_type nt;
  if (v.get_number_type().get(nt)) return false;
  if (nt == od::number_type::unsigned_integer) return !v.get_uint64().get(*out);
  if (nt == od::number_type::signed_integer) {
    int64_t i;
    if (v.get_int64().get(i) || i < 0) return false;
    *out = static_cast<uint64_t>(i);
    return true;
  }
  double d;
  if (v.get_double().get(d) || !std::isfinite(d) || d != std::floor(d) || d < 0 || d > 1.8e19) {
    return false;
  }
  *out = static_cast<uint64_t>(d);
  return true;
}

std::string_view builtin_kernel() {
#define CHAKRAFLOW_STR2(x) #x
#define CHAKRAFLOW_STR(x) CHAKRAFLOW_STR2(x)
  return CHAKRAFLOW_STR(SIMDJSON_BUILTIN_IMPLEMENTATION);
#undef CHAKRAFLOW_STR
#undef CHAKRAFLOW_STR2
}

}  // namespace chakraflow::json

namespace chakraflow::json {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// Bytes patched for one parse, restored (last first) when it goes out of scope.
class Patches {
 public:
  Patches() = default;
  Patches(const Patches&) = delete;
  Patches& operator=(const Patches&) = delete;
  ~Patches() { restore(); }
  void restore() {
    while (n_ > 0) {
      --n_;
      *at_[n_] = old_[n_];
    }
  }
  void set(char* at, char c) {
    at_[n_] = at;
    old_[n_] = *at;
    *at = c;
    ++n_;
  }

 private:
  char* at_[8] = {};
  char old_[8] = {};
  size_t n_ = 0;
};

constexpr size_t kNone = static_cast<size_t>(-1);

// Looks back from `end` for the last `c` in [begin, end) that `found` accepts: found(position)
// returns the result, or kNone to look further back. kNone when there is none.
template <typename Found>
size_t find_last(const char* data, size_t begin, size_t end, char c, Found found) {
  size_t limit = end;
  while (limit > begin) {
    const void* hit = ::memrchr(data + begin, c, limit - begin);
    if (hit == nullptr) return kNone;
    limit = static_cast<size_t>(static_cast<const char*>(hit) - data);
    if (const size_t result = found(limit); result != kNone) return result;
  }
  return kNone;
}

// The comma of the last `}` , (whitespace between) whose comma lies in [begin, end), or kNone.
size_t find_cut(const char* data, size_t begin, size_t end) {
  return find_last(data, begin, end, '}', [&](size_t brace) {
    size_t j = brace + 1;
    while (j < end && is_space(data[j])) ++j;
    return j < end && data[j] == ',' ? j : kNone;
  });
}

// The last quote in [begin, end) that no backslash escapes, or kNone. `begin` is outside strings.
size_t last_quote(const char* data, size_t begin, size_t end) {
  return find_last(data, begin, end, '"', [&](size_t quote) {
    size_t backslashes = 0;
    while (quote - backslashes > begin && data[quote - backslashes - 1] == '\\') ++backslashes;
    return backslashes % 2 == 0 ? quote : kNone;
  });
}

// Parses [begin, end) of `data`. The byte at `end` must not be one that closes or continues a
// container: the iterator reads it after the last token when a container is cut short (in a padded
// document, a padding zero). Windows patch it to '\0'.
simdjson::error_code iterate_at(od::parser& parser, char* data, size_t capacity, size_t begin,
                                size_t end, od::document* doc) {
  return parser.iterate(simdjson::padded_string_view(data + begin, end - begin, capacity - begin))
      .get(*doc);
}

enum class ElementsRead { kEnded, kStopped, kMalformed };

// Reads the elements of `elements` until its end or the first one that does not parse or that the
// reader refuses. *resume: where the first element not read starts (its comma skipped), or the
// array's `]`. kMalformed: an element read is followed by neither a comma nor a `]`.
ElementsRead read_elements(od::document& doc, od::array elements, const char* first,
                           ArrayWindowReader& reader, const char** resume) {
  *resume = first;
  for (auto element : elements) {
    od::value value;
    if (std::move(element).get(value) != simdjson::SUCCESS) return ElementsRead::kStopped;
    const char* start = nullptr;
    if (value.current_location().get(start) != simdjson::SUCCESS) return ElementsRead::kStopped;
    if (!reader.element(doc, value, start)) return ElementsRead::kStopped;
    const char* next = nullptr;
    if (doc.current_location().get(next) != simdjson::SUCCESS) return ElementsRead::kMalformed;
    if (*next == ',') {
      *resume = next + 1;
    } else if (*next == ']') {
      *resume = next;
    } else {
      return ElementsRead::kMalformed;  // read again in a later window, it would be kept twice
    }
  }
  return ElementsRead::kEnded;
}

bool at_document_end(od::document& doc) {
  const char* trailing = nullptr;
  return doc.current_location().get(trailing) != simdjson::SUCCESS;
}

// The root fields up to the array: parses the text up to its `[`, with `]}` patched after it.
bool read_prefix(od::parser& parser, char* data, size_t capacity, size_t key_at, size_t open,
                 ArrayWindowReader& reader) {
  Patches patches;
  patches.set(data + open + 1, ']');
  patches.set(data + open + 2, '}');
  patches.set(data + open + 3, '\0');  // see iterate_at
  od::document doc;
  if (iterate_at(parser, data, capacity, 0, open + 3, &doc) != simdjson::SUCCESS) return false;
  od::object root;
  if (doc.get_object().get(root) != simdjson::SUCCESS) return false;
  bool found = false;
  for (auto field_result : root) {
    od::field field;
    if (std::move(field_result).get(field) != simdjson::SUCCESS || found) return false;
    if (field.key().raw() == data + key_at + 1) {
      od::array elements;
      if (field.value().get_array().get(elements) != simdjson::SUCCESS) return false;
      size_t count = 0;
      if (elements.count_elements().get(count) != simdjson::SUCCESS || count != 0) return false;
      found = true;
    } else if (!reader.root_field(field)) {
      return false;
    }
  }
  return found && at_document_end(doc);
}

// The last window: the rest of the text, read as the object `{"":[` + rest (the five bytes before
// `pos` patched), so that the root fields after the array are read too.
bool read_last_window(od::parser& parser, char* data, size_t size, size_t capacity, size_t pos,
                      ArrayWindowReader& reader) {
  if (pos < 5) return false;
  Patches patches;
  const char kOpen[] = "{\"\":[";
  for (size_t i = 0; i < 5; ++i) patches.set(data + pos - 5 + i, kOpen[i]);
  od::document doc;
  if (iterate_at(parser, data, capacity, pos - 5, size, &doc) != simdjson::SUCCESS) return false;
  od::object root;
  if (doc.get_object().get(root) != simdjson::SUCCESS) return false;
  bool first = true;
  for (auto field_result : root) {
    od::field field;
    if (std::move(field_result).get(field) != simdjson::SUCCESS) return false;
    if (first) {
      first = false;
      od::array elements;
      if (field.value().get_array().get(elements) != simdjson::SUCCESS) return false;
      const char* resume = nullptr;
      if (read_elements(doc, elements, data + pos, reader, &resume) != ElementsRead::kEnded) {
        return false;
      }
    } else if (!reader.root_field(field)) {
      return false;
    }
  }
  return !first && at_document_end(doc);
}

// The first occurrence of the key `key_literal` (at *key_at) followed by an array: the position
// of the array's '[', or kNone.
size_t find_array_open(const char* data, size_t size, std::string_view key_literal,
                       size_t* key_at) {
  const void* hit = ::memmem(data, size, key_literal.data(), key_literal.size());
  if (hit == nullptr) return kNone;
  *key_at = static_cast<size_t>(static_cast<const char*>(hit) - data);
  size_t open = *key_at + key_literal.size();
  while (open < size && is_space(data[open])) ++open;
  if (open >= size || data[open] != ':') return kNone;
  ++open;
  while (open < size && is_space(data[open])) ++open;
  if (open + 3 > size || data[open] != '[') return kNone;
  return open;
}

}  // namespace

namespace {

// The range's last window, [pos, limit): `limit` is the comma after its last element. Every
// element up to it is read, and the array closes at the `]` patched there: true.
bool read_range_end(od::parser& parser, char* data, size_t capacity, size_t pos, size_t limit,
                    ArrayWindowReader& reader) {
  Patches patches;
  patches.set(data + pos - 1, '[');
  patches.set(data + limit, ']');
  patches.set(data + limit + 1, '\0');
  od::document doc;
  if (iterate_at(parser, data, capacity, pos - 1, limit + 1, &doc) != simdjson::SUCCESS) {
    return false;
  }
  od::array elements;
  if (doc.get_array().get(elements) != simdjson::SUCCESS) return false;
  const char* resume = nullptr;
  return read_elements(doc, elements, data + pos, reader, &resume) == ElementsRead::kEnded &&
         at_document_end(doc);
}

// Sizes `parser` once for the largest window read_windows_from asks it to parse: a window of up to
// `window_bytes` and the bytes patched around it, or a last window of up to 1.5 times that. A
// parser given a document larger than any before frees its structural index and string buffer and
// takes new ones, and the windows, cut at element ends, differ by a few bytes: each new largest
// window took new buffers, in fresh pages. A window that must grow past this (an element larger
// than a window) still makes the parser take new ones.
void reserve_for_windows(od::parser& parser, size_t window_bytes) {
  const size_t largest = window_bytes + window_bytes / 2 + 16;
  if (parser.capacity() >= largest || largest > parser.max_capacity()) return;
  // On failure iterate() sizes the parser for each window as before.
  [[maybe_unused]] const simdjson::error_code sized = parser.allocate(largest);
}

// Reads the elements from `pos` (where one starts) in windows of about `window_bytes`. `limit`:
// kNone for the rest of the text (the last window reads the root fields after the array too),
// else the comma that ends the range (its last window ends there). The number of windows read, or
// 0 when the text cannot be read this way.
size_t read_windows_from(od::parser& parser, char* data, size_t size, size_t capacity, size_t pos,
                         size_t limit, size_t window_bytes, ArrayWindowReader& reader) {
  const size_t range_end = limit == kNone ? size : limit;
  size_t windows = 0;  // read before this one
  reserve_for_windows(parser, window_bytes);
  od::document doc;
  for (;;) {
    size_t want = window_bytes;
    for (;;) {  // until this window reads at least one element
      if (pos + want + window_bytes / 2 >= range_end) {
        const bool read = limit == kNone
                              ? read_last_window(parser, data, size, capacity, pos, reader)
                              : read_range_end(parser, data, capacity, pos, limit, reader);
        return read ? windows + 1 : 0;
      }
      size_t end = find_cut(data, pos, pos + want);
      if (end == kNone) end = pos + want;
      Patches patches;
      patches.set(data + pos - 1, '[');
      patches.set(data + end, ']');
      patches.set(data + end + 1, '\0');
      auto err = iterate_at(parser, data, capacity, pos - 1, end + 1, &doc);
      if (err == simdjson::UNCLOSED_STRING) {
        // The window ends inside a string: end it before the string's opening quote instead.
        const size_t quote = last_quote(data, pos, end);
        if (quote == kNone || quote <= pos) {
          want *= 2;
          continue;
        }
        patches.restore();
        end = quote;
        patches.set(data + pos - 1, '[');
        patches.set(data + end, ']');
        patches.set(data + end + 1, '\0');
        err = iterate_at(parser, data, capacity, pos - 1, end + 1, &doc);
      }
      if (err != simdjson::SUCCESS) return 0;  // e.g. invalid UTF-8: the whole parse repairs
      od::array elements;
      if (doc.get_array().get(elements) != simdjson::SUCCESS) return 0;
      const char* resume = nullptr;
      const ElementsRead read = read_elements(doc, elements, data + pos, reader, &resume);
      if (read == ElementsRead::kMalformed) return 0;
      if (read == ElementsRead::kEnded) {
        const size_t resume_at = static_cast<size_t>(resume - data);
        if (!at_document_end(doc)) {
          // The array ended inside the window: the last window reads the root fields after it.
          if (limit != kNone || resume_at >= end || data[resume_at] != ']') return 0;
          patches.restore();
          return read_last_window(parser, data, size, capacity, resume_at, reader) ? windows + 1
                                                                                   : 0;
        }
        // Every element of the window was read and the array closed at the patched `]`: the
        // window ended between two elements.
        patches.restore();
        size_t next = end;
        while (next < range_end && is_space(data[next])) ++next;
        if (next >= range_end || data[next] != ',') return 0;
        pos = next + 1;
        ++windows;
        break;
      }
      const size_t resume_at = static_cast<size_t>(resume - data);  // kStopped
      if (resume_at > pos) {
        pos = resume_at;  // the element cut by the window's end starts the next window
        ++windows;
        break;
      }
      want *= 2;  // not even the first element: it is larger than the window, or malformed
    }
  }
}

// Where the element whose first bytes are `prefix` (an element's `{` to its first key's `:`)
// starts after a comma at or after `from` and before `to`, with that comma (*comma): the first
// such separator `}` ws `,` ws prefix. kNone when there is none. The text between may be inside a
// string or a nested value: only reading the shards proves the cut (read_array_in_shards).
size_t find_separator(const char* data, size_t from, size_t to, std::string_view prefix,
                      size_t* comma) {
  while (from < to) {
    const void* hit = ::memmem(data + from, to - from, prefix.data(), prefix.size());
    if (hit == nullptr) return kNone;
    const size_t at = static_cast<size_t>(static_cast<const char*>(hit) - data);
    size_t j = at;
    while (j > from && is_space(data[j - 1])) --j;
    if (j > from && data[j - 1] == ',') {
      size_t c = j - 1;
      size_t k = c;
      while (k > from && is_space(data[k - 1])) --k;
      if (k > from && data[k - 1] == '}') {
        *comma = c;
        return at;
      }
    }
    from = at + 1;
  }
  return kNone;
}

// The first element's bytes from its `{` to its first key's `:` (the text from `first` on), or
// empty when the array does not start with an object whose first key is a short plain string.
std::string_view element_prefix(const char* data, size_t first, size_t size) {
  size_t at = first;
  while (at < size && is_space(data[at])) ++at;
  if (at >= size || data[at] != '{') return {};
  for (size_t j = at + 1; j < size && j < at + 128; ++j) {
    if (data[j] == ':') return std::string_view(data + at, j + 1 - at);
    if (data[j] == '\\' || data[j] == '{' || data[j] == '[' || data[j] == '}') return {};
  }
  return {};
}

}  // namespace

size_t window_bytes_for(size_t text_bytes) {
  constexpr size_t kLeast = size_t{256} << 10;
  constexpr size_t kMost = size_t{1} << 20;
  return std::clamp(text_bytes / 32, kLeast, kMost);
}

size_t resolve_window_bytes(size_t requested, size_t share) {
  return requested == kWindowBySize ? window_bytes_for(share) : requested;
}

size_t read_array_in_windows(od::parser& parser, char* data, size_t size, size_t capacity,
                             std::string_view key_literal, size_t window_bytes,
                             ArrayWindowReader& reader) {
  if (window_bytes == 0 || key_literal.empty() || capacity < size + kInputPadding) return 0;
  size_t key_at = 0;
  const size_t open = find_array_open(data, size, key_literal, &key_at);
  if (open == kNone) return 0;
  if (!read_prefix(parser, data, capacity, key_at, open, reader)) return 0;
  reader.before_elements();
  return read_windows_from(parser, data, size, capacity, open + 1, kNone, window_bytes, reader);
}

size_t read_array_in_shards(char* data, size_t size, size_t capacity, std::string_view key_literal,
                            size_t window_bytes, const std::vector<ArrayWindowReader*>& readers,
                            const OrderedBatches& workers) {
  if (readers.size() < 2 || window_bytes == 0 || key_literal.empty() ||
      capacity < size + kInputPadding) {
    return 0;
  }
  size_t key_at = 0;
  const size_t open = find_array_open(data, size, key_literal, &key_at);
  if (open == kNone) return 0;
  {
    od::parser parser;
    if (!read_prefix(parser, data, capacity, key_at, open, *readers[0])) return 0;
  }
  readers[0]->before_elements();

  // The cuts: shard k (k >= 1) starts at begin[k], one element after the comma ending shard k - 1
  // (end[k - 1]); that element (gap k - 1, from end[k - 1] + 1 to the comma before begin[k]) is
  // read after the shards by shard k - 1's reader. The gap keeps the bytes each shard patches
  // apart (a shard's last window patches its comma and the byte after it, the next shard's first
  // window the byte before its first element, the last shard's the five before it).
  const std::string_view prefix = element_prefix(data, open + 1, size);
  if (prefix.empty()) return 0;
  std::vector<size_t> begin = {open + 1};
  std::vector<size_t> end;  // the comma that ends each shard but the last
  std::vector<size_t> gap_end;
  const size_t span = size - open;
  for (size_t k = 1; k < readers.size(); ++k) {
    const size_t target = std::max(open + k * (span / readers.size()), begin.back() + window_bytes);
    const size_t search_end = std::min(size, target + span / readers.size() / 2);
    size_t comma = kNone, next_comma = kNone;
    // No cut near this target (an element larger than the search, or no clean separator): the
    // shard before takes its share too, and the next target is tried.
    const size_t gap = find_separator(data, target, search_end, prefix, &comma);
    if (gap == kNone) continue;
    const size_t next = find_separator(data, gap + 1, search_end, prefix, &next_comma);
    if (next == kNone || next < comma + 8) continue;
    if (next + window_bytes >= size) break;
    end.push_back(comma);
    gap_end.push_back(next_comma);
    begin.push_back(next);
  }
  const size_t shards = begin.size();
  if (shards < 2) return 0;

  std::vector<size_t> windows(shards, 0);
  Status read = workers.run(
      shards,
      [&](size_t k, std::string&) {
        od::parser parser;
        windows[k] = read_windows_from(parser, data, size, capacity, begin[k],
                                       k + 1 < shards ? end[k] : kNone, window_bytes, *readers[k]);
        return windows[k] > 0 ? Status() : Status::error("not read in shards");
      },
      [](std::string&) { return Status(); });
  if (!read.ok()) return 0;
  // The gaps, in order: each proves the next shard's first element is one (its shard proved the
  // comma before the gap is one).
  od::parser parser;
  for (size_t k = 0; k + 1 < shards; ++k) {
    if (!read_range_end(parser, data, capacity, end[k] + 1, gap_end[k], *readers[k])) return 0;
  }
  return shards;
}

}  // namespace chakraflow::json
