#include "stages/feed/et_feeder.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <unordered_map>
#include <utility>

#include "proto/et_def.pb.h"
#include "stages/common/key_index.h"
#include "stages/et/et_io.h"

namespace chakraflow {
namespace {

constexpr uint32_t kNil = KeyIndex::kNone;  // also "none" in the lists and slots below

// ---------------------------------------------------------------------------------------------
// The ids of completed nodes. Ids are grouped in blocks of 65,536; a block is a sorted array of
// 16-bit offsets while it holds few ids and a bitmap (8 KiB) beyond that: at most 1 bit per id of
// the id range for dense ids, 2 bytes per id for sparse ones.
class IdSet {
 public:
  __attribute__((always_inline)) bool contains(uint64_t id) const {
    if ((id >> 16) == cached_key_) {  // the common cases, inlined
      if (cached_bits_ != nullptr) {
        const auto low = static_cast<uint32_t>(id & 0xFFFF);
        return (cached_bits_[low >> 6] >> (low & 63)) & 1;
      }
      if (cached_ == nullptr) return false;
    }
    return contains_slow(id);
  }
  __attribute__((noinline)) bool contains_slow(uint64_t id) const {
    const Block* b = block(id >> 16);
    if (b == nullptr) return false;
    auto low = static_cast<uint16_t>(id & 0xFFFF);
    if (b->bits) return (b->bits[low >> 6] >> (low & 63)) & 1;
    return std::binary_search(b->sorted.begin(), b->sorted.end(), low);
  }
  void insert(uint64_t id) {
    const uint64_t key = id >> 16;
    Block* b = key == cached_key_ ? cached_ : nullptr;
    if (b == nullptr) {
      auto& slot = blocks_[key];
      if (!slot) slot = std::make_unique<Block>();
      b = slot.get();
      cached_key_ = key;
      cached_ = b;
      cached_bits_ = b->bits.get();
    }
    auto low = static_cast<uint16_t>(id & 0xFFFF);
    if (b->bits) {
      b->bits[low >> 6] |= uint64_t{1} << (low & 63);
      return;
    }
    if (b->sorted.empty() || b->sorted.back() < low) {
      b->sorted.push_back(low);  // ids mostly complete in increasing order
    } else {
      auto it = std::lower_bound(b->sorted.begin(), b->sorted.end(), low);
      if (*it == low) return;
      b->sorted.insert(it, low);
    }
    if (b->sorted.size() > kMaxSorted) {
      b->bits = std::make_unique<uint64_t[]>(kWords);  // zeroed
      for (uint16_t v : b->sorted) b->bits[v >> 6] |= uint64_t{1} << (v & 63);
      b->sorted = {};
      if (b == cached_) cached_bits_ = b->bits.get();
    }
  }
  size_t memory_bytes() const {
    size_t bytes = blocks_.size() * (sizeof(Block) + 32);
    for (const auto& [key, b] : blocks_) {
      bytes += b->bits ? kWords * 8 : b->sorted.capacity() * 2;
    }
    return bytes;
  }

 private:
  static constexpr size_t kWords = 65536 / 64;
  static constexpr size_t kMaxSorted = 512;
  struct Block {
    std::vector<uint16_t> sorted;
    std::unique_ptr<uint64_t[]> bits;
  };
  const Block* block(uint64_t key) const {
    if (key != cached_key_) {  // absent blocks are cached too: insert() updates the cache
      auto it = blocks_.find(key);
      cached_key_ = key;
      cached_ = it == blocks_.end() ? nullptr : it->second.get();
      cached_bits_ = cached_ ? cached_->bits.get() : nullptr;
    }
    return cached_;
  }
  std::unordered_map<uint64_t, std::unique_ptr<Block>> blocks_;
  mutable uint64_t cached_key_ = std::numeric_limits<uint64_t>::max();
  mutable Block* cached_ = nullptr;
  mutable const uint64_t* cached_bits_ = nullptr;  // cached_'s bitmap, if it has one
};

// Nodes in chunks that never move, so that `const FeederNode*` handed out stay valid.
class NodeStore {
 public:
  FeederNode& operator[](uint32_t i) { return chunks_[i >> kChunkBits][i & kChunkMask]; }
  const FeederNode& operator[](uint32_t i) const {
    return chunks_[i >> kChunkBits][i & kChunkMask];
  }
  uint32_t size() const { return size_; }
  uint32_t grow() {
    if (size_ == chunks_.size() << kChunkBits) {
      chunks_.push_back(std::make_unique<FeederNode[]>(size_t{1} << kChunkBits));
    }
    return size_++;
  }

