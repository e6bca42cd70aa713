// The data model of the PyTorch → Chakra converter stages (chakraflow convert).
//
//   the ET+ or host ET, read by the host loader (stages/link/host_et_loader.h, raw node text kept)
//     → EtPlusNodeSink        (et_plus_nodes.h)      EtPlusTrace: one EtPlusNode per JSON node
//     → type_nodes           (comm_attributes.h)    node types and communication attributes
//     → encode_dependencies  (dependency_encoding.h) ctrl → data dependencies, dangling removal
//     → check_acyclic        (cycle_check.h)
//     → write_chakra_trace   (pytorch_converter.h)  the .et file (et_io.h)
//
// Ownership: an EtPlusTrace refers to the HostTrace it was read from (views into its text and
// arena) and must not outlive it. Everything else is owned by value. Node references between
// stages are indices into EtPlusTrace::nodes (which is sorted by id), never ids, except where a
// value is written out.
//
// Compat::kChakra (stages/link/link_options.h) selects Chakra 1.0.0's behaviour, defects included;
// Compat::kDefault fixes them. Every difference is listed in docs/compatibility.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stages/et/schema.h"
#include "stages/link/link_options.h"
#include "stages/link/trace_model.h"

namespace chakraflow {

inline constexpr uint32_t kNoNode = std::numeric_limits<uint32_t>::max();

struct ConvertOptions {
  Compat compat = Compat::kDefault;
  // Chakra sets the duration of every node whose name contains "Optimizer.step" to 0 (the op
  // "covers most of the runtime"). Kept in both modes unless turned off.
  bool zero_optimizer_step = true;
  // Write PyTorch's process-group METADATA node as a compute node (same id, name, inputs and
  // dependencies): current ASTRA-sim asserts on METADATA nodes (docs/astra-sim.md).
  bool metadata_as_compute = false;
  // Added to every numeric pg_name written (stages/convert/comm_groups.h): ASTRA-sim asserts on the
  // group named "0".
  int pg_name_offset = 0;
};

// Chakra's PyTorchNodeType: what kind of op a JSON node is.
enum class OpKind : uint8_t {
  kCpu,       // no "cat"
  kGpu,       // "cat" present and not null
  kMetadata,  // name contains "process_group:init"
};

// The six IOInfo strings of a node: Python str() of inputs/outputs values, shapes and types.
enum IoField : uint8_t {
  kInValues,
  kInShapes,
  kInTypes,
  kOutValues,
  kOutShapes,
  kOutTypes,
  kIoFieldCount
};

// Fields are ordered by size (no padding): a linked rank holds one per host node and GPU op.
struct EtPlusNode {
  uint64_t id = 0;
  // The parent (caller) as read: `ctrl_deps`, else the flat layout's `parent`.
  uint64_t parent_id = 0;

  // Node-level fields of ET+ (after attrs overrode them, in Chakra mode).
  double exclusive_dur = 0;  // µs
  double inclusive_dur = 0;  // µs (the measured step's end, stages/convert/pytorch_converter.h)
  double ts = 0;             // µs
  uint64_t inter_thread_dep = 0;  // 0 = none (Chakra tests truthiness)
  int64_t stream = 0;
  int64_t device = -1;  // "device", when the node has one (GPU nodes of some linkers)

  // The thread, copied into every Chakra node with the attributes below (EtPlusTrace::attr).
  int64_t tid = 0;

  uint64_t byte_offset = 0;  // of the node object in the input (decompressed)

  std::string_view name;
  std::string_view op_schema;
  // The node's pg_name and collective_name, if it has either (EtPlusTrace::pg_name and
  // collective_name): an index into EtPlusTrace::comm_names, kNoNode if none. A few nodes in a
  // thousand have them.
  uint32_t comm_names = kNoNode;

