#include "stages/link/device_trace_loader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "stages/common/json_util.h"
#include "stages/common/ordered_batches.h"
#include "stages/generate/synthetic_trace.h"
#include "tests/testing/test_util.h"
#include "tests/testing/threaded_batches.h"
#include "tests/testing/trace_builder.h"
#include "tests/testing/window_test_util.h"

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
  EXPECT_EQ(t->name(t->cpu_ops[0]), "fwd");
  EXPECT_EQ(t->name(t->cpu_ops[1]), "aten::mm");
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
  EXPECT_EQ(t->name_raw(gemm), "\"gemm\"");
  EXPECT_EQ((*t)[t->gpu_ops[1]].cat, DeviceCategory::kGpuMemset);
  EXPECT_EQ(t->events[6].cat, DeviceCategory::kOther);
  EXPECT_EQ(t->events[6].ph, 'M');
  EXPECT_NE(t->args_raw(t->events[0]).find("\"Record function id\": 3"), std::string_view::npos);
  EXPECT_EQ(t->args_raw(t->events[0]).back(), '}');
}

// The role indices of a trace larger than one classification range, built in ranges, equal the
// straightforward ones: each role's events in (ts, file order), ProfilerStep left out, the CPU
// ops grouped by thread in order of first appearance, rf_ids seen only in the last range. Given
// `workers` and read in shards, the sorts and the grouping run on them too.
void expect_role_indices_as_one_pass(const OrderedBatches* workers) {
  DeviceTrace t;
  constexpr uint32_t kEvents = 600000;
  const DeviceCategory cats[] = {DeviceCategory::kCpuOp,       DeviceCategory::kUserAnnotation,
                                 DeviceCategory::kCudaRuntime, DeviceCategory::kCudaDriver,
                                 DeviceCategory::kKernel,      DeviceCategory::kGpuMemcpy,
                                 DeviceCategory::kGpuMemset,   DeviceCategory::kOther};
  for (uint32_t i = 0; i < kEvents; ++i) {
    DeviceEvent& e = t.events.emplace_back();
    e.cat = cats[(i * 7 + i / 3) % 8];
    e.ts = static_cast<TimeNs>((i * 2654435761u) % 5000);  // many equal times, out of order
    e.tid = (i / 1000) % 5 == 0 ? 40 : static_cast<int64_t>(i % 3);
    if (i % 11 == 0) e.flags |= kProfilerStep;
    if (i % 5 == 0) {
      e.flags |= kHasCorrelation;
      e.args = Span{0, 2};
    }
  }
  uint32_t last_cpu_op = kEvents - 1;
  while (t.events[last_cpu_op].cat != DeviceCategory::kCpuOp ||
         t.events[last_cpu_op].has(kProfilerStep)) {
    --last_cpu_op;
  }
  ASSERT_GE(last_cpu_op, 3 * 65536u);
  t.events[last_cpu_op].flags |= kHasRfId;
  if (workers != nullptr) t.parse_shards = 4;
  build_device_indices(t, workers);
  // Enough CPU ops for the sort in chunks (stages/common/radix_sort.h).
  ASSERT_GT(t.cpu_ops.size(), size_t{1} << 17);

  auto role = [&](auto keep) {
    std::vector<uint32_t> ids;
    for (uint32_t i = 0; i < kEvents; ++i) {
      if (keep(t.events[i])) ids.push_back(i);
    }
    std::stable_sort(ids.begin(), ids.end(),
                     [&](uint32_t a, uint32_t b) { return t.events[a].ts < t.events[b].ts; });
    return ids;
  };
  auto values = [](const std::vector<DeviceEventIdx>& list) {
    std::vector<uint32_t> out;
    for (DeviceEventIdx i : list) out.push_back(i.value);
    return out;
  };
  const auto cpu = role([](const DeviceEvent& e) {
    return (e.cat == DeviceCategory::kCpuOp || e.cat == DeviceCategory::kUserAnnotation) &&
           !e.has(kProfilerStep);
  });
  EXPECT_EQ(values(t.cpu_ops), cpu);
  EXPECT_EQ(values(t.launches), role([](const DeviceEvent& e) {
              return e.cat == DeviceCategory::kCudaRuntime || e.cat == DeviceCategory::kCudaDriver;
            }));
  EXPECT_EQ(values(t.gpu_ops), role([](const DeviceEvent& e) {
              return e.cat == DeviceCategory::kKernel || e.cat == DeviceCategory::kGpuMemcpy ||
                     e.cat == DeviceCategory::kGpuMemset;
            }));
  std::vector<uint32_t> other;
  for (uint32_t i = 0; i < kEvents; ++i) {
    const DeviceEvent& e = t.events[i];
    if (e.cat == DeviceCategory::kOther && !e.args.empty() && e.has(kHasCorrelation)) {
      other.push_back(i);
    }
  }
  EXPECT_EQ(values(t.other_with_args), other);
  EXPECT_TRUE(t.has_rf_ids);

  // Grouped by thread: threads in order of first appearance in cpu_ops, each in cpu_ops order.
  std::vector<int64_t> threads;
  for (uint32_t i : cpu) {
    if (std::find(threads.begin(), threads.end(), t.events[i].tid) == threads.end()) {
      threads.push_back(t.events[i].tid);
    }
  }
  ASSERT_EQ(t.thread_begin.size(), threads.size() + 1);
  std::vector<uint32_t> grouped;
  for (int64_t tid : threads) {
    for (uint32_t i : cpu) {
      if (t.events[i].tid == tid) grouped.push_back(i);
    }
  }
  EXPECT_EQ(values(t.cpu_ops_by_thread), grouped);
}

