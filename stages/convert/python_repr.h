// Python's str() of JSON values, byte for byte.
//
// Chakra's converter stores each node's inputs/outputs as `str(value)` of the value json.load built
// (reference/chakra_spec.md §2.5), and simulators parse that text back (ASTRA-sim reads the
// process-group list out of the `## process_group:init ##` node). These functions reproduce
// CPython 3's output: `, ` and `: ` separators; strings in single quotes, or double quotes when the
// string contains `'` but no `"`; True/False/None; ints as written; floats as repr() writes them
// (shortest round-trip digits, exponent form below 1e-4 and from 1e16: `1e-05`, `1e+16`, `inf`).
//
// Known approximation: non-ASCII characters that Python's str.isprintable() rejects are escaped
// (`\xa0`, `\u200b`, ...) from a built-in table of the Unicode control, format, separator,
// surrogate and private-use ranges; unassigned code points are not escaped (Python would escape
// them). Invalid UTF-8 bytes are written as `\udcXX`, like Python's surrogateescape.
//
// Stateless, thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "stages/common/status.h"

namespace chakraflow::pyrepr {

// Appends str(json.loads(json_text)) to `out`. `json_text` is one JSON value (object, array or
// scalar; surrounding whitespace allowed). Python's json extensions NaN, Infinity and -Infinity are
// accepted. On malformed input returns an error naming the byte offset inside `json_text`; `out`
// then holds a partial result.
Status append_json_value(std::string& out, std::string_view json_text);

// The same written at out[size], for a caller that renders value after value into one string:
// `size` is advanced past what is written, and what lies beyond it is room (out.size() may exceed
// it; the room is kept for the next value, and only zeroed where it grows). On malformed input,
// the error, and `size` past a partial result.
Status write_json_value(std::string& out, size_t& size, std::string_view json_text);

// Appends repr(float(v)).
void append_float(std::string& out, double v);

// Appends repr(s) for a UTF-8 string `s`.
void append_str(std::string& out, std::string_view s);

// The same for a JSON string literal (with its quotes, JSON escapes allowed). Returns false if the
// literal is malformed.
bool append_json_string_literal(std::string& out, std::string_view literal);

// Decodes the UTF-8 sequence at s[*i] and advances *i past it. An invalid or truncated sequence
// sets *valid = false, advances by one byte and returns that byte's value.
char32_t decode_utf8(std::string_view s, size_t* i, bool* valid);

}  // namespace chakraflow::pyrepr
