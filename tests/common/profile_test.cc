// The profile's recorder: spans only while on, nesting and the rank they take from the span
// around them, other threads' spans and what they are named after, a new start forgetting the
// old, and the Chrome trace written.
#include "stages/common/profile.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <thread>
#include <vector>

#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

const profile::Event* find(const std::vector<profile::Event>& events, std::string_view name) {
  for (const auto& e : events) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

// Leaves the recorder off (a test that fails midway must not leave it on for the next).
struct ProfileOff {
  ~ProfileOff() {
    testing::TempDir dir;
    (void)profile::write(dir.file("discarded.json"));
  }
};

TEST(Profile, RecordsOnlyWhileOn) {
  const ProfileOff off;
  { const profile::Span before("before start"); }
  EXPECT_FALSE(profile::on());
  EXPECT_EQ(profile::current_name(), nullptr);
  profile::start();
  EXPECT_TRUE(profile::on());
  {
    const profile::Span during("during", 4);
    EXPECT_STREQ(profile::current_name(), "during");
    EXPECT_EQ(profile::current_rank(), 4);
  }
  EXPECT_EQ(profile::current_name(), nullptr);
  const auto events = profile::events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_STREQ(events[0].name, "during");
  EXPECT_EQ(events[0].rank, 4);
  EXPECT_GE(events[0].end_ns, events[0].begin_ns);
  EXPECT_EQ(find(events, "before start"), nullptr);
}

TEST(Profile, NestedSpansTakeTheirRankAndLieInside) {
  const ProfileOff off;
  profile::start();
  {
    const profile::Span outer("outer", 7);
    {
      const profile::Span inner("inner", -1, 2);
      const profile::Span unranked_part("own rank", 3);
    }
  }
  const auto events = profile::events();
  const auto* outer = find(events, "outer");
  const auto* inner = find(events, "inner");
  const auto* own = find(events, "own rank");
  ASSERT_TRUE(outer && inner && own);
  EXPECT_EQ(inner->rank, 7);  // the span around it
  EXPECT_EQ(inner->part, 2);
  EXPECT_EQ(own->rank, 3);  // its own
  EXPECT_LE(outer->begin_ns, inner->begin_ns);
  EXPECT_LE(inner->end_ns, outer->end_ns);
  EXPECT_EQ(inner->thread, outer->thread);
  // By thread, then begin: the outer span first.
  EXPECT_EQ(&events.front(), outer);
}

TEST(Profile, OtherThreadsRecordOnRowsOfTheirOwnNamedAfterTheStage) {
  const ProfileOff off;
  profile::start();
  {
    const profile::Span stage("stage", 1);
    const char* name = profile::current_name();
    const int64_t rank = profile::current_rank();
    std::vector<std::thread> workers;
    for (int k = 0; k < 3; ++k) {
      workers.emplace_back([name, rank] {
        const profile::Span batch(name, rank, -1, profile::Kind::kBatch);
        // A piece inside the batch takes the batch's rank, and work it hands out its name.
        const profile::Span piece("piece");
        EXPECT_STREQ(profile::current_name(), "piece");
      });
    }
    for (auto& t : workers) t.join();
    // A null name (no stage handed the work out) records nothing.
    const profile::Span nothing(nullptr, 1, -1, profile::Kind::kBatch);
  }
  const auto events = profile::events();
  size_t batches = 0, pieces = 0;
  uint32_t stage_thread = find(events, "stage")->thread;
  for (const auto& e : events) {
    if (e.kind == profile::Kind::kBatch) {
      ++batches;
      EXPECT_STREQ(e.name, "stage");
      EXPECT_EQ(e.rank, 1);
      EXPECT_NE(e.thread, stage_thread);
    }
    if (std::string_view(e.name) == "piece") {
      ++pieces;
      EXPECT_EQ(e.rank, 1);
    }
  }
  EXPECT_EQ(batches, 3u);
  EXPECT_EQ(pieces, 3u);
}

TEST(Profile, AStartForgetsWhatCameBeforeAndOpenSpansAreLeftOut) {
  const ProfileOff off;
  profile::start();
  { const profile::Span done("done before"); }
  {
    const profile::Span across("open across the start");
    profile::start();
    // The new profile has no span open on this thread: work handed out is not named after it.
    EXPECT_EQ(profile::current_name(), nullptr);
  }
  const profile::Span open("still open");
  { const profile::Span fresh("fresh"); }
  const auto events = profile::events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_STREQ(events[0].name, "fresh");
}

TEST(Profile, WritesAChromeTrace) {
  const ProfileOff off;
  testing::TempDir dir;
  profile::start();
  {
    const profile::Span stage("load \"quoted\" trace", 0);
    std::thread([] { const profile::Span w("worker's", 5, 1, profile::Kind::kInOrder); }).join();
  }
  ASSERT_TRUE(profile::write(dir.file("t.json"), {{"command", "chakraflow run x.yaml"}}).ok());
  EXPECT_FALSE(profile::on());
  { const profile::Span after("after write"); }
  EXPECT_TRUE(profile::events().size() == 2);  // nothing recorded once written

  simdjson::dom::parser parser;
  simdjson::dom::element doc = testing::load_json(parser, dir.file("t.json"));
  EXPECT_EQ(std::string_view(doc["otherData"]["command"]), "chakraflow run x.yaml");
  EXPECT_EQ(std::string_view(doc["displayTimeUnit"]), "ms");
  std::vector<std::string> rows, spans;
  double stage_end = 0, worker_begin = -1;
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    const std::string_view ph = e["ph"];
    if (ph == "M") {
      rows.emplace_back(std::string_view(e["args"]["name"]));
      continue;
    }
    ASSERT_EQ(ph, "X");
    spans.emplace_back(std::string_view(e["name"]));
    const double ts = e["ts"], dur = e["dur"];
    EXPECT_GE(ts, 0);
    EXPECT_GE(dur, 0);
    if (spans.back() == "load \"quoted\" trace") {
      EXPECT_EQ(int64_t(e["tid"]), 0);
      EXPECT_EQ(std::string_view(e["cat"]), "stage");
      EXPECT_EQ(int64_t(e["args"]["rank"]), 0);
      stage_end = ts + dur;
    } else {
      EXPECT_EQ(int64_t(e["tid"]), 1);
      EXPECT_EQ(std::string_view(e["cat"]), "in order");
      EXPECT_EQ(int64_t(e["args"]["rank"]), 5);
      EXPECT_EQ(int64_t(e["args"]["part"]), 1);
      worker_begin = ts;
    }
  }
  EXPECT_EQ(rows, (std::vector<std::string>{"main", "worker 1"}));
  EXPECT_EQ(spans, (std::vector<std::string>{"load \"quoted\" trace", "worker's"}));
  EXPECT_LE(worker_begin, stage_end);
  EXPECT_GE(worker_begin, 0);
}

}  // namespace
}  // namespace chakraflow
