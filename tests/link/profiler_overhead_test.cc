#include "stages/link/profiler_overhead.h"

#include <gtest/gtest.h>

#include <random>

#include "stages/link/device_trace_loader.h"
#include "stages/link/exclusive_durations.h"
#include "tests/testing/trace_builder.h"

namespace chakraflow {
namespace {

using testing::KinetoBuilder;

DeviceTrace parse(const std::string& text) {
  auto t = parse_device_trace("t.json", text);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

const DeviceEvent& event(const DeviceTrace& t, std::string_view name) {
  for (const DeviceEvent& e : t.events) {
    if (t.name(e) == name) return e;
  }
  ADD_FAILURE() << "no event " << name;
  return t.events.front();
}

constexpr TimeNs kGap = 1000 * 1000;  // the default gap threshold, 1000 us

// Each event costs 2 us, half before its start and half after its end: a thread's timeline
// shrinks by what its events cost up to each instant (nothing moves before the first timestamp);
// a kernel moves with its launch.
TEST(ProfilerOverhead, EachEventsCostIsTakenOutOfItsThreadsTimeline) {
  DeviceTrace t = parse(KinetoBuilder()
                            .cpu_op("first", 1, 90, 1)
                            .cpu_op("a", 1, 100, 50)
                            .cpu_op("a_child", 1, 110, 20)
                            .runtime("cudaLaunchKernel", 1, 115, 5, 7)
                            .cpu_op("b", 1, 160, 10)
                            .gpu("kernel", 130, 40, 7)
                            .json());
  const OverheadRemoval r = remove_profiler_overhead(t, {2000, 2000}, kGap);
  EXPECT_EQ(r.host_events, 5u);
  EXPECT_EQ(r.recorded_step, 80000);       // 90 to 170
  EXPECT_EQ(event(t, "first").ts, 90000);  // the first timestamp stays
  // Before a: first's exit and a's entry; before a_child: a's entry too; before the launch:
  // a_child's entry too.
  EXPECT_EQ(event(t, "a").ts, 100000 - 2000);
  EXPECT_EQ(event(t, "a_child").ts, 110000 - 3000);
  EXPECT_EQ(event(t, "cudaLaunchKernel").ts, 115000 - 4000);
  EXPECT_EQ(event(t, "cudaLaunchKernel").dur, 5000);
  EXPECT_EQ(event(t, "a_child").dur, 20000 - 2000);  // the launch's entry and exit inside it
  EXPECT_EQ(event(t, "a").dur, 50000 - 4000);        // its two descendants'
  EXPECT_EQ(event(t, "b").ts, 160000 - 8000);        // every boundary before it, its entry
  EXPECT_EQ(event(t, "b").dur, 10000);
  EXPECT_EQ(event(t, "kernel").ts, 130000 - 4000);  // as far as its launch moved
  EXPECT_EQ(event(t, "kernel").dur, 40000);
  EXPECT_EQ(r.step, 80000 - 8000);
  // The indices follow the new times: a's exclusive duration is what it was, less a_child's
  // entry and exit (the launch's were inside a_child).
  const ExclusiveDurations x = compute_exclusive_durations(t, Compat::kDefault);
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    if (t.name(t.events[i]) == "a") {
      EXPECT_EQ(x.by_event[i], (50000 - 20000) - 2000);
    }
  }
  ASSERT_EQ(t.cpu_ops.size(), 4u);
  EXPECT_EQ(t.name(t.cpu_ops[1]), "a");
}

TEST(ProfilerOverhead, NeverMoreThanTheTimeThatPassedOrderAndNestingKept) {
  // Ten nested ops in 1 us each: far less than their cost.
  KinetoBuilder b;
  b.cpu_op("outer", 1, 0, 20);
  for (int k = 0; k < 10; ++k) b.cpu_op("inner" + std::to_string(k), 1, 1 + k * 1.5, 1);
  b.cpu_op("after", 1, 30, 5);
  DeviceTrace t = parse(b.json());
  remove_profiler_overhead(t, {5000, 5000}, kGap);
  TimeNs last_end = event(t, "outer").ts;
  for (int k = 0; k < 10; ++k) {
    const DeviceEvent& e = event(t, "inner" + std::to_string(k));
    EXPECT_GT(e.ts, last_end) << k;  // strictly after the one before: still in order
    EXPECT_GE(e.dur, 0) << k;
    EXPECT_LE(e.end(), event(t, "outer").end()) << k;  // still inside outer
    last_end = e.end();
  }
  EXPECT_GT(event(t, "after").ts, event(t, "outer").end());
}

TEST(ProfilerOverhead, AThreadWokenAfterAGapStartsAsEarlyAsTheThreadThatWokeIt) {
  // Thread 1 runs 20 ops then waits (backward); thread 2, idle since an early op, starts 2 ms
  // later, after a gap longer than the threshold: thread 1 woke it.
  KinetoBuilder b;
  for (int k = 0; k < 20; ++k) b.cpu_op("fwd" + std::to_string(k), 1, k * 10, 8);
  b.cpu_op("early", 2, 5, 1);
  b.cpu_op("bwd", 2, 2200, 50);
  DeviceTrace t = parse(b.json());
  remove_profiler_overhead(t, {1000, 1000}, kGap);
  // Thread 1 took out 1 us per op boundary after the first (which stays): 19 us by fwd19's start.
  EXPECT_EQ(event(t, "fwd19").ts, 190000 - 19000);
  // bwd starts as much earlier as thread 1 had taken out (19.5 us, fwd19's exit included), and
  // its own entry.
  EXPECT_EQ(event(t, "bwd").ts, 2200000 - 19500 - 500);
  // Not woken (a threshold longer than the gap): only thread 2's own costs (early's entry and
  // exit, bwd's entry).
  DeviceTrace u = parse(b.json());
  remove_profiler_overhead(u, {1000, 1000}, 5 * kGap);
  EXPECT_EQ(event(u, "bwd").ts, 2200000 - 1500);
}

// The capture script brackets the backward pass with a `## backward ##` annotation on the thread
// that calls backward(), while the autograd thread runs it: the annotation says nothing of the
// caller running. When it ends, the caller resumes as early as the autograd thread's removed time
// allows, as a thread woken after a gap does.
TEST(ProfilerOverhead, AThreadWaitingInsideAnAnnotationResumesWithTheThreadItWaitedOn) {
  KinetoBuilder b;
  for (int k = 0; k < 20; ++k) b.cpu_op("fwd" + std::to_string(k), 1, k * 10, 8);
  b.cpu_op("## backward ##", 1, 200, 2100, 0, -1, "user_annotation");  // 200 to 2300 us
  b.cpu_op("early", 2, 5, 1);
  for (int k = 0; k < 10; ++k) b.cpu_op("bwd" + std::to_string(k), 2, 1200 + k * 100, 50);
  b.cpu_op("opt", 1, 2310, 20);
  const std::string json = b.json();
  DeviceTrace t = parse(json);
  const DeviceTrace before = parse(json);
  remove_profiler_overhead(t, {1000, 1000}, kGap);
  auto shift = [&](std::string_view name) { return event(before, name).ts - event(t, name).ts; };
  const TimeNs bwd_end_shift = event(before, "bwd9").end() - event(t, "bwd9").end();
  // Thread 2 woke with thread 1's forward costs and took out its own: more than thread 1 had.
  EXPECT_GT(bwd_end_shift, shift("## backward ##"));
  // The annotation ends, and opt starts, at least as much earlier as the backward ended.
  EXPECT_GE(event(before, "## backward ##").end() - event(t, "## backward ##").end(),
            bwd_end_shift);
  EXPECT_GE(shift("opt"), bwd_end_shift);
  EXPECT_GE(event(t, "opt").ts, event(t, "## backward ##").end());
  // A cpu_op in its place is the thread running: it keeps its own timeline.
  KinetoBuilder c;
  for (int k = 0; k < 20; ++k) c.cpu_op("fwd" + std::to_string(k), 1, k * 10, 8);
  c.cpu_op("busy", 1, 200, 2100);
  c.cpu_op("early", 2, 5, 1);
  for (int k = 0; k < 10; ++k) c.cpu_op("bwd" + std::to_string(k), 2, 1200 + k * 100, 50);
  c.cpu_op("opt", 1, 2310, 20);
  DeviceTrace u = parse(c.json());
  const DeviceTrace u_before = parse(c.json());
  remove_profiler_overhead(u, {1000, 1000}, kGap);
  EXPECT_LT(event(u_before, "opt").ts - event(u, "opt").ts,
            event(u_before, "bwd9").end() - event(u, "bwd9").end());
}

TEST(ProfilerOverhead, NothingWithoutCostsAndTheSameWhateverTheEventOrder) {
  KinetoBuilder b;
  std::mt19937 rng(3);
  std::vector<std::string> events;
  for (int k = 0; k < 200; ++k) {
    const double ts = std::uniform_real_distribution<double>(0, 5000)(rng);
    b.cpu_op("op" + std::to_string(k), 1 + k % 3, ts,
             std::uniform_int_distribution<int>(1, 30)(rng));
  }
  DeviceTrace same = parse(b.json());
  const DeviceTrace before = parse(b.json());
  const OverheadRemoval none = remove_profiler_overhead(same, {}, kGap);
  EXPECT_EQ(none.step, none.recorded_step);
  for (size_t i = 0; i < same.events.size(); ++i) {
    EXPECT_EQ(same.events[i].ts, before.events[i].ts);
    EXPECT_EQ(same.events[i].dur, before.events[i].dur);
  }
  DeviceTrace warped = parse(b.json());
  remove_profiler_overhead(warped, {3000, 1000}, kGap);
  // Per thread, the order of starts is kept and no time is added.
  for (size_t i = 0; i < warped.events.size(); ++i) {
    EXPECT_LE(warped.events[i].ts, before.events[i].ts);
    EXPECT_LE(warped.events[i].dur, before.events[i].dur);
    for (size_t j = 0; j < warped.events.size(); ++j) {
      if (warped.events[i].tid != warped.events[j].tid) continue;
      if (before.events[i].ts < before.events[j].ts) {
        EXPECT_LE(warped.events[i].ts, warped.events[j].ts);
      }
    }
  }
}

TEST(StepTimeFile, ReadsTheCaptureFormatAndSaysWhatIsWrong) {
  auto ok = parse_step_time("s.json",
                            R"({"unprofiled_step_ms": {"median": 23.9, "min": 23.7, "n": 20},
          "profiler_overhead_us_per_op": {"none": 3.9, "kineto": 7.5, "et_kineto": 17.5},
          "more": "ignored"})");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_DOUBLE_EQ(ok->unprofiled->median_us, 23900);
  EXPECT_DOUBLE_EQ(ok->unprofiled->min_us, 23700);
  EXPECT_EQ(ok->unprofiled->n, 20);
  // (7.5 - 3.9) / 1.5 = 2.4 us per event; the ET adds 10 us per op.
  EXPECT_EQ(costs_from(*ok->calibration, RecordedWith::kKineto), (ProfilerCosts{2400, 2400}));
  EXPECT_EQ(costs_from(*ok->calibration, RecordedWith::kEtAndKineto), (ProfilerCosts{12400, 2400}));
  for (const char* bad : {"[]", "{}", R"({"unprofiled_step_ms": {"median": 1, "min": 2, "n": 3}})",
                          R"({"unprofiled_step_ms": {"median": "x", "min": 2, "n": 3}})",
                          R"({"profiler_overhead_us_per_op": {"none": 1, "kineto": 2}})", "{"}) {
    auto r = parse_step_time("s.json", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().rfind("s.json: ", 0), 0u) << r.status().message();
  }
}

TEST(ProfilerOverheadNote, RoundTripsThroughItsJson) {
  ProfilerOverheadNote note;
  note.removed = true;
  note.recorded_with = RecordedWith::kKineto;
  note.costs = {2405, 2405};
  note.recorded_step_us = 20974.828;
  note.step_us = 13855.875;
  note.unprofiled = StepTime::Step{15618.4, 13272.1, 20};
  std::string text;
  append_profiler_overhead_json(text, note);
  auto back = parse_profiler_overhead_json(text);
  ASSERT_TRUE(back.has_value()) << text;
  EXPECT_EQ(*back, note);
  EXPECT_FALSE(parse_profiler_overhead_json(R"({"removed": true})").has_value());
}

}  // namespace
}  // namespace chakraflow
