#include "stages/convert/pytorch_converter.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <unordered_map>

#include "proto/et_def.pb.h"
#include "stages/common/json_util.h"
#include "stages/common/prefault.h"
#include "stages/common/profile.h"
#include "stages/common/short_copy.h"
#include "stages/convert/comm_attributes.h"
#include "stages/convert/comm_groups.h"
#include "stages/convert/cycle_check.h"
#include "stages/convert/dependency_encoding.h"
#include "stages/convert/et_plus_nodes.h"
#include "stages/convert/python_repr.h"
#include "stages/et/et_io.h"
#include "stages/et/wire_format.h"
#include "stages/link/host_et_loader.h"

namespace chakraflow {
namespace {

namespace pb = ChakraProtoMsg;

uint64_t duration_micros(const EtPlusNode& node, const ConvertOptions& options,
                         DataProblems& stats) {
  if (options.zero_optimizer_step && node.name.find("Optimizer.step") != std::string_view::npos) {
    return 0;
  }
  const double d = node.exclusive_dur;
  if (!(d > 0)) {
    if (d < 0) {
      stats.add(StatKind::kConvertNegativeExclusiveDur, fmt::format("node {}", node.id));
    }
    return 0;
  }
  if (d >= 1.8e19) return UINT64_MAX;
  if (options.compat == Compat::kChakra) return static_cast<uint64_t>(d);  // Python int()
  // Nearest µs, and never 0 for work that took time: ASTRA-sim skips 0-duration nodes.
  const auto rounded = static_cast<uint64_t>(std::llround(d));
  return rounded == 0 ? 1 : rounded;
}

// The exact decimal a double holds when it was read from a decimal of at most three fraction
// digits (Kineto's µs): its shortest round-trip text, read as integer ns.
bool exact_ns(double us, TimeNs* ns) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), us, std::chars_format::fixed);
  bool fractional = false;
  return r.ec == std::errc() &&
         json::parse_micros_as_ns(std::string_view(buf, static_cast<size_t>(r.ptr - buf)), ns,
                                  &fractional);
}

// Chakra mode: `truncated` (int() of the node's exclusive_dur) where that float may hold rounding
// noise across a whole µs. Chakra's ET+ computes exclusive durations in floats from timestamps
// near 5e12 µs, so 9 µs can read 8.99996875; the .et its converter gives for the pt211 references
// holds int() of the exact decimal value (docs/compatibility.md). That value is the node's
// inclusive_dur minus the union of the intervals of its timed children nested in it (the ops
// Chakra subtracted, all in whole ns): used when the float is within kNearWhole of a whole µs
// and the exact value agrees with the float as closely, else `truncated` stays.
uint64_t chakra_exact_micros(const EtPlusTrace& t, const ConversionGraph& graph, uint32_t i,
                             uint64_t truncated) {
  constexpr double kNearWhole = 0.01;  // µs: far above the noise, far below a whole µs
  const EtPlusNode& node = t.nodes[i];
  const double x = node.exclusive_dur;
  if (node.kind != OpKind::kCpu || !node.has_ts || !(x > 0) || x >= 1e15 || truncated == 0 ||
      std::fabs(x - std::round(x)) >= kNearWhole) {
    return truncated;
  }
  TimeNs ts = 0, dur = 0;
  if (!exact_ns(node.ts, &ts) || !exact_ns(node.inclusive_dur, &dur)) return truncated;
  const TimeNs end = ts + dur;
  std::vector<std::pair<TimeNs, TimeNs>> nested;
  for (uint32_t k = graph.child_begin[i]; k < graph.child_begin[i + 1]; ++k) {
    const EtPlusNode& c = t.nodes[graph.children[k]];
    TimeNs c_ts = 0, c_dur = 0;
    if (c.kind != OpKind::kCpu || !c.has_ts || !exact_ns(c.ts, &c_ts) ||
        !exact_ns(c.inclusive_dur, &c_dur)) {
      continue;
    }
    if (c_ts >= ts && c_ts + c_dur <= end) nested.emplace_back(c_ts, c_ts + c_dur);
  }
  std::sort(nested.begin(), nested.end());
  TimeNs exclusive = dur, from = ts;
  for (const auto& [b, e] : nested) {
    const TimeNs start = std::max(b, from);
    if (e > start) exclusive -= e - start;
    from = std::max(from, e);
  }
  if (exclusive < 0 || std::fabs(static_cast<double>(exclusive) / 1000.0 - x) >= kNearWhole) {
    return truncated;
  }
  return static_cast<uint64_t>(exclusive / 1000);
}

// What the walk's set-up asks of every node, read in one pass over the nodes (224 bytes each: a
// pass per question cost more than the questions), in ranges on the workers, joined in id order.
struct TreeScan {
  std::vector<uint32_t> parent;        // each node's parent as resolved (EtPlusNode::parent)
  std::vector<uint8_t> gpu;            // 1 for a GPU node: what the passes after ask of its kind
  std::vector<uint32_t> self_parents;  // nodes that name themselves their parent
  std::vector<uint32_t> thread_roots;  // nodes named as a thread root
  // CPU nodes named c10d::* or as a CPU-side collective (parent_cpu_collectives' candidates).
  std::vector<uint32_t> collectives;
};

constexpr size_t kScanNodesPerRange = 32768;

TreeScan scan_tree(const EtPlusTrace& t, const OrderedBatches* workers) {
  const size_t n = t.nodes.size();
  TreeScan scan;
  scan.parent.resize(n);
  scan.gpu.resize(n);
  const size_t ranges = range_count_on(workers, n, kScanNodesPerRange);
  std::vector<TreeScan> parts(ranges);
  batches_or_in_turn(workers).for_each(parts.size(), [&](size_t r) {
    TreeScan& part = parts[r];
    for (size_t i = n * r / parts.size(); i < n * (r + 1) / parts.size(); ++i) {
      const EtPlusNode& node = t.nodes[i];
      const auto index = static_cast<uint32_t>(i);
      scan.parent[i] = node.parent;
      scan.gpu[i] = node.kind == OpKind::kGpu ? 1 : 0;
      if (node.parent == kNoNode && node.has_parent_id && node.parent_id == node.id) {
        part.self_parents.push_back(index);
      }
      if (is_thread_root_name(node.name)) part.thread_roots.push_back(index);
      if (node.kind == OpKind::kCpu &&
          (node.name.starts_with("c10d::") || is_cpu_collective_name(node.name))) {
        part.collectives.push_back(index);
      }
    }
  });
  for (const TreeScan& part : parts) {
    scan.self_parents.insert(scan.self_parents.end(), part.self_parents.begin(),
                             part.self_parents.end());
    scan.thread_roots.insert(scan.thread_roots.end(), part.thread_roots.begin(),
                             part.thread_roots.end());
    scan.collectives.insert(scan.collectives.end(), part.collectives.begin(),
                            part.collectives.end());
  }
  return scan;
}