  // The parent after resolution (index into EtPlusTrace::nodes); kNoNode when it is missing, or
  // is the node itself (the process root).
  uint32_t parent = kNoNode;
  uint32_t sync_dep_begin = 0, sync_dep_count = 0;  // into EtPlusTrace::sync_dep_ids
  // The IOInfo lists (inputs.values ..., flat layout: inputs, input_shapes ...) as raw JSON in
  // the host text: io_len[f] bytes from io_at[f] bytes past the node's first byte
  // (EtPlusTrace::raw_io, io_missing). The writer renders them (Python's str()) as it writes the
  // node: kept rendered, they took as much memory as half the input. io_at kIoMissing: the list
  // was missing (written as []). GPU nodes share their launcher's. In 16 bits, as the integer
  // attributes in 32: a node whose values do not fit (a list past 64 KiB of its text, an
  // attribute past 32 bits) has them all in EtPlusTrace::wide (index `wide`). A node takes 40
  // bytes less so, and a trace holds millions (docs/performance.md).
  // rf_id, fw_parent, seq_id, scope, fw_tid (NarrowAttr order), where they fit.
  int32_t attrs[5] = {0, 0, -1, 0, 0};
  uint32_t wide = kNoNode;
  uint32_t file_position = 0;  // position of the node in the input's "nodes" array
  static constexpr uint16_t kIoMissing = UINT16_MAX;
  uint16_t io_at[kIoFieldCount] = {};
  uint16_t io_len[kIoFieldCount] = {};

  OpKind kind = OpKind::kCpu;
  // Bit-fields: a trace holds millions of nodes.
  bool has_parent_id : 1 = false;
  bool parent_from_ctrl_deps : 1 = false;
  bool has_ts : 1 = false;
  bool has_stream : 1 = true;     // false when "stream" is null; absent means 0 (Chakra's default)
  bool stream_given : 1 = false;  // "stream" was present in the node (not Chakra's default)
  // How the fields were read, for the GPU nodes read_linked_nodes derives from a host node.
  bool pg_name_from_attr : 1 = false;   // pg_name came from the pg_name attr
  bool io_missing : 1 = false;          // an inputs/outputs list was missing (written as [])
  bool op_schema_repaired : 1 = false;  // op_schema was not valid UTF-8 (bytes replaced)
  bool pg_name_repaired : 1 = false;    // so was pg_name
};
static_assert(sizeof(EtPlusNode) <= 184, "EtPlusNode grew: keep its fields ordered by size");

// The integer attributes of a node that EtPlusNode::attrs keeps in 32 bits.
enum NarrowAttr : uint8_t { kAttrRfId, kAttrFwParent, kAttrSeqId, kAttrScope, kAttrFwTid };

// A node's IOInfo spans and attributes that do not fit EtPlusNode's narrow fields.
struct WideFields {
  int64_t attrs[5] = {};
  uint32_t io_at[kIoFieldCount] = {};  // UINT32_MAX: missing
  uint32_t io_len[kIoFieldCount] = {};
};

struct EtPlusMetadata {
  std::optional<std::string> schema;
  std::optional<uint64_t> pid;
  std::optional<std::string> time;
  std::optional<uint64_t> start_ts;
  std::optional<uint64_t> finish_ts;
  // The ET+'s "profiler_overhead" (a linked rank's LinkedTrace::profiler).
  std::optional<ProfilerOverheadNote> profiler;
};

// A node's communication strings (EtPlusNode::comm_names).
struct CommNames {
  std::string_view pg_name;          // node-level pg_name, or the pg_name attr
  std::string_view collective_name;  // the attr of record_param_comms (schema 1.1.0+), if any
};

struct EtPlusTrace {
  const HostTrace* host = nullptr;  // not owned
  std::string path;
  std::string schema;
  EtPlusMetadata metadata;
  std::vector<EtPlusNode> nodes;     // sorted by id (host->nodes order)
  std::vector<uint32_t> file_order;  // indices of nodes in the order of the input file
  std::vector<uint64_t> sync_dep_ids;
  // Nodes with an "exec_tid" (the thread they ran on, where the host trace names another: a few
  // per trace, LinkedTrace::exec_tids): (node id, tid), by node id.
  std::vector<std::pair<uint64_t, int64_t>> exec_tids;
  std::vector<CommNames> comm_names;  // EtPlusNode::comm_names
  std::vector<WideFields> wide;       // EtPlusNode::wide
  std::deque<std::string> arena;      // unescaped strings that differ from their raw text
  std::vector<std::deque<std::string>>
      more_arenas;  // the shards' (a deque moved keeps its strings)
  std::vector<std::deque<std::string>> device_arenas;  // GPU names and pg_names (read_linked_nodes)
  // Schema 1.0.1 ET+ written by Chakra: `parent` held pre-renumbering ids and was mapped back.
  bool parents_renumbered = false;
  DataProblems stats;  // data problems that did not stop the conversion, by kind

