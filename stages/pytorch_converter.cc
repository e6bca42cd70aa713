#include "stages/pytorch_converter.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "proto/et_def.pb.h"
#include "stages/comm_attributes.h"
#include "stages/cycle_check.h"
#include "stages/dependency_encoding.h"
#include "stages/et_io.h"
#include "stages/et_plus_nodes.h"
#include "stages/host_et_loader.h"

namespace chakraflow {
namespace {

namespace pb = ChakraProtoMsg;

uint64_t duration_micros(const EtPlusNode& node, const ConvertOptions& options, LinkStats& stats) {
  if (options.zero_optimizer_step && node.name.find("Optimizer.step") != std::string_view::npos) {
    return 0;
  }
  const double d = node.exclusive_dur;
  if (!(d > 0)) {
    if (d < 0) {
      stats.add("negative exclusive_dur (written as 0)", fmt::format("node {}", node.id));
    }
    return 0;
  }
  if (d >= 1.8e19) return UINT64_MAX;
  if (options.compat == Compat::kChakra) return static_cast<uint64_t>(d);  // Python int()
  // Nearest µs, and never 0 for work that took time: ASTRA-sim skips 0-duration nodes.
  const auto rounded = static_cast<uint64_t>(std::llround(d));
  return rounded == 0 ? 1 : rounded;
}

// The parents the walk follows. Chakra: the parents as read. Default mode: a CPU node whose
// parent is missing is attached to the thread root of its tid (else walked as a root of its own).
// A node whose parent chain never reaches a root -- its own parent (the process root aside), or on
// a ctrl_deps cycle -- is never walked from a thread root, so Chakra drops it as dangling with
// everything below it; default mode cuts each cycle at its smallest id and attaches that node like
// one whose parent is missing. Every such node is counted in both modes.
std::vector<uint32_t> walk_parents(const EtPlusTrace& t, const ConvertOptions& options,
                                   std::vector<uint32_t>* extra_roots, LinkStats& stats) {
  const size_t n = t.nodes.size();
  const bool chakra = options.compat == Compat::kChakra;
  std::vector<uint32_t> parent(n);
  for (uint32_t i = 0; i < n; ++i) parent[i] = t.nodes[i].parent;

  // Nodes with no parent to follow although their parent is not missing, in id order.
  struct Detached {
    const char* what;
    std::string example;
  };
  std::map<uint32_t, Detached> detached;
  for (uint32_t i = 0; i < n; ++i) {
    const EtPlusNode& node = t.nodes[i];
    if (node.parent == kNoNode && node.has_parent_id && node.parent_id == node.id &&
        !t.parents_renumbered && !is_process_root_name(node.name)) {
      detached[i] = {"node that is its own parent", fmt::format("node {}", node.id)};
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
      detached[cut] = {"node on a ctrl_deps cycle",
                       fmt::format("node {} (cycle {}{})", t.nodes[cut].id, ids, t.nodes[i].id)};
      if (!chakra) parent[cut] = kNoNode;
    }
    for (uint32_t k : path) state[k] = kDone;
  }
  if (chakra) {
    for (const auto& [i, d] : detached) {
      stats.add(fmt::format("{} (never walked: dropped, as Chakra does)", d.what), d.example);
    }
    return parent;
  }

  std::unordered_map<int64_t, uint32_t> thread_root_of_tid;
  for (uint32_t i = 0; i < n; ++i) {
    if (is_thread_root_name(t.nodes[i].name)) thread_root_of_tid.emplace(t.nodes[i].tid, i);
  }
  for (uint32_t i = 0; i < n; ++i) {
    const EtPlusNode& node = t.nodes[i];
    if (parent[i] != kNoNode || is_thread_root_name(node.name) || is_process_root_name(node.name)) {
      continue;
    }
    if (node.kind == OpKind::kGpu) {
      stats.add("GPU node without a launching node (not converted)",
                fmt::format("node {}", node.id));
      continue;
    }
    const auto d = detached.find(i);
    const std::string what = d != detached.end() ? d->second.what : "node whose parent is missing";
    std::string example =
        d != detached.end()
            ? d->second.example
            : fmt::format("node {} (parent {})", node.id,
                          node.has_parent_id ? std::to_string(node.parent_id) : "none");
    auto it = thread_root_of_tid.find(node.tid);
    if (it != thread_root_of_tid.end()) {
      parent[i] = it->second;
      stats.add(what + " (attached to its thread root)", std::move(example));
    } else {
      extra_roots->push_back(i);
      stats.add(what + ", no thread root for its tid (walked on its own)", std::move(example));
    }
  }
  return parent;
}

}  // namespace

StatusOr<ChakraTrace> convert_et_plus(const EtPlusTrace& t, const ConvertOptions& options,
                                      LinkStats& stats) {
  const size_t n = t.nodes.size();
  const bool chakra = options.compat == Compat::kChakra;
  ConversionGraph graph;
  const std::vector<uint32_t> parent = walk_parents(t, options, &graph.extra_roots, stats);

  // The call tree as children lists (CSR), in ascending id order.
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

  // Chakra's conversion loop: CPU and METADATA nodes in input order, each followed by its GPU
  // children.
  CommTyper typer(t, options, stats);
  graph.slot.assign(n, kNoNode);
  graph.records.reserve(n);
  auto convert = [&](uint32_t i) {
    const EtPlusNode& node = t.nodes[i];
    ChakraNodeRecord rec;
    rec.source = i;
    // Chakra: ctrl_deps only if the parent is already converted. Default: set below.
    if (chakra && parent[i] != kNoNode && graph.slot[parent[i]] != kNoNode)
      rec.ctrl_dep = parent[i];
    rec.duration_micros = duration_micros(node, options, stats);
    typer.assign(i, rec);
    if (chakra) {
      if (node.has_stream) rec.stream = node.stream;  // CPU nodes: Chakra's default 0
    } else {
      if (node.kind == OpKind::kGpu && node.stream_given && node.has_stream)
        rec.stream = node.stream;
      if (node.has_ts && node.ts >= 0 && node.ts < 1.8e19) {
        rec.start_time_micros = static_cast<uint64_t>(std::llround(node.ts));
      }
    }
    graph.slot[i] = static_cast<uint32_t>(graph.records.size());
    graph.records.push_back(std::move(rec));
  };
  for (uint32_t i : t.file_order) {
    if (t.nodes[i].kind == OpKind::kGpu) continue;
    convert(i);
    for (uint32_t k = graph.child_begin[i]; k < graph.child_begin[i + 1]; ++k) {
      const uint32_t c = graph.children[k];
      if (t.nodes[c].kind == OpKind::kGpu && graph.slot[c] == kNoNode) convert(c);
    }
  }
  if (!chakra) {
    for (ChakraNodeRecord& rec : graph.records) {
      const uint32_t p = parent[rec.source];
      if (p != kNoNode && graph.slot[p] != kNoNode) rec.ctrl_dep = p;
    }
    for (uint32_t i = 0; i < n; ++i) {
      const EtPlusNode& node = t.nodes[i];
      if (node.kind == OpKind::kGpu && graph.slot[i] == kNoNode && node.parent != kNoNode) {
        stats.add("GPU node launched by a node that is not converted (not converted)",
                  fmt::format("node {} (launcher {})", node.id, t.nodes[node.parent].id));
      }
    }
  }

  DependencyStats dep_stats;
  encode_dependencies(t, options, graph, stats, &dep_stats);
  ChakraTrace out = remove_dangling_nodes(t, options, std::move(graph), stats);
  out.gpu_stream_edges = dep_stats.gpu_stream_edges;
  out.sync_edges = dep_stats.sync_edges;
  CF_RETURN_IF_ERROR(check_acyclic(t, out));
  return out;
}

void fill_global_metadata(const EtPlusTrace& t, const ConvertOptions& options,
                          pb::GlobalMetadata* md) {
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
    if (auto step = measured_step(t)) {
      auto add_double = [&](const char* name, double v) {
        pb::AttributeProto* a = md->add_attr();
        a->set_name(name);
        a->set_double_val(v);
      };
      add_double("step_start_us", step->start_us);
      add_double("step_end_us", step->end_us);
      add_double("step_time_us", step->end_us - step->start_us);
    }
  }
}

