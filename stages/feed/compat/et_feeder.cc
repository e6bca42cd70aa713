#include "stages/feed/compat/et_feeder.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "stages/et/et_io.h"
#include "stages/et/node_record.h"
#include "stages/feed/compat/child_source.h"
#include "stages/feed/compat/record_loader.h"
#include "stages/feed/et_feeder.h"  // StallReport
#include "stages/feed/et_index.h"

namespace Chakra {
namespace {

constexpr uint32_t kNever = UINT32_MAX;

enum : uint8_t {
  kPending = 0,  // read or not, waiting on parents
  kQueued = 1,   // ready, in the heap
  kIssued = 2,   // handed out by getNextIssuableNode, not removed
  kRemoved = 3,
};

}  // namespace

// The feeder's state over the trace's index. Positions are dense indexes in file order: node i is
// read once read_ > i.
struct ETFeeder::Impl : chakraflow::compat::ChildSource {
  std::string path;
  ETFeederOptions options;
  std::unique_ptr<chakraflow::EtIndex> index;
  uint32_t n = 0;
  uint32_t read = 0;              // nodes read (a prefix of the file)
  std::vector<uint32_t> waiting;  // parents not released yet (+1 per missing id)
  std::vector<uint8_t> state;
  std::vector<uint8_t> forced;     // queued by pushBackIssuableNode: not queued again
  std::vector<uint32_t> released;  // `read` when its children were freed, or kNever
  std::vector<uint32_t> reach;     // per prefix: the furthest parent it names (forward refs)
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> heap;  // ids (lazy)
  uint64_t queued = 0;
  uint64_t issued = 0;  // handed out, not removed nor pushed back
  uint64_t removed = 0;
  // Objects of the nodes handed out and not removed; addNode's nodes, for lookupNode only.
  std::unordered_map<uint64_t, std::shared_ptr<ETFeederNode>> objects;
  std::unordered_map<uint64_t, std::shared_ptr<ETFeederNode>> added;
  std::weak_ptr<Impl> self;
  std::string scratch;
  bool stall_reported = false;

  uint32_t index_of(uint64_t id) const { return index->index_of(id); }

  // Reads up to `target` nodes, then on to the parents they name that lie further (Chakra reads
  // on while a dependency is unresolved), and queues the new nodes that are ready.
  void read_to(uint64_t target) {
    uint32_t to = static_cast<uint32_t>(std::min<uint64_t>(target, n));
    while (to > read && !reach.empty() && reach[to - 1] >= to) to = reach[to - 1] + 1;
    for (uint32_t i = read; i < to; ++i) {
      if (waiting[i] == 0 && state[i] == kPending) queue(i);
    }
    read = std::max(read, to);
  }

  void queue(uint32_t i) {
    state[i] = kQueued;
    heap.push(index->id(i));
    ++queued;
  }

  // The object of node i: kept while the node is not removed (the same object for every call).
  std::shared_ptr<ETFeederNode> object(uint32_t i) {
    const uint64_t id = index->id(i);
    auto it = objects.find(id);
    if (it != objects.end()) return it->second;
    auto node = make_object(i);
    if (state[i] != kRemoved) objects.emplace(id, node);
    return node;
  }

  std::shared_ptr<ETFeederNode> make_object(uint32_t i) {
    return std::make_shared<ETFeederNode>(ETFeederNode::RecordKey(),
                                          chakraflow::compat::load_node_record(*index, i, scratch),
                                          std::weak_ptr<ChildSource>(self.lock()));
  }

  // The node `id` if it was read and not removed, else nullptr.
  uint32_t held(uint64_t id) const {
    const uint32_t i = index_of(id);
    if (i == chakraflow::EtIndex::kNoIndex || i >= read || state[i] == kRemoved) {
      return chakraflow::EtIndex::kNoIndex;
    }
    return i;
  }

  // Children linked as Chakra links them: read while the parent's children were not yet freed.
  std::vector<std::shared_ptr<ETFeederNode>> children_of(uint64_t id) override {
    std::vector<std::shared_ptr<ETFeederNode>> out;
    const uint32_t p = index_of(id);
    if (p == chakraflow::EtIndex::kNoIndex) return out;
    for (const uint32_t* c = index->children_begin(p); c != index->children_end(p); ++c) {
      if (*c < read && *c < released[p]) out.push_back(object(*c));
    }
    return out;
  }

  bool stalled() const { return read == n && queued == 0 && issued == 0 && removed < n; }

  void report_stall_once() {
    if (stall_reported || !stalled()) return;
    stall_reported = true;
    std::fprintf(stderr, "chakraflow ETFeeder: %s: stalled: %s\n", path.c_str(),
                 stall_report().to_string().c_str());
  }