TEST(DeviceTraceLoader, RoleIndicesInRangesEqualOnePass) {
  expect_role_indices_as_one_pass(nullptr);
}

TEST(DeviceTraceLoader, RoleIndicesOnWorkersEqualOnePass) {
  const testing::ThreadedBatches workers(3);
  expect_role_indices_as_one_pass(&workers);
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
  EXPECT_EQ(t->name(t->cpu_ops[1]), "bad?? name");
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

// ---------- traceEvents read in windows ----------

// Every field of every event, the counts and the role indices.
void expect_same_trace(const DeviceTrace& whole, const DeviceTrace& windowed,
                       const std::string& what) {
  ASSERT_EQ(whole.events.size(), windowed.events.size()) << what;
  for (size_t i = 0; i < whole.events.size(); ++i) {
    const DeviceEvent& a = whole.events[i];
    const DeviceEvent& b = windowed.events[i];
    const std::string where = fmt::format("{}: event {} at byte {}", what, i, a.byte_offset);
    EXPECT_EQ(a.ts, b.ts) << where;
    EXPECT_EQ(a.dur, b.dur) << where;
    EXPECT_EQ(a.tid, b.tid) << where;
    EXPECT_EQ(a.pid, b.pid) << where;
    EXPECT_EQ(a.external_id, b.external_id) << where;
    EXPECT_EQ(a.correlation, b.correlation) << where;
    EXPECT_EQ(a.stream, b.stream) << where;
    EXPECT_EQ(a.device, b.device) << where;
    EXPECT_EQ(a.rf_id, b.rf_id) << where;
    EXPECT_EQ(whole.name(a), windowed.name(b)) << where;
    EXPECT_EQ(whole.name_raw(a), windowed.name_raw(b)) << where;
    EXPECT_EQ(whole.args_raw(a), windowed.args_raw(b)) << where;
    EXPECT_EQ(whole.pg_name(a), windowed.pg_name(b)) << where;
    EXPECT_EQ(a.byte_offset, b.byte_offset) << where;
    EXPECT_EQ(a.flags, b.flags) << where;
    EXPECT_EQ(a.cat, b.cat) << where;
    EXPECT_EQ(a.ph, b.ph) << where;
    if (!b.name_literal.empty()) {
      EXPECT_EQ(windowed.name_raw(b).front(), '"') << where;
      EXPECT_EQ(windowed.name_raw(b).back(), '"') << where;
    }
    if (::testing::Test::HasFailure()) return;  // one event's report is enough
  }
  EXPECT_EQ(whole.flow_events, windowed.flow_events) << what;
  EXPECT_EQ(whole.cpu_ops, windowed.cpu_ops) << what;
  EXPECT_EQ(whole.launches, windowed.launches) << what;
  EXPECT_EQ(whole.gpu_ops, windowed.gpu_ops) << what;
  EXPECT_EQ(whole.has_rf_ids, windowed.has_rf_ids) << what;
  EXPECT_EQ(whole.invalid_utf8_bytes, windowed.invalid_utf8_bytes) << what;
}

// Parses `text` whole and in windows of each size: the same trace, or the same error. Returns the
// number of windows of the smallest size (0: read whole).
size_t expect_windows_read_as_whole(const std::string& text, const std::string& what,
                                    std::initializer_list<size_t> window_sizes) {
  return testing::expect_windows_read_as_whole(
      [](const std::string& t, size_t window) { return parse_device_trace("t.json", t, window); },
      expect_same_trace, text, what, window_sizes);
}

std::string synthetic_device_trace(int rank, double scale) {
  SynthOptions opt;
  opt.ranks = 2;
  opt.scale = scale;
  auto [host, device, stats] = synthesize_rank_text(opt, rank);
  return device;
}

TEST(DeviceTraceWindows, SyntheticTraceReadsAsWhole) {
  const std::string text = synthetic_device_trace(1, 0.05);
  const size_t windows = expect_windows_read_as_whole(text, "synth", {100, 4096, 65536});
  EXPECT_GT(windows, text.size() / 4096) << "the windows were not used";
  // The text is left as it was (windows patch bytes in place and restore them).
  auto windowed = parse_device_trace("t.json", text, 4096);
  ASSERT_TRUE(windowed.ok());
  EXPECT_EQ(std::string_view(windowed->text), text);
}

// The Kineto traces under ../shared/data (every file of kineto/, the device traces elsewhere).
std::vector<std::string> shared_device_traces(std::initializer_list<const char*> dirs) {
  return testing::shared_trace_files(dirs, [](const std::string& path, std::string_view dir) {
    const std::string name = std::filesystem::path(path).filename().string();
    return dir == "kineto" || name.find("kineto") != std::string::npos ||
           name.find("trace") != std::string::npos;
  });
}

TEST(DeviceTraceWindows, RealTracesReadAsWhole) {
  CF_REQUIRE_SHARED_DATA("kineto");
  size_t files = 0;
  for (const std::string& path : shared_device_traces({"kineto", "pairs"})) {
    const std::string text = testing::read_text(path);
    const size_t windows = expect_windows_read_as_whole(text, path, {333, 1 << 16});
    if (text.size() > 4 * 333) {
      EXPECT_GT(windows, 1u) << path << ": the windows were not used";
    }
    ++files;
  }
  EXPECT_GE(files, 10u);
}

// Elements whose text has what a window's cut looks for inside strings and nested arrays, events
// larger than a window, every separator style, and root fields before and after the array.
TEST(DeviceTraceWindows, HardCutsReadAsWhole) {
  std::string events;
  for (int i = 0; i < 300; ++i) {
    const std::string name = testing::hard_cut_string(i);
    if (i > 0) events += testing::hard_cut_separator(i);
    events += fmt::format(
        R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": 1, "tid": {}, "ts": {}, "dur": 2, )"
        R"("args": {{"External id": {}, "list": [{{"a": "}},{{"}}, {{"b": [2, {{"c": "]"}}]}}], )"
        R"("correlation": {}}}}})",
        i % 3 == 0 ? "kernel" : "cpu_op", name, i % 5, 10 * i, i, i);
  }
  const std::string text = R"({"schemaVersion": 1, "deviceProperties": [{"id": 0}, {"id": 1}],)"
                           "\n\"traceEvents\": [" +
                           events + "],\n\"displayTimeUnit\": \"ms\", \"traceName\": \"x\"}";
  const size_t windows = expect_windows_read_as_whole(text, "hard cuts", {64, 150, 500, 2048});
  EXPECT_GT(windows, 20u);
  auto t = parse_device_trace("t.json", text, 64);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->events.size(), 300u);
}

