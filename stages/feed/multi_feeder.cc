#include "stages/feed/multi_feeder.h"

#include <oneapi/tbb/concurrent_priority_queue.h>
#include <oneapi/tbb/parallel_for.h>

#include <atomic>
#include <mutex>
#include <tuple>

namespace chakraflow {
namespace {

// concurrent_priority_queue pops the "largest" element under its comparator: make that the
// smallest (time, rank, id).
struct PopsLater {
  bool operator()(const ReadyNode& a, const ReadyNode& b) const {
    return std::tie(a.time, a.rank, a.id) > std::tie(b.time, b.rank, b.id);
  }
};

struct Rank {
  std::unique_ptr<EtFeeder> feeder;
  std::mutex mutex;
};

}  // namespace

struct MultiFeeder::Impl {
  std::vector<std::unique_ptr<Rank>> ranks;
  oneapi::tbb::concurrent_priority_queue<ReadyNode, PopsLater> queue;

  Rank& rank(uint32_t r) { return *ranks.at(r); }
};

MultiFeeder::MultiFeeder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MultiFeeder::~MultiFeeder() = default;

StatusOr<std::unique_ptr<MultiFeeder>> MultiFeeder::open(const std::vector<std::string>& paths,
                                                         const FeederOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->ranks.resize(paths.size());
  std::vector<Status> errors(paths.size());
  oneapi::tbb::parallel_for(size_t{0}, paths.size(), [&](size_t r) {
    auto feeder = EtFeeder::open(paths[r], options);
    if (!feeder.ok()) {
      errors[r] = feeder.status().with_context(fmt::format("rank {}", r));
      return;
    }
    impl->ranks[r] = std::make_unique<Rank>();
    impl->ranks[r]->feeder = std::move(*feeder);
  });
  for (Status& s : errors) {
    if (!s.ok()) return s;  // the lowest rank's error: deterministic
  }
  return std::unique_ptr<MultiFeeder>(new MultiFeeder(std::move(impl)));
}

size_t MultiFeeder::ranks() const {
  return impl_->ranks.size();
}

size_t MultiFeeder::release_ready() {
  std::atomic<size_t> released{0};
  oneapi::tbb::parallel_for(size_t{0}, impl_->ranks.size(), [&](size_t r) {
    Rank& rank = *impl_->ranks[r];
    std::lock_guard<std::mutex> lock(rank.mutex);
    size_t n = 0;
    while (const FeederNode* node = rank.feeder->issue()) {
      impl_->queue.push(ReadyNode{node->priority, static_cast<uint32_t>(r), node->id, node});
      ++n;
    }
    released += n;
  });
  return released.load();
}

bool MultiFeeder::try_pop(ReadyNode* out) {
  return impl_->queue.try_pop(*out);
}

bool MultiFeeder::queue_empty() const {
  return impl_->queue.empty();
}

Status MultiFeeder::complete(uint32_t rank, NodeId id, int64_t time) {
  if (rank >= impl_->ranks.size()) return Status::errorf("complete: no rank {}", rank);
  Rank& r = impl_->rank(rank);
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.feeder->complete(id, time);
}

Status MultiFeeder::complete_all(const std::vector<Completion>& completions) {
  // Bucket by rank, keeping each rank's order, then complete the ranks in parallel.
  std::vector<std::vector<const Completion*>> by_rank(impl_->ranks.size());
  for (const Completion& c : completions) {
    if (c.rank >= by_rank.size()) return Status::errorf("complete_all: no rank {}", c.rank);
    by_rank[c.rank].push_back(&c);
  }
  std::vector<Status> errors(by_rank.size());
  oneapi::tbb::parallel_for(size_t{0}, by_rank.size(), [&](size_t r) {
    if (by_rank[r].empty()) return;
    Rank& rank = *impl_->ranks[r];
    std::lock_guard<std::mutex> lock(rank.mutex);
    for (const Completion* c : by_rank[r]) {
      Status s = rank.feeder->complete(c->id, c->time);
      if (!s.ok()) {
        errors[r] = s.with_context(fmt::format("rank {}", r));
        return;
      }
    }
  });
  for (Status& s : errors) {
    if (!s.ok()) return s;
  }
  return Status();
}

Status MultiFeeder::push_back(uint32_t rank, NodeId id) {
  if (rank >= impl_->ranks.size()) return Status::errorf("push_back: no rank {}", rank);
  Rank& r = impl_->rank(rank);
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.feeder->push_back(id);
}

FeedState MultiFeeder::state() {
  bool stalled = false;
  bool running = false;
  for (auto& rank : impl_->ranks) {
    switch (rank->feeder->state()) {
      case FeedState::kError:
        return FeedState::kError;
      case FeedState::kStalled:
        stalled = true;
        break;
      case FeedState::kRunning:
        running = true;
        break;
      case FeedState::kDone:
        break;
    }
  }
  if (running || !impl_->queue.empty()) return FeedState::kRunning;
  return stalled ? FeedState::kStalled : FeedState::kDone;
}

std::vector<RankSummary> MultiFeeder::summary() {
  std::vector<RankSummary> out;
  for (auto& rank : impl_->ranks) {
    RankSummary s;
    s.path = rank->feeder->path();
    s.state = rank->feeder->state();
    s.stats = rank->feeder->stats();
    if (s.state == FeedState::kError) s.problem = rank->feeder->error().message();
    if (s.state == FeedState::kStalled) s.problem = rank->feeder->stall_report().to_string();
    out.push_back(std::move(s));
  }
  return out;
}

EtFeeder& MultiFeeder::feeder(uint32_t rank) {
  return *impl_->rank(rank).feeder;
}

}  // namespace chakraflow
