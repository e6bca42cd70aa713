// Small JSON helpers shared by the loaders and writers: reading raw tokens from simdjson's
// on-demand API, unescaping and escaping strings, Kineto's microsecond numbers as integer
// nanoseconds, and number formatting that round-trips. Stateless; thread-safe.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "stages/file_io.h"
#include "stages/trace_model.h"

namespace chakraflow::json {

namespace od = simdjson::ondemand;

// The JSON string literal (with its quotes) that starts just before `after_quote`. Returns an empty
// view if no closing quote is found before `limit`.
std::string_view string_literal(const char* after_quote, const char* limit);

// Unescapes the JSON string literal `literal` (with quotes). When it holds no escape the result
// views the literal itself; otherwise it is stored in `arena`. Returns nullopt for a bad escape.
std::optional<std::string_view> unescape_literal(std::string_view literal,
                                                 std::deque<std::string>& arena);

// Appends the UTF-8 encoding of code point `cp` (a lone surrogate is encoded as it is).
void append_utf8(std::string& out, uint32_t cp);

// Appends `s` to `out` as a JSON string literal (with quotes).
void append_escaped(std::string& out, std::string_view s);

// Appends the JSON text `s` to `out` without whitespace outside strings (so the output does not
// depend on how the input was indented).
void append_minified(std::string& out, std::string_view s);

// Appends the decimal form of an integer.
void append_uint(std::string& out, uint64_t v);
void append_int(std::string& out, int64_t v);

// The text of the scalar token at `v` (a number, string literal with quotes, true, false or null),
// trailing whitespace removed. Does not consume `v`.
std::string_view token(od::value& v);

// Raw text of the value `v` (object, array or scalar), trailing whitespace removed. Consumes `v`.
simdjson::simdjson_result<std::string_view> raw_value(od::value v);

// Parses a JSON number token holding microseconds (e.g. "12", "12.345", "1.2e3") into integer
// nanoseconds, rounding to the nearest ns. Sets *fractional when the value is not a whole number of
// microseconds. Returns false for a token that is not a finite number.
bool parse_micros_as_ns(std::string_view token, TimeNs* ns, bool* fractional);

// Formats nanoseconds as microseconds the way a JSON reader gets back the same number: an integer
// when whole, else a decimal with up to three fraction digits.
void append_micros(std::string& out, TimeNs ns);

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

// Where in `text` the structural pass of iterate_document found `err` (simdjson does not say):
// the end of the text for a string left open (a truncated file), the first control character
// inside a string for UNESCAPED_CHARS, else 0.
uint64_t locate_document_error(std::string_view text, simdjson::error_code err);

// Reads an integer value (accepts integral doubles such as 3.0). Returns false otherwise.
// The simdjson kernel the on-demand code of this build compiled to ("haswell", "icelake", ...;
// "fallback" is the slow scalar one: see CHAKRAFLOW_ARCH in CMakeLists.txt).
std::string_view builtin_kernel();

bool get_int64(od::value v, int64_t* out);
bool get_uint64(od::value v, uint64_t* out);

}  // namespace chakraflow::json
