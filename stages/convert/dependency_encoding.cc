#include "stages/convert/dependency_encoding.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_set>

#include "stages/common/move_to_targets.h"
#include "stages/convert/et_plus_nodes.h"

namespace chakraflow {
namespace {

void add_dep(ChakraNodeRecord& record, uint32_t dep) {
  // Chakra appends an id only when it is not already there; lists are a handful long.
  if (std::find(record.data_deps.begin(), record.data_deps.end(), dep) == record.data_deps.end()) {
    record.data_deps.push_back(dep);
  }
}

// The (start time, index) key of a node: nodes without a start time first, then by id.
using StartKey = std::pair<double, uint32_t>;
StartKey start_key(const ConversionGraph& graph, uint32_t i) {
  return {graph.start[i], i};
}

// A rank per node that every data dependency respects (rank[dep] < rank[node]): a topological
// order of the Chakra edges (Kahn's algorithm) that, among the nodes ready at each step, takes the
// one that started first (the smallest start_key). Edges added against this order could close a
// cycle and are skipped; edges along it cannot. Following start times makes the order agree with
// the GPU streams and sync waits even where ids do not (a kernel launched later from another
// thread may run earlier). Nodes on a cycle get no rank (UINT32_MAX); the cycle check reports
// them.
//
// Nearly always every dependency's key is below its node's (a node starts after what it waits
// for). Then the algorithm takes the nodes in key order (the next node in that order is ready,
// and no ready node has a smaller key): the keys themselves are the order, and this returns an
// empty vector (no queue, no dependents lists, no ranks to store).
//
// The check that every key is below its node's reads the records in ranges through `run`.
std::vector<uint32_t> dependency_ranks(const ConversionGraph& graph, size_t n,
                                       const OrderedBatches& run, size_t range) {
  const size_t m = graph.records.size();
  const size_t backward = first_in_ranges(run, m, range, [&graph](size_t k) {
    const ChakraNodeRecord& r = graph.records[k];
    const StartKey key = start_key(graph, r.source);
    for (uint32_t d : r.data_deps) {
      if (!(start_key(graph, d) < key)) return true;
    }
    return false;
  });
  if (backward == m) return {};

  std::vector<uint32_t> rank(n, UINT32_MAX);
  using Key = StartKey;
  auto key = [&](uint32_t i) { return start_key(graph, i); };
  std::vector<uint32_t> indegree(n, 0), dependent_begin(n + 1, 0), dependents;
  for (const ChakraNodeRecord& r : graph.records) {
    indegree[r.source] = static_cast<uint32_t>(r.data_deps.size());
    for (uint32_t d : r.data_deps) ++dependent_begin[d + 1];
  }
  for (size_t i = 0; i < n; ++i) dependent_begin[i + 1] += dependent_begin[i];
  dependents.resize(dependent_begin[n]);
  std::vector<uint32_t> fill(dependent_begin.begin(), dependent_begin.end() - 1);
  for (const ChakraNodeRecord& r : graph.records) {
    for (uint32_t d : r.data_deps) dependents[fill[d]++] = r.source;
  }
  std::priority_queue<Key, std::vector<Key>, std::greater<>> ready;
  for (const ChakraNodeRecord& r : graph.records) {
    if (indegree[r.source] == 0) ready.push(key(r.source));
  }
  uint32_t next = 0;
  while (!ready.empty()) {
    const uint32_t i = ready.top().second;
    ready.pop();
    rank[i] = next++;
    for (uint32_t k = dependent_begin[i]; k < dependent_begin[i + 1]; ++k) {
      if (--indegree[dependents[k]] == 0) ready.push(key(dependents[k]));
    }
  }
  return rank;
}

// Off-thread nodes (CPU-side collectives, ChakraNodeRecord::kOffThread) take their place in the
// order of the thread they ran on: each depends on the op of that thread that started last before
// it, and the op that started next after it depends on it. A gloo thread works through its queue
// one item at a time, its collective and then the ops inside it (the copy back to a CUDA tensor);
// the next collective waits for both. Edges along the start-time order only (`can_depend`).
template <typename CanDepend>
void order_off_thread_nodes(const EtPlusTrace& t, ConversionGraph& graph,
                            const std::vector<uint8_t>& reached, const CanDepend& can_depend) {
  std::set<int64_t> threads;  // the threads off-thread nodes ran on
  auto thread_of = [&](const ChakraNodeRecord& rec) {
    const CommAttrs* c = rec.comm == kNoNode ? nullptr : &graph.comm[rec.comm];
    return c != nullptr && c->exec_tid ? *c->exec_tid : t.nodes[rec.source].tid;
  };
  // The off-thread nodes were listed as they were converted (note_walk_facts): most traces have
  // none, and then no pass over the records.
  for (uint32_t i : graph.walk.off_thread) {
    if (reached[i]) threads.insert(thread_of(*graph.record_of(i)));
  }
  if (threads.empty()) return;
  struct Key {
    int64_t tid;
    double start;
    uint32_t index;
    bool off_thread;
  };
  std::vector<Key> keys;
  for (const ChakraNodeRecord& rec : graph.records) {
    if (!(rec.is_cpu_op || rec.has(ChakraNodeRecord::kOffThread)) || !reached[rec.source] ||
        std::isinf(graph.start[rec.source]))
      continue;
    const int64_t tid = thread_of(rec);
    if (threads.count(tid)) {
      keys.push_back(
          {tid, graph.start[rec.source], rec.source, rec.has(ChakraNodeRecord::kOffThread)});
    }
  }
  std::sort(keys.begin(), keys.end(), [](const Key& x, const Key& y) {
    return std::tie(x.tid, x.start, x.index) < std::tie(y.tid, y.start, y.index);
  });
  for (size_t k = 0; k < keys.size(); ++k) {
    if (!keys[k].off_thread) continue;
    if (k > 0 && keys[k - 1].tid == keys[k].tid && can_depend(keys[k].index, keys[k - 1].index)) {
      add_dep(*graph.record_of(keys[k].index), keys[k - 1].index);
    }
    if (k + 1 < keys.size() && keys[k + 1].tid == keys[k].tid &&
        can_depend(keys[k + 1].index, keys[k].index)) {
      add_dep(*graph.record_of(keys[k + 1].index), keys[k].index);
    }
  }
}

// A CPU node's inter-thread dependency (note_walk_facts found its index), unless it is on itself
// or on a node not converted (counted).
void add_inter_thread_dep(const EtPlusTrace& t, const ConversionGraph& graph, uint32_t i,
                          ChakraNodeRecord& rec, DataProblems& stats) {
  const uint32_t dep = graph.inter_thread_dep[i];
  const EtPlusNode& node = t.nodes[i];  // read for a message only
  if (dep == i) {
    stats.add(StatKind::kConvertInterThreadDepOnSelf, fmt::format("node {}", node.id));
  } else if (dep == kNoNode || graph.slot[dep] == kNoNode) {
    stats.add(StatKind::kConvertInterThreadDepNotConverted,
              fmt::format("node {} -> {}", node.id, node.inter_thread_dep));
  } else {
    add_dep(rec, dep);
  }
}

// Chakra's convert_ctrl_dep_to_data_dep for one walk, the nodes given in its pre-order: each CPU
// node depends on the CPU node before it in the walk, each GPU node (or node like one) on the node
// before the last CPU node. Each walk starts with fresh state. What the walks ask of the nodes was
// copied out as they were converted (note_walk_facts): a node is read only for a message.
class WalkDeps {
 public:
  WalkDeps(const EtPlusTrace& t, ConversionGraph& graph, DataProblems& stats)
      : t_(t), graph_(graph), stats_(stats) {}
  void visit(uint32_t i) {
    ChakraNodeRecord& rec = *graph_.record_of(i);
    if (!rec.is_cpu_op || rec.has(ChakraNodeRecord::kOffThread)) {  // a GPU node, or like one
      if (last_any_ != kNoNode) add_dep(rec, last_any_);
      last_any_ = last_cpu_;
    } else {
      if (rec.has(ChakraNodeRecord::kInterThreadDep)) {
        add_inter_thread_dep(t_, graph_, i, rec, stats_);
      }
      if (last_cpu_ != kNoNode) add_dep(rec, last_cpu_);
      last_cpu_ = last_any_ = i;
    }
  }