std::optional<MeasuredStep> measured_step(const EtPlusTrace& t) {
  std::optional<MeasuredStep> step;
  for (const EtPlusNode& n : t.nodes) {
    if (!n.has_ts || !(n.ts > 0)) continue;  // not linked to the device trace
    const double end = n.ts + std::max({n.inclusive_dur, n.exclusive_dur, 0.0});
    if (!step) {
      step = MeasuredStep{n.ts, end};
    } else {
      step->start_us = std::min(step->start_us, n.ts);
      step->end_us = std::max(step->end_us, end);
    }
  }
  return step;
}

void fill_node(const EtPlusTrace& t, const ChakraNodeRecord& rec, pb::Node* node) {
  node->Clear();
  const EtPlusNode& src = t.nodes[rec.source];
  node->set_id(src.id);
  node->set_name(src.name.data(), src.name.size());
  node->set_type(static_cast<pb::NodeType>(rec.type));
  if (rec.ctrl_dep != kNoNode) node->add_ctrl_deps(t.nodes[rec.ctrl_dep].id);
  for (uint32_t d : rec.data_deps) node->add_data_deps(t.nodes[d].id);
  if (rec.start_time_micros) node->set_start_time_micros(*rec.start_time_micros);
  node->set_duration_micros(rec.duration_micros);
  pb::IOInfo* in = node->mutable_inputs();
  in->set_values(std::string(t.io(src, kInValues)));
  in->set_shapes(std::string(t.io(src, kInShapes)));
  in->set_types(std::string(t.io(src, kInTypes)));
  pb::IOInfo* out = node->mutable_outputs();
  out->set_values(std::string(t.io(src, kOutValues)));
  out->set_shapes(std::string(t.io(src, kOutShapes)));
  out->set_types(std::string(t.io(src, kOutTypes)));
  auto add = [&](const char* name) {
    pb::AttributeProto* a = node->add_attr();
    a->set_name(name);
    return a;
  };
  add("rf_id")->set_int64_val(src.rf_id);
  add("fw_parent")->set_int64_val(src.fw_parent);
  add("seq_id")->set_int64_val(src.seq_id);
  add("scope")->set_int64_val(src.scope);
  add("tid")->set_int64_val(src.tid);
  add("fw_tid")->set_int64_val(src.fw_tid);
  add("op_schema")->set_string_val(std::string(src.op_schema));
  add("is_cpu_op")->set_bool_val(rec.is_cpu_op);
  if (rec.stream) add("stream")->set_int64_val(*rec.stream);
  if (rec.type == ChakraNodeType::kCommColl && rec.comm_type) {
    add("comm_type")->set_int64_val(static_cast<int64_t>(*rec.comm_type));
  }
  if (rec.comm_size) add("comm_size")->set_int64_val(*rec.comm_size);
  if (!rec.pg_name.empty()) add("pg_name")->set_string_val(std::string(rec.pg_name));
  if (rec.comm_src) add("comm_src")->set_int32_val(*rec.comm_src);
  if (rec.comm_dst) add("comm_dst")->set_int32_val(*rec.comm_dst);
  if (rec.comm_tag) add("comm_tag")->set_int32_val(*rec.comm_tag);
}