// `n` small CPU op events, `separator` between them.
std::string cpu_op_events(int n, const char* separator) {
  std::string events;
  for (int i = 0; i < n; ++i) {
    if (i > 0) events += separator;
    events +=
        fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "op{}", "ts": {}, "dur": 1}})", i, i);
  }
  return events;
}

// What the windows cannot read is parsed whole: the same trace, or exactly the same error.
TEST(DeviceTraceWindows, WholeParseTakesOverWithItsErrors) {
  const std::string events = cpu_op_events(200, ", ");
  const testing::ArrayText array{"[" + events + "]"};
  struct Case {
    std::string what;
    std::string text;
    bool ok;
  } cases[] = {
      {"a second traceEvents",
       R"({"traceEvents": )" + array.text + R"(, "traceEvents": )" + array.text + "}", false},
      {"traceEvents nested first",
       R"({"meta": {"traceEvents": []}, "traceEvents": )" + array.text + "}", true},
      {"a long tail",
       R"({"traceEvents": )" + array.text + R"(, "more": ")" + std::string(5000, 'y') + "\"}",
       true},
      {"trailing content", R"({"traceEvents": )" + array.text + "} {}", false},
      {"truncated", (R"({"traceEvents": )" + array.text).substr(0, 3000), false},
      {"bad ts in the middle",
       R"({"traceEvents": )" +
           array.inserted(array.element_after(2000), R"({"ph": "X", "ts": "abc"}, )") + "}",
       false},
      {"missing comma", R"({"traceEvents": )" + array.without_comma_after(2500) + "}", false},
      {"invalid UTF-8 in a name",
       R"({"traceEvents": )" + array.inserted(array.text.find("op", 1500) + 2, "\xff") + "}", true},
      {"not an object",
       R"({"traceEvents": )" + array.inserted(array.element_after(1700), "7, ") + "}", false},
  };
  for (const auto& c : cases) {
    auto whole = parse_device_trace("t.json", c.text, 0);
    EXPECT_EQ(whole.ok(), c.ok) << c.what << ": " << whole.status().message();
    expect_windows_read_as_whole(c.text, c.what, {80, 256, 1000});
  }
}