 private:
  const EtPlusTrace& t_;
  ConversionGraph& graph_;
  DataProblems& stats_;
  uint32_t last_cpu_ = kNoNode, last_any_ = kNoNode;
};

// The walks' roots: the thread roots, then the extra roots.
std::vector<uint32_t> walk_roots(const ConversionGraph& graph) {
  std::vector<uint32_t> roots = graph.walk.thread_roots;
  roots.insert(roots.end(), graph.extra_roots.begin(), graph.extra_roots.end());
  return roots;
}

// A pre-order DFS from `root` over the converted nodes of the call tree (children in ascending id
// order), numbered `walk`: visit(i) for each node. `visited` holds the number of the walk that
// last visited each node (no clearing between walks).
template <typename Visit>
void walk_tree(const ConversionGraph& graph, uint32_t root, uint32_t walk,
               std::vector<uint32_t>& visited, std::vector<uint32_t>& stack, Visit&& visit) {
  stack.assign(1, root);
  while (!stack.empty()) {
    const uint32_t i = stack.back();
    stack.pop_back();
    if (visited[i] == walk) continue;
    visited[i] = walk;
    visit(i);
    // Children, largest id first, so that the smallest is visited next.
    for (uint32_t k = graph.child_begin[i + 1]; k-- > graph.child_begin[i];) {
      const uint32_t c = graph.children[k];
      if (graph.slot[c] != kNoNode && visited[c] != walk) stack.push_back(c);
    }
  }
}

// Whether some node lies under two of the roots (the walks from them would both visit it): a root
// listed twice, or a root whose chain of converted ancestors reaches another root (a thread root
// under another's op, say). A chain longer than kClimb is taken to reach one.
bool roots_share_nodes(const ConversionGraph& graph, const std::vector<uint32_t>& roots) {
  constexpr size_t kClimb = 4096;  // deeper than any call stack a trace holds
  if (graph.parent.size() != graph.slot.size()) return true;  // no tree to climb: take no risk
  std::unordered_set<uint32_t> root_set(roots.begin(), roots.end());
  if (root_set.size() != roots.size()) return true;
  for (uint32_t root : roots) {
    size_t steps = 0;
    for (uint32_t c = graph.parent[root]; c != kNoNode && graph.slot[c] != kNoNode;
         c = graph.parent[c]) {
      if (root_set.count(c) != 0 || ++steps > kClimb) return true;
    }
  }
  return false;
}

// The walks from the roots in `groups` groups of consecutive roots, side by side, each group's
// walks one after another with problems of their own, joined in order: what walking one root
// after another (one group) gives. Several groups only when no node lies under two roots: each
// walk then writes only its own nodes' records (and elements of `visited` and `reached`).
// `beside` runs as one more task. Returns which nodes the walks reached.
std::vector<uint8_t> walk_from_roots(const EtPlusTrace& t, ConversionGraph& graph,
                                     const std::vector<uint32_t>& roots, const OrderedBatches& run,
                                     size_t groups, DataProblems& stats,
                                     const std::function<void()>& beside) {
  const size_t n = t.nodes.size();
  std::vector<uint32_t> visited(n, 0);
  std::vector<uint8_t> reached(n, 0);
  std::vector<DataProblems> problems(groups);
  // Task g runs the walks of group g, task `groups` runs `beside`: the thread roots' walks, the
  // longest, are handed out first.
  run.for_each(groups + 1, [&](size_t g) {
    if (g == groups) {
      beside();
      return;
    }
    std::vector<uint32_t> stack;
    for (size_t r = roots.size() * g / groups; r < roots.size() * (g + 1) / groups; ++r) {
      WalkDeps deps(t, graph, problems[g]);
      walk_tree(graph, roots[r], static_cast<uint32_t>(r + 1), visited, stack, [&](uint32_t i) {
        reached[i] = 1;
        deps.visit(i);
      });
    }
  });
  for (const DataProblems& p : problems) stats.merge(p);
  return reached;
}

// Sync dependencies: the node waited for these GPU ops (trace_link's sync_dep). Returns the edges
// added.
template <typename CanDepend>
uint64_t add_sync_deps(const EtPlusTrace& t, ConversionGraph& graph,
                       const std::vector<uint8_t>& reached, const CanDepend& can_depend,
                       DataProblems& stats) {
  uint64_t edges = 0;
  for (uint32_t i : graph.walk.with_sync) {
    if (!reached[i]) continue;
    ChakraNodeRecord& rec = *graph.record_of(i);
    const EtPlusNode& node = t.nodes[i];
    const uint64_t* ids = t.sync_deps(node);
    for (uint32_t k = 0; k < node.sync_dep_count; ++k) {
      const uint32_t dep = t.index_of(ids[k]);
      if (dep == kNoNode || graph.slot[dep] == kNoNode || !reached[dep] || dep == rec.source) {
        stats.add(StatKind::kConvertSyncDepNotConverted,
                  fmt::format("node {} -> {}", node.id, ids[k]));
      } else if (!can_depend(rec.source, dep)) {
        stats.add(StatKind::kConvertSyncDepAgainstOrder,
                  fmt::format("node {} -> {}", node.id, ids[k]));
      } else {
        const size_t before = rec.data_deps.size();
        add_dep(rec, dep);
        edges += rec.data_deps.size() - before;
      }
    }
  }
  return edges;
}

// The GPU ops' keys in (device, stream, start time, index) order: a total order (one key per
// node), so that the keys the walks did not reach can be dropped after.
void sort_stream_keys(std::vector<WalkLists::StreamKey>& keys) {
  using GpuKey = WalkLists::StreamKey;
  std::stable_sort(keys.begin(), keys.end(), [](const GpuKey& x, const GpuKey& y) {
    if (x.device != y.device) return x.device < y.device;
    if (x.stream != y.stream) return x.stream < y.stream;
    if (x.ts != y.ts) return x.ts < y.ts;
    return x.index < y.index;
  });
}

// GPU ops chained per (device, stream) in start-time order: the keys sort_stream_keys put in that
// order (copied out of the nodes as they were converted, so that the sort does not wander over
// them), those of nodes the walks did not reach passed over. In ranges of keys through `run`: each
// range starts from the last reached key before it, and its problems are joined in order. Returns
// the edges added.
template <typename CanDepend>
uint64_t chain_gpu_streams(const EtPlusTrace& t, ConversionGraph& graph,
                           const std::vector<uint8_t>& reached, const CanDepend& can_depend,
                           const OrderedBatches& run, size_t range, DataProblems& stats) {
  using GpuKey = WalkLists::StreamKey;
  const std::vector<GpuKey>& keys = graph.walk.stream_keys;
  const size_t count = keys.size();
  const size_t ranges = range_count(count, range);
  // The last reached key of each range (count if none), then before each range.
  std::vector<size_t> last(ranges, count);
  for_each_range(run, count, range, [&](size_t r, size_t begin, size_t end) {
    for (size_t k = end; k-- > begin;) {
      if (reached[keys[k].index]) {
        last[r] = k;
        return;
      }
    }
  });
  std::vector<size_t> before(ranges, count);
  for (size_t r = 1; r < ranges; ++r) {
    before[r] = last[r - 1] != count ? last[r - 1] : before[r - 1];
  }
  std::vector<DataProblems> problems(ranges);
  std::vector<uint64_t> edges(ranges, 0);
  for_each_range(run, count, range, [&](size_t r, size_t begin, size_t end) {
    size_t prev = before[r];
    for (size_t k = begin; k < end; ++k) {
      const GpuKey& cur_key = keys[k];
      if (!reached[cur_key.index]) continue;
      const size_t p = prev;
      prev = k;
      if (p == count) continue;
      const GpuKey& prev_key = keys[p];
      if (prev_key.device != cur_key.device || prev_key.stream != cur_key.stream) continue;
      if (!can_depend(cur_key.index, prev_key.index)) {
        problems[r].add(
            StatKind::kConvertStreamEdgeSkipped,
            fmt::format("node {} after {}", t.nodes[cur_key.index].id, t.nodes[prev_key.index].id));
        continue;
      }
      ChakraNodeRecord& rec = *graph.record_of(cur_key.index);
      const size_t had = rec.data_deps.size();
      add_dep(rec, prev_key.index);
      edges[r] += rec.data_deps.size() - had;
    }
  });
  uint64_t total = 0;
  for (size_t r = 0; r < ranges; ++r) {
    stats.merge(problems[r]);
    total += edges[r];
  }
  return total;
}

}  // namespace

void WalkLists::append_lists(const WalkLists& later) {
  thread_roots.insert(thread_roots.end(), later.thread_roots.begin(), later.thread_roots.end());
  with_sync.insert(with_sync.end(), later.with_sync.begin(), later.with_sync.end());
  off_thread.insert(off_thread.end(), later.off_thread.begin(), later.off_thread.end());
}

void prepare_walk_facts(const ConvertOptions& options, size_t n, ConversionGraph& graph) {
  graph.inter_thread_dep.assign(n, kNoNode);
  if (options.compat == Compat::kDefault) {
    graph.start.assign(n, -std::numeric_limits<double>::infinity());
  }
}

void note_walk_facts(const EtPlusTrace& t, const ConvertOptions& options, uint32_t index,
                     ChakraNodeRecord& rec, ConversionGraph& graph, WalkLists& lists) {
  const EtPlusNode& node = t.nodes[index];
  if (is_thread_root_name(node.name)) lists.thread_roots.push_back(index);
  if (node.inter_thread_dep != 0) {
    rec.set(ChakraNodeRecord::kInterThreadDep);
    graph.inter_thread_dep[index] = t.index_of(node.inter_thread_dep);
  }
  if (node.sync_dep_count != 0) lists.with_sync.push_back(index);
  if (options.compat != Compat::kDefault) return;
  if (rec.has(ChakraNodeRecord::kOffThread)) lists.off_thread.push_back(index);
  if (node.has_ts) graph.start[index] = node.ts;
  if (node.kind == OpKind::kGpu && node.stream_given && node.has_stream && node.has_ts) {
    lists.stream_keys.push_back({node.device, node.stream, node.ts, index});
  }
}

void encode_dependencies(const EtPlusTrace& t, const ConvertOptions& options,
                         ConversionGraph& graph, DataProblems& stats, DependencyStats* out,
                         const OrderedBatches* workers) {
  const OrderedBatches& run = batches_or_in_turn(workers);
  const size_t range = run.range_size(kEncodeRange);
  // The walks beside the GPU ops' sort (which touches only the stream keys).
  auto sort_keys = [&] {
    if (options.compat == Compat::kDefault) sort_stream_keys(graph.walk.stream_keys);
  };
  const std::vector<uint32_t> roots = walk_roots(graph);
  // At most 64 groups of consecutive roots (a trace may have thousands of orphans walked as
  // roots of their own); one, as Chakra walks them, without workers or when roots share nodes.
  constexpr size_t kRootGroups = 64;
  const size_t groups = workers != nullptr && roots.size() > 1 && !roots_share_nodes(graph, roots)
                            ? std::min(roots.size(), kRootGroups)
                            : 1;
  const std::vector<uint8_t> reached =
      walk_from_roots(t, graph, roots, run, groups, stats, sort_keys);
  DependencyStats result;
  if (options.compat == Compat::kChakra) {
    // Chakra keeps a sync dependency only if the target's start_time_micros is below the node's;
    // it never sets start times, so none is kept (spec §5 #15).
    if (out != nullptr) *out = result;
    return;
  }
  const std::vector<uint32_t> rank = dependency_ranks(graph, t.nodes.size(), run, range);
  auto can_depend = [&](uint32_t node, uint32_t dep) {
    if (rank.empty()) return start_key(graph, dep) < start_key(graph, node);  // the key order
    return rank[dep] != UINT32_MAX && rank[node] != UINT32_MAX && rank[dep] < rank[node];
  };
  result.sync_edges = add_sync_deps(t, graph, reached, can_depend, stats);
  result.gpu_stream_edges = chain_gpu_streams(t, graph, reached, can_depend, run, range, stats);
  order_off_thread_nodes(t, graph, reached, can_depend);
  if (out != nullptr) *out = result;
}

ChakraTrace remove_dangling_nodes(const EtPlusTrace& t, const ConvertOptions& options,
                                  ConversionGraph&& graph, DataProblems& stats,
                                  const OrderedBatches* workers) {
  const OrderedBatches& run = batches_or_in_turn(workers);
  const size_t range = run.range_size(kDanglingRange);
  const size_t n = t.nodes.size();
  const size_t m = graph.records.size();
  // The nodes some record depends on, marked in ranges of records on the workers (every mark
  // stores the same 1).
  std::vector<uint8_t> referenced(n, 0);
  for_each_range(run, m, range, [&](size_t, size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) {
      for (uint32_t d : graph.records[k].data_deps) {
        std::atomic_ref<uint8_t>(referenced[d]).store(1, std::memory_order_relaxed);
      }
    }
  });
  // The kept records go to the front in id order (EtPlusTrace order: each node has at most one
  // record, found through its slot), the removed ones after them; moved in place. The kept ones
  // are marked and counted in ranges of nodes, then numbered in the same ranges from their counts'
  // sums.
  const size_t ranges = range_count(n, range);
  std::vector<uint8_t> kept_node(n, 0);  // by node: it has a record, which is kept
  std::vector<uint32_t> kept_before(ranges + 1, 0);
  std::vector<uint32_t> with_record(ranges, 0);
  for_each_range(run, n, range, [&](size_t r, size_t begin, size_t end) {
    uint32_t kept = 0;
    for (size_t i = begin; i < end; ++i) {
      if (graph.slot[i] == kNoNode) continue;
      ++with_record[r];
      const ChakraNodeRecord& rec = graph.records[graph.slot[i]];
      if (rec.data_deps.empty() && referenced[rec.source] == 0) continue;
      kept_node[i] = 1;
      ++kept;
    }
    kept_before[r + 1] = kept;
  });
  for (size_t r = 0; r < ranges; ++r) kept_before[r + 1] += kept_before[r];
  const uint32_t kept = kept_before[ranges];
  std::vector<uint32_t> target(m, kNoNode);
  for_each_range(run, n, range, [&](size_t r, size_t begin, size_t end) {
    uint32_t at = kept_before[r];
    for (size_t i = begin; i < end; ++i) {
      if (kept_node[i] != 0) target[graph.slot[i]] = at++;
    }
  });
  ChakraTrace out;
  for (uint32_t records : with_record) out.removed_dangling += records;
  out.removed_dangling -= kept;
  uint32_t removed = kept;
  for (uint32_t& to : target) {
    if (to == kNoNode) to = removed++;
  }
  move_to_targets(graph.records, target, m, &run);
  graph.records.resize(kept);
  out.nodes = std::move(graph.records);
  out.comm = std::move(graph.comm);
  if (options.compat == Compat::kDefault) {
    // ctrl_deps on a removed node dropped, in ranges of records (problems joined in order).
    std::vector<DataProblems> problems(range_count(kept, range));
    for_each_range(run, kept, range, [&](size_t r, size_t begin, size_t end) {
      for (size_t k = begin; k < end; ++k) {
        ChakraNodeRecord& rec = out.nodes[k];
        if (rec.ctrl_dep != kNoNode && kept_node[rec.ctrl_dep] == 0) {
          problems[r].add(
              StatKind::kConvertCtrlDepOnRemoved,
              fmt::format("node {} -> {}", t.nodes[rec.source].id, t.nodes[rec.ctrl_dep].id));
          rec.ctrl_dep = kNoNode;
        }
      }
    });
    for (const DataProblems& p : problems) stats.merge(p);
  }
  return out;
}

}  // namespace chakraflow
