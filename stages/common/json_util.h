// Small JSON helpers shared by the loaders and writers: reading raw tokens from simdjson's
// on-demand API, unescaping and escaping strings, Kineto's microsecond numbers as integer
// nanoseconds, and number formatting that round-trips. Stateless; thread-safe.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stages/common/file_io.h"
#include "stages/common/time_ns.h"

namespace chakraflow {
class OrderedBatches;
}  // namespace chakraflow

namespace chakraflow::json {

namespace od = simdjson::ondemand;

namespace detail {
template <class Word>
inline bool same_word(const char* a, const char* b) {
  Word x, y;
  std::memcpy(&x, a, sizeof(Word));
  std::memcpy(&y, b, sizeof(Word));
  return x == y;
}
}  // namespace detail

// `s` equals the string literal. The literal's length is a constant, so the comparison is a few
// word loads that may overlap, with the literal's words folded to constants (std::string_view's ==
// calls memcmp with the runtime length, and GCC still calls memcmp for a constant length of 9 or
// more; docs/performance.md, "Sizes chosen by measurement").
template <size_t N>
inline bool equals(std::string_view s, const char (&literal)[N]) {
  constexpr size_t L = N - 1;
  if (s.size() != L) return false;
  const char* p = s.data();
  if constexpr (L == 0) {
    return true;
  } else if constexpr (L == 1) {
    return p[0] == literal[0];
  } else if constexpr (L < 4) {
    return detail::same_word<uint16_t>(p, literal) &&
           detail::same_word<uint16_t>(p + L - 2, literal + L - 2);
  } else if constexpr (L < 8) {
    return detail::same_word<uint32_t>(p, literal) &&
           detail::same_word<uint32_t>(p + L - 4, literal + L - 4);
  } else {
    for (size_t k = 0; k + 8 < L; k += 8) {
      if (!detail::same_word<uint64_t>(p + k, literal + k)) return false;
    }
    return detail::same_word<uint64_t>(p + L - 8, literal + L - 8);
  }
}

// The key of `field` as written in the file, without its quotes (escapes left as they are). The
// parse has found the key's closing quote, the ':' and the value, with only whitespace between
// them: the key ends at the first quote before the value (a step or three back, where a scan of
// the key itself took one step per byte).
inline std::string_view raw_key(od::field& field) {
  const char* begin = field.key().raw();
  const char* p = field.value().raw_json_token().data() - 1;
  while (*p != '"') --p;
  return std::string_view(begin, static_cast<size_t>(p - begin));
}

// The key of `field`, unescaped: a view into the text when it holds no escape (nearly every key),
// else simdjson's unescaped copy.
inline simdjson::error_code unescaped_key(od::field& field, std::string_view* out) {
  const std::string_view raw = raw_key(field);
  for (char c : raw) {
    if (c == '\\') return field.unescaped_key().get(*out);
  }
  *out = raw;
  return simdjson::SUCCESS;
}

// The JSON string literal (with its quotes) that starts just before `after_quote`. Returns an empty
// view if no closing quote is found before `limit`.
std::string_view string_literal(const char* after_quote, const char* limit);

// The escaped case of unescape_literal: `body` (the literal without its quotes) holds a backslash.
std::optional<std::string_view> unescape_escaped(std::string_view body,
                                                 std::deque<std::string>& arena);

// Unescapes the JSON string literal `literal` (with quotes). When it holds no escape the result
// views the literal itself; otherwise it is stored in `arena`. Returns nullopt for a bad escape.
// Inline: a std::optional<std::string_view> returned from a call goes through memory, written
// as two words and read back as one 16-byte copy, which the CPU cannot forward from the stores
// (a stall of a dozen cycles per string read).
inline std::optional<std::string_view> unescape_literal(std::string_view literal,
                                                        std::deque<std::string>& arena) {
  if (literal.size() < 2) return std::nullopt;
  std::string_view body = literal.substr(1, literal.size() - 2);
  if (body.find('\\') == std::string_view::npos) return body;
  return unescape_escaped(body, arena);
}

// Appends the UTF-8 encoding of code point `cp` (a lone surrogate is encoded as it is).
void append_utf8(std::string& out, uint32_t cp);

// Appends `s` to `out` as a JSON string literal (with quotes).
void append_escaped(std::string& out, std::string_view s);

// Appends the JSON text `s` to `out` without whitespace outside strings (so the output does not
// depend on how the input was indented).
void append_minified(std::string& out, std::string_view s);

// The loops append_minified may run (kBest: the fastest this CPU has), for tests and benchmarks
// to run each: every kernel gives the same bytes.
enum class MinifyKernel { kBest, kScalar, kAvx2, kAvx512 };
// Whether this build and CPU have `kernel`.
bool has_minify_kernel(MinifyKernel kernel);
// As append_minified, with `kernel`; false (nothing appended) when it is not at hand.
bool append_minified(std::string& out, std::string_view s, MinifyKernel kernel);

// Appends the decimal form of an integer.
void append_uint(std::string& out, uint64_t v);
void append_int(std::string& out, int64_t v);

// The text of the scalar token at `v` (a number, string literal with quotes, true, false or null),
// trailing whitespace removed. Does not consume `v`. Inline: the loaders call it for most values
// (millions on a large rank), and a call cost a third of what it does.
inline std::string_view token(od::value& v) {
  std::string_view t = v.raw_json_token();
  while (!t.empty() &&
         (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' || t.back() == '\t')) {
    t.remove_suffix(1);
  }
  return t;
}

// Raw text of the value `v` (object, array or scalar) into `*out`, trailing whitespace removed.
// Consumes `v`. (Not a simdjson_result<std::string_view>: returned through memory and copied out
// of it, it stalls as unescape_literal's optional would.)
simdjson::error_code raw_value(od::value& v, std::string_view* out);

// A string value read where it lies: `*literal` is its JSON text (with quotes), `*unescaped` its
// text (a view into the literal, or a copy in `arena` when it holds escapes). The value is
// consumed: the parser does not check a value left unread (`"a": "b": 1` would pass for a key and
// its value). Otherwise, what is wrong with it (string_problem names it for a message).
enum class StringRead : uint8_t { kOk, kNotString, kBadEscape };
inline StringRead read_string(od::value& v, std::deque<std::string>& arena,
                              std::string_view* literal, std::string_view* unescaped) {
  // The literal ends where the structural index says its token ends (no scan for the quote).
  *literal = token(v);
  od::raw_json_string raw;
  if (v.get_raw_json_string().get(raw)) return StringRead::kNotString;
  auto s = unescape_literal(*literal, arena);
  if (!s) return StringRead::kBadEscape;
  *unescaped = *s;
  return StringRead::kOk;
}
inline std::string_view string_problem(StringRead r) {
  return r == StringRead::kNotString ? "is not a string" : "holds an invalid escape";
}

// Reads the decimal digits at s[i...], at most 19 of them (the most that fit in 64 bits), eight
// at a time where it can. Returns how many it read: it stops at the first byte that is not a digit.
inline size_t read_digits(std::string_view s, size_t i, uint64_t* value) {
  uint64_t v = 0;
  size_t k = i;
  while (s.size() - k >= 8 && k - i < 16) {
    uint64_t x;
    std::memcpy(&x, s.data() + k, 8);
    // All eight bytes in '0'..'9' (as simdjson and fast_float test it).
    if (((x & 0xF0F0F0F0F0F0F0F0) | (((x + 0x0606060606060606) & 0xF0F0F0F0F0F0F0F0) >> 4)) !=
        0x3333333333333333) {
      break;
    }
    x -= 0x3030303030303030;
    x = (x * 10) + (x >> 8);
    x = (((x & 0x000000FF000000FF) * 0x000F424000000064) +
         (((x >> 16) & 0x000000FF000000FF) * 0x0000271000000001)) >>
        32;
    v = v * 100000000 + x;
    k += 8;
  }
  while (k < s.size() && k - i < 19 && s[k] >= '0' && s[k] <= '9') {
    v = v * 10 + static_cast<uint64_t>(s[k] - '0');
    ++k;
  }
  *value = v;
  return k - i;
}

// A JSON integer token of at most 18 digits ("-12", "0", "123"), read without the parser's type
// dispatch. False for any other token (a fraction, an exponent, a leading zero, a string, 19 or
// more digits): the caller then asks the parser.
inline bool small_int_token(std::string_view t, int64_t* out) {
  size_t i = !t.empty() && t[0] == '-' ? 1 : 0;
  if (i == t.size() || (t[i] == '0' && t.size() > i + 1)) return false;
  uint64_t v = 0;
  const size_t n = read_digits(t, i, &v);
  if (n == 0 || n > 18 || i + n != t.size()) return false;
  *out = i == 1 ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

// Whether `token` is a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
bool is_number_token(std::string_view token);
// An integer JSON number token (an integral double such as 3.0 or 1e3 too) as int64 / uint64;
// false for any other token or a value out of range.
bool parse_int_token(std::string_view token, int64_t* out);
bool parse_uint_token(std::string_view token, uint64_t* out);

// Parses a JSON number token holding microseconds (e.g. "12", "12.345", "1.2e3") into integer
// nanoseconds, rounding to the nearest ns. Sets *fractional when the value is not a whole number of
// microseconds. Returns false for a token that is not a finite number.
// `is_float` (optional): whether the token is written as a JSON float (a '.' or an exponent), the
// type Python's json gives it.
bool parse_micros_as_ns(std::string_view token, TimeNs* ns, bool* fractional,
                        bool* is_float = nullptr);

// Formats nanoseconds as microseconds the way a JSON reader gets back the same number: an integer
// when whole, else a decimal with up to three fraction digits.
void append_micros(std::string& out, TimeNs ns);

// The double that append_micros's text of `ns` reads back as (the double nearest to ns / 1000),
// computed without the text: for |ns| < 2^53 the quotient of exact operands, rounded once; up to
// 2^62 (the loaders' bound on times), the integer microseconds (exact) plus the fraction. That sum
// is rounded once too, to the nearest: the fraction's own rounding error (< 2^-53) is far smaller
// than its distance to a rounding boundary (at least 1/1000 of the boundaries' spacing, or none:
// a tie such as .125 is exact). Past 2^62 the text is parsed.
double micros_value(TimeNs ns);

// Appends repr(v) as CPython 3 writes a float (and json.dump writes it): the shortest digits
// that read back as `v`, in exponent form below 1e-4 and from 1e16 (`1e-05`, `1e+16`), a whole
// number with ".0"; `inf`, `-inf`, `nan`.
void append_python_float(std::string& out, double v);
// A Python number as json.dump writes it: repr of a float, or the int `v` holds (integral).
void append_python_number(std::string& out, double v, bool is_float);

// Byte offset of `p` inside `text`, or text.size() when p is null / outside.
uint64_t offset_in(std::string_view text, const char* p);

// Current byte offset of the iterator of `doc` inside `text` (text.size() at the end).
uint64_t current_offset(od::document& doc, std::string_view text);

// Replaces every byte of `text` that is not part of a valid UTF-8 sequence with '?', in place (so
// byte offsets do not move). Returns the number of bytes replaced.
uint64_t repair_utf8(std::string& text);
uint64_t repair_utf8(char* text, size_t size);

// Starts on-demand parsing of `text` (which must have kInputPadding bytes of capacity beyond its
// size). Invalid UTF-8 does not stop the parse: it is repaired in place (repair_utf8) and the
// number of bytes replaced is added to *repaired.
simdjson::error_code iterate_document(od::parser& parser, std::string& text, od::document* doc,
                                      uint64_t* repaired);
simdjson::error_code iterate_document(od::parser& parser, InputText& text, od::document* doc,
                                      uint64_t* repaired);

// The simdjson kernel the on-demand code of this build compiled to ("haswell", "icelake", ...;
// "fallback" is the slow scalar one: see CHAKRAFLOW_ARCH in CMakeLists.txt).
std::string_view builtin_kernel();

// Where in `text` the structural pass of iterate_document found `err` (simdjson does not say):
// the end of the text for a string left open (a truncated file), the first control character
// inside a string for UNESCAPED_CHARS, else 0.
uint64_t locate_document_error(std::string_view text, simdjson::error_code err);

// Objects and arrays opened and not closed when `text` ends (strings skipped): more than 0 for a
// truncated document. Reading the root fails with INCOMPLETE_ARRAY_OR_OBJECT for a document whose
// brackets do not balance; this tells a cut-off file (report the end) from a malformed one.
uint64_t unclosed_depth(std::string_view text);

// A loader's `error` for `text`, restated at the end of the input when the text is cut short
// (unclosed_depth > 0): "PATH: byte SIZE: the input ends inside an unclosed object or array: the
// file is truncated (reading stopped at: ...the original message...)". Other errors as they are.
Status explain_truncation(Status error, std::string_view path, std::string_view text);

// Reads the elements of an array that is a value of the root object, one window of about
// `window_bytes` of text at a time, with one reused parser: simdjson's structural index (which
// the parser sizes at 4 bytes per byte parsed) then stays four times the size of a window instead
// of four times the size of the text. Each window is parsed in place: a few bytes around it are
// patched for its parse and restored after it, so every view the reader takes points into
// `data`, which is left as it was.
//
// The boundaries come from the parse itself. A window ends at a `},` near its target size, or
// before the opening quote of a string it would cut. The element that does not parse at a window's
// end (cut by it) starts the next window. A window that cannot read its first element grows. The
// last window takes the rest of the text, with the root object's fields after the array.
class ArrayWindowReader {
 public:
  virtual ~ArrayWindowReader() = default;
  // A field of the root object other than the array (before or after it). False: stop.
  virtual bool root_field(od::field& field) = 0;
  // Between the root fields before the array and its first element (once, when the array's key is
  // found to be a key of the root object).
  virtual void before_elements() {}
  // One element of the array, which starts at `start`; the reader reads all of it (an element cut
  // by a window's end then fails). False: the element is not read (nothing of it may be kept); it
  // is read again at the start of the next window.
  virtual bool element(od::document& doc, od::value& value, const char* start) = 0;
};

// The window the loaders read a text's large array in, for a parser that reads `text_bytes` of it
// (a shard's share, when read in shards): 1/32 of that, between 256 KB and 1 MB. A window costs
// a fixed part (simdjson's start on it, the search for its cut, and the page its patched bytes
// lie in, copied from the mapped file: with other threads of the process running, that copy
// interrupts each of them to drop the old page from its TLB) and its structural index (simdjson
// reserves 4 bytes per byte of window and fills about one in six), which a small text keeps small
// (docs/performance.md, "Sizes chosen by measurement").
size_t window_bytes_for(size_t text_bytes);
// The window for a parser of `share` bytes of a text that a loader was asked to read in windows
// of `requested`: `requested`, or window_bytes_for(share) when it is kWindowBySize (the loaders'
// default, stages/common/ordered_batches.h).
size_t resolve_window_bytes(size_t requested, size_t share);

// Reads the array that is the value of the first occurrence of `key_literal` (the key with its
// quotes) in `data` (readable up to `capacity`, which must exceed `size` by kInputPadding) through
// `reader`. Returns the number of windows read, or 0 when the text cannot be read in windows: that
// occurrence is not a key of the root object whose value is an array, the reader refused a root
// field, or some element or field does not parse where the text ends (invalid UTF-8, a malformed
// element: anything). The caller then discards what the reader kept and parses the whole document,
// which reports errors as before.
size_t read_array_in_windows(od::parser& parser, char* data, size_t size, size_t capacity,
                             std::string_view key_literal, size_t window_bytes,
                             ArrayWindowReader& reader);

// Reads the same array as read_array_in_windows in shards, concurrently: the text from the array's
// first element on is cut into up to readers.size() byte ranges at commas between two elements
// (found by the bytes that open the first element, up to its first key's colon: a comma followed by
// them is taken for a separator), each cut looked for near its share of the text (a share with none
// near it, inside one large element, is left to the range before), and shard k is read in windows
// by readers[k] (the root fields before the array by readers[0], those after it by the last), the
// shards run through `workers` (produce(k) reads shard k; each has its own parser). Between two
// shards one element is left, read after them, in order, by the reader of the shard before it:
// shard k's last window must end at its cut having read every element to it, which proves the cut
// (a comma inside a string or a nested value fails so), and the element left proves the next
// shard's start. So each reader receives exactly the elements a sequential read gives, in order,
// and together the readers receive every element once. Returns the number of shards read (at least
// 2), or 0: no cut was found (a small text, or elements that are not objects), or a shard or an
// element left did not read (a wrong cut, a malformed or invalid text): the caller discards what
// every reader kept and reads the text another way. The shards patch bytes of `data` as windows do,
// never the same ones at once, and leave it as it was.
size_t read_array_in_shards(char* data, size_t size, size_t capacity, std::string_view key_literal,
                            size_t window_bytes, const std::vector<ArrayWindowReader*>& readers,
                            const OrderedBatches& workers);

// The cases get_int64 and get_uint64 leave to a call: another integer type, a double.
bool get_int64_slow(od::value& v, int64_t* out);
bool get_uint64_slow(od::value& v, uint64_t* out);

// Reads an integer value (accepts integral doubles such as 3.0). Returns false otherwise. The
// common case inline.
inline bool get_int64(od::value& v, int64_t* out) {
  if (v.get_int64().get(*out) == simdjson::SUCCESS) return true;
  return get_int64_slow(v, out);
}
inline bool get_uint64(od::value& v, uint64_t* out) {
  if (v.get_uint64().get(*out) == simdjson::SUCCESS) return true;
  return get_uint64_slow(v, out);
}

}  // namespace chakraflow::json