namespace {

// Protocol buffers wire format, written directly: what fill_node + SerializeToString give, byte
// for byte (fields in number order; proto3 scalars only when not zero, oneof members and
// sub-messages whenever set), without building a message per node.
namespace wire {

constexpr uint32_t kVarint = 0, kLength = 2;

size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
void tag(std::string& out, uint32_t field, uint32_t type) { append_varint(out, (field << 3) | type); }
size_t tag_size(uint32_t field) { return varint_size(field << 3); }
void bytes(std::string& out, uint32_t field, std::string_view s) {
  tag(out, field, kLength);
  append_varint(out, s.size());
  out.append(s);
}
size_t bytes_size(uint32_t field, std::string_view s) {
  return tag_size(field) + varint_size(s.size()) + s.size();
}
// int32 and int64 values: negative ones as 64-bit two's complement (10 bytes), as protobuf does.
uint64_t signed_bits(int64_t v) { return static_cast<uint64_t>(v); }

// AttributeProto fields.
constexpr uint32_t kAttrName = 1, kInt32Val = 7, kInt64Val = 9, kBoolVal = 27, kStringVal = 29;
constexpr uint32_t kNodeAttr = 10;

void attr_header(std::string& out, std::string_view name, size_t value_size) {
  tag(out, kNodeAttr, kLength);
  append_varint(out, bytes_size(kAttrName, name) + value_size);
  bytes(out, kAttrName, name);
}
void attr_varint(std::string& out, std::string_view name, uint32_t field, uint64_t v) {
  attr_header(out, name, tag_size(field) + varint_size(v));
  tag(out, field, kVarint);
  append_varint(out, v);
}
void attr_string(std::string& out, std::string_view name, std::string_view v) {
  attr_header(out, name, bytes_size(kStringVal, v));
  bytes(out, kStringVal, v);
}

// IOInfo {values = 1, shapes = 2, types = 3}: written even when empty (mutable_inputs()).
void io_info(std::string& out, uint32_t field, std::string_view values, std::string_view shapes,
             std::string_view types) {
  size_t size = 0;
  uint32_t k = 1;
  for (std::string_view s : {values, shapes, types}) {
    if (!s.empty()) size += bytes_size(k, s);
    ++k;
  }
  tag(out, field, kLength);
  append_varint(out, size);
  k = 1;
  for (std::string_view s : {values, shapes, types}) {
    if (!s.empty()) bytes(out, k, s);
    ++k;
  }
}

}  // namespace wire

}  // namespace

