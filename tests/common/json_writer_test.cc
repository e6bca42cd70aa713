#include "stages/common/json_writer.h"

#include <gtest/gtest.h>
#include <simdjson.h>

namespace chakraflow {
namespace {

TEST(JsonWriter, LinesAndOneLineContainers) {
  JsonWriter w;
  w.begin_object().member("name", "a \"quoted\" name").member("n", uint64_t{3});
  w.key("rows").begin_array();
  w.begin_object(JsonWriter::Layout::kOneLine).member("rank", 0).member("ok", true);
  w.key("warnings").begin_object().member("some_kind", 2).end();
  w.end();
  w.begin_object(JsonWriter::Layout::kOneLine).key("seconds").fixed(1.23456, 3).end();
  w.end();
  w.key("empty").begin_array().end();
  w.end();
  EXPECT_EQ(w.text(),
            "{\n"
            "  \"name\": \"a \\\"quoted\\\" name\",\n"
            "  \"n\": 3,\n"
            "  \"rows\": [\n"
            "    {\"rank\": 0, \"ok\": true, \"warnings\": {\"some_kind\": 2}},\n"
            "    {\"seconds\": 1.235}\n"
            "  ],\n"
            "  \"empty\": []\n"
            "}\n");
  simdjson::dom::parser parser;
  auto doc = parser.parse(simdjson::padded_string(w.text()));
  ASSERT_FALSE(doc.error());
  EXPECT_EQ(int64_t(doc["rows"].at(0)["warnings"]["some_kind"]), 2);
}

TEST(JsonWriter, NegativeNumbersAndRaw) {
  JsonWriter w;
  w.begin_array(JsonWriter::Layout::kOneLine).value(int64_t{-5}).raw("{\"x\": null}").end();
  EXPECT_EQ(w.text(), "[-5, {\"x\": null}]\n");
}

}  // namespace
}  // namespace chakraflow