// A node with no parent to follow although its parent is not missing.
struct Detached {
  bool on_cycle;  // on a ctrl_deps cycle, else its own parent
  std::string example;
};

// The detached nodes by index, in id order: nodes that are their own parent (the process root
// aside), and the node of each ctrl_deps cycle with the smallest id, where the cycle is cut in
// default mode (its `parent` set to none).
std::map<uint32_t, Detached> find_detached(const EtPlusTrace& t, bool chakra, const TreeScan& scan,
                                           std::vector<uint32_t>& parent) {
  const size_t n = t.nodes.size();
  std::map<uint32_t, Detached> detached;
  for (uint32_t i : scan.self_parents) {
    const EtPlusNode& node = t.nodes[i];
    if (!t.parents_renumbered && !is_process_root_name(node.name)) {
      detached[i] = {false, fmt::format("node {}", node.id)};
    }
  }
  // ctrl_deps cycles: every chain is followed once, so this is linear.
  enum : uint8_t { kNew, kOnPath, kDone };
  std::vector<uint8_t> state(n, kNew);
  std::vector<uint32_t> path;
  for (uint32_t start = 0; start < n; ++start) {
    path.clear();
    uint32_t i = start;
    for (; i != kNoNode && state[i] == kNew; i = parent[i]) {
      state[i] = kOnPath;
      path.push_back(i);
    }
    if (i != kNoNode && state[i] == kOnPath) {
      // The cycle is the end of the path, from i on; indices follow ids.
      const auto cycle = std::find(path.begin(), path.end(), i);
      const uint32_t cut = *std::min_element(cycle, path.end());
      std::string ids;
      for (auto k = cycle; k != path.end(); ++k) ids += fmt::format("{} -> ", t.nodes[*k].id);
      detached[cut] = {true,
                       fmt::format("node {} (cycle {}{})", t.nodes[cut].id, ids, t.nodes[i].id)};
      if (!chakra) parent[cut] = kNoNode;
    }
    for (uint32_t k : path) state[k] = kDone;
  }
  return detached;
}

// Default mode: every CPU node without a parent to follow (its parent missing, or detached) is
// attached to the thread root of its tid, else walked as a root of its own (`extra_roots`);
// counted by why and where it goes.
void attach_orphans(const EtPlusTrace& t, const TreeScan& scan,
                    const std::map<uint32_t, Detached>& detached, std::vector<uint32_t>& parent,
                    std::vector<uint32_t>* extra_roots, DataProblems& stats) {
  const size_t n = t.nodes.size();
  std::unordered_map<int64_t, uint32_t> thread_root_of_tid;
  for (uint32_t i : scan.thread_roots) thread_root_of_tid.emplace(t.nodes[i].tid, i);
  for (uint32_t i = 0; i < n; ++i) {
    const EtPlusNode& node = t.nodes[i];
    if (parent[i] != kNoNode || is_thread_root_name(node.name) || is_process_root_name(node.name)) {
      continue;
    }
    if (node.kind == OpKind::kGpu) {
      stats.add(StatKind::kConvertGpuWithoutLauncher, fmt::format("node {}", node.id));
      continue;
    }
    const auto d = detached.find(i);
    // Counted by why the node has no parent to follow and by where it goes.
    auto kind = [&d, missing = d == detached.end()](StatKind parent_missing, StatKind self_parent,
                                                    StatKind on_cycle) {
      return missing ? parent_missing : d->second.on_cycle ? on_cycle : self_parent;
    };
    std::string example =
        d != detached.end()
            ? d->second.example
            : fmt::format("node {} (parent {})", node.id,
                          node.has_parent_id ? std::to_string(node.parent_id) : "none");
    auto it = thread_root_of_tid.find(node.tid);
    if (it != thread_root_of_tid.end()) {
      parent[i] = it->second;
      stats.add(kind(StatKind::kConvertParentMissingAttached, StatKind::kConvertSelfParentAttached,
                     StatKind::kConvertCtrlCycleAttached),
                std::move(example));
    } else {
      extra_roots->push_back(i);
      stats.add(kind(StatKind::kConvertParentMissingOwnRoot, StatKind::kConvertSelfParentOwnRoot,
                     StatKind::kConvertCtrlCycleOwnRoot),
                std::move(example));
    }
  }
}

// The parents the walk follows. Chakra: the parents as read. Default mode: a CPU node whose
// parent is missing is attached to the thread root of its tid (else walked as a root of its own).
// A node whose parent chain never reaches a root -- its own parent (the process root aside), or on
// a ctrl_deps cycle -- is never walked from a thread root, so Chakra drops it as dangling with
// everything below it; default mode cuts each cycle at its smallest id and attaches that node like
// one whose parent is missing. Every such node is counted in both modes.
std::vector<uint32_t> walk_parents(const EtPlusTrace& t, const ConvertOptions& options,
                                   TreeScan& scan, std::vector<uint32_t>* extra_roots,
                                   DataProblems& stats) {
  const bool chakra = options.compat == Compat::kChakra;
  std::vector<uint32_t> parent = std::move(scan.parent);
  const std::map<uint32_t, Detached> detached = find_detached(t, chakra, scan, parent);
  if (chakra) {
    for (const auto& [i, d] : detached) {
      stats.add(
          d.on_cycle ? StatKind::kConvertCtrlCycleDropped : StatKind::kConvertSelfParentDropped,
          d.example);
    }
    return parent;
  }
  attach_orphans(t, scan, detached, parent, extra_roots, stats);
  return parent;
}