TEST(DeviceTraceWindows, BadInputCorpusReadsAsWhole) {
  const auto dir =
      std::filesystem::path(CHAKRAFLOW_SOURCE_DIR) / "tests" / "bad_inputs" / "device_trace";
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    const std::string text = testing::read_text(entry.path().string());
    expect_windows_read_as_whole(text, entry.path().filename().string(), {16, 64, 256});
    ++files;
  }
  EXPECT_GE(files, 20u);
}

// ---------- traceEvents read in shards ----------

// The data problems counted, with their examples, and the process group names.
void expect_same_problems(const DeviceTrace& whole, const DeviceTrace& sharded,
                          const std::string& what) {
  ASSERT_EQ(whole.load_stats.entries().size(), sharded.load_stats.entries().size()) << what;
  for (const auto& [kind, entry] : whole.load_stats.entries()) {
    EXPECT_EQ(entry.count, sharded.load_stats.count(kind)) << what;
    auto it = sharded.load_stats.entries().find(kind);
    ASSERT_NE(it, sharded.load_stats.entries().end()) << what;
    EXPECT_EQ(entry.examples, it->second.examples) << what;
  }
  EXPECT_EQ(whole.pg_names, sharded.pg_names) << what;
}

// Parses `text` whole and in shards of each count (shards of at least `min_bytes`, read in
// windows of `window` bytes, one after another on this thread: OrderedBatches' own run): the
// same trace, problems and names, or the same error. Returns the shards of the largest count
// (0: not read in shards).
size_t expect_shards_read_as_whole(const std::string& text, const std::string& what,
                                   std::initializer_list<size_t> counts, size_t window = 4096,
                                   size_t min_bytes = 1024) {
  const OrderedBatches in_turn;
  auto whole = parse_device_trace("t.json", text, 0);
  size_t shards = 0;
  for (size_t count : counts) {
    ParseShards p{&in_turn, count, min_bytes};
    auto sharded = parse_device_trace("t.json", text, window, p);
    const std::string label = fmt::format("{}, {} shards", what, count);
    if (!testing::expect_read_as_whole(whole, sharded, label, expect_same_trace)) continue;
    expect_same_problems(*whole, *sharded, label);
    if (sharded->parse_shards > 0) {
      EXPECT_EQ(std::string_view(sharded->text), text) << label << ": the text was left changed";
    }
    shards = sharded->parse_shards;
  }
  return shards;
}

TEST(DeviceTraceShards, SyntheticTraceReadsAsWhole) {
  const std::string text = synthetic_device_trace(1, 0.05);
  ASSERT_GT(text.size(), 16 * 4096u);
  EXPECT_EQ(expect_shards_read_as_whole(text, "synth", {2, 3, 7, 16}), 16u);
  // Fewer than two shards' worth of text, or no workers: read as before.
  const OrderedBatches in_turn;
  auto one = parse_device_trace("t.json", text, 4096, ParseShards{&in_turn, 8, text.size()});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->parse_shards, 0u);
  EXPECT_GT(one->parse_windows, 1u);
}