  chakraflow::StallReport stall_report() const;
};

chakraflow::StallReport ETFeeder::Impl::stall_report() const {
  using chakraflow::StallReport;
  StallReport report;
  const chakraflow::EtIndex& x = *index;
  std::vector<uint8_t> waits(n, 0);
  for (uint32_t i = 0; i < read; ++i) {
    if (state[i] == kPending && waiting[i] > 0) {
      waits[i] = 1;
      ++report.waiting_nodes;
    }
  }
  // Missing ids, and removed nodes whose children were never freed, with who waits on them.
  std::map<uint64_t, StallReport::Blocker> missing;
  for (const auto& [missing_id, child] : x.dangling_edges()) {
    if (!waits[child]) continue;
    StallReport::Blocker& b = missing[missing_id];
    b.id = missing_id;
    ++b.waiting;
    if (b.examples.size() < StallReport::kMaxExamples) b.examples.push_back(x.id(child));
  }
  for (auto& [id, b] : missing) report.missing.push_back(std::move(b));
  for (uint32_t p = 0; p < read; ++p) {
    if (state[p] != kRemoved || released[p] != kNever) continue;
    StallReport::Blocker b;
    b.id = x.id(p);
    for (const uint32_t* c = x.children_begin(p); c != x.children_end(p); ++c) {
      if (!waits[*c]) continue;
      ++b.waiting;
      if (b.examples.size() < StallReport::kMaxExamples) b.examples.push_back(x.id(*c));
    }
    if (b.waiting > 0) report.unreleased.push_back(std::move(b));
  }
  // Cycles among the waiting nodes, following child links (each node depends on the one before).
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  std::vector<uint32_t> path;
  std::vector<const uint32_t*> next;
  for (uint32_t s = 0; s < n && report.cycles.size() < StallReport::kMaxExamples; ++s) {
    if (!waits[s] || color[s]) continue;
    path.assign(1, s);
    next.assign(1, x.children_begin(s));
    color[s] = 1;
    while (!path.empty()) {
      const uint32_t u = path.back();
      const uint32_t* c = next.back();
      if (c == x.children_end(u)) {
        color[u] = 2;
        path.pop_back();
        next.pop_back();
        continue;
      }
      ++next.back();
      if (!waits[*c]) continue;
      if (color[*c] == 0) {
        color[*c] = 1;
        path.push_back(*c);
        next.push_back(x.children_begin(*c));
      } else if (color[*c] == 1 && report.cycles.size() < StallReport::kMaxExamples) {
        auto from = std::find(path.begin(), path.end(), *c);
        std::vector<uint64_t> cycle;
        for (auto it = from; it != path.end(); ++it) cycle.push_back(x.id(*it));
        std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
        report.cycles.push_back(std::move(cycle));
      }
    }
  }
  std::sort(report.cycles.begin(), report.cycles.end());
  return report;
}

// ---------------------------------------------------------------------------------------------

ETFeeder::ETFeeder(std::string filename) : ETFeeder(std::move(filename), chakra_options()) {}

ETFeeder::ETFeeder(std::string filename, const ETFeederOptions& options)
    : impl_(std::make_shared<Impl>()) {
  Impl& f = *impl_;
  f.self = impl_;
  f.path = filename;
  f.options = options;
  auto file = chakraflow::EtFile::open(filename);  // the file's one open
  if (!file.ok()) throw std::runtime_error("Failed to open trace file: " + filename);
  chakraflow::EtIndexOptions index_options;
  index_options.ctrl_deps = options.ctrl_deps;
  index_options.keep_dangling = true;
  auto index = chakraflow::EtIndex::build(std::move(*file), index_options);
  if (!index.ok()) {
    throw std::runtime_error("Failed to open trace file: " + filename + " (" +
                             index.status().message() + ")");
  }
  f.index = std::move(*index);
  const chakraflow::EtIndex& x = *f.index;
  f.n = x.size();
  f.waiting.resize(f.n);
  for (uint32_t i = 0; i < f.n; ++i) f.waiting[i] = x.parent_count(i);
  for (const auto& [missing_id, child] : x.dangling_edges()) ++f.waiting[child];
  f.state.assign(f.n, kPending);
  f.forced.assign(f.n, 0);
  f.released.assign(f.n, kNever);
  const uint64_t window = std::max<uint64_t>(options.window, 1);
  if (window < f.n) {
    // Forward references: per prefix, the furthest parent a node of it names.
    f.reach.assign(f.n, 0);
    for (uint32_t p = 0; p < f.n; ++p) {
      for (const uint32_t* c = x.children_begin(p); c != x.children_end(p); ++c) {
        if (p > *c) f.reach[*c] = std::max(f.reach[*c], p);
      }
    }
    for (uint32_t i = 0; i < f.n; ++i) {
      f.reach[i] = std::max(f.reach[i], i);
      if (i > 0) f.reach[i] = std::max(f.reach[i], f.reach[i - 1]);
    }
  }
  f.read_to(window);
}

ETFeeder::~ETFeeder() = default;

void ETFeeder::addNode(std::shared_ptr<ETFeederNode> node) {
  const uint64_t id = node->id();
  impl_->added[id] = std::move(node);
}

void ETFeeder::removeNode(uint64_t node_id) {
  Impl& f = *impl_;
  f.added.erase(node_id);
  const uint32_t i = f.held(node_id);
  if (i == chakraflow::EtIndex::kNoIndex) return;  // unknown or removed: a no-op, as in Chakra
  if (f.state[i] == kQueued) --f.queued;           // leaves the heap lazily
  if (f.state[i] == kIssued) --f.issued;
  f.state[i] = kRemoved;
  ++f.removed;
  f.objects.erase(node_id);
  // Chakra reads one more window when fewer than a window of nodes are ready.
  if (f.read < f.n && f.queued < f.options.window) f.read_to(uint64_t{f.read} + f.options.window);
  f.report_stall_once();
}

bool ETFeeder::hasNodesToIssue() {
  return impl_->removed < impl_->n || !impl_->added.empty();
}

std::shared_ptr<ETFeederNode> ETFeeder::getNextIssuableNode() {
  Impl& f = *impl_;
  while (true) {
    while (!f.heap.empty()) {
      const uint64_t id = f.heap.top();
      f.heap.pop();
      const uint32_t i = f.index_of(id);
      if (f.state[i] != kQueued) continue;  // removed, or an older entry of a re-queued node
      f.state[i] = kIssued;
      --f.queued;
      ++f.issued;
      return f.object(i);
    }
    // Every node read waits and none is in flight: reading on is the only way forward (Chakra
    // would have read on already, as its window loop runs while a dependency is unresolved).
    if (f.issued > 0 || f.read == f.n) break;
    f.read_to(uint64_t{f.read} + std::max<uint64_t>(f.options.window, 1));
  }
  f.report_stall_once();
  return nullptr;
}

void ETFeeder::pushBackIssuableNode(uint64_t node_id) {
  Impl& f = *impl_;
  const uint32_t i = f.held(node_id);
  if (i == chakraflow::EtIndex::kNoIndex) {
    throw std::out_of_range("pushBackIssuableNode(" + std::to_string(node_id) + "): node " +
                            std::to_string(node_id) + " is not in the graph");
  }
  if (f.state[i] == kQueued) return;
  if (f.state[i] == kIssued) --f.issued;
  f.forced[i] = 1;
  f.queue(i);
}

std::shared_ptr<ETFeederNode> ETFeeder::lookupNode(uint64_t node_id) {
  Impl& f = *impl_;
  if (auto it = f.added.find(node_id); it != f.added.end()) return it->second;
  const uint32_t i = f.held(node_id);
  if (i == chakraflow::EtIndex::kNoIndex) {
    throw std::out_of_range("lookupNode(" + std::to_string(node_id) + "): node " +
                            std::to_string(node_id) +
                            " is not in the graph (not loaded yet, or removed)");
  }
  return f.object(i);
}

void ETFeeder::freeChildrenNodes(uint64_t node_id) {
  Impl& f = *impl_;
  const uint32_t p = f.index_of(node_id);
  if (p == chakraflow::EtIndex::kNoIndex || p >= f.read) {
    throw std::out_of_range("freeChildrenNodes(" + std::to_string(node_id) + "): node " +
                            std::to_string(node_id) + " is not in the graph");
  }
  if (f.released[p] != kNever) return;  // once
  f.released[p] = f.read;
  const chakraflow::EtIndex& x = *f.index;
  for (const uint32_t* c = x.children_begin(p); c != x.children_end(p); ++c) {
    if (--f.waiting[*c] == 0 && *c < f.read && f.state[*c] == kPending && !f.forced[*c]) {
      f.queue(*c);
    }
  }
}

bool ETFeeder::isDone() {
  return impl_->removed == impl_->n;
}

bool ETFeeder::isStalled() {
  return impl_->stalled();
}

std::string ETFeeder::stallReport() {
  if (!impl_->stalled()) return std::string();
  return impl_->stall_report().to_string();
}

uint64_t ETFeeder::nodesRead() const {
  return impl_->read;
}

}  // namespace Chakra