// The tensors among a node's input values: (tensor id, storage id, offset, numel) of every
// tensor tuple [id, storage, offset, numel, itemsize, device] in the (nested) lists.
std::vector<std::array<int64_t, 4>> input_tensors(const EtPlusTrace& t, const EtPlusNode& n,
                                                  simdjson::dom::parser& parser) {
  std::vector<std::array<int64_t, 4>> out;
  const std::string_view raw = t.raw_io(n, kInValues);
  simdjson::dom::element values;
  if (raw.empty() || parser.parse(simdjson::padded_string(raw)).get(values)) return out;
  std::vector<simdjson::dom::element> stack{values};
  while (!stack.empty()) {
    simdjson::dom::array a;
    if (stack.back().get_array().get(a)) {
      stack.pop_back();
      continue;
    }
    stack.pop_back();
    std::array<int64_t, 4> key{};
    bool tensor = a.size() == 6 && a.at(5).value_unsafe().is_string();
    for (size_t k = 0; tensor && k < 4; ++k) tensor = !a.at(k).get_int64().get(key[k]);
    if (tensor) {
      out.push_back(key);
      continue;
    }
    for (simdjson::dom::element e : a) stack.push_back(e);
  }
  return out;
}

// Default mode: a CPU-side collective (gloo:*) under the op that enqueued it. The ET records it on
// the caller's thread under whatever op ran there when gloo's thread started it, and records the
// caller's ops that start while it runs as its children; the c10d op that enqueued it holds the
// same tensors among its inputs and comes before it. Its recorded children go back to its
// recorded parent, where the caller's thread ran them.
void parent_cpu_collectives(const EtPlusTrace& t, const TreeScan& scan,
                            std::vector<uint32_t>& parent, DataProblems& stats) {
  std::map<uint32_t, uint32_t> moved;                  // collective -> its recorded parent
  std::map<std::array<int64_t, 4>, uint32_t> c10d_of;  // tensor -> latest c10d op holding it
  simdjson::dom::parser parser;
  for (uint32_t i : scan.collectives) {  // CPU nodes, id order
    const EtPlusNode& n = t.nodes[i];
    if (n.name.starts_with("c10d::")) {
      for (const auto& tensor : input_tensors(t, n, parser)) c10d_of[tensor] = i;
    } else if (is_cpu_collective_name(n.name)) {
      uint32_t caller = kNoNode;
      for (const auto& tensor : input_tensors(t, n, parser)) {
        if (auto it = c10d_of.find(tensor); it != c10d_of.end()) {
          caller = it->second;
          break;
        }
      }
      if (caller != kNoNode) {
        moved[i] = parent[i];
        parent[i] = caller;
      } else {
        stats.add(StatKind::kCommCpuCollectiveCallerUnknown, fmt::format("node {}", n.id));
      }
    }
  }
  if (moved.empty()) return;
  for (uint32_t i = 0; i < t.nodes.size(); ++i) {
    if (moved.count(i)) continue;
    // A chain of moved collectives is at most as long as the collectives.
    for (auto it = moved.find(parent[i]); it != moved.end(); it = moved.find(parent[i])) {
      parent[i] = it->second;
    }
  }
}

// The call tree the walk follows as children lists (CSR), in ascending id order.
void build_children(const std::vector<uint32_t>& parent, ConversionGraph& graph) {
  const size_t n = parent.size();
  graph.child_begin.assign(n + 2, 0);
  for (uint32_t i = 0; i < n; ++i) {
    if (parent[i] != kNoNode) ++graph.child_begin[parent[i] + 2];
  }
  for (size_t i = 0; i < n; ++i) graph.child_begin[i + 2] += graph.child_begin[i + 1];
  graph.children.resize(graph.child_begin[n + 1]);
  for (uint32_t i = 0; i < n; ++i) {
    if (parent[i] != kNoNode) graph.children[graph.child_begin[parent[i] + 1]++] = i;
  }
  graph.child_begin.pop_back();  // now child_begin[i] .. child_begin[i + 1]
}

// The nodes converted, in Chakra's order (CPU and METADATA nodes in input order, each followed by
// its GPU children): each one's slot in the graph set, and the order returned. `gpu` (the scan's)
// tells the GPU nodes without a read of the nodes themselves.
std::vector<uint32_t> conversion_order(const EtPlusTrace& t, const std::vector<uint8_t>& gpu,
                                       ConversionGraph& graph) {
  std::vector<uint32_t> order;
  order.reserve(t.nodes.size());
  graph.slot.assign(t.nodes.size(), kNoNode);
  for (uint32_t i : t.file_order) {
    if (gpu[i]) continue;
    graph.slot[i] = static_cast<uint32_t>(order.size());
    order.push_back(i);
    for (uint32_t k = graph.child_begin[i]; k < graph.child_begin[i + 1]; ++k) {
      const uint32_t c = graph.children[k];
      if (gpu[c] && graph.slot[c] == kNoNode) {
        graph.slot[c] = static_cast<uint32_t>(order.size());
        order.push_back(c);
      }
    }
  }
  return order;
}

// What converting a range of the conversion order adds besides its records, joined in order.
struct ConvertedRange {
  std::vector<CommAttrs> comm;  // the records' comm index into these until joined
  WalkLists walk;
  DataProblems stats;
};

// Node i converted into `rec`, its slot in the graph: duration, communication attributes (into
// `out.comm`), stream, start, what the dependency walks ask of it. Reads the graph's slots and
// call tree, writes only node i's elements of it: ranges of nodes are converted concurrently.
void convert_node(const EtPlusTrace& t, const ConvertOptions& options,
                  const std::vector<uint32_t>& parent, uint32_t i, CommTyper& typer,
                  ConversionGraph& graph, ChakraNodeRecord& rec, ConvertedRange& out) {
  const bool chakra = options.compat == Compat::kChakra;
  const EtPlusNode& node = t.nodes[i];
  DataProblems& stats = out.stats;
  rec.source = i;
  // Chakra: ctrl_deps only if the parent is converted before the node. Default: whenever the
  // parent is converted (the slots are all set before the nodes are converted).
  if (parent[i] != kNoNode && graph.slot[parent[i]] != kNoNode &&
      (!chakra || graph.slot[parent[i]] < graph.slot[i])) {
    rec.ctrl_dep = parent[i];
  }
  rec.duration_micros = duration_micros(node, options, stats);
  if (chakra) rec.duration_micros = chakra_exact_micros(t, graph, i, rec.duration_micros);
  typer.assign(i, rec, out.comm);
  const bool gpu_stream = node.kind == OpKind::kGpu && node.stream_given && node.has_stream;
  if (chakra) {
    if (node.has_stream) {  // CPU nodes: Chakra's default 0
      rec.stream = node.stream;
      rec.set(ChakraNodeRecord::kHasStream);
    }
  } else {
    if (gpu_stream) {
      rec.stream = node.stream;
      rec.set(ChakraNodeRecord::kHasStream);
    }
    if (node.has_ts && node.ts >= 0 && node.ts < 1.8e19) {
      rec.start_time_micros = static_cast<uint64_t>(std::llround(node.ts));
      rec.set(ChakraNodeRecord::kHasStart);
    }
  }
  // What the dependency walks ask of the node, while it is at hand.
  note_walk_facts(t, options, i, rec, graph, out.walk);
}

