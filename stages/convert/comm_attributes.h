// Converter stage 2: the Chakra node type of each converted node and its communication
// attributes (reference/chakra_spec.md §2.5 - §2.7).
//
// Chakra mode: METADATA for `process_group:init`; GPU kernels named ncclKernel* / ncclDevKernel*
// are COMM_COLL_NODE, except ncclDevKernel_SendRecv launched (through record_param_comms) by an op
// whose name holds "send" / "recv" (COMM_SEND_NODE / COMM_RECV_NODE); everything else COMP_NODE.
// comm_type comes from the kernel name (allreduce, alltoall, allgather, reducescatter, broadcast,
// SendRecv → ALL_TO_ALL), comm_size from the bytes of the tensors among the node's inputs.
//
// Default mode fixes (docs/compatibility.md): ncclKernel_SendRecv (older NCCL) is treated like
// ncclDevKernel_SendRecv; REDUCE, GATHER, SCATTER and BARRIER kernels are typed; a kernel whose
// name says nothing is typed from its launching op (record_param_comms' collective_name attr, or
// the nccl:* / c10d::* op); a collective that still cannot be typed is a COMP_NODE and a warning
// instead of an abort; comm_size sums tensors in nested lists and tuples and ignores undefined
// (`<None>`) values instead of failing; send/recv nodes get comm_dst / comm_src (the peer rank
// PyTorch records in record_param_comms) and comm_tag 0 (NCCL point-to-point has no tags: messages
// between two ranks match in issue order).
//
// Where Chakra 1.0.0 would abort (an unknown collective, a comm_size it cannot compute, a SendRecv
// kernel whose grandparent is missing), Chakra mode continues with the default mode's answer for
// that node and counts it: there is no Chakra output to reproduce.
//
// CPU-side collectives (default mode; Chakra mode keeps them as compute on the caller's thread,
// as Chakra does): a gloo:* op becomes a COMM_COLL_NODE (COMM_SEND/RECV_NODE for send/recv) with
// comm_type from its name, comm_size from its inputs, its tid the thread it ran on (the ET+'s
// exec_tid; the ET names the caller's), no stream and the kOffThread flag; is_cpu_op false, as
// ASTRA-sim requires of communication nodes. Its process group: the
// one a record names; else, from the process groups the trace's `## process_group:init ##` lists
// (PyTorch lists the groups the rank belongs to), the only one, or, when there are several, the
// default group (its ranks list empty, else the largest) and a counted warning: a single trace
// cannot tell which group a gloo collective ran on. `chakraflow run` places those across ranks
// (stages/convert/comm_group_inference.h).
//
// Stateless functions, except the per-call parser held by CommTyper; thread-compatible.
// CpuCollectiveGroup is thread-safe: typers working on ranges of one trace's nodes concurrently
// share one.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stages/common/status.h"
#include "stages/convert/convert_model.h"

namespace chakraflow {

// Chakra's get_collective_comm_type: nullopt where Chakra raises ValueError.
std::optional<CollectiveType> chakra_collective_type(std::string_view kernel_name);

// Default mode: Chakra's table, then reduce, gather, scatter and barrier, on any name (kernel or
// op: "ncclDevKernel_Reduce_Sum_f32", "nccl:all_gather", "c10d::allreduce_", "gloo:broadcast").
std::optional<CollectiveType> collective_type_from_name(std::string_view name);

// Whether a host op is a CPU-side collective: an op a process-group backend runs on its own
// threads, named "<backend>:<collective>" ("gloo:all_reduce", "gloo:broadcast", "gloo:send").
// PyTorch 2.11 writes no record_param_comms for gloo: these ops are its collectives.
bool is_cpu_collective_name(std::string_view name);

// Whether a name (of a launching op) says send or recv.
enum class P2pDirection : uint8_t { kNone, kSend, kRecv };
P2pDirection p2p_direction_from_name(std::string_view name);

// The group a CPU-side collective without a named group runs on (see above), read from the
// trace's process-group metadata once, by whichever typer asks first.
class CpuCollectiveGroup {
 public:
  explicit CpuCollectiveGroup(const EtPlusTrace& trace) : t_(trace) {}
  // The group's name (empty when the trace lists none); *guessed when it lists several.
  std::string_view get(bool* guessed);
  // The string get() returned views into: whoever keeps those views keeps it.
  std::vector<std::unique_ptr<std::string>> take_names();

 private:
  const EtPlusTrace& t_;
  std::once_flag once_;
  std::unique_ptr<std::string> name_;
  bool several_ = false;
};

class CommTyper {
 public:
  // `group`: shared with the typers of other ranges of the trace's nodes (null: its own).
  CommTyper(const EtPlusTrace& trace, const ConvertOptions& options, DataProblems& stats,
            CpuCollectiveGroup* group = nullptr);
  ~CommTyper();

  // Sets record.type, record.is_cpu_op and the communication attributes of node `index` (appended
  // to `comm`, record.comm their index).
  void assign(uint32_t index, ChakraNodeRecord& record, std::vector<CommAttrs>& comm);

  // The bytes of the tensors among a node's inputs, given the raw JSON of inputs.values and
  // inputs.types. chakra_rules: Chakra's computation (nullopt where Python would raise);
  // otherwise the default mode's, which never fails on well-formed JSON.
  std::optional<int64_t> comm_size(std::string_view values_raw, std::string_view types_raw,
                                   bool chakra_rules);

  // The peer rank recorded by a record_param_comms node for "send" / "recv", if any.
  std::optional<int64_t> p2p_peer(const EtPlusNode& record_param_comms);

  // The strings the CommAttrs it set may point into (group names it chose, when it has its own
  // CpuCollectiveGroup): whoever keeps the CommAttrs keeps these.
  std::vector<std::unique_ptr<std::string>> take_names();

 private:
  void assign_cpu_collective(uint32_t index, ChakraNodeRecord& record,
                             std::vector<CommAttrs>& comm);

  struct Impl;
  std::unique_ptr<Impl> impl_;
  const EtPlusTrace& t_;
  const ConvertOptions& options_;
  DataProblems& stats_;
};

}  // namespace chakraflow