 private:
  static constexpr uint32_t kChunkBits = 10;
  static constexpr uint32_t kChunkMask = (1u << kChunkBits) - 1;
  std::vector<std::unique_ptr<FeederNode[]>> chunks_;
  uint32_t size_ = 0;
};

enum class Stage : uint8_t { kWaiting, kReady, kInFlight, kDropped };

// Per-slot bookkeeping, kept apart from the node's bytes in a dense array.
//
// Dependency resolution watches one parent at a time: a node's dependencies not already completed
// when it is read are kept in order (`deps`); the node waits on deps[pos] only, listed among that
// parent's watchers (or, for an id not read yet, in the waiting map). When that parent releases
// its children, the node moves `pos` on past every dependency completed by then and watches the
// next one, or becomes ready. Each dependency is looked at once by a pointer that only moves
// forward, so resolution is linear in the number of dependencies, and a dependency listed twice is
// waited on once. Most dependencies of real traces are complete by the time they are looked at,
// which costs one bit test.
struct alignas(32) Meta {
  NodeId id = 0;
  uint32_t watchers = kNil;  // nodes waiting on this one: chunk list, newest first
  uint32_t pos = 0;          // the dependency waited on: deps[pos]
  uint32_t ticket = 0;       // ready-queue entries with another ticket are stale
  Stage stage = Stage::kWaiting;
  bool live = false;      // slot holds a node
  bool released = false;  // its children were released (its id is in the done set)
  bool removed = false;   // dropped from the graph
  bool watching = false;  // listed as a watcher of deps[pos]
};

// Lists of slots (watchers): chunks of 14 slots filling one cache line, newest chunk first.
class SlotLists {
 public:
  static constexpr uint32_t kPerChunk = 14;

  // Appends `slot` to the list starting at `head` (kNil: empty); returns the list's new head.
  uint32_t append(uint32_t head, uint32_t slot) {
    if (head != kNil && chunks_[head].count < kPerChunk) {
      Chunk& c = chunks_[head];
      c.slot[c.count++] = slot;
      return head;
    }
    uint32_t fresh;
    if (free_ != kNil) {
      fresh = free_;
      free_ = chunks_[fresh].next;
    } else {
      fresh = static_cast<uint32_t>(chunks_.size());
      chunks_.emplace_back();
    }
    Chunk& c = chunks_[fresh];
    c.slot[0] = slot;
    c.count = 1;
    c.next = head;
    return fresh;
  }
  // Appends the list's slots to `out` (oldest first) and frees the list.
  void take(uint32_t head, std::vector<uint32_t>* out) {
    const size_t first = out->size();
    while (head != kNil) {
      Chunk& c = chunks_[head];
      for (uint32_t i = c.count; i > 0; --i) out->push_back(c.slot[i - 1]);
      const uint32_t next = c.next;
      c.next = free_;
      free_ = head;
      head = next;
    }
    std::reverse(out->begin() + static_cast<std::ptrdiff_t>(first), out->end());
  }