// Nodes of the conversion order per range when the ranges are converted concurrently.
constexpr size_t kNodesPerRange = 16384;

// Default mode: a GPU node whose launcher is not converted is counted (the other nodes' ctrl_deps
// are their parents whenever converted: convert_node). In `ranges` ranges of nodes through `run`,
// their problems joined in order.
void count_unconverted_gpu_nodes(const EtPlusTrace& t, const std::vector<uint8_t>& gpu,
                                 const ConversionGraph& graph, const OrderedBatches& run,
                                 size_t ranges, DataProblems& stats) {
  const size_t n = t.nodes.size();
  std::vector<DataProblems> problems(ranges);
  run.for_each(ranges, [&](size_t r) {
    for (size_t i = n * r / ranges; i < n * (r + 1) / ranges; ++i) {
      if (!gpu[i] || graph.slot[i] != kNoNode) continue;
      const EtPlusNode& node = t.nodes[i];
      if (node.parent != kNoNode) {
        problems[r].add(StatKind::kConvertGpuLauncherNotConverted,
                        fmt::format("node {} (launcher {})", node.id, t.nodes[node.parent].id));
      }
    }
  });
  for (const DataProblems& p : problems) stats.merge(p);
}

}  // namespace

Conversion select_nodes(const EtPlusTrace& t, const ConvertOptions& options, DataProblems& stats,
                        const OrderedBatches* workers) {
  const size_t n = t.nodes.size();
  const bool chakra = options.compat == Compat::kChakra;
  Conversion conversion;
  ConversionGraph& graph = conversion.graph;
  std::optional<profile::Span> span(std::in_place, "tree scan and parents");
  TreeScan scan = scan_tree(t, workers);
  std::vector<uint32_t> parent = walk_parents(t, options, scan, &graph.extra_roots, stats);
  if (!chakra) parent_cpu_collectives(t, scan, parent, stats);
  build_children(parent, graph);
  span.emplace("conversion order");
  // Chakra's conversion loop: CPU and METADATA nodes in input order, each followed by its GPU
  // children. The order first; then the nodes converted in ranges of it (concurrently, given
  // workers), each range's communication attributes, lists and problems joined in order: the
  // same records whatever the ranges.
  const std::vector<uint32_t> order = conversion_order(t, scan.gpu, graph);
  span.emplace("convert nodes");
  const OrderedBatches& run = batches_or_in_turn(workers);
  grow_prefaulted(graph.records, order.size(), run);
  prepare_walk_facts(options, n, graph);
  const size_t m = order.size();
  const size_t ranges = range_count_on(workers, m, kNodesPerRange);
  std::vector<ConvertedRange> parts(ranges);
  CpuCollectiveGroup cpu_group(t);
  run.for_each(parts.size(), [&](size_t r) {
    CommTyper typer(t, options, parts[r].stats, &cpu_group);
    // A node's name (its communication type is told by it) lies in the input text, last read
    // when it was parsed: it is asked for a few nodes ahead.
    constexpr size_t kAhead = 8;
    const size_t end = m * (r + 1) / parts.size();
    for (size_t k = m * r / parts.size(); k < end; ++k) {
      if (k + kAhead < end) __builtin_prefetch(t.nodes[order[k + kAhead]].name.data());
      convert_node(t, options, parent, order[k], typer, graph, graph.records[k], parts[r]);
    }
  });
  graph.parent = std::move(parent);
  span.emplace("join ranges");
  // Each range's communication attributes and stream keys copied to their place after the ranges
  // before them (its records' comm indices moved by as much), the ranges on the workers; the short
  // lists and the problems joined in order.
  std::vector<size_t> comm_at(parts.size() + 1, 0), keys_at(parts.size() + 1, 0);
  for (size_t r = 0; r < parts.size(); ++r) {
    comm_at[r + 1] = comm_at[r] + parts[r].comm.size();
    keys_at[r + 1] = keys_at[r] + parts[r].walk.stream_keys.size();
  }
  graph.comm.resize(comm_at.back());
  graph.walk.stream_keys.resize(keys_at.back());
  run.for_each(parts.size(), [&](size_t r) {
    const ConvertedRange& p = parts[r];
    if (!p.comm.empty() && comm_at[r] != 0) {
      const auto base = static_cast<uint32_t>(comm_at[r]);
      for (size_t k = m * r / parts.size(); k < m * (r + 1) / parts.size(); ++k) {
        if (graph.records[k].comm != kNoNode) graph.records[k].comm += base;
      }
    }
    std::copy(p.comm.begin(), p.comm.end(), graph.comm.begin() + comm_at[r]);
    std::copy(p.walk.stream_keys.begin(), p.walk.stream_keys.end(),
              graph.walk.stream_keys.begin() + keys_at[r]);
  });
  for (const ConvertedRange& p : parts) {
    graph.walk.append_lists(p.walk);
    stats.merge(p.stats);
  }
  if (!chakra) {
    const size_t node_ranges = range_count_on(workers, n, kNodesPerRange);
    count_unconverted_gpu_nodes(t, scan.gpu, graph, run, node_ranges, stats);
  }
  conversion.pg_names = cpu_group.take_names();
  return conversion;
}

