#include "stages/convert/comm_attributes.h"

#include <string.h>

#include <simdjson.h>

#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "stages/convert/comm_groups.h"
#include "stages/convert/pytorch_converter.h"

namespace chakraflow {
namespace {

// memmem, not string_view::find: find stops at every byte equal to the needle's first (a kernel's
// long name has many an 'n' before "nccl", or none), memmem looks for the whole needle.
bool contains(std::string_view haystack, std::string_view needle) {
  if (needle.empty()) return true;
  return ::memmem(haystack.data(), haystack.size(), needle.data(), needle.size()) != nullptr;
}

// Chakra's normalisation: "_" and "-" removed, lower case. ":" is removed too in default mode
// (it never matters for Chakra's substrings).
std::string normalize(std::string_view name, bool drop_colons) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    if (c == '_' || c == '-' || (drop_colons && c == ':')) continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

std::optional<CollectiveType> chakra_table(std::string_view normalized) {
  // Chakra's comm_type_mapping, tested in this order; the first hit wins.
  if (contains(normalized, "allreduce")) return CollectiveType::kAllReduce;
  if (contains(normalized, "alltoall")) return CollectiveType::kAllToAll;
  if (contains(normalized, "allgather")) return CollectiveType::kAllGather;
  if (contains(normalized, "reducescatter")) return CollectiveType::kReduceScatter;
  if (contains(normalized, "broadcast")) return CollectiveType::kBroadcast;
  return std::nullopt;
}

bool checked_mul_add(int64_t a, int64_t b, int64_t* sum) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return false;
  return !__builtin_add_overflow(*sum, product, sum);
}

// Python's int() view of a JSON scalar that may be multiplied: ints and bools.
bool python_int(simdjson::dom::element e, int64_t* out) {
  if (e.is_int64()) {
    *out = e.get_int64().value_unsafe();
    return true;
  }
  if (e.is_bool()) {
    *out = e.get_bool().value_unsafe() ? 1 : 0;
    return true;
  }
  return false;
}

}  // namespace

std::optional<CollectiveType> chakra_collective_type(std::string_view kernel_name) {
  if (auto t = chakra_table(normalize(kernel_name, false))) return t;
  if (contains(kernel_name, "ncclDevKernel_SendRecv")) return CollectiveType::kAllToAll;
  return std::nullopt;
}

std::optional<CollectiveType> collective_type_from_name(std::string_view name) {
  std::string n = normalize(name, true);
  if (auto t = chakra_table(n)) return t;
  if (contains(n, "reduce")) return CollectiveType::kReduce;
  if (contains(n, "gather")) return CollectiveType::kGather;
  if (contains(n, "scatter")) return CollectiveType::kScatter;
  if (contains(n, "barrier")) return CollectiveType::kBarrier;
  return std::nullopt;
}

bool is_cpu_collective_name(std::string_view name) {
  return name.starts_with("gloo:");
}

P2pDirection p2p_direction_from_name(std::string_view name) {
  std::string n = normalize(name, true);
  if (contains(n, "send")) return P2pDirection::kSend;
  if (contains(n, "recv")) return P2pDirection::kRecv;
  return P2pDirection::kNone;
}

struct CommTyper::Impl {
  explicit Impl(const EtPlusTrace& trace, CpuCollectiveGroup* shared)
      : own_group(trace), group(shared != nullptr ? shared : &own_group) {}
  simdjson::dom::parser values_parser;
  simdjson::dom::parser types_parser;
  CpuCollectiveGroup own_group;
  CpuCollectiveGroup* group;
};

std::vector<std::unique_ptr<std::string>> CommTyper::take_names() {
  return impl_->own_group.take_names();
}

CommTyper::CommTyper(const EtPlusTrace& trace, const ConvertOptions& options, DataProblems& stats,
                     CpuCollectiveGroup* group)
    : impl_(std::make_unique<Impl>(trace, group)), t_(trace), options_(options), stats_(stats) {}

CommTyper::~CommTyper() = default;