 private:
  struct alignas(64) Chunk {
    uint32_t slot[kPerChunk];
    uint32_t count;
    uint32_t next;
  };
  std::vector<Chunk> chunks_;
  uint32_t free_ = kNil;
};

struct HeapEntry {
  int64_t priority;
  NodeId id;
  uint32_t slot;
  uint32_t ticket;
};
// std::*_heap keep the largest on top: "largest" = smallest (priority, id).
struct IssuedAfter {
  bool operator()(const HeapEntry& a, const HeapEntry& b) const {
    if (a.priority != b.priority) return a.priority > b.priority;
    return a.id > b.id;
  }
};

}  // namespace

// -----------------------------------------------------------------------------------------------

Status FeederNode::parse(ChakraProtoMsg::Node* out) const {
  if (!out->ParseFromString(raw)) {
    return Status::errorf("node {} (record #{} at byte {}, {} bytes) does not parse as {}", id,
                          record_index, byte_offset, raw.size(), out->GetTypeName());
  }
  return Status();
}

const char* to_string(FeedState state) {
  switch (state) {
    case FeedState::kRunning:
      return "running";
    case FeedState::kDone:
      return "done";
    case FeedState::kStalled:
      return "stalled";
    case FeedState::kError:
      return "error";
  }
  return "?";
}

std::string StallReport::to_string() const {
  if (empty()) return "no node is waiting";
  constexpr size_t kMaxParts = 8;
  std::vector<std::string> parts;
  auto ids = [](const std::vector<NodeId>& v, uint64_t total) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", v[i]);
    if (total > v.size()) s += ", ...";
    return s;
  };
  auto waiters = [&](const Blocker& b) {
    return b.waiting == 1
               ? fmt::format("node {} waits", b.examples.front())
               : fmt::format("{} nodes ({}) wait", b.waiting, ids(b.examples, b.waiting));
  };
  for (const Blocker& b : missing) {
    parts.push_back(fmt::format("{} on id {}, which is not in the trace", waiters(b), b.id));
  }
  for (const Blocker& b : unreleased) {
    parts.push_back(fmt::format("{} on node {}, removed without its children being released",
                                waiters(b), b.id));
  }
  for (const auto& cycle : cycles) {
    std::string s = "cycle ";
    size_t shown = std::min<size_t>(cycle.size(), 32);
    for (size_t i = 0; i < shown; ++i) s += fmt::format("{} -> ", cycle[i]);
    s += cycle.size() > shown ? fmt::format("... ({} nodes) -> {}", cycle.size(), cycle.front())
                              : fmt::format("{}", cycle.front());
    parts.push_back(std::move(s));
  }
  std::string out =
      fmt::format("{} node{} can never be issued", waiting_nodes, waiting_nodes == 1 ? "" : "s");
  for (size_t i = 0; i < parts.size() && i < kMaxParts; ++i) {
    out += (i == 0 ? ": " : "; ") + parts[i];
  }
  if (parts.size() > kMaxParts) out += fmt::format("; and {} more", parts.size() - kMaxParts);
  return out;
}

// -----------------------------------------------------------------------------------------------

struct EtFeeder::Impl {
  std::string path;
  FeederOptions options;
  uint64_t refill_target = 0;
  std::unique_ptr<EtReader> reader;
  std::string metadata;
  std::string first_node;  // a Node found where the GlobalMetadata should be
  bool has_first_node = false;
  bool eof = false;
  Status error;
  FeederObserver* observer = nullptr;

  NodeStore nodes;
  std::vector<Meta> meta;
  std::vector<std::vector<NodeId>> deps;  // per slot: dependencies not complete when read
  std::vector<uint32_t> free_slots;
  KeyIndex by_id;    // live nodes (in the graph, or removed with children still waiting)
  KeyIndex waiting;  // ids not read yet -> list of the nodes waiting on them
  SlotLists lists;
  IdSet done;  // ids whose children were released
  std::vector<HeapEntry> heap;

  uint64_t live = 0;     // slots in use
  uint64_t visible = 0;  // of which not removed
  uint64_t ready = 0;
  uint64_t in_flight = 0;
  FeederStats stats;

  std::vector<NodeId> data_scratch;
  std::vector<NodeId> ctrl_scratch;
  std::vector<uint32_t> watcher_scratch;

  // --- reading
  void fill() {
    while (!eof && live < options.window && ready < refill_target) read_one();
  }
  // Everything held waits and nothing is in flight: only reading on can help.
  void progress() {
    while (!eof && ready == 0 && in_flight == 0) {
      read_one();
      if (live > options.window) ++stats.reads_past_window;
    }
  }

  void fail(Status status) {
    error = std::move(status);
    eof = true;
  }