ChakraTrace drop_dangling_nodes(const EtPlusTrace& t, const ConvertOptions& options,
                                Conversion&& conversion, DataProblems& stats,
                                const OrderedBatches* workers) {
  ChakraTrace out = remove_dangling_nodes(t, options, std::move(conversion.graph), stats, workers);
  // The group names the typer chose (CommAttrs point into them) live as long as the trace.
  out.renamed_pg_names = std::move(conversion.pg_names);
  if (options.pg_name_offset != 0) {
    std::map<std::string_view, std::string_view> renamed;
    for (CommAttrs& c : out.comm) {
      if (c.pg_name.empty()) continue;
      auto it = renamed.find(c.pg_name);
      if (it == renamed.end()) {
        out.renamed_pg_names.push_back(std::make_unique<std::string>(
            offset_group_name(std::string(c.pg_name), options.pg_name_offset)));
        it = renamed.emplace(c.pg_name, *out.renamed_pg_names.back()).first;
      }
      c.pg_name = it->second;
    }
  }
  out.gpu_stream_edges = conversion.dependencies.gpu_stream_edges;
  out.sync_edges = conversion.dependencies.sync_edges;
  return out;
}

StatusOr<ChakraTrace> convert_et_plus(const EtPlusTrace& t, const ConvertOptions& options,
                                      DataProblems& stats, const OrderedBatches* workers) {
  Conversion conversion = select_nodes(t, options, stats, workers);
  encode_dependencies(t, options, conversion.graph, stats, &conversion.dependencies, workers);
  ChakraTrace out = drop_dangling_nodes(t, options, std::move(conversion), stats, workers);
  CF_RETURN_IF_ERROR(check_acyclic(t, out));
  return out;
}

void fill_global_metadata(const EtPlusTrace& t, const ConvertOptions& options,
                          pb::GlobalMetadata* md, const OrderedBatches* workers) {
  md->Clear();
  // Chakra leaves the version empty (spec §5 #20); default mode names the schema it writes.
  if (options.compat == Compat::kDefault) md->set_version("1.0.0");
  const EtPlusMetadata& m = t.metadata;
  auto add_string = [&](const char* name, const std::optional<std::string>& v) {
    if (!v) return;
    pb::AttributeProto* a = md->add_attr();
    a->set_name(name);
    a->set_string_val(*v);
  };
  auto add_uint = [&](const char* name, const std::optional<uint64_t>& v) {
    if (!v) return;
    pb::AttributeProto* a = md->add_attr();
    a->set_name(name);
    a->set_uint64_val(*v);
  };
  add_string("schema", m.schema);
  add_uint("pid", m.pid);
  add_string("time", m.time);
  add_uint("start_ts", m.start_ts);
  add_uint("finish_ts", m.finish_ts);
  if (options.compat == Compat::kDefault) {
    if (auto step = measured_step(t, workers)) {
      auto add_double = [&](const char* name, double v) {
        pb::AttributeProto* a = md->add_attr();
        a->set_name(name);
        a->set_double_val(v);
      };
      add_double("step_start_us", step->start_us);
      add_double("step_end_us", step->end_us);
      add_double("step_time_us", step->end_us - step->start_us);
    }
    // What the link did about profiler overhead, and the step measured without a profiler
    // (stages/link/profiler_overhead.h): what the simulator reports against.
    if (const auto& p = m.profiler) {
      auto add_double = [&](const char* name, double v) {
        pb::AttributeProto* a = md->add_attr();
        a->set_name(name);
        a->set_double_val(v);
      };
      add_double("recorded_step_time_us", p->recorded_step_us);
      pb::AttributeProto* removed = md->add_attr();
      removed->set_name("profiler_overhead_removed");
      removed->set_bool_val(p->removed);
      if (p->removed) {
        add_double("profiler_us_per_op", static_cast<double>(p->costs.per_op) / 1000.0);
        add_double("profiler_us_per_runtime_call",
                   static_cast<double>(p->costs.per_runtime_call) / 1000.0);
      }
      if (p->unprofiled) {
        add_double("unprofiled_step_median_us", p->unprofiled->median_us);
        add_double("unprofiled_step_min_us", p->unprofiled->min_us);
      }
    }
  }
}

namespace {

// `step` widened to cover [start, end) (set to it when empty).
void cover(std::optional<MeasuredStep>& step, double start, double end) {
  if (!step) {
    step = MeasuredStep{start, end};
  } else {
    step->start_us = std::min(step->start_us, start);
    step->end_us = std::max(step->end_us, end);
  }
}

// The step of the nodes [begin, end) (measured_step).
std::optional<MeasuredStep> step_of(const EtPlusTrace& t, size_t begin, size_t end) {
  std::optional<MeasuredStep> step;
  for (size_t i = begin; i < end; ++i) {
    const EtPlusNode& n = t.nodes[i];
    if (!n.has_ts || !(n.ts > 0)) continue;  // not linked to the device trace
    cover(step, n.ts, n.ts + std::max({n.inclusive_dur, n.exclusive_dur, 0.0}));
  }
  return step;
}

// Nodes per range of measured_step on the workers.
constexpr size_t kStepRange = 32768;

}  // namespace

std::optional<MeasuredStep> measured_step(const EtPlusTrace& t, const OrderedBatches* workers) {
  const size_t n = t.nodes.size();
  const OrderedBatches& run = batches_or_in_turn(workers);
  const size_t per_range = run.range_size(kStepRange);
  std::vector<std::optional<MeasuredStep>> parts(range_count(n, per_range));
  for_each_range(run, n, per_range,
                 [&](size_t r, size_t begin, size_t end) { parts[r] = step_of(t, begin, end); });
  // The earliest start and the latest end of the ranges' (times are finite: JSON has no NaN).
  std::optional<MeasuredStep> step;
  for (const auto& part : parts) {
    if (part) cover(step, part->start_us, part->end_us);
  }
  return step;
}

Status render_io(const EtPlusTrace& t, const EtPlusNode& n, RenderedIo& out) {
  static constexpr const char* kFieldNames[] = {"inputs.values",  "inputs.shapes",
                                                "inputs.types",   "outputs.values",
                                                "outputs.shapes", "outputs.types"};
  // out.text past `size` is room kept from the nodes before.
  size_t size = 0;
  size_t end[kIoFieldCount];
  for (int f = 0; f < kIoFieldCount; ++f) {
    if (t.io_missing(n, static_cast<IoField>(f))) {
      if (out.text.size() < size + 2) out.text.resize(size + 2);
      out.text[size] = '[';
      out.text[size + 1] = ']';
      size += 2;
    } else if (const std::string_view raw = t.raw_io(n, static_cast<IoField>(f)); !raw.empty()) {
      Status s = pyrepr::write_json_value(out.text, size, raw);
      if (!s.ok()) {
        return Status::errorf("{}: byte {}: node id {}: {}: {}", t.path, n.byte_offset, n.id,
                              kFieldNames[f], s.message());
      }
    }
    end[f] = size;
  }
  size_t begin = 0;
  for (int f = 0; f < kIoFieldCount; ++f) {
    out.io[f] = std::string_view(out.text).substr(begin, end[f] - begin);
    begin = end[f];
  }
  return Status();
}