std::optional<int64_t> CommTyper::comm_size(std::string_view values_raw, std::string_view types_raw,
                                            bool chakra_rules) {
  if (values_raw.empty() || types_raw.empty())
    return chakra_rules ? std::nullopt : std::optional<int64_t>(0);
  simdjson::padded_string values_text(values_raw), types_text(types_raw);
  simdjson::dom::array values, types;
  if (impl_->values_parser.parse(values_text).get_array().get(values) ||
      impl_->types_parser.parse(types_text).get_array().get(types)) {
    return std::nullopt;
  }
  int64_t size = 0;
  auto value_it = values.begin();
  const auto value_end = values.end();
  for (simdjson::dom::element type : types) {
    if (value_it == value_end) break;  // zip() stops at the shorter list
    simdjson::dom::element value = *value_it;
    ++value_it;
    std::string_view type_name;
    if (type.get_string().get(type_name)) {
      if (chakra_rules) return std::nullopt;  // `"Tensor" in 3` raises TypeError
      continue;
    }
    if (!contains(type_name, "Tensor")) continue;
    if (chakra_rules) {
      // value[3] * value[4], per element of a GenericList[Tensor...]. Anything that is not a list
      // of at least 5 elements with integers there makes Python raise.
      auto tensor_bytes = [&](simdjson::dom::element v) -> bool {
        simdjson::dom::array a;
        if (v.get_array().get(a) || a.size() < 5) return false;
        int64_t numel = 0, itemsize = 0;
        if (!python_int(a.at(3).value_unsafe(), &numel) ||
            !python_int(a.at(4).value_unsafe(), &itemsize)) {
          return false;
        }
        return checked_mul_add(numel, itemsize, &size);
      };
      if (type_name.substr(0, 18) == "GenericList[Tensor") {
        simdjson::dom::array inner;
        if (value.get_array().get(inner)) return std::nullopt;
        for (simdjson::dom::element e : inner) {
          if (!tensor_bytes(e)) return std::nullopt;
        }
      } else if (!tensor_bytes(value)) {
        return std::nullopt;
      }
      continue;
    }
    // Default rules: every tensor value inside the (possibly nested) lists and tuples; undefined
    // values ("<None>"), empty lists and scalars count 0. Iterative, whatever the nesting.
    std::vector<simdjson::dom::element> stack{value};
    while (!stack.empty()) {
      simdjson::dom::element e = stack.back();
      stack.pop_back();
      simdjson::dom::array a;
      if (e.get_array().get(a)) continue;
      int64_t numel = 0, itemsize = 0;
      if (a.size() == 6 && a.at(5).value_unsafe().is_string() &&
          python_int(a.at(3).value_unsafe(), &numel) &&
          python_int(a.at(4).value_unsafe(), &itemsize)) {
        if (numel > 0 && itemsize > 0 && !checked_mul_add(numel, itemsize, &size)) {
          size = INT64_MAX;
        }
        continue;
      }
      for (simdjson::dom::element child : a) stack.push_back(child);
    }
  }
  return size;
}

std::optional<int64_t> CommTyper::p2p_peer(const EtPlusNode& rpc) {
  const std::string_view values_raw = t_.raw_io(rpc, kInValues);
  if (values_raw.empty()) return std::nullopt;
  simdjson::padded_string values_text(values_raw);
  simdjson::dom::array values;
  if (impl_->values_parser.parse(values_text).get_array().get(values) || values.size() < 5) {
    return std::nullopt;
  }
  // record_param_comms(inputTensors, seq, pg_name, rank, collective_name, ...): for send and recv
  // `rank` is the peer (PyTorch's ProcessGroupNCCL::send / recv).
  std::string_view collective;
  int64_t peer = 0;
  if (values.at(4).get_string().get(collective) || values.at(3).get_int64().get(peer)) {
    return std::nullopt;
  }
  if (collective != "send" && collective != "recv") return std::nullopt;
  return peer;
}

std::string_view CpuCollectiveGroup::get(bool* guessed) {
  std::call_once(once_, [this] {
    std::map<std::string, std::vector<int>> groups;
    RenderedIo io;
    for (const EtPlusNode& node : t_.nodes) {
      if (node.kind != OpKind::kMetadata || !render_io(t_, node, io).ok()) continue;
      parse_group_list(std::string(io.io[kInValues]), 0, &groups);  // unreadable: counted later
    }
    // The default group: every rank (an empty list), else the largest, the first name on a tie.
    size_t best = 0;
    const std::string* chosen = nullptr;
    for (const auto& [name, ranks] : groups) {
      const size_t size = ranks.empty() ? SIZE_MAX : ranks.size();
      if (chosen == nullptr || size > best) {
        chosen = &name;
        best = size;
      }
    }
    if (chosen != nullptr) name_ = std::make_unique<std::string>(*chosen);
    several_ = groups.size() > 1;
  });
  *guessed = several_;
  return name_ ? std::string_view(*name_) : std::string_view();
}

std::vector<std::unique_ptr<std::string>> CpuCollectiveGroup::take_names() {
  std::vector<std::unique_ptr<std::string>> names;
  if (name_) names.push_back(std::move(name_));
  return names;
}