  void read_one() {
    std::string_view record;
    uint64_t index = 0, offset = 0;
    if (!next_record(&record, &index, &offset)) return;
    NodeHeader header;
    data_scratch.clear();
    ctrl_scratch.clear();
    Status scanned =
        scan_node(record, &header, &data_scratch, options.ctrl_deps ? &ctrl_scratch : nullptr);
    if (!scanned.ok()) {
      return fail(
          Status::errorf("{}: record #{} at byte {}: {}", path, index, offset, scanned.message()));
    }
    if (Status unique = check_new_id(header.id, index, offset); !unique.ok()) {
      return fail(std::move(unique));
    }
    const uint32_t slot = take_slot();
    FeederNode& node = nodes[slot];
    node.id = header.id;
    node.type = header.type;
    node.duration_micros = header.duration_micros;
    node.record_index = index;
    node.byte_offset = offset;
    // Slots are reused: give back the room of a much larger record held before, so that memory
    // stays (window x typical record), not (window x largest record).
    if (node.raw.capacity() > 4096 && node.raw.capacity() / 2 > record.size()) {
      std::string().swap(node.raw);
    }
    node.raw.assign(record.data(), record.size());
    node.priority = options.priority ? options.priority(node) : 0;
    Meta& m = meta[slot];
    const uint32_t ticket = m.ticket;
    m = Meta{};
    m.ticket = ticket;
    m.id = header.id;
    m.live = true;
    by_id.insert(header.id, slot);
    ++live;
    ++visible;
    ++stats.nodes_read;
    if (live > stats.max_resident) stats.max_resident = live;
    set_pending(slot);
    if (observer) observer->on_read(node);
    // Nodes read earlier that wait on this one now watch it.
    if (!waiting.empty()) {
      if (uint32_t list = waiting.take(header.id); list != kNil) meta[slot].watchers = list;
    }
    advance(slot);
  }

  // The next record (the first node kept aside, or the reader's next), with its index and offset;
  // false at the end (or on an error, recorded).
  bool next_record(std::string_view* record, uint64_t* index, uint64_t* offset) {
    if (has_first_node) {
      *record = first_node;
      has_first_node = false;
      return true;
    }
    *index = reader->record_index();
    *offset = reader->offset();
    auto got = reader->next_raw(record);
    if (!got.ok()) {
      fail(got.status());
      return false;
    }
    if (!*got) eof = true;
    return *got;
  }

  // An id read is new: neither held nor completed before.
  Status check_new_id(NodeId id, uint64_t index, uint64_t offset) const {
    if (uint32_t other = by_id.find(id); other != kNil) {
      return Status::errorf(
          "{}: record #{} at byte {}: node id {} appears again (first at record #{})", path, index,
          offset, id, nodes[other].record_index);
    }
    if (done.contains(id)) {
      return Status::errorf(
          "{}: record #{} at byte {}: node id {} appears again (an earlier node with this id "
          "already completed)",
          path, index, offset, id);
    }
    return Status();
  }

  // A free slot, or a new one.
  uint32_t take_slot() {
    if (!free_slots.empty()) {
      const uint32_t slot = free_slots.back();
      free_slots.pop_back();
      return slot;
    }
    const uint32_t slot = nodes.grow();
    meta.emplace_back();
    deps.emplace_back();
    return slot;
  }

  // The node's dependencies, newest parent first (the largest id, in a trace written in id
  // order): parents complete roughly in file order, so when it completes the others mostly have
  // too, and the node waits once instead of once per parent. Each is checked once, by advance().
  void set_pending(uint32_t slot) {
    std::vector<NodeId>& pending = deps[slot];
    const size_t listed = data_scratch.size() + ctrl_scratch.size();
    if (pending.capacity() > 512 && pending.capacity() / 2 > listed) {
      std::vector<NodeId>().swap(pending);
    }
    pending.assign(data_scratch.begin(), data_scratch.end());
    pending.insert(pending.end(), ctrl_scratch.begin(), ctrl_scratch.end());
    if (pending.size() > 1) {
      std::iter_swap(pending.begin(), std::max_element(pending.begin(), pending.end()));
    }
    stats.dependencies += pending.size();
  }

  // Moves `slot` on to its next dependency not complete yet and waits on it; with none left, the
  // node is ready (or, removed and released already, dropped).
  void advance(uint32_t slot) {
    Meta& m = meta[slot];
    const std::vector<NodeId>& list = deps[slot];
    while (m.pos < list.size()) {
      const NodeId parent = list[m.pos];
      if (done.contains(parent)) {
        ++m.pos;
        ++stats.deps_already_done;
        continue;
      }
      m.watching = true;
      if (uint32_t ps = by_id.find(parent); ps != kNil) {
        meta[ps].watchers = lists.append(meta[ps].watchers, slot);
      } else if (uint32_t* waiters = waiting.find_ptr(parent)) {
        *waiters = lists.append(*waiters, slot);
        ++stats.forward_deps;
      } else {
        waiting.insert(parent, lists.append(kNil, slot));
        ++stats.forward_deps;
      }
      return;
    }
    m.watching = false;
    if (m.stage == Stage::kWaiting) {
      enqueue(slot);
    } else if (m.removed && m.released) {
      free_slot(slot);  // completed early (made ready by hand); nothing holds it now
    }
  }

