// JsonWriter: writes a JSON document member by member, escaping strings and placing separators,
// so that reports are never assembled by string concatenation. Containers are laid out either one
// member per line (indented by two spaces per level) or on one line ("{"a": 1, "b": 2}"), chosen
// per container. Not thread-safe; a value type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chakraflow {

class JsonWriter {
 public:
  enum class Layout { kLines, kOneLine };

  // Containers: begin_object()/begin_array() open one (as a value: after key() inside an object),
  // end() closes the innermost.
  JsonWriter& begin_object(Layout layout = Layout::kLines);
  JsonWriter& begin_array(Layout layout = Layout::kLines);
  JsonWriter& end();

  // Inside an object: the next member's key; its value follows.
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(int64_t v);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(unsigned v) { return value(static_cast<uint64_t>(v)); }
  JsonWriter& value(long long v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(unsigned long long v) { return value(static_cast<uint64_t>(v)); }
  // A number with `decimals` digits after the point (fixed notation).
  JsonWriter& fixed(double v, int decimals);
  // Raw JSON text written as the next value (the caller vouches for it).
  JsonWriter& raw(std::string_view json);

  // key(k).value(v)
  template <typename T>
  JsonWriter& member(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  // The document; a final newline is added when the outermost container was closed.
  const std::string& text() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  struct Level {
    Layout layout;
    char closer;
    bool empty = true;
  };
  void before_value();
  void open(char bracket, Layout layout);

  std::string out_;
  std::vector<Level> levels_;
  bool after_key_ = false;
};

}  // namespace chakraflow