void CommTyper::assign_cpu_collective(uint32_t index, ChakraNodeRecord& record,
                                      std::vector<CommAttrs>& comm) {
  const EtPlusNode& n = t_.nodes[index];
  const std::string_view op = n.name.substr(n.name.find(':') + 1);
  const std::optional<CollectiveType> coll = collective_type_from_name(op);
  const P2pDirection direction = coll ? P2pDirection::kNone : p2p_direction_from_name(op);
  if (!coll && direction == P2pDirection::kNone) {
    stats_.add(StatKind::kCommCollectiveUnknown, std::string(n.name));
    return;
  }
  record.type = coll                               ? ChakraNodeType::kCommColl
                : direction == P2pDirection::kSend ? ChakraNodeType::kCommSend
                                                   : ChakraNodeType::kCommRecv;
  record.set(ChakraNodeRecord::kOffThread);
  // Not is_cpu_op: ASTRA-sim refuses a communication node on the CPU ("Comm node should not be on
  // CPU"). Its tid and the absence of a stream say where it ran (chakraflow simulate puts it on
  // that thread).
  record.is_cpu_op = false;
  record.comm = static_cast<uint32_t>(comm.size());
  CommAttrs& attrs = comm.emplace_back();
  attrs.comm_type = coll;
  attrs.comm_size = comm_size(t_.raw_io(n, kInValues), t_.raw_io(n, kInTypes), false).value_or(0);
  attrs.pg_name = t_.pg_name(n);
  if (attrs.pg_name.empty()) {
    bool guessed = false;
    attrs.pg_name = impl_->group->get(&guessed);
    if (guessed) stats_.add(StatKind::kCommCpuCollectiveGroupGuessed, fmt::format("node {}", n.id));
  }
  attrs.exec_tid = t_.exec_tid(n);
  if (!attrs.exec_tid) {
    stats_.add(StatKind::kCommCpuCollectiveThreadUnknown, fmt::format("node {}", n.id));
  }
  // gloo records no peer for send / recv.
  if (direction != P2pDirection::kNone) {
    stats_.add(StatKind::kCommPeerMissing, fmt::format("node {}", n.id));
  }
}

namespace {

// How a GPU kernel communicates, as its name and its launcher say.
struct KernelComm {
  ChakraNodeType type = ChakraNodeType::kCommColl;
  std::optional<CollectiveType> coll;
  const EtPlusNode* rpc = nullptr;  // the launching record_param_comms node
  std::string_view pg_name;
};

// The collective of a kernel typed kCommColl: from its name (Chakra's rules first in Chakra
// mode), else from its launching op, which may say it is a send or a recv (k.type changes).
// False when it stays unknown (counted).
bool type_collective(const EtPlusTrace& t, const EtPlusNode& n, const EtPlusNode* parent,
                     bool chakra, bool sendrecv, KernelComm& k, DataProblems& stats) {
  if (chakra) {
    k.coll = chakra_collective_type(n.name);
    if (!k.coll) stats.add(StatKind::kCommCollectiveChakraUntyped, std::string(n.name));
  }
  if (!k.coll) k.coll = collective_type_from_name(n.name);
  if (!k.coll && sendrecv) k.coll = CollectiveType::kAllToAll;
  if (!k.coll && parent != nullptr) {
    // The kernel name says nothing: ask the launching op (record_param_comms' collective_name,
    // the op's name, or the op above record_param_comms).
    std::string_view candidates[3] = {t.collective_name(*parent), parent->name, {}};
    if (parent->name == "record_param_comms" && parent->parent != kNoNode) {
      candidates[2] = t.nodes[parent->parent].name;
    }
    for (std::string_view c : candidates) {
      if (c.empty() || k.coll) continue;
      k.coll = collective_type_from_name(c);
      if (!k.coll) {
        P2pDirection d = p2p_direction_from_name(c);
        if (d != P2pDirection::kNone) {
          k.type = d == P2pDirection::kSend ? ChakraNodeType::kCommSend : ChakraNodeType::kCommRecv;
          break;
        }
      }
    }
    if (k.coll || k.type != ChakraNodeType::kCommColl) {
      stats.add(StatKind::kCommCollectiveTypedFromLauncher, std::string(n.name));
    }
  }
  if (!k.coll && k.type == ChakraNodeType::kCommColl) {
    stats.add(StatKind::kCommCollectiveUnknown, std::string(n.name));
    return false;
  }
  return true;
}

// A GPU kernel's communication, nullopt for a compute kernel (or an unknown collective,
// counted): NCCL SendRecv kernels are typed by the op that launched them (through
// record_param_comms), every other NCCL kernel is a collective.
std::optional<KernelComm> kernel_comm(const EtPlusTrace& t, const EtPlusNode& n, bool chakra,
                                      DataProblems& stats) {
  const EtPlusNode* parent = n.parent != kNoNode ? &t.nodes[n.parent] : nullptr;
  KernelComm k;
  k.pg_name = t.pg_name(n);
  // Every name below contains "nccl": one scan rules the four out for the other kernels.
  const bool nccl = contains(n.name, "nccl");
  const bool sendrecv = nccl && (contains(n.name, "ncclDevKernel_SendRecv") ||
                                 (!chakra && contains(n.name, "ncclKernel_SendRecv")));
  const bool comm_kernel =
      nccl && (contains(n.name, "ncclKernel") || contains(n.name, "ncclDevKernel"));
  std::optional<ChakraNodeType> type;
  if (sendrecv && parent != nullptr) {
    std::string_view keyword = parent->name;
    if (parent->name == "record_param_comms") {
      k.rpc = parent;
      if (parent->parent != kNoNode) {
        keyword = t.nodes[parent->parent].name;
      } else if (chakra) {
        stats.add(StatKind::kCommSendRecvChakraUntyped, fmt::format("node {}", n.id));
      }
      // Chakra copies the record_param_comms' pg_name onto the kernel (a side effect of typing).
      if (!t.pg_name(*parent).empty()) k.pg_name = t.pg_name(*parent);
    }
    if (contains(keyword, "send")) {
      type = ChakraNodeType::kCommSend;
    } else if (contains(keyword, "recv")) {
      type = ChakraNodeType::kCommRecv;
    } else if (contains(keyword, "nccl:all_to_all")) {
      type = ChakraNodeType::kCommColl;
    }
  }
  if (!type && (comm_kernel || sendrecv)) type = ChakraNodeType::kCommColl;
  if (!type) return std::nullopt;  // COMP_NODE
  k.type = *type;
  if (!chakra && parent != nullptr && k.rpc == nullptr &&
      contains(parent->name, "record_param_comms"))
    k.rpc = parent;
  if (k.type == ChakraNodeType::kCommColl &&
      !type_collective(t, n, parent, chakra, sendrecv, k, stats)) {
    return std::nullopt;
  }
  return k;
}

}  // namespace