  // --- state changes
  void enqueue(uint32_t slot) {
    Meta& m = meta[slot];
    m.stage = Stage::kReady;
    ++m.ticket;
    ++ready;
    heap.push_back(HeapEntry{nodes[slot].priority, m.id, slot, m.ticket});
    std::push_heap(heap.begin(), heap.end(), IssuedAfter());
  }

  void free_slot(uint32_t slot) {
    Meta& m = meta[slot];
    by_id.take(m.id);
    m.live = false;
    --live;
    free_slots.push_back(slot);
    if (observer) observer->on_free(m.id);
  }

  void release(uint32_t slot, int64_t release_priority) {
    Meta& m = meta[slot];
    if (m.released) return;
    m.released = true;
    done.insert(m.id);
    watcher_scratch.clear();
    lists.take(m.watchers, &watcher_scratch);
    m.watchers = kNil;
    for (uint32_t child : watcher_scratch) {
      Meta& cm = meta[child];
      if (release_priority > 0 && cm.stage == Stage::kWaiting &&
          release_priority > nodes[child].priority) {
        nodes[child].priority = release_priority;
      }
      cm.watching = false;
      ++cm.pos;  // it watched this node: deps[pos] is done now
      advance(child);
    }
  }

  void drop(uint32_t slot) {
    Meta& m = meta[slot];
    if (m.stage == Stage::kReady) --ready;
    if (m.stage == Stage::kInFlight) --in_flight;
    m.stage = Stage::kDropped;
    m.removed = true;
    --visible;
    ++stats.nodes_completed;
    if (m.released && !m.watching) free_slot(slot);
  }

  // The slot of a node in the graph, or an error naming the call.
  StatusOr<uint32_t> graph_slot(NodeId id, const char* call) const {
    uint32_t slot = by_id.find(id);
    if (slot == kNil || meta[slot].removed) {
      const char* why = slot != kNil        ? "removed"
                        : done.contains(id) ? "already completed"
                                            : "not read yet";
      return Status::errorf("{}: {}({}): node {} is not in the graph ({})", path, call, id, id,
                            why);
    }
    return slot;
  }

  bool is_waiting(uint32_t slot) const {
    const Meta& m = meta[slot];
    return m.live && !m.removed && m.stage == Stage::kWaiting;
  }

  // The nodes that wait on `id` (not released), oldest first: a scan of the nodes held.
  std::vector<uint32_t> waiting_on(NodeId id) const {
    std::vector<uint32_t> out;
    if (done.contains(id)) return out;
    for (uint32_t s = 0; s < nodes.size(); ++s) {
      const Meta& m = meta[s];
      if (!m.live || !m.watching) continue;
      const auto& list = deps[s];
      if (std::find(list.begin() + m.pos, list.end(), id) != list.end()) out.push_back(s);
    }
    std::sort(out.begin(), out.end(), [&](uint32_t a, uint32_t b) {
      return nodes[a].record_index < nodes[b].record_index;
    });
    return out;
  }

  StallReport report() const {
    StallReport r;
    // Who waits on what: every dependency not complete of every waiting node.
    std::map<NodeId, std::vector<NodeId>> missing, unreleased;
    std::vector<std::vector<uint32_t>> kids(nodes.size());
    std::vector<uint32_t> candidates;
    for (uint32_t s = 0; s < nodes.size(); ++s) {
      if (!is_waiting(s)) continue;
      ++r.waiting_nodes;
      candidates.push_back(s);
      const auto& list = deps[s];
      for (size_t i = meta[s].pos; i < list.size(); ++i) {
        const NodeId parent = list[i];
        if (done.contains(parent)) continue;
        const uint32_t ps = by_id.find(parent);
        if (ps == kNil) {
          missing[parent].push_back(meta[s].id);
        } else if (meta[ps].removed && !meta[ps].released) {
          unreleased[parent].push_back(meta[s].id);
        } else if (is_waiting(ps)) {
          kids[ps].push_back(s);
        }
      }
    }
    auto blockers = [](std::map<NodeId, std::vector<NodeId>>& from,
                       std::vector<StallReport::Blocker>* to) {
      for (auto& [id, waiters] : from) {
        std::sort(waiters.begin(), waiters.end());
        waiters.erase(std::unique(waiters.begin(), waiters.end()), waiters.end());
        StallReport::Blocker b;
        b.id = id;
        b.waiting = waiters.size();
        waiters.resize(std::min(waiters.size(), StallReport::kMaxExamples));
        b.examples = std::move(waiters);
        to->push_back(std::move(b));
      }
    };
    blockers(missing, &r.missing);
    blockers(unreleased, &r.unreleased);

    find_cycles(kids, std::move(candidates), &r.cycles);
    return r;
  }