TEST(DeviceTraceShards, RealTracesReadAsWhole) {
  CF_REQUIRE_SHARED_DATA("kineto");
  testing::expect_real_traces_read_in_shards(
      shared_device_traces({"kineto", "pairs", "pt211_h200"}),
      [](const std::string& text, const std::string& path) {
        return expect_shards_read_as_whole(text, path, {2, 5});
      });
}

// Cuts that look right and are not: the first element's opening bytes ({"ph":) after `}, ` inside
// nested arrays of objects and inside strings, all over the text; events with data problems
// (no "ph", an id written as a string) and process group names in every shard.
TEST(DeviceTraceShards, FalseCutsAndProblemsReadAsWhole) {
  std::string events;
  for (int i = 0; i < 400; ++i) {
    if (i > 0) events += testing::hard_cut_separator(i);
    const std::string ph = i % 17 == 3 ? "" : R"("ph": "X", )";
    const std::string external = i % 13 == 5 ? fmt::format("\"{}\"", i) : std::to_string(i);
    events += fmt::format(
        R"({{{}"cat": "{}", "name": "{}", "pid": 1, "tid": {}, "ts": {}, "dur": 2, )"
        R"("args": {{"External id": {}, "nested": [{{"ph": 1}}, {{"ph": 2}},{{"ph": "}}, {{\"ph\": 3"}}], )"
        R"("Process Group Name": "pg{}", "correlation": {}}}}})",
        ph, i % 3 == 0 ? "kernel" : "cpu_op", testing::hard_cut_string(i), i % 5, 10 * i, external,
        i % 4, i);
  }
  const std::string text = R"({"schemaVersion": 1, "deviceProperties": [{"id": 0}],)"
                           "\n\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": "
                           "\"first\", \"ts\": 0, \"dur\": 1}, " +
                           events + "],\n\"displayTimeUnit\": \"ms\"}";
  auto whole = parse_device_trace("t.json", text, 0);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  ASSERT_GT(whole->load_stats.entries().size(), 1u);
  ASSERT_FALSE(whole->pg_names.empty());
  expect_shards_read_as_whole(text, "false cuts", {2, 3, 6, 11}, 512, 256);

  // The same problems and names with clean cuts: read in shards, numbered and indexed as a
  // sequential read numbers them.
  std::string clean;
  for (int i = 0; i < 400; ++i) {
    if (i > 0) clean += ",\n";
    const std::string external = i % 13 == 5 ? fmt::format("\"{}\"", i) : std::to_string(i);
    clean += fmt::format(
        R"({{"ph": "X", "cat": "{}", "name": "op{}", "pid": 1, "tid": {}, "ts": {}, "dur": 2, )"
        R"("args": {{"External id": {}, {}"correlation": {}}}}})",
        i % 3 == 0 ? "kernel" : "cpu_op", i, i % 5, 10 * i, external,
        i % 7 == 2 ? fmt::format(R"("Process Group Name": "pg{}", )", i) : "", i);
    if (i % 17 == 3) clean += R"(, {"cat": "cpu_op", "name": "no ph", "ts": 1, "dur": 1})";
  }
  const std::string clean_text = R"({"traceEvents": [)" + clean + "]}";
  auto clean_whole = parse_device_trace("t.json", clean_text, 0);
  ASSERT_TRUE(clean_whole.ok()) << clean_whole.status().message();
  ASSERT_EQ(clean_whole->load_stats.entries().size(), 2u);
  ASSERT_GT(clean_whole->pg_names.size(), 40u);
  EXPECT_GE(expect_shards_read_as_whole(clean_text, "clean cuts", {2, 5, 9}, 512, 256), 5u);
}

