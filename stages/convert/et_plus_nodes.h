// Converter stage 1: the nodes of an ET+ (or of a plain host execution trace) as the converter
// needs them.
//
// Input: an ET+ or host ET file (load_et_plus: one pass, the fields read while the loader parses),
// or a HostTrace from load_host_trace (read_et_plus_nodes: each node's raw JSON text is re-read).
// Either way (either layout), the fields the converter uses are: ctrl_deps / parent, inputs and
// outputs (turned into the Python str() text Chakra stores, stages/convert/python_repr.h), cat, stream,
// pg_name, exclusive_dur, inclusive_dur, ts, inter_thread_dep, sync_dep, device, and the attributes
// rf_id, fw_parent, seq_id, scope, tid, fw_tid, op_schema, pg_name, collective_name. Schema 1.0.1
// ("flat") nodes carry these at node level, with inputs / input_shapes / input_types lists; later
// schemas use attrs and inputs {values, shapes, types}. An attr overrides the node-level field of
// the same name, as Chakra's setattr does (spec §5 #12; only the names above are applied).
//
// Parents: `ctrl_deps` when present, else `parent`. ET+ files of schema 1.0.1 written by Chakra's
// trace_link keep `parent` in the pre-renumbering id space (only GPU nodes carry a `ctrl_deps`
// with the new id). That case is detected (the process root's `parent` is not its own id) and the
// old ids are recovered: new ids were given in old-id order, so on each thread the parents form a
// stack whose entries are identified by their children's `parent` values. Parents that cannot be
// recovered are left missing and counted.
//
// Errors (malformed values) name the file, the byte offset and the node id. Data problems that do
// not stop the conversion are counted in EtPlusTrace::stats.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "stages/convert/convert_model.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/link_options.h"
#include "stages/link/linked_trace.h"
#include "stages/common/status.h"

namespace chakraflow {

StatusOr<EtPlusTrace> read_et_plus_nodes(const HostTrace& host, const ConvertOptions& options);

// An ET+ file read in one pass: the converter's fields are read while the loader parses the
// document (no second parse of every node). `trace` refers to `host`.
struct EtPlusFile {
  std::unique_ptr<HostTrace> host;
  EtPlusTrace trace;
};
// The nodes are read in windows of `window_bytes` (see load_host_trace; 0: the whole document).
StatusOr<EtPlusFile> load_et_plus(const std::string& path, const ConvertOptions& options,
                                  size_t window_bytes = kHostWindowBytes);

// The nodes of the ET+ that write_et_plus (stages/link/et_plus_writer.h) would write for a linked rank,
// read without writing it (`chakraflow run` converts this way): each host node's text is read as
// read_et_plus_nodes reads it, then given what linking learned (new id and parent, durations, ts,
// inter-thread and sync dependencies), and each linked GPU op becomes a copy of its host node with
// the GPU op's name, durations, ts, stream and pg_name. The nodes equal those load_et_plus reads
// from the written ET+ (tests/et_plus_nodes_test.cc checks the .et bytes), except that errors and
// examples name the host trace's byte offsets and original ids. `host` must outlive the result
// (views into its text); `device` and `linked` need not (their strings are copied).
StatusOr<EtPlusTrace> read_linked_nodes(const HostTrace& host, const DeviceTrace& device,
                                        const LinkedTrace& linked, const LinkOptions& link_options,
                                        const ConvertOptions& options);

// What read_linked_nodes takes from the device trace, copied out of it (GPU names and pg_names
// interned: kernels repeat), so that the device trace can be freed before the nodes are read.
struct LinkedDeviceFacts {
  struct Timing {
    TimeNs dur = 0;
    TimeNs ts = 0;
  };
  struct GpuOp {
    std::string_view name;     // unescaped, as in DeviceEvent
    std::string_view pg_name;  // empty unless an ncclDevKernel names its process group
    TimeNs dur = 0;
    TimeNs ts = 0;
    int64_t stream = 0;
    bool has_stream = false;
    // Whether name and pg_name are valid UTF-8 (checked once per distinct string; one that is
    // not is repaired and counted per node by read_linked_nodes).
    bool name_utf8 = true;
    bool pg_name_utf8 = true;
  };
  std::vector<Timing> host_op;  // per LinkedTrace::ops entry (zeros where no device event)
  std::vector<GpuOp> gpu_op;    // per LinkedTrace::gpu_events entry
  std::deque<std::string> arena;
};
LinkedDeviceFacts linked_device_facts(const DeviceTrace& device, const LinkedTrace& linked);
// As above, with the device trace's part already taken out.
StatusOr<EtPlusTrace> read_linked_nodes(const HostTrace& host, LinkedDeviceFacts device,
                                        const LinkedTrace& linked, const LinkOptions& link_options,
                                        const ConvertOptions& options);

// The converter's reading of a host ET's nodes, made in the loader's own pass over the text
// (`chakraflow run`: the text is parsed once for the link and the conversion). Give it to
// load_host_trace / parse_host_trace: the loader keeps its nodes as without it (the link fields
// are set from the same values, with the loader's semantics), and this keeps one EtPlusNode per
// node, in file order. read_linked_nodes then reads no node text again. `path` names the file in
// errors; errors and data problems are those read_linked_nodes reports from the text.
class HostNodeFields final : public HostFieldVisitor {
 public:
  explicit HostNodeFields(std::string path);
  HostNodeFields(HostNodeFields&&) noexcept;
  HostNodeFields& operator=(HostNodeFields&&) noexcept;
  ~HostNodeFields() override;

  bool keep_nodes() const override { return true; }
  Status field(HostNode& node, std::string_view key, simdjson::ondemand::value& value) override;
  Status end_node(const HostNode& node) override;
  bool can_take_back() const override;
  void drop_node() override;
  void drop_all() override;

  struct Impl;

 private:
  friend StatusOr<EtPlusTrace> read_linked_nodes(const HostTrace&, HostNodeFields,
                                                 LinkedDeviceFacts, const LinkedTrace&,
                                                 const LinkOptions&, const ConvertOptions&);
  std::unique_ptr<Impl> impl_;
};
// As above, with the nodes read in the loader's pass. `host` is the trace loaded with `fields`.
StatusOr<EtPlusTrace> read_linked_nodes(const HostTrace& host, HostNodeFields fields,
                                        LinkedDeviceFacts device, const LinkedTrace& linked,
                                        const LinkOptions& link_options,
                                        const ConvertOptions& options);

// True for the thread annotation names Chakra takes as dependency roots.
bool is_thread_root_name(std::string_view name);
// True for the process annotation names.
bool is_process_root_name(std::string_view name);

}  // namespace chakraflow