Status fill_node(const EtPlusTrace& t, const ChakraTrace& chakra, const ChakraNodeRecord& rec,
                 pb::Node* node) {
  node->Clear();
  const EtPlusNode& src = t.nodes[rec.source];
  RenderedIo io;
  CF_RETURN_IF_ERROR(render_io(t, src, io));
  node->set_id(src.id);
  node->set_name(src.name.data(), src.name.size());
  node->set_type(static_cast<pb::NodeType>(rec.type));
  if (rec.ctrl_dep != kNoNode) node->add_ctrl_deps(t.nodes[rec.ctrl_dep].id);
  for (uint32_t d : rec.data_deps) node->add_data_deps(t.nodes[d].id);
  if (rec.has(ChakraNodeRecord::kHasStart)) node->set_start_time_micros(rec.start_time_micros);
  node->set_duration_micros(rec.duration_micros);
  pb::IOInfo* in = node->mutable_inputs();
  in->set_values(std::string(io.io[kInValues]));
  in->set_shapes(std::string(io.io[kInShapes]));
  in->set_types(std::string(io.io[kInTypes]));
  pb::IOInfo* out = node->mutable_outputs();
  out->set_values(std::string(io.io[kOutValues]));
  out->set_shapes(std::string(io.io[kOutShapes]));
  out->set_types(std::string(io.io[kOutTypes]));
  auto add = [&](const char* name) {
    pb::AttributeProto* a = node->add_attr();
    a->set_name(name);
    return a;
  };
  add("rf_id")->set_int64_val(t.attr(src, kAttrRfId));
  add("fw_parent")->set_int64_val(t.attr(src, kAttrFwParent));
  add("seq_id")->set_int64_val(t.attr(src, kAttrSeqId));
  add("scope")->set_int64_val(t.attr(src, kAttrScope));
  const CommAttrs* comm = chakra.comm_of(rec);
  add("tid")->set_int64_val(comm && comm->exec_tid ? *comm->exec_tid : src.tid);
  add("fw_tid")->set_int64_val(t.attr(src, kAttrFwTid));
  add("op_schema")->set_string_val(std::string(src.op_schema));
  add("is_cpu_op")->set_bool_val(rec.is_cpu_op);
  if (rec.has(ChakraNodeRecord::kHasStream)) add("stream")->set_int64_val(rec.stream);
  const CommAttrs* c = chakra.comm_of(rec);
  if (c == nullptr) return Status();
  if (rec.type == ChakraNodeType::kCommColl && c->comm_type) {
    add("comm_type")->set_int64_val(static_cast<int64_t>(*c->comm_type));
  }
  if (c->comm_size) add("comm_size")->set_int64_val(*c->comm_size);
  if (!c->pg_name.empty()) add("pg_name")->set_string_val(std::string(c->pg_name));
  if (c->comm_src) add("comm_src")->set_int32_val(*c->comm_src);
  if (c->comm_dst) add("comm_dst")->set_int32_val(*c->comm_dst);
  if (c->comm_tag) add("comm_tag")->set_int32_val(*c->comm_tag);
  return Status();
}

namespace {

// Protocol buffers wire format, written directly: what fill_node + SerializeToString give, byte
// for byte (fields in number order; proto3 scalars only when not zero, oneof members and
// sub-messages whenever set), without building a message per node. The encoder writes through a
// raw pointer into a buffer sized beforehand to an upper bound of the node's size.
namespace enc {

constexpr uint32_t kVarint = 0, kLength = 2;
constexpr size_t kMaxVarint = 10;
using ::chakraflow::wire::varint_size;
inline char* varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}
// Field numbers here are below 16: a tag is one byte.
inline char* tag(char* p, uint32_t field, uint32_t type) {
  *p++ = static_cast<char>((field << 3) | type);
  return p;
}
constexpr size_t kTagSize = 1;
// An empty view may have no data pointer: copy_short_or_long copies nothing then.
inline char* copy(char* p, std::string_view s) {
  copy_short_or_long(p, s.data(), s.size());
  return p + s.size();
}
inline char* bytes(char* p, uint32_t field, std::string_view s) {
  p = tag(p, field, kLength);
  p = varint(p, s.size());
  return copy(p, s);
}
size_t bytes_size(std::string_view s) {
  return kTagSize + varint_size(s.size()) + s.size();
}
// int32 and int64 values: negative ones as 64-bit two's complement (10 bytes), as protobuf does.
uint64_t signed_bits(int64_t v) {
  return static_cast<uint64_t>(v);
}

// AttributeProto fields.
constexpr uint32_t kAttrName = 1, kInt32Val = 7, kInt64Val = 9, kBoolVal = 27, kStringVal = 29;
constexpr uint32_t kNodeAttr = 10;
// Bytes an attribute takes besides its name and string value: tags and length prefixes.
constexpr size_t kAttrOverhead = 1 + 5 + 1 + 5 + 2 + kMaxVarint;

// The attributes' names are literals: their length is known here, and copying them takes no call
// (a memcpy call per attribute was a tenth of the converter's copying).
template <size_t N>
inline char* attr_header(char* p, const char (&name)[N], size_t value_size) {
  constexpr size_t kNameSize = N - 1;
  p = tag(p, kNodeAttr, kLength);
  p = varint(p, kTagSize + varint_size(kNameSize) + kNameSize + value_size);
  p = tag(p, kAttrName, kLength);
  p = varint(p, kNameSize);
  std::memcpy(p, name, kNameSize);
  return p + kNameSize;
}
// The value's tag: two bytes for field numbers 16 and above.
inline char* value_tag(char* p, uint32_t field, uint32_t type) {
  return varint(p, (field << 3) | type);
}
template <size_t N>
inline char* attr_varint(char* p, const char (&name)[N], uint32_t field, uint64_t v) {
  p = attr_header(p, name, varint_size(field << 3) + varint_size(v));
  p = value_tag(p, field, kVarint);
  return varint(p, v);
}
template <size_t N>
inline char* attr_string(char* p, const char (&name)[N], std::string_view v) {
  const size_t value_size = varint_size(kStringVal << 3) + varint_size(v.size()) + v.size();
  p = attr_header(p, name, value_size);
  p = value_tag(p, kStringVal, kLength);
  p = varint(p, v.size());
  return copy(p, v);
}

// IOInfo {values = 1, shapes = 2, types = 3}: written even when empty (mutable_inputs()).
inline char* io_info(char* p, uint32_t field, const std::string_view (&s)[3]) {
  size_t size = 0;
  for (std::string_view v : s) {
    if (!v.empty()) size += bytes_size(v);
  }
  p = tag(p, field, kLength);
  p = varint(p, size);
  for (uint32_t k = 0; k < 3; ++k) {
    if (!s[k].empty()) p = bytes(p, k + 1, s[k]);
  }
  return p;
}

}  // namespace enc