  // Cycles among the waiting nodes (`candidates`), over the parent -> child edges `kids`: an
  // iterative DFS, smallest ids first; at most kMaxExamples, each from its smallest id, sorted.
  void find_cycles(const std::vector<std::vector<uint32_t>>& kids, std::vector<uint32_t> candidates,
                   std::vector<std::vector<NodeId>>* cycles) const {
    std::sort(candidates.begin(), candidates.end(),
              [&](uint32_t a, uint32_t b) { return meta[a].id < meta[b].id; });
    enum : uint8_t { kWhite, kGray, kBlack };
    std::vector<uint8_t> color(nodes.size(), kWhite);
    std::vector<uint32_t> depth_of(nodes.size(), 0);
    struct Frame {
      uint32_t slot;
      size_t next;  // index in kids[slot]
    };
    std::vector<Frame> stack;
    for (uint32_t root : candidates) {
      if (color[root] != kWhite || cycles->size() >= StallReport::kMaxExamples) continue;
      color[root] = kGray;
      stack.push_back(Frame{root, 0});
      while (!stack.empty()) {
        Frame& f = stack.back();
        if (f.next == kids[f.slot].size()) {
          color[f.slot] = kBlack;
          stack.pop_back();
          continue;
        }
        const uint32_t child = kids[f.slot][f.next++];
        if (color[child] == kGray) {
          if (cycles->size() < StallReport::kMaxExamples) {
            std::vector<NodeId> cycle;
            for (size_t i = depth_of[child]; i < stack.size(); ++i) {
              cycle.push_back(meta[stack[i].slot].id);
            }
            // Start at the smallest id, keeping the direction.
            std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
            cycles->push_back(std::move(cycle));
          }
        } else if (color[child] == kWhite) {
          color[child] = kGray;
          depth_of[child] = static_cast<uint32_t>(stack.size());
          stack.push_back(Frame{child, 0});
        }
      }
    }
    std::sort(cycles->begin(), cycles->end());
    cycles->erase(std::unique(cycles->begin(), cycles->end()), cycles->end());
  }
};

// -----------------------------------------------------------------------------------------------

EtFeeder::EtFeeder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EtFeeder::~EtFeeder() = default;

StatusOr<std::unique_ptr<EtFeeder>> EtFeeder::open(const std::string& path, FeederOptions options) {
  if (options.window == 0) return Status::errorf("{}: the feeder window must be at least 1", path);
  auto reader = EtReader::open(path);
  if (!reader.ok()) return reader.status();
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->reader = std::make_unique<EtReader>(std::move(*reader));
  impl->refill_target =
      options.refill_below == 0 ? std::numeric_limits<uint64_t>::max() : options.refill_below;
  impl->options = std::move(options);
  std::string_view record;
  auto got = impl->reader->next_raw(&record);
  if (!got.ok()) return got.status();
  if (!*got) {
    impl->eof = true;
    impl->stats.metadata_missing = true;
  } else if (first_record_is_node(record)) {
    impl->stats.metadata_missing = true;
    impl->first_node.assign(record);
    impl->has_first_node = true;
  } else {
    impl->metadata.assign(record);
  }
  return std::unique_ptr<EtFeeder>(new EtFeeder(std::move(impl)));
}

const std::string& EtFeeder::path() const {
  return impl_->path;
}
const FeederOptions& EtFeeder::options() const {
  return impl_->options;
}
const std::string& EtFeeder::metadata() const {
  return impl_->metadata;
}
void EtFeeder::set_observer(FeederObserver* observer) {
  impl_->observer = observer;
}

const FeederNode* EtFeeder::issue() {
  Impl& d = *impl_;
  d.fill();
  if (d.ready == 0 && d.in_flight == 0) d.progress();
  while (!d.heap.empty()) {
    const HeapEntry top = d.heap.front();
    std::pop_heap(d.heap.begin(), d.heap.end(), IssuedAfter());
    d.heap.pop_back();
    Meta& m = d.meta[top.slot];
    if (!m.live || m.stage != Stage::kReady || m.ticket != top.ticket) continue;  // stale
    m.stage = Stage::kInFlight;
    --d.ready;
    ++d.in_flight;
    ++d.stats.nodes_issued;
    return &d.nodes[top.slot];
  }
  return nullptr;
}

