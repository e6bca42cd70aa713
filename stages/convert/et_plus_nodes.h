// Converter stage 1: the nodes of an ET+ (or of a plain host execution trace) as the converter
// needs them.
//
// Input: an ET+ or host ET (load_et_plus, parse_et_plus), or a host ET being linked
// (read_linked_nodes). The fields are read once, by the host loader (HostNode and HostNodeDetail,
// stages/link/trace_model.h, in either layout); this stage makes one EtPlusNode of each: the
// inputs and outputs lists stay where they lie in the text (rendered as the Python str() text
// Chakra stores when written, stages/convert/python_repr.h), strings are checked for UTF-8, the
// node kind is decided, parents are resolved.
//
// Parents: `ctrl_deps` when present, else `parent` (the loader's HostNode::parent_key). ET+ files
// of schema 1.0.1 written by Chakra's trace_link keep `parent` in the pre-renumbering id space
// (only GPU nodes carry a `ctrl_deps` with the new id). That case is detected (the process root's
// `parent` is not its own id) and the old ids are recovered: new ids were given in old-id order, so
// on each thread the parents form a stack whose entries are identified by their children's `parent`
// values. Parents that cannot be recovered are left missing and counted.
//
// Errors (malformed values) name the file, the byte offset and the node id. Data problems that do
// not stop the conversion are counted in EtPlusTrace::stats.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "stages/common/ordered_batches.h"
#include "stages/common/status.h"
#include "stages/convert/convert_model.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/link_options.h"
#include "stages/link/linked_trace.h"

namespace chakraflow {

// An ET+ file (or a host ET) read in one pass: the converter's nodes are built from the loader's
// reading of each node (EtPlusNodeSink). `trace` refers to `host`.
struct EtPlusFile {
  std::unique_ptr<HostTrace> host;
  EtPlusTrace trace;
};
// The nodes are read in windows of `window_bytes` (see load_host_trace; 0: the whole document),
// a large file in shards through `shards` (the same nodes).
StatusOr<EtPlusFile> load_et_plus(const std::string& path, const ConvertOptions& options,
                                  size_t window_bytes = kHostWindowBytes,
                                  const ParseShards& shards = {});
// The same from a text in memory (already decompressed); `path` names it in messages.
StatusOr<EtPlusFile> parse_et_plus(std::string path, std::string text,
                                   const ConvertOptions& options,
                                   size_t window_bytes = kHostWindowBytes);

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
  // The names' copies, one arena per range of GPU ops (a deque moved keeps its strings).
  std::vector<std::deque<std::string>> arenas;
};
// `workers`: the GPU ops copied in ranges through it, concurrently (the same facts; each range
// copies a name it uses once).
LinkedDeviceFacts linked_device_facts(const DeviceTrace& device, const LinkedTrace& linked,
                                      const OrderedBatches* workers = nullptr);

// The converter's node of each host node, built as the loader reads it (HostNodeSink): one
// EtPlusNode per JSON node, in file order. load_et_plus reads a file with it; `chakraflow run`
// gives it to load_host_trace (keep_host_nodes: the loader keeps its nodes for the link too), so
// that the text is parsed once for the link and the conversion, then to read_linked_nodes.
// Errors and data problems name the file `path`.
class EtPlusNodeSink final : public HostNodeSink {
 public:
  // Room reserved for the nodes of `text_bytes` of JSON at `bytes_per_node` (0: none), and as
  // much in each shard sink for its share (a linked rank's GPU ops' nodes are added in place: the
  // untouched part of a reservation costs no memory; a vector grown by copying faults in twice its
  // final size, which costs as much CPU as reading the nodes).
  EtPlusNodeSink(std::string path, bool keep_host_nodes, size_t text_bytes = 0,
                 size_t bytes_per_node = 0);
  // For a host ET `path` to be linked and converted: keeps the host nodes, reserves for the file.
  static EtPlusNodeSink for_linking(std::string path);

  bool keep_nodes() const override { return keep_host_nodes_; }
  Status node(const HostNode& node, const HostNodeDetail& detail) override;
  void restart() override;
  std::unique_ptr<HostNodeSink> shard(size_t text_bytes) const override;
  void append(HostNodeSink&& shard) override;
  void reserve_more(size_t nodes, const OrderedBatches& workers) override;
  // The nodes received, in file order (the sink is left empty).
  EtPlusTrace take_nodes() { return std::move(trace_); }

 private:
  EtPlusTrace trace_;
  bool keep_host_nodes_;
  size_t bytes_per_node_;
};

// The nodes of the ET+ that write_et_plus (stages/link/et_plus_writer.h) would write for a linked
// rank, made without writing it (`chakraflow run` converts this way): each host node's
// EtPlusNode as `nodes` read it (the host trace loaded with it), given what linking learned (new
// id and parent, durations, ts, inter-thread and sync dependencies), and each linked GPU op a copy
// of its host node with the GPU op's name, durations, ts, stream and pg_name. The nodes equal
// those load_et_plus reads from the written ET+ (tests/golden/linked_convert_test.cc checks the
// .et bytes), except that errors and examples name the host trace's byte offsets and original
// ids. `host` must outlive the result (views into its text). The nodes are linked in ranges of
// kLinkRangeNodes host nodes (and their GPU ops; the workers' range_size when less), through
// `workers` (may be null) concurrently, what each range adds to the trace's tables (sync deps,
// communication names, exec_tids, repaired strings, data problems) joined in order: the same
// trace whatever the workers and range size.
inline constexpr uint32_t kLinkRangeNodes = 16384;
StatusOr<EtPlusTrace> read_linked_nodes(const HostTrace& host, EtPlusNodeSink nodes,
                                        LinkedDeviceFacts device, const LinkedTrace& linked,
                                        const LinkOptions& link_options,
                                        const ConvertOptions& options,
                                        const OrderedBatches* workers = nullptr);

// True for the thread annotation names Chakra takes as dependency roots.
bool is_thread_root_name(std::string_view name);
// True for the process annotation names.
bool is_process_root_name(std::string_view name);

}  // namespace chakraflow