// An event's name is its literal's text between the quotes, or, when it had escapes, the
// unescaped name kept aside (by byte offset): each as written, whole, in windows and in shards; a
// second "name" replaces the first, either way round; a name that is not a string is none; a
// flow event (not kept) leaves no decoded name behind.
TEST(DeviceTraceShards, NamesWithEscapesAreDecodedHoweverRead) {
  struct Case {
    std::string json_name;  // the value of "name" as written
    std::string name;       // as read
  };
  const std::vector<Case> cases = {
      {R"("plain")", "plain"},
      {R"("q\"uote")", "q\"uote"},
      {R"("\u00e9t\u00e9")", "\xc3\xa9t\xc3\xa9"},
      {R"("back\\slash")", "back\\slash"},
      {R"("")", ""},
      {"7", ""},
  };
  std::string events;
  std::vector<std::string> expected;
  for (int i = 0; i < 240; ++i) {
    const Case& c = cases[static_cast<size_t>(i) % cases.size()];
    if (i > 0) events += ",\n";
    std::string name = fmt::format(R"("name": {})", c.json_name);
    std::string want = c.name;
    if (i % 7 == 3) {  // a second name replaces the first
      const Case& first = cases[static_cast<size_t>(i + 1) % cases.size()];
      name = fmt::format(R"("name": {}, {})", first.json_name, name);
      if (c.json_name == "7") want = first.name;  // a number is skipped: the first stays
    }
    if (i % 11 == 5) {  // a flow event between, with an escaped name: not kept
      events += R"({"ph": "s", "cat": "ac2g", "name": "f\u00e9", "id": 1, "ts": 1}, )";
    }
    events += fmt::format(R"({{"ph": "X", "cat": "cpu_op", {}, "ts": {}, "dur": 1}})", name, i);
    expected.push_back(want);
  }
  const std::string text = R"({"traceEvents": [)" + events + "]}";
  auto whole = parse_device_trace("t.json", text, 0);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  ASSERT_EQ(whole->events.size(), expected.size());
  size_t decoded = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(whole->name(whole->events[i]), expected[i]) << "event " << i;
    decoded += whole->events[i].has(kNameDecoded) ? 1 : 0;
  }
  EXPECT_GT(decoded, 60u);
  EXPECT_EQ(whole->decoded_names.size(), decoded);
  EXPECT_TRUE(std::is_sorted(whole->decoded_names.begin(), whole->decoded_names.end()));
  EXPECT_GT(expect_windows_read_as_whole(text, "names", {64, 200}), 10u);
  EXPECT_GE(expect_shards_read_as_whole(text, "names", {2, 3, 5}, 256, 256), 3u);
}

// What the shards cannot read is read as before: the same trace, or exactly the same error.
TEST(DeviceTraceShards, BadInputsReadAsWhole) {
  const std::string good = R"({"traceEvents": [)" + cpu_op_events(600, ",\n") + "]}";
  for (size_t at : {good.size() / 3, good.size() / 2, 2 * good.size() / 3}) {
    const size_t cut = good.find("},\n{", at) + 1;
    expect_shards_read_as_whole(good.substr(0, cut) + good.substr(cut + 1), "missing comma", {2, 3},
                                1024, 1024);
    expect_shards_read_as_whole(good.substr(0, at), "truncated", {2, 3}, 1024, 1024);
    std::string bad_ts = good;
    bad_ts.replace(good.find("\"ts\": ", at), 6, "\"ts\": \"x\", \"y\":");
    expect_shards_read_as_whole(bad_ts, "bad ts", {2, 3}, 1024, 1024);
  }
  EXPECT_GE(expect_shards_read_as_whole(good, "good", {3}, 1024, 1024), 2u);
  const auto dir =
      std::filesystem::path(CHAKRAFLOW_SOURCE_DIR) / "tests" / "bad_inputs" / "device_trace";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    expect_shards_read_as_whole(testing::read_text(entry.path().string()),
                                entry.path().filename().string(), {2, 4}, 64, 16);
  }
}

// The default windows are sized by the text, as the host ET's (HostEtLoader.DefaultWindows...):
// fewer of them, the same events as in 256 KB ones.
TEST(DeviceTraceLoader, DefaultWindowsAreSizedByTheText) {
  SynthOptions opt;
  opt.ranks = 2;
  opt.scale = 3;
  const auto [sized, fixed] = testing::read_in_sized_and_fixed_windows(
      synthesize_rank_text(opt, 1).device,
      [](const std::string& text, size_t w) { return parse_device_trace("k.json", text, w); });
  ASSERT_TRUE(sized.ok() && fixed.ok());
  ASSERT_EQ(sized->events.size(), fixed->events.size());
  size_t differ = 0;
  for (size_t i = 0; i < sized->events.size(); ++i) {
    const DeviceEvent& a = sized->events[i];
    const DeviceEvent& b = fixed->events[i];
    differ += a.ts != b.ts || a.dur != b.dur || a.byte_offset != b.byte_offset ||
              a.correlation != b.correlation || sized->name(a) != fixed->name(b);
  }
  EXPECT_EQ(differ, 0u);
}

}  // namespace
}  // namespace chakraflow
