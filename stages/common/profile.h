// Profile: where a command's time went, span by span. Named spans (a stage, a piece of one, a
// batch a worker ran for it) with the thread that ran them and the rank they were for, recorded
// while a profile is on (the commands' --profile FILE) and written as a Chrome trace: one row per
// thread in chrome://tracing or ui.perfetto.dev, each span a complete event ("ph":"X").
//
// Off (the default) a span costs one relaxed atomic load. On, a span takes a lock of its own
// thread's (uncontended) twice and 48 bytes: spans are stages and batches, hundreds to a few
// thousand per rank, not per node. The times are the run's: a profile is a measurement, not an
// output of the run (two runs give two profiles; the run's outputs are the same bytes with or
// without one).
//
// Process-wide state, the one of the stages besides the temporary files' signal cleanup
// (file_io.h): a command starts the profile, any thread records into it, the command writes it
// when every span has ended (a span still open then is left out).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stages/common/status.h"

namespace chakraflow::profile {

namespace detail {
extern std::atomic<bool> recording;
}  // namespace detail

// Whether spans are being recorded.
inline bool on() {
  return detail::recording.load(std::memory_order_relaxed);
}

// Starts recording, the profile's zero being now (what was recorded before is dropped).
void start();

// One span: from construction to destruction on the constructing thread. `name` must outlive the
// profile (a string literal); a null name records nothing. `rank` -1: the rank of the span around
// it on this thread, if any (a stage's pieces and batches take their stage's). `part` >= 0 tells
// pieces of one name apart (a shard's number); -1 none.
enum class Kind : uint8_t {
  kStage,    // a stage or a piece of one (cat "stage")
  kBatch,    // a batch a worker ran for the span `name` of the thread that handed the work out
             // (cat "batch"; see current_name())
  kInOrder,  // the same work's in-order step for a batch: a writer's write (cat "in order")
};
class Span {
 public:
  explicit Span(const char* name, int64_t rank = -1, int64_t part = -1, Kind kind = Kind::kStage) {
    if (name != nullptr && on()) begin(name, rank, part, kind);
  }
  ~Span() {
    if (log_ != nullptr) end();
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  void begin(const char* name, int64_t rank, int64_t part, Kind kind);
  void end();
  struct ThreadLog* log_ = nullptr;
  size_t index_ = 0;
  uint64_t generation_ = 0;  // the start() it was begun under
};

// The name and rank of the innermost span open on the calling thread (nullptr and -1 when none,
// or off): what work handed to other threads is named after (a batch's: its stage's).
const char* current_name();
int64_t current_rank();

// A recorded span, as written.
struct Event {
  const char* name = nullptr;
  int64_t rank = -1;
  int64_t part = -1;
  Kind kind = Kind::kStage;
  uint32_t thread = 0;   // 0: the thread that started the profile, then in order of first span
  int64_t begin_ns = 0;  // from start()
  int64_t end_ns = -1;   // -1: still open
};

// What was recorded so far, every thread's, spans still open left out: by thread, then begin.
std::vector<Event> events();

// Stops recording and writes what was recorded to `path` (replaced atomically; "-" for standard
// output) as a Chrome trace JSON object: "traceEvents" (a name for each thread's row, then the
// spans, ts and dur in microseconds, args rank and part where given), "displayTimeUnit", and
// "otherData" with `about`'s keys and values (strings).
Status write(const std::string& path,
             const std::vector<std::pair<std::string, std::string>>& about = {});

}  // namespace chakraflow::profile