void CommTyper::assign(uint32_t index, ChakraNodeRecord& record, std::vector<CommAttrs>& comm) {
  const EtPlusNode& n = t_.nodes[index];
  const bool chakra = options_.compat == Compat::kChakra;
  record.is_cpu_op = n.kind != OpKind::kGpu;
  if (n.kind == OpKind::kMetadata) {
    record.type = options_.metadata_as_compute ? ChakraNodeType::kComp : ChakraNodeType::kMetadata;
    return;
  }
  record.type = ChakraNodeType::kComp;
  if (n.kind == OpKind::kCpu && !chakra && is_cpu_collective_name(n.name)) {
    assign_cpu_collective(index, record, comm);
    return;
  }
  if (n.kind != OpKind::kGpu) return;
  const std::optional<KernelComm> k = kernel_comm(t_, n, chakra, stats_);
  if (!k) return;
  record.type = k->type;
  record.comm = static_cast<uint32_t>(comm.size());
  CommAttrs& attrs = comm.emplace_back();
  attrs.comm_type = k->coll;

  std::optional<int64_t> size;
  if (chakra) {
    size = comm_size(t_.raw_io(n, kInValues), t_.raw_io(n, kInTypes), true);
    if (!size) {
      stats_.add(StatKind::kCommSizeChakraUncomputable, fmt::format("node {}", n.id));
    }
  }
  if (!size) size = comm_size(t_.raw_io(n, kInValues), t_.raw_io(n, kInTypes), false);
  attrs.comm_size = size.value_or(0);
  if (!k->pg_name.empty()) attrs.pg_name = k->pg_name;

  const bool p2p =
      record.type == ChakraNodeType::kCommSend || record.type == ChakraNodeType::kCommRecv;
  if (!chakra && p2p) {
    if (std::optional<int64_t> peer = k->rpc ? p2p_peer(*k->rpc) : std::nullopt;
        peer && *peer >= INT32_MIN && *peer <= INT32_MAX) {
      if (record.type == ChakraNodeType::kCommSend) {
        attrs.comm_dst = static_cast<int32_t>(*peer);
      } else {
        attrs.comm_src = static_cast<int32_t>(*peer);
      }
      attrs.comm_tag = 0;
    } else {
      stats_.add(StatKind::kCommPeerMissing, fmt::format("node {}", n.id));
    }
  }
}

}  // namespace chakraflow
