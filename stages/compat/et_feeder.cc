#include "stages/compat/et_feeder.h"

#include "stages/compat/node_record.h"
#include "stages/et_feeder.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <unordered_map>

namespace Chakra {

// Mirrors the nodes the core feeder holds as Chakra's object graph: an ETFeederNode (with its
// parsed protobuf) per node read. Children are linked as Chakra links them: to each parent still
// held when the child is read, or when the parent is read later (forward reference).
class ETFeeder::Mirror : public chakraflow::FeederObserver {
 public:
  Mirror(std::string path, const chakraflow::EtFeeder* core, ETFeederNode::RecordKey key)
      : path_(std::move(path)), core_(core), key_(key) {
    // Chakra's window is read at once: room for its first 65,536 nodes.
    const auto expected = static_cast<size_t>(std::min<uint64_t>(core->options().window, 1 << 16));
    live.reserve(expected);
    graph.reserve(expected);
  }

  void on_read(const chakraflow::FeederNode& n) override {
    auto record = std::make_shared<chakraflow::compat::NodeRecord>();
    chakraflow::Status decoded = chakraflow::compat::NodeRecord::decode(n.raw, record.get());
    if (!decoded.ok() && parse_error.empty()) {
      parse_error = path_ + ": record #" + std::to_string(n.record_index) + " at byte " +
                    std::to_string(n.byte_offset) + ": " + decoded.message();
    }
    auto node = std::make_shared<ETFeederNode>(key_, std::move(record));
    // Earlier nodes that named this one as a parent.
    if (auto it = orphans_.find(n.id); it != orphans_.end()) {
      for (auto& child : it->second) ETFeeder::link(*node, std::move(child));
      orphans_.erase(it);
    }
    chakraflow::NodeHeader header;
    parents_.clear();
    ctrl_.clear();
    // Cannot fail: the core scanned the same bytes before handing them over.
    (void)chakraflow::scan_node(n.raw, &header, &parents_,
                                core_->options().ctrl_deps ? &ctrl_ : nullptr);
    parents_.insert(parents_.end(), ctrl_.begin(), ctrl_.end());
    std::sort(parents_.begin(), parents_.end());
    parents_.erase(std::unique(parents_.begin(), parents_.end()), parents_.end());
    for (uint64_t parent : parents_) {
      if (auto it = live.find(parent); it != live.end()) {
        ETFeeder::link(*it->second, node);
      } else if (parent == n.id) {
        ETFeeder::link(*node, node);
      } else if (!core_->completed(parent)) {
        orphans_[parent].push_back(node);  // not read yet
      }
    }
    live[n.id] = node;
    graph[n.id] = std::move(node);
  }
  void on_free(uint64_t id) override { live.erase(id); }

  // Nodes the core holds (in the graph, or removed with children waiting).
  std::unordered_map<uint64_t, std::shared_ptr<ETFeederNode>> live;
  // What lookupNode sees: Chakra's dep_graph_.
  std::unordered_map<uint64_t, std::shared_ptr<ETFeederNode>> graph;
  std::string parse_error;

  void clear_links() {
    for (auto& [id, node] : live) ETFeeder::unlink(*node);
    orphans_.clear();
  }

