#include "stages/common/json_writer.h"

#include <fmt/format.h>

#include "stages/common/json_util.h"

namespace chakraflow {

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (levels_.empty()) return;
  Level& level = levels_.back();
  if (level.layout == Layout::kOneLine) {
    if (!level.empty) out_ += ", ";
  } else {
    out_ += level.empty ? "\n" : ",\n";
    out_.append(2 * levels_.size(), ' ');
  }
  level.empty = false;
}

void JsonWriter::open(char bracket, Layout layout) {
  before_value();
  out_ += bracket;
  // A container inside a one-line container is on that line too.
  if (!levels_.empty() && levels_.back().layout == Layout::kOneLine) layout = Layout::kOneLine;
  levels_.push_back({layout, bracket == '{' ? '}' : ']'});
}

JsonWriter& JsonWriter::begin_object(Layout layout) {
  open('{', layout);
  return *this;
}

JsonWriter& JsonWriter::begin_array(Layout layout) {
  open('[', layout);
  return *this;
}

JsonWriter& JsonWriter::end() {
  if (levels_.empty()) return *this;
  const Level level = levels_.back();
  levels_.pop_back();
  if (level.layout == Layout::kLines && !level.empty) {
    out_ += '\n';
    out_.append(2 * levels_.size(), ' ');
  }
  out_ += level.closer;
  if (levels_.empty()) out_ += '\n';
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  before_value();
  json::append_escaped(out_, k);
  out_ += ": ";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  json::append_escaped(out_, s);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::value(int64_t v) {
  before_value();
  json::append_int(out_, v);
  return *this;
}

JsonWriter& JsonWriter::value(uint64_t v) {
  before_value();
  json::append_uint(out_, v);
  return *this;
}

JsonWriter& JsonWriter::fixed(double v, int decimals) {
  before_value();
  fmt::format_to(std::back_inserter(out_), "{:.{}f}", v, decimals);
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  before_value();
  out_ += json;
  return *this;
}

}  // namespace chakraflow