Status EtFeeder::complete(NodeId id, int64_t release_priority) {
  Impl& d = *impl_;
  CF_ASSIGN_OR_RETURN(uint32_t slot, d.graph_slot(id, "complete"));
  if (d.meta[slot].stage != Stage::kInFlight) {
    return Status::errorf("{}: complete({}): node {} is not in flight", d.path, id, id);
  }
  d.release(slot, release_priority);
  d.drop(slot);
  return Status();
}

Status EtFeeder::push_back(NodeId id) {
  Impl& d = *impl_;
  CF_ASSIGN_OR_RETURN(uint32_t slot, d.graph_slot(id, "push_back"));
  if (d.meta[slot].stage != Stage::kInFlight) {
    return Status::errorf("{}: push_back({}): node {} is not in flight", d.path, id, id);
  }
  --d.in_flight;
  d.enqueue(slot);
  return Status();
}

Status EtFeeder::release_children(NodeId id, int64_t release_priority) {
  Impl& d = *impl_;
  uint32_t slot = d.by_id.find(id);
  if (slot == kNil) {
    if (d.done.contains(id)) return Status();  // released before
    return Status::errorf("{}: release_children({}): node {} was not read", d.path, id, id);
  }
  d.release(slot, release_priority);
  const Meta& m = d.meta[slot];
  if (m.live && m.removed && !m.watching) d.free_slot(slot);
  return Status();
}

Status EtFeeder::remove(NodeId id) {
  Impl& d = *impl_;
  CF_ASSIGN_OR_RETURN(uint32_t slot, d.graph_slot(id, "remove"));
  d.drop(slot);
  return Status();
}

Status EtFeeder::make_ready(NodeId id) {
  Impl& d = *impl_;
  CF_ASSIGN_OR_RETURN(uint32_t slot, d.graph_slot(id, "make_ready"));
  switch (d.meta[slot].stage) {
    case Stage::kWaiting:
      d.enqueue(slot);
      break;
    case Stage::kInFlight:
      --d.in_flight;
      d.enqueue(slot);
      break;
    default:
      break;
  }
  return Status();
}

const FeederNode* EtFeeder::find(NodeId id) const {
  uint32_t slot = impl_->by_id.find(id);
  if (slot == kNil || impl_->meta[slot].removed) return nullptr;
  return &impl_->nodes[slot];
}

bool EtFeeder::completed(NodeId id) const {
  return impl_->done.contains(id);
}

bool EtFeeder::is_in_flight(NodeId id) const {
  uint32_t slot = impl_->by_id.find(id);
  return slot != kNil && impl_->meta[slot].stage == Stage::kInFlight;
}

bool EtFeeder::is_ready(NodeId id) const {
  uint32_t slot = impl_->by_id.find(id);
  return slot != kNil && impl_->meta[slot].stage == Stage::kReady;
}

std::vector<NodeId> EtFeeder::children(NodeId id) const {
  std::vector<NodeId> out;
  for (uint32_t s : impl_->waiting_on(id)) out.push_back(impl_->meta[s].id);
  return out;
}

FeedState EtFeeder::state() {
  Impl& d = *impl_;
  if (d.ready == 0 && d.in_flight == 0) {
    d.fill();
    d.progress();
  }
  if (!d.error.ok()) return FeedState::kError;
  if (d.ready > 0 || d.in_flight > 0 || !d.eof) return FeedState::kRunning;
  return d.visible == 0 ? FeedState::kDone : FeedState::kStalled;
}

const Status& EtFeeder::error() const {
  return impl_->error;
}

StallReport EtFeeder::stall_report() const {
  return impl_->report();
}

FeederStats EtFeeder::stats() const {
  FeederStats s = impl_->stats;
  s.done_set_bytes = impl_->done.memory_bytes();
  return s;
}

bool EtFeeder::end_of_file() const {
  return impl_->eof;
}
uint64_t EtFeeder::resident() const {
  return impl_->live;
}
uint64_t EtFeeder::in_graph() const {
  return impl_->visible;
}
uint64_t EtFeeder::ready() const {
  return impl_->ready;
}
uint64_t EtFeeder::in_flight() const {
  return impl_->in_flight;
}

}  // namespace chakraflow