 private:
  std::string path_;
  const chakraflow::EtFeeder* core_;
  ETFeederNode::RecordKey key_;
  std::unordered_map<uint64_t, std::vector<std::shared_ptr<ETFeederNode>>> orphans_;
  std::vector<uint64_t> parents_;
  std::vector<uint64_t> ctrl_;
};

void ETFeeder::link(ETFeederNode& parent, std::shared_ptr<ETFeederNode> child) {
  parent.add_child_unchecked(std::move(child));
}

void ETFeeder::unlink(ETFeederNode& node) {
  node.children_vec_.clear();
}

ETFeeder::ETFeeder(std::string filename) : ETFeeder(std::move(filename), chakra_options()) {}

ETFeeder::ETFeeder(std::string filename, const ETFeederOptions& compat_options) {
  chakraflow::FeederOptions options;
  options.window = compat_options.window;
  options.refill_below = compat_options.refill_below;
  options.ctrl_deps = compat_options.ctrl_deps;
  auto core = chakraflow::EtFeeder::open(filename, options);
  if (!core.ok()) {
    throw std::runtime_error("Failed to open trace file: " + filename + " (" +
                             core.status().message() + ")");
  }
  core_ = std::move(*core);
  mirror_ = std::make_unique<Mirror>(filename, core_.get(), ETFeederNode::RecordKey());
  core_->set_observer(mirror_.get());
  core_->state();  // reads the first window, as Chakra's constructor does
  throw_if_failed();
}

ETFeeder::~ETFeeder() {
  // Nodes never completed (a cycle) may own each other through their children lists.
  if (mirror_) mirror_->clear_links();
}

void ETFeeder::throw_if_failed() {
  if (!mirror_->parse_error.empty()) throw std::runtime_error(mirror_->parse_error);
  if (!core_->error().ok()) throw std::runtime_error(core_->error().message());
}

void ETFeeder::report_stall_once() {
  if (stall_reported_ || core_->in_flight() > 0 || core_->ready() > 0) return;
  if (core_->state() != chakraflow::FeedState::kStalled) return;
  stall_reported_ = true;
  std::fprintf(stderr, "chakraflow ETFeeder: %s: stalled: %s\n", core_->path().c_str(),
               core_->stall_report().to_string().c_str());
}

void ETFeeder::addNode(std::shared_ptr<ETFeederNode> node) {
  const uint64_t id = node->id();
  mirror_->graph[id] = std::move(node);
}

void ETFeeder::removeNode(uint64_t node_id) {
  mirror_->graph.erase(node_id);
  if (core_->find(node_id) != nullptr) {
    chakraflow::Status removed = core_->remove(node_id);
    (void)removed;  // cannot fail: the node is in the graph
  }
  report_stall_once();
  throw_if_failed();
}

bool ETFeeder::hasNodesToIssue() {
  if (!mirror_->graph.empty()) return true;
  core_->state();  // nothing held: read on, if the file has more
  throw_if_failed();
  return !mirror_->graph.empty();
}

std::shared_ptr<ETFeederNode> ETFeeder::getNextIssuableNode() {
  const chakraflow::FeederNode* node = core_->issue();
  throw_if_failed();
  if (node == nullptr) {
    report_stall_once();
    return nullptr;
  }
  return mirror_->live.at(node->id);
}

void ETFeeder::pushBackIssuableNode(uint64_t node_id) {
  if (core_->find(node_id) == nullptr) {
    throw std::out_of_range("pushBackIssuableNode(" + std::to_string(node_id) + "): node " +
                            std::to_string(node_id) + " is not in the graph");
  }
  chakraflow::Status queued = core_->make_ready(node_id);
  (void)queued;  // cannot fail: the node is in the graph
}

std::shared_ptr<ETFeederNode> ETFeeder::lookupNode(uint64_t node_id) {
  auto it = mirror_->graph.find(node_id);
  if (it == mirror_->graph.end()) {
    throw std::out_of_range("lookupNode(" + std::to_string(node_id) + "): node " +
                            std::to_string(node_id) +
                            " is not in the graph (not loaded yet, or removed)");
  }
  return it->second;
}

void ETFeeder::freeChildrenNodes(uint64_t node_id) {
  chakraflow::Status released = core_->release_children(node_id);
  if (!released.ok() && mirror_->graph.count(node_id) == 0) {
    throw std::out_of_range("freeChildrenNodes(" + std::to_string(node_id) +
                            "): " + released.message());
  }
}

bool ETFeeder::isDone() {
  return core_->state() == chakraflow::FeedState::kDone;
}

bool ETFeeder::isStalled() {
  return core_->state() == chakraflow::FeedState::kStalled;
}

std::string ETFeeder::stallReport() {
  if (core_->state() != chakraflow::FeedState::kStalled) return std::string();
  return core_->stall_report().to_string();
}

}  // namespace Chakra