// An upper bound of the size of the node's encoding.
size_t node_size_bound(const EtPlusTrace& t, const ChakraNodeRecord& rec, const CommAttrs* c,
                       const RenderedIo& io) {
  const EtPlusNode& src = t.nodes[rec.source];
  constexpr size_t kStringOverhead = 1 + 5;                        // a tag and a length
  size_t bound = 4 * (1 + enc::kMaxVarint)                         // id, type, start, duration
                 + 2 * (1 + 5) + 1 + 5 + enc::kMaxVarint           // IOInfo headers, ctrl_deps
                 + 1 + 5 + rec.data_deps.size() * enc::kMaxVarint  // data_deps
                 + kStringOverhead + src.name.size()               //
                 + 15 * (enc::kAttrOverhead + 16)                  // attributes (names below 16)
                 + src.op_schema.size() + (c ? c->pg_name.size() : 0) + 2 * kStringOverhead;
  for (std::string_view s : io.io) bound += kStringOverhead + s.size();
  return bound;
}

// Writes the node's encoding at `p` (node_size_bound bytes available); returns its end.
char* encode_node_at(const EtPlusTrace& t, const ChakraNodeRecord& rec, const CommAttrs* c,
                     const RenderedIo& rendered, char* p) {
  using namespace enc;
  const EtPlusNode& src = t.nodes[rec.source];
  if (src.id != 0) {
    p = tag(p, 1, kVarint);
    p = varint(p, src.id);
  }
  if (!src.name.empty()) p = bytes(p, 2, src.name);
  if (rec.type != ChakraNodeType::kInvalid) {
    p = tag(p, 3, kVarint);
    p = varint(p, static_cast<uint64_t>(rec.type));
  }
  if (rec.ctrl_dep != kNoNode) {  // packed repeated uint64
    const uint64_t id = t.nodes[rec.ctrl_dep].id;
    p = tag(p, 4, kLength);
    p = varint(p, varint_size(id));
    p = varint(p, id);
  }
  if (!rec.data_deps.empty()) {
    size_t size = 0;
    for (uint32_t d : rec.data_deps) size += varint_size(t.nodes[d].id);
    p = tag(p, 5, kLength);
    p = varint(p, size);
    for (uint32_t d : rec.data_deps) p = varint(p, t.nodes[d].id);
  }
  if (rec.has(ChakraNodeRecord::kHasStart) && rec.start_time_micros != 0) {
    p = tag(p, 6, kVarint);
    p = varint(p, rec.start_time_micros);
  }
  if (rec.duration_micros != 0) {
    p = tag(p, 7, kVarint);
    p = varint(p, rec.duration_micros);
  }
  const std::string_view(&io)[kIoFieldCount] = rendered.io;
  p = io_info(p, 8, {io[kInValues], io[kInShapes], io[kInTypes]});
  p = io_info(p, 9, {io[kOutValues], io[kOutShapes], io[kOutTypes]});
  p = attr_varint(p, "rf_id", kInt64Val, signed_bits(t.attr(src, kAttrRfId)));
  p = attr_varint(p, "fw_parent", kInt64Val, signed_bits(t.attr(src, kAttrFwParent)));
  p = attr_varint(p, "seq_id", kInt64Val, signed_bits(t.attr(src, kAttrSeqId)));
  p = attr_varint(p, "scope", kInt64Val, signed_bits(t.attr(src, kAttrScope)));
  p = attr_varint(p, "tid", kInt64Val, signed_bits(c && c->exec_tid ? *c->exec_tid : src.tid));
  p = attr_varint(p, "fw_tid", kInt64Val, signed_bits(t.attr(src, kAttrFwTid)));
  p = attr_string(p, "op_schema", src.op_schema);
  p = attr_varint(p, "is_cpu_op", kBoolVal, rec.is_cpu_op ? 1 : 0);
  if (rec.has(ChakraNodeRecord::kHasStream)) {
    p = attr_varint(p, "stream", kInt64Val, signed_bits(rec.stream));
  }
  if (c == nullptr) return p;
  if (rec.type == ChakraNodeType::kCommColl && c->comm_type) {
    p = attr_varint(p, "comm_type", kInt64Val, static_cast<uint64_t>(*c->comm_type));
  }
  if (c->comm_size) p = attr_varint(p, "comm_size", kInt64Val, signed_bits(*c->comm_size));
  if (!c->pg_name.empty()) p = attr_string(p, "pg_name", c->pg_name);
  if (c->comm_src) p = attr_varint(p, "comm_src", kInt32Val, signed_bits(*c->comm_src));
  if (c->comm_dst) p = attr_varint(p, "comm_dst", kInt32Val, signed_bits(*c->comm_dst));
  if (c->comm_tag) p = attr_varint(p, "comm_tag", kInt32Val, signed_bits(*c->comm_tag));
  return p;
}

}  // namespace

Status encode_node(const EtPlusTrace& t, const ChakraTrace& chakra, const ChakraNodeRecord& rec,
                   std::string& out) {
  const CommAttrs* c = chakra.comm_of(rec);
  RenderedIo io;
  CF_RETURN_IF_ERROR(render_io(t, t.nodes[rec.source], io));
  out.resize(node_size_bound(t, rec, c, io));
  char* end = encode_node_at(t, rec, c, io, out.data());
  out.resize(static_cast<size_t>(end - out.data()));
  return Status();
}