void encode_node(const EtPlusTrace& t, const ChakraNodeRecord& rec, std::string& out) {
  out.clear();
  const EtPlusNode& src = t.nodes[rec.source];
  if (src.id != 0) {
    wire::tag(out, 1, wire::kVarint);
    append_varint(out, src.id);
  }
  if (!src.name.empty()) wire::bytes(out, 2, src.name);
  if (rec.type != ChakraNodeType::kInvalid) {
    wire::tag(out, 3, wire::kVarint);
    append_varint(out, static_cast<uint64_t>(rec.type));
  }
  if (rec.ctrl_dep != kNoNode) {  // packed repeated uint64
    const uint64_t id = t.nodes[rec.ctrl_dep].id;
    wire::tag(out, 4, wire::kLength);
    append_varint(out, wire::varint_size(id));
    append_varint(out, id);
  }
  if (!rec.data_deps.empty()) {
    size_t size = 0;
    for (uint32_t d : rec.data_deps) size += wire::varint_size(t.nodes[d].id);
    wire::tag(out, 5, wire::kLength);
    append_varint(out, size);
    for (uint32_t d : rec.data_deps) append_varint(out, t.nodes[d].id);
  }
  if (rec.start_time_micros && *rec.start_time_micros != 0) {
    wire::tag(out, 6, wire::kVarint);
    append_varint(out, *rec.start_time_micros);
  }
  if (rec.duration_micros != 0) {
    wire::tag(out, 7, wire::kVarint);
    append_varint(out, rec.duration_micros);
  }
  wire::io_info(out, 8, t.io(src, kInValues), t.io(src, kInShapes), t.io(src, kInTypes));
  wire::io_info(out, 9, t.io(src, kOutValues), t.io(src, kOutShapes), t.io(src, kOutTypes));
  using wire::signed_bits;
  wire::attr_varint(out, "rf_id", wire::kInt64Val, signed_bits(src.rf_id));
  wire::attr_varint(out, "fw_parent", wire::kInt64Val, signed_bits(src.fw_parent));
  wire::attr_varint(out, "seq_id", wire::kInt64Val, signed_bits(src.seq_id));
  wire::attr_varint(out, "scope", wire::kInt64Val, signed_bits(src.scope));
  wire::attr_varint(out, "tid", wire::kInt64Val, signed_bits(src.tid));
  wire::attr_varint(out, "fw_tid", wire::kInt64Val, signed_bits(src.fw_tid));
  wire::attr_string(out, "op_schema", src.op_schema);
  wire::attr_varint(out, "is_cpu_op", wire::kBoolVal, rec.is_cpu_op ? 1 : 0);
  if (rec.stream) wire::attr_varint(out, "stream", wire::kInt64Val, signed_bits(*rec.stream));
  if (rec.type == ChakraNodeType::kCommColl && rec.comm_type) {
    wire::attr_varint(out, "comm_type", wire::kInt64Val, static_cast<uint64_t>(*rec.comm_type));
  }
  if (rec.comm_size) {
    wire::attr_varint(out, "comm_size", wire::kInt64Val, signed_bits(*rec.comm_size));
  }
  if (!rec.pg_name.empty()) wire::attr_string(out, "pg_name", rec.pg_name);
  if (rec.comm_src) wire::attr_varint(out, "comm_src", wire::kInt32Val, signed_bits(*rec.comm_src));
  if (rec.comm_dst) wire::attr_varint(out, "comm_dst", wire::kInt32Val, signed_bits(*rec.comm_dst));
  if (rec.comm_tag) wire::attr_varint(out, "comm_tag", wire::kInt32Val, signed_bits(*rec.comm_tag));
}

Status write_chakra_trace(const EtPlusTrace& t, const ChakraTrace& chakra,
                          const ConvertOptions& options, EtWriter& writer) {
  pb::GlobalMetadata md;
  fill_global_metadata(t, options, &md);
  writer.write(md);
  std::string node;
  for (const ChakraNodeRecord& rec : chakra.nodes) {
    encode_node(t, rec, node);
    writer.write_raw(node);
  }
  return Status();
}

Status convert_file(const std::string& input_path, const std::string& output_path,
                    const ConvertOptions& options, ConvertReport* report) {
  CF_ASSIGN_OR_RETURN(EtPlusFile input, load_et_plus(input_path, options));
  return convert_trace(input.trace, output_path, options, report);
}

Status convert_trace(const EtPlusTrace& trace, const std::string& output_path,
                     const ConvertOptions& options, ConvertReport* report) {
  LinkStats stats = trace.stats;
  CF_ASSIGN_OR_RETURN(ChakraTrace chakra, convert_et_plus(trace, options, stats));
  CF_ASSIGN_OR_RETURN(EtWriter writer, EtWriter::open(output_path));
  CF_RETURN_IF_ERROR(write_chakra_trace(trace, chakra, options, writer));
  CF_RETURN_IF_ERROR(writer.commit());
  if (report != nullptr) {
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

}  // namespace chakraflow
