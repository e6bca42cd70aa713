#include "stages/common/profile.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <utility>

#include "stages/common/file_io.h"
#include "stages/common/json_writer.h"

namespace chakraflow::profile {

namespace detail {
std::atomic<bool> recording{false};
}  // namespace detail

// A thread's spans. Its own thread appends and ends them; write() reads them from another thread
// once the work is done: the lock orders the two (uncontended while recording).
struct ThreadLog {
  std::mutex mutex;
  uint32_t thread = 0;
  uint64_t generation = 0;  // the start() its events belong to
  std::vector<Event> events;
  std::vector<size_t> open;  // indices of the open spans, innermost last
};

namespace {

// Every thread's log, kept for the process's life (a thread that ends leaves its spans).
struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<ThreadLog>> logs;
  ThreadLog* starter = nullptr;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: threads may record until the end
  return *r;
}

// The current profile: its start() and its zero (the steady clock's nanoseconds), read by every
// span without a lock.
std::atomic<uint64_t> g_generation{0};
std::atomic<int64_t> g_zero_ns{0};

int64_t clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

thread_local ThreadLog* tls_log = nullptr;

// The calling thread's log (registered on first use).
ThreadLog* this_thread_log() {
  if (tls_log != nullptr) return tls_log;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.logs.push_back(std::make_unique<ThreadLog>());
  tls_log = r.logs.back().get();
  tls_log->thread = static_cast<uint32_t>(r.logs.size() - 1);
  return tls_log;
}

}  // namespace

void start() {
  Registry& r = registry();
  ThreadLog* log = this_thread_log();
  std::lock_guard<std::mutex> lock(r.mutex);
  g_zero_ns.store(clock_ns(), std::memory_order_relaxed);
  // Release: a span that reads the new generation reads the new zero.
  g_generation.fetch_add(1, std::memory_order_release);
  r.starter = log;
  detail::recording.store(true, std::memory_order_relaxed);
}

void Span::begin(const char* name, int64_t rank, int64_t part, Kind kind) {
  const uint64_t generation = g_generation.load(std::memory_order_acquire);
  const int64_t zero = g_zero_ns.load(std::memory_order_relaxed);
  ThreadLog* log = this_thread_log();
  std::lock_guard<std::mutex> lock(log->mutex);
  if (log->generation != generation) {
    log->events.clear();
    log->open.clear();
    log->generation = generation;
  }
  if (rank < 0 && !log->open.empty()) rank = log->events[log->open.back()].rank;
  Event e;
  e.name = name;
  e.rank = rank;
  e.part = part;
  e.kind = kind;
  e.thread = log->thread;
  e.begin_ns = clock_ns() - zero;
  index_ = log->events.size();
  log->events.push_back(e);
  log->open.push_back(index_);
  log_ = log;
  generation_ = generation;
}

void Span::end() {
  const int64_t now = clock_ns() - g_zero_ns.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(log_->mutex);
  // A span begun before a start() is dropped with what that start() forgot.
  if (log_->generation != generation_ || index_ >= log_->events.size()) {
    return;
  }
  Event& e = log_->events[index_];
  e.end_ns = std::max(now, e.begin_ns);
  if (!log_->open.empty() && log_->open.back() == index_) log_->open.pop_back();
}

namespace {

// The name and rank of the calling thread's innermost open span of the current profile (null and
// -1 when none).
std::pair<const char*, int64_t> innermost_open() {
  if (!on() || tls_log == nullptr) return {nullptr, -1};
  std::lock_guard<std::mutex> lock(tls_log->mutex);
  if (tls_log->open.empty() ||
      tls_log->generation != g_generation.load(std::memory_order_acquire)) {
    return {nullptr, -1};
  }
  const Event& e = tls_log->events[tls_log->open.back()];
  return {e.name, e.rank};
}

}  // namespace

const char* current_name() {
  return innermost_open().first;
}

int64_t current_rank() {
  return innermost_open().second;
}

std::vector<Event> events() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<Event> all;
  for (auto& log : r.logs) {
    std::lock_guard<std::mutex> log_lock(log->mutex);
    if (log->generation != g_generation.load(std::memory_order_acquire)) continue;
    for (const Event& e : log->events) {
      if (e.end_ns >= 0) all.push_back(e);
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Event& a, const Event& b) {
    return a.thread != b.thread ? a.thread < b.thread : a.begin_ns < b.begin_ns;
  });
  return all;
}

Status write(const std::string& path,
             const std::vector<std::pair<std::string, std::string>>& about) {
  detail::recording.store(false, std::memory_order_relaxed);
  const std::vector<Event> all = events();
  uint32_t starter = 0;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.starter != nullptr) starter = r.starter->thread;
  }
  // Rows numbered in the order of their first span, the starting thread first: the same
  // numbering for the same work whatever threads the process made before.
  std::vector<uint32_t> threads;
  threads.push_back(starter);
  for (const Event& e : all) {
    if (std::find(threads.begin(), threads.end(), e.thread) == threads.end()) {
      threads.push_back(e.thread);
    }
  }
  auto row = [&threads](uint32_t thread) {
    return static_cast<int64_t>(std::find(threads.begin(), threads.end(), thread) -
                                threads.begin());
  };
  using L = JsonWriter::Layout;
  JsonWriter w;
  w.begin_object();
  w.key("traceEvents").begin_array();
  for (size_t k = 0; k < threads.size(); ++k) {
    w.begin_object(L::kOneLine);
    w.member("name", "thread_name").member("ph", "M").member("pid", 1);
    w.member("tid", static_cast<int64_t>(k));
    w.key("args").begin_object(L::kOneLine);
    w.member("name", k == 0 ? std::string("main") : "worker " + std::to_string(k));
    w.end().end();
  }
  std::vector<const Event*> ordered;
  ordered.reserve(all.size());
  for (const Event& e : all) ordered.push_back(&e);
  std::stable_sort(ordered.begin(), ordered.end(), [&row](const Event* a, const Event* b) {
    const int64_t ra = row(a->thread), rb = row(b->thread);
    return ra != rb ? ra < rb : a->begin_ns < b->begin_ns;
  });
  for (const Event* e : ordered) {
    w.begin_object(L::kOneLine);
    const char* cat = e->kind == Kind::kBatch     ? "batch"
                      : e->kind == Kind::kInOrder ? "in order"
                                                  : "stage";
    w.member("name", e->name).member("cat", cat).member("ph", "X");
    w.member("pid", 1).member("tid", row(e->thread));
    w.key("ts").fixed(static_cast<double>(e->begin_ns) / 1e3, 3);
    w.key("dur").fixed(static_cast<double>(e->end_ns - e->begin_ns) / 1e3, 3);
    if (e->rank >= 0 || e->part >= 0) {
      w.key("args").begin_object(L::kOneLine);
      if (e->rank >= 0) w.member("rank", e->rank);
      if (e->part >= 0) w.member("part", e->part);
      w.end();
    }
    w.end();
  }
  w.end();
  w.member("displayTimeUnit", "ms");
  w.key("otherData").begin_object();
  for (const auto& [key, value] : about) w.member(key, value);
  w.end();
  w.end();
  std::string text = w.take();
  text.push_back('\n');
  return write_file_atomically(path, text);
}

}  // namespace chakraflow::profile