namespace {

// Records [begin, end) of `chakra`, each framed (its length varint, then the node), appended to
// `out`. Each node is encoded in place: the length's size is guessed from the node's bound; when
// the node comes out shorter and its length takes fewer bytes (a node of fewer than 128 bytes, or
// just below a power of 128), the node moves up against it. The IOInfo strings are rendered per
// node into one buffer; a GPU node shares its launcher's lists (the same text), rendered once for
// both.
Status encode_records(const EtPlusTrace& t, const ChakraTrace& chakra, size_t begin, size_t end,
                      std::string& out) {
  RenderedIo io;
  const EtPlusNode* rendered = nullptr;
  // The lists' text, the name and the op_schema were last read when the input was parsed: they
  // are asked for a few nodes ahead.
  constexpr size_t kAhead = 8;
  auto prefetch_io = [&t](const EtPlusNode& n) {
    for (IoField f : {kInValues, kOutValues}) {
      const std::string_view raw = t.raw_io(n, f);
      if (!raw.empty()) __builtin_prefetch(raw.data());
    }
    __builtin_prefetch(n.name.data());
    __builtin_prefetch(n.op_schema.data());
  };
  const std::vector<ChakraNodeRecord>& records = chakra.nodes;
  constexpr size_t kEtRoomStep = size_t{64} << 10;
  size_t used = out.size();
  for (size_t k = begin; k < end; ++k) {
    const ChakraNodeRecord& rec = records[k];
    if (k + kAhead < end) prefetch_io(t.nodes[records[k + kAhead].source]);
    const EtPlusNode& src = t.nodes[rec.source];
    if (rendered == nullptr || !t.same_io(*rendered, src)) {
      CF_RETURN_IF_ERROR(render_io(t, src, io));
      rendered = &src;
    }
    const CommAttrs* c = chakra.comm_of(rec);
    const size_t bound = node_size_bound(t, rec, c, io);
    const size_t guess = enc::varint_size(bound);
    // Grown a stretch at a time (the string keeps the capacity of the batches before and
    // doubles it itself): each byte of room is zeroed as it is made, so no more than the batch
    // needs is made.
    if (out.size() < used + guess + bound) out.resize(used + guess + bound + kEtRoomStep);
    char* start = out.data() + used;
    char* body = start + guess;
    const size_t size = static_cast<size_t>(encode_node_at(t, rec, c, io, body) - body);
    const size_t prefix = enc::varint_size(size);
    if (prefix < guess) std::memmove(start + prefix, body, size);
    enc::varint(start, size);
    used += prefix + size;
  }
  out.resize(used);
  return Status();
}

}  // namespace

Status write_chakra_trace(const EtPlusTrace& t, const ChakraTrace& chakra,
                          const ConvertOptions& options, EtWriter& writer,
                          const OrderedBatches* batches) {
  pb::GlobalMetadata md;
  fill_global_metadata(t, options, &md, batches);
  writer.write(md);
  // The nodes in batches, encoded through `batches` (concurrently where it runs them so) and
  // written in order: the same bytes either way.
  const size_t n = chakra.nodes.size();
  const OrderedBatches& run = batches_or_in_turn(batches);
  const size_t per_batch = run.range_size(kEtBatchRecords);
  const size_t count = (n + per_batch - 1) / per_batch;
  size_t next = 0;  // the batch consumed next
  return run.run(
      count,
      [&](size_t b, std::string& out) {
        const size_t begin = b * per_batch;
        return encode_records(t, chakra, begin, std::min(n, begin + per_batch), out);
      },
      [&](std::string& out) {
        const size_t begin = next++ * per_batch;
        writer.append_records(out, std::min(n, begin + per_batch) - begin);
        return Status();
      });
}

Status convert_file(const std::string& input_path, const std::string& output_path,
                    const ConvertOptions& options, ConvertReport* report) {
  CF_ASSIGN_OR_RETURN(EtPlusFile input, load_et_plus(input_path, options));
  return convert_trace(input.trace, output_path, options, report);
}

Status write_converted(const EtPlusTrace& trace, const ChakraTrace& chakra, DataProblems stats,
                       const std::string& output_path, const ConvertOptions& options,
                       ConvertReport* report, const OrderedBatches* batches,
                       const std::function<Status()>& check_beside) {
  CF_ASSIGN_OR_RETURN(EtWriter writer, EtWriter::open(output_path));
  writer.compress_on(batches);
  // Beside the encoding: the cycle check, then (for the report) the communicator groups, which
  // read only the trace: the same results as one after the other, without the wait.
  Status checked, written, grouped;
  RankCommGroups groups;
  const bool beside = check_beside || report != nullptr;
  batches_or_in_turn(batches).for_each(beside ? 2 : 1, [&](size_t task) {
    if (task == 0) {
      const profile::Span span("encode and write");
      written = write_chakra_trace(trace, chakra, options, writer, batches);
      return;
    }
    if (check_beside) {
      const profile::Span span("cycle check");
      checked = check_beside();
    }
    if (report != nullptr && checked.ok()) {
      const profile::Span span("communicator groups");
      StatusOr<RankCommGroups> found =
          comm_groups_of(trace, chakra, options.pg_name_offset, batches);
      if (found.ok()) {
        groups = std::move(found).value();
      } else {
        grouped = found.status();
      }
    }
  });
  // Nothing is committed unless both succeeded (the writer discards its temporary file).
  CF_RETURN_IF_ERROR(checked);
  CF_RETURN_IF_ERROR(written);
  {
    const profile::Span span("commit .et");
    CF_RETURN_IF_ERROR(writer.commit());
  }
  if (report != nullptr) {
    CF_RETURN_IF_ERROR(grouped);
    report->comm_groups = std::move(groups);
    report->input_nodes = trace.nodes.size();
    report->output_nodes = chakra.nodes.size();
    report->removed_dangling = chakra.removed_dangling;
    report->gpu_stream_edges = chakra.gpu_stream_edges;
    report->sync_edges = chakra.sync_edges;
    report->bytes_written = writer.bytes_written();
    report->stats = std::move(stats);
  }
  return Status();
}

Status convert_trace(const EtPlusTrace& trace, const std::string& output_path,
                     const ConvertOptions& options, ConvertReport* report,
                     const OrderedBatches* batches) {
  DataProblems stats = trace.stats;
  CF_ASSIGN_OR_RETURN(ChakraTrace chakra, convert_et_plus(trace, options, stats, batches));
  return write_converted(trace, chakra, std::move(stats), output_path, options, report, batches);
}

}  // namespace chakraflow
