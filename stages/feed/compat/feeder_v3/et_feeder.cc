#include "stages/feed/compat/feeder_v3/et_feeder.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "stages/et/et_io.h"
#include "stages/et/node_record.h"
#include "stages/et/node_scan.h"
#include "stages/feed/compat/record_loader.h"
#include "stages/feed/et_index.h"

namespace Chakra {
namespace FeederV3 {
namespace {

std::atomic<uint64_t> g_feeder_count{0};

enum : uint8_t { kPending = 0, kFree = 1, kTaken = 2, kFinished = 3 };

}  // namespace

struct ETFeeder::Impl {
  std::unique_ptr<chakraflow::EtIndex> index;
  // Decoded records of recently looked-up nodes, direct-mapped by dense index: bounded memory,
  // and the nodes a simulator handles together (a free set, a node and its children) hit.
  std::vector<std::shared_ptr<const chakraflow::NodeRecord>> cache;
  std::vector<uint32_t> cache_index;
  std::string scratch;
};

struct DependancyResolver::Graph {
  const chakraflow::EtIndex* index = nullptr;
  std::vector<uint32_t> waiting_on;  // parents not finished yet
  std::vector<uint8_t> state;
};

// ---------------------------------------------------------------------------------------------

ETFeeder::ETFeeder(const std::string& file_path)
    : ETFeeder(file_path, USE_DATA_DEPS, USE_CTRL_DEPS, DEFAULT_ETFEEDER_CACHE_SIZE) {}

ETFeeder::ETFeeder(const std::string& file_path, bool data_deps, bool ctrl_deps, size_t cache_nodes)
    : impl_(std::make_unique<Impl>()), feeder_id_(g_feeder_count++) {
  if (!data_deps && !ctrl_deps) {
    throw std::runtime_error(
        "Should not create a dependancy resolver that resolves neither data nor control "
        "dependancy");
  }
  auto file = chakraflow::EtFile::open(file_path);  // the file's one open
  if (!file.ok()) throw std::runtime_error("Failed to open file " + file_path);
  chakraflow::EtIndexOptions options;
  options.data_deps = data_deps;
  options.ctrl_deps = ctrl_deps;
  auto index = chakraflow::EtIndex::build(std::move(*file), options);
  if (!index.ok()) throw std::runtime_error(index.status().message());
  impl_->index = std::move(*index);
  const chakraflow::EtIndex& x = *impl_->index;
  if (!x.metadata().empty() && !global_metadata.ParseFromString(x.metadata())) {
    throw std::runtime_error(file_path + ": record #0 does not parse as a GlobalMetadata");
  }
  const size_t slots = std::max<size_t>(1, std::min<size_t>(cache_nodes, x.size()));
  impl_->cache.resize(slots);
  impl_->cache_index.assign(slots, chakraflow::EtIndex::kNoIndex);

  auto graph = std::make_unique<DependancyResolver::Graph>();
  graph->index = &x;
  graph->waiting_on.resize(x.size());
  graph->state.assign(x.size(), kPending);
  for (uint32_t i = 0; i < x.size(); ++i) {
    graph->waiting_on[i] = x.parent_count(i);
    if (graph->waiting_on[i] == 0) {
      graph->state[i] = kFree;
      dependancy_resolver_.free_.insert(x.id(i));
    }
  }
  dependancy_resolver_.graph_ = std::move(graph);
  if (x.dangling_dependencies() > 0) {
    std::string ids;
    for (uint64_t id : x.dangling_examples()) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
    std::fprintf(stderr,
                 "chakraflow FeederV3: %s: %llu dependencies on ids that are no node of the trace "
                 "(%s%s) are ignored\n",
                 file_path.c_str(), static_cast<unsigned long long>(x.dangling_dependencies()),
                 ids.c_str(), x.dangling_examples().size() >= 8 ? ", ..." : "");
  }
  if (x.size() > 0 && dependancy_resolver_.free_.empty()) {
    throw std::runtime_error(
        file_path + ": no node is free of dependencies: " + dependancy_resolver_.stallReport());
  }
}

ETFeeder::~ETFeeder() = default;

std::shared_ptr<const chakraflow::NodeRecord> ETFeeder::record(NodeId node_id) {
  const chakraflow::EtIndex& x = *impl_->index;
  const uint32_t i = x.index_of(node_id);
  if (i == chakraflow::EtIndex::kNoIndex) {
    throw std::runtime_error("Node " + std::to_string(node_id) + " not found in index (" +
                             x.path() + " has no node with this id)");
  }
  const size_t slot = i % impl_->cache.size();
  if (impl_->cache_index[slot] == i) return impl_->cache[slot];
  std::shared_ptr<const chakraflow::NodeRecord> record =
      chakraflow::compat::load_node_record(x, i, impl_->scratch);
  impl_->cache[slot] = record;
  impl_->cache_index[slot] = i;
  return record;
}

std::shared_ptr<ETFeederNode> ETFeeder::lookupNode(const NodeId& node_id) {
  return std::make_shared<ETFeederNode>(*this, node_id);
}

bool ETFeeder::hasNodesToIssue() {
  return !dependancy_resolver_.get_dependancy_free_nodes().empty();
}

std::shared_ptr<ETFeederNode> ETFeeder::getNextIssuableNode() {
  const auto& free = dependancy_resolver_.get_dependancy_free_nodes();
  if (free.empty()) return nullptr;
  const NodeId node_id = *std::min_element(free.begin(), free.end());
  dependancy_resolver_.take_node(node_id);
  return lookupNode(node_id);
}

void ETFeeder::pushBackIssuableNode(const NodeId& node_id) {
  dependancy_resolver_.push_back_node(node_id);
}

void ETFeeder::freeChildrenNodes(const NodeId& node_id) {
  dependancy_resolver_.finish_node(node_id);
}

void ETFeeder::addNode(std::shared_ptr<ETFeederNode> /*node*/) {
  throw std::runtime_error(
      "For offloaded ETFeeder, the graph is static and readonly, and addNode is not supported");
}

void ETFeeder::removeNode(const NodeId& /*node_id*/) {}

const std::string& ETFeeder::path() const {
  return impl_->index->path();
}

uint64_t ETFeeder::nodeCount() const {
  return impl_->index->size();
}

bool ETFeeder::hasNode(NodeId node_id) const {
  return impl_->index->index_of(node_id) != chakraflow::EtIndex::kNoIndex;
}

uint64_t ETFeeder::danglingDependencies() const {
  return impl_->index->dangling_dependencies();
}

uint64_t ETFeeder::memoryBytes() const {
  uint64_t bytes = impl_->index->memory_bytes() + impl_->cache.capacity() * 20;
  for (const auto& r : impl_->cache) {
    if (r) bytes += sizeof(*r) + r->raw().capacity() + r->attr_count() * 16;
  }
  const auto& g = *dependancy_resolver_.graph_;
  return bytes + g.waiting_on.capacity() * 4 + g.state.capacity();
}

// ---------------------------------------------------------------------------------------------

DependancyResolver::DependancyResolver() = default;
DependancyResolver::~DependancyResolver() = default;

uint32_t DependancyResolver::index_or_throw(NodeId node, const char* call) const {
  const uint32_t i = graph_->index->index_of(node);
  if (i == chakraflow::EtIndex::kNoIndex) {
    throw std::out_of_range(std::string(call) + "(" + std::to_string(node) +
                            "): " + graph_->index->path() + " has no node " + std::to_string(node));
  }
  return i;
}

void DependancyResolver::take_node(const NodeId& node) {
  const uint32_t i = graph_->index->index_of(node);
  if (i == chakraflow::EtIndex::kNoIndex || graph_->state[i] != kFree) {
    throw std::runtime_error("Node is not dependancy free or already taken/released (take_node(" +
                             std::to_string(node) + "))");
  }
  graph_->state[i] = kTaken;
  free_.erase(node);
  ongoing_.insert(node);
}

void DependancyResolver::push_back_node(const NodeId& node) {
  const uint32_t i = graph_->index->index_of(node);
  if (i == chakraflow::EtIndex::kNoIndex || graph_->state[i] != kTaken) {
    throw std::runtime_error("Node is not taken (push_back_node(" + std::to_string(node) + "))");
  }
  graph_->state[i] = kFree;
  ongoing_.erase(node);
  free_.insert(node);
}

void DependancyResolver::finish_node(const NodeId& node) {
  const chakraflow::EtIndex& x = *graph_->index;
  const uint32_t i = x.index_of(node);
  if (i == chakraflow::EtIndex::kNoIndex || graph_->state[i] != kTaken) {
    throw std::runtime_error("Node is not taken (finish_node(" + std::to_string(node) + "))");
  }
  graph_->state[i] = kFinished;
  ongoing_.erase(node);
  ++finished_;
  for (const uint32_t* c = x.children_begin(i); c != x.children_end(i); ++c) {
    if (--graph_->waiting_on[*c] == 0 && graph_->state[*c] == kPending) {
      graph_->state[*c] = kFree;
      free_.insert(x.id(*c));
    }
  }
  if (free_.empty() && ongoing_.empty()) report_stall_once();
}

void DependancyResolver::resolve_dependancy_free_nodes() {
  if (finished_ > 0 || !ongoing_.empty()) {
    throw std::runtime_error(
        "resolve_dependancy_free_nodes after initialization is not supported yet!");
  }
}

std::unordered_set<NodeId> DependancyResolver::get_children(NodeId node) const {
  const chakraflow::EtIndex& x = *graph_->index;
  const uint32_t i = index_or_throw(node, "get_children");
  std::unordered_set<NodeId> out;
  for (const uint32_t* c = x.children_begin(i); c != x.children_end(i); ++c) out.insert(x.id(*c));
  return out;
}

std::unordered_set<NodeId> DependancyResolver::get_parents(NodeId node) const {
  const chakraflow::EtIndex& x = *graph_->index;
  const uint32_t i = index_or_throw(node, "get_parents");
  std::unordered_set<NodeId> out;
  if (graph_->waiting_on[i] == 0) return out;
  // Parents are not stored: read the node's dependencies from its record.
  std::string raw;
  chakraflow::NodeHeader header;
  std::vector<NodeId> data_deps;
  std::vector<NodeId> ctrl_deps;
  if (!x.read_record(i, &raw).ok() || !scan_node(raw, &header, &data_deps, &ctrl_deps).ok()) {
    throw std::runtime_error(x.path() + ": cannot read node " + std::to_string(node) + " again");
  }
  data_deps.insert(data_deps.end(), ctrl_deps.begin(), ctrl_deps.end());
  for (NodeId p : data_deps) {
    const uint32_t pi = x.index_of(p);
    if (pi != chakraflow::EtIndex::kNoIndex && graph_->state[pi] != kFinished &&
        std::binary_search(x.children_begin(pi), x.children_end(pi), i)) {
      out.insert(p);
    }
  }
  return out;
}

uint64_t DependancyResolver::node_count() const {
  return graph_->index->size();
}

bool DependancyResolver::stalled() const {
  return free_.empty() && ongoing_.empty() && finished_ < graph_->index->size();
}

std::string DependancyResolver::stallReport() const {
  const chakraflow::EtIndex& x = *graph_->index;
  const uint64_t left = x.size() - finished_ - free_.size() - ongoing_.size();
  if (left == 0) return std::string();
  // Some waiting nodes, each with one unfinished parent (that parent waits too: a cycle, or a
  // node that depends on itself).
  std::string examples;
  int shown = 0;
  for (uint32_t p = 0; p < x.size() && shown < 4; ++p) {
    if (graph_->state[p] != kPending) continue;
    for (const uint32_t* c = x.children_begin(p); c != x.children_end(p) && shown < 4; ++c) {
      if (graph_->state[*c] != kPending) continue;
      examples += (shown ? "; " : "") + std::string("node ") + std::to_string(x.id(*c)) +
                  " waits on node " + std::to_string(x.id(p));
      ++shown;
      break;
    }
  }
  return std::to_string(left) + " node" + (left == 1 ? "" : "s") +
         " can never be issued (they wait on each other: a dependency cycle, or a node that "
         "depends on itself): " +
         examples;
}

void DependancyResolver::report_stall_once() {
  if (stall_reported_ || !stalled()) return;
  stall_reported_ = true;
  std::fprintf(stderr, "chakraflow FeederV3: %s: stalled: %s\n", graph_->index->path().c_str(),
               stallReport().c_str());
}

}  // namespace FeederV3
}  // namespace Chakra