  // Index of the node with this id, or kNoNode.
  uint32_t index_of(uint64_t id) const;
  std::string_view pg_name(const EtPlusNode& n) const {
    return n.comm_names == kNoNode ? std::string_view() : comm_names[n.comm_names].pg_name;
  }
  std::string_view collective_name(const EtPlusNode& n) const {
    return n.comm_names == kNoNode ? std::string_view() : comm_names[n.comm_names].collective_name;
  }
  // Sets the node's communication strings in a new entry (a GPU node shares its host node's entry
  // until it gets its own: the host node's is not changed).
  void set_comm_names(EtPlusNode& n, std::string_view pg_name, std::string_view collective_name) {
    if (pg_name.empty() && collective_name.empty()) {
      n.comm_names = kNoNode;
      return;
    }
    n.comm_names = static_cast<uint32_t>(comm_names.size());
    comm_names.push_back({pg_name, collective_name});
  }
  // The raw JSON of one of the node's IOInfo lists; empty if it was missing.
  std::string_view raw_io(const EtPlusNode& n, IoField f) const;
  // Whether that list was missing (written as []).
  bool io_missing(const EtPlusNode& n, IoField f) const {
    return n.wide == kNoNode ? n.io_at[f] == EtPlusNode::kIoMissing
                             : wide[n.wide].io_at[f] == UINT32_MAX;
  }
  // Whether two nodes' IOInfo lists are the same text (a GPU node and its launcher).
  bool same_io(const EtPlusNode& a, const EtPlusNode& b) const;
  int64_t attr(const EtPlusNode& n, NarrowAttr k) const {
    return n.wide == kNoNode ? n.attrs[k] : wide[n.wide].attrs[k];
  }
  // The thread node `n` ran on, if its ET+ says (exec_tids).
  std::optional<int64_t> exec_tid(const EtPlusNode& n) const;
  const uint64_t* sync_deps(const EtPlusNode& n) const {
    return sync_dep_ids.data() + n.sync_dep_begin;
  }
};

// The data dependencies of a record, in order: up to four inline (nearly every record has one
// or two), more on the heap. A std::vector per record was a heap allocation for each (a tenth of a
// conversion's calls to malloc and free). The size of a std::vector.
class DepList {
 public:
  DepList() = default;
  DepList(const DepList& other) { copy_from(other); }
  DepList(DepList&& other) noexcept { take(other); }
  DepList& operator=(const DepList& other) {
    if (this != &other) {
      release();
      copy_from(other);
    }
    return *this;
  }
  DepList& operator=(DepList&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  ~DepList() { release(); }

  void push_back(uint32_t v) {
    if (size_ == capacity_) grow();
    data()[size_++] = v;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  uint32_t operator[](size_t i) const { return data()[i]; }
  const uint32_t* begin() const { return data(); }
  const uint32_t* end() const { return data() + size_; }

 private:
  static constexpr uint32_t kInline = 4;
  bool on_heap() const { return capacity_ > kInline; }
  uint32_t* data() { return on_heap() ? heap_ : inline_; }
  const uint32_t* data() const { return on_heap() ? heap_ : inline_; }
  void grow() {
    auto* bigger = new uint32_t[2 * capacity_];
    std::memcpy(bigger, data(), size_ * sizeof(uint32_t));
    if (on_heap()) delete[] heap_;
    heap_ = bigger;
    capacity_ *= 2;
  }
  void copy_from(const DepList& other) {
    size_ = other.size_;
    capacity_ = std::max(kInline, other.size_);
    uint32_t* to = inline_;
    if (on_heap()) to = heap_ = new uint32_t[capacity_];
    if (size_ > 0) std::memcpy(to, other.data(), size_ * sizeof(uint32_t));
  }
  void take(DepList& other) {
    size_ = other.size_;
    capacity_ = other.capacity_;
    if (other.on_heap()) {
      heap_ = other.heap_;
    } else {
      std::memcpy(inline_, other.inline_, sizeof(inline_));
    }
    other.size_ = 0;
    other.capacity_ = kInline;
  }
  void release() {
    if (on_heap()) delete[] heap_;
    size_ = 0;
    capacity_ = kInline;
  }

  uint32_t size_ = 0;
  uint32_t capacity_ = kInline;
  union {
    uint32_t inline_[kInline] = {};
    uint32_t* heap_;
  };
};

// The communication attributes of a COMM node. In a side table (ChakraTrace::comm): a few nodes
// in a thousand have them, so the node records do not carry them.
struct CommAttrs {
  std::optional<CollectiveType> comm_type;
  std::optional<int64_t> comm_size;
  std::string_view pg_name;  // written when not empty
  std::optional<int32_t> comm_src, comm_dst, comm_tag;
  // A CPU-side collective (ChakraNodeRecord::kOffThread): the thread it ran on, written as its
  // tid (the ET+'s exec_tid).
  std::optional<int64_t> exec_tid;
};

// One node of the Chakra output: 64 bytes (a conversion holds one per node, and the dependency
// walks read them in turn).
struct ChakraNodeRecord {
  // Which optional fields are set, and whether the node has an inter_thread_dep (the walk then
  // reads its index from ConversionGraph::inter_thread_dep).
  enum Flags : uint8_t {
    kHasStart = 1,        // start_time_micros is set (default mode only)
    kHasStream = 2,       // the "stream" attr is written
    kInterThreadDep = 4,  // the node has an inter_thread_dep
    // A CPU-side collective (gloo): it runs on its backend's thread, asynchronously to the op that
    // enqueued it. The dependency walk treats it as a GPU op of that op: it depends on it and is
    // not chained into the caller's thread.
    kOffThread = 8,
  };

  uint32_t source = kNoNode;  // the EtPlusNode it comes from
  uint32_t ctrl_dep = kNoNode;
  uint32_t comm = kNoNode;  // index into the trace's CommAttrs, kNoNode if none
  ChakraNodeType type = ChakraNodeType::kComp;
  bool is_cpu_op = true;
  uint8_t flags = 0;
  DepList data_deps;  // indices into EtPlusTrace::nodes, in Chakra's order
  uint64_t duration_micros = 0;
  uint64_t start_time_micros = 0;  // when kHasStart
  int64_t stream = 0;              // when kHasStream

  bool has(Flags f) const { return (flags & f) != 0; }
  void set(Flags f) { flags |= f; }
};
static_assert(sizeof(ChakraNodeRecord) <= 64, "ChakraNodeRecord grew: a trace holds millions");

struct ChakraTrace {
  // The converted nodes, sorted by id; only the nodes that are written.
  std::vector<ChakraNodeRecord> nodes;
  std::vector<CommAttrs> comm;  // ChakraNodeRecord::comm
  uint64_t removed_dangling = 0;
  uint64_t gpu_stream_edges = 0;  // default mode: GPU op → previous op of its stream
  uint64_t sync_edges = 0;        // default mode: sync dependencies emitted
  // Storage of pg_names renamed by ConvertOptions::pg_name_offset (CommAttrs point into it).
  std::vector<std::unique_ptr<std::string>> renamed_pg_names;

  const CommAttrs* comm_of(const ChakraNodeRecord& r) const {
    return r.comm == kNoNode ? nullptr : &comm[r.comm];
  }
};

}  // namespace chakraflow
