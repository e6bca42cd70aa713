#include "stages/device_trace_loader.h"

#include <gtest/gtest.h>

#include "tests/testing/trace_builder.h"

namespace chakraflow {
namespace {

using testing::KinetoBuilder;

TEST(DeviceTraceLoader, ClassifiesEventsAndSortsRoles) {
  std::string text =
      KinetoBuilder()
          .cpu_op("aten::mm", 10, 20, 5, 3, 100)
          .cpu_op("ProfilerStep#1", 10, 1, 100, 0, 99, "user_annotation")
          .cpu_op("fwd", 10, 2, 50, 2, 98, "user_annotation")
          .runtime("cudaLaunchKernel", 10, 21, 1, 555)
          .gpu("gemm", 30.5, 2.25, 555, 7)
          .gpu("memset", 40, 1, 556, 7, "gpu_memset")
          .raw(
              R"({"ph": "s", "cat": "ac2g", "id": 555, "pid": 1, "tid": 10, "ts": 21, "name": "ac2g"})")
          .raw(
              R"({"ph": "M", "name": "process_name", "pid": 1, "tid": "stream 7", "args": {"name": "x"}})")
          .json();
  auto t = parse_device_trace("d.json", text);
  ASSERT_TRUE(t.ok()) << t.status().message();
  // The ac2g flow event is counted, not kept.
  ASSERT_EQ(t->events.size(), 7u);
  EXPECT_EQ(t->flow_events, 1u);
  EXPECT_TRUE(t->has_rf_ids);
  // ProfilerStep is not a CPU op; the rest are sorted by ts.
  ASSERT_EQ(t->cpu_ops.size(), 2u);
  EXPECT_EQ((*t)[t->cpu_ops[0]].name, "fwd");
  EXPECT_EQ((*t)[t->cpu_ops[1]].name, "aten::mm");
  EXPECT_EQ((*t)[t->cpu_ops[1]].rf_id, 3u);
  EXPECT_EQ((*t)[t->cpu_ops[1]].external_id, 100);
  ASSERT_EQ(t->launches.size(), 1u);
  EXPECT_EQ((*t)[t->launches[0]].correlation, 555);
  ASSERT_EQ(t->gpu_ops.size(), 2u);
  const DeviceEvent& gemm = (*t)[t->gpu_ops[0]];
  EXPECT_EQ(gemm.ts, 30500);
  EXPECT_EQ(gemm.dur, 2250);
  EXPECT_TRUE(gemm.has(kTsFractional));
  EXPECT_EQ(gemm.stream, 7);
  EXPECT_EQ(gemm.name_raw, "\"gemm\"");
  EXPECT_EQ((*t)[t->gpu_ops[1]].cat, DeviceCategory::kGpuMemset);
  EXPECT_EQ(t->events[6].cat, DeviceCategory::kOther);
  EXPECT_EQ(t->events[6].ph, 'M');
  EXPECT_NE(t->events[0].args_raw.find("\"Record function id\": 3"), std::string_view::npos);
  EXPECT_EQ(t->events[0].args_raw.back(), '}');
}

TEST(DeviceTraceLoader, Accepts2021CapitalisedCategories) {
  EXPECT_EQ(classify_category("Operator"), DeviceCategory::kCpuOp);
  EXPECT_EQ(classify_category("Kernel"), DeviceCategory::kKernel);
  EXPECT_EQ(classify_category("Runtime"), DeviceCategory::kCudaRuntime);
  EXPECT_EQ(classify_category("Memcpy"), DeviceCategory::kGpuMemcpy);
  EXPECT_EQ(classify_category("Memset"), DeviceCategory::kGpuMemset);
  EXPECT_EQ(classify_category("python_function"), DeviceCategory::kOther);
}

TEST(DeviceTraceLoader, InvalidUtf8IsRepairedAndCounted) {
  std::string text =
      KinetoBuilder().cpu_op("good", 1, 0, 5).cpu_op("bad\xff\xfe name", 1, 10, 5).json();
  text +=
      std::string("\xc0\x80");  // an overlong NUL after the document: invalid, then trailing junk
  auto t = parse_device_trace("utf8.json", text.substr(0, text.size() - 2));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->invalid_utf8_bytes, 2u);
  EXPECT_EQ((*t)[t->cpu_ops[1]].name, "bad?? name");
}

TEST(DeviceTraceLoader, BadInputGivesLocatedErrors) {
  struct Case {
    const char* text;
    const char* expect;
  } cases[] = {
      {"", "empty file"},
      {R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": "abc"}]})", "traceEvents[0]"},
      {R"({"traceEvents": [{"ph": "X"}, {"ph": "X", "ts": true}]})", "traceEvents[1]"},
      {R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "ts": 1e999}]})", "not"},
      {R"({"schemaVersion": 1})", "no \"traceEvents\""},
      {R"({"traceEvents": [{"ph": "X", "ts": 1}, {"ph": )", "byte"},
  };
  for (const auto& c : cases) {
    auto t = parse_device_trace("bad_dev.json", c.text);
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_NE(t.status().message().find("bad_dev.json"), std::string::npos) << t.status().message();
    EXPECT_NE(t.status().message().find(c.expect), std::string::npos) << t.status().message();
  }
}

}  // namespace
}  // namespace chakraflow
