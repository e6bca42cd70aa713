// Hand-made Chakra traces for the simulator tests: nodes with the attributes the simulator reads
// (is_cpu_op, tid, stream, comm_*), start times, and the process-group METADATA node.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proto/et_def.pb.h"
#include "stages/et/et_io.h"

namespace chakraflow::testing {

struct SimTraceNode {
  uint64_t id = 0;
  std::vector<uint64_t> deps;
  uint64_t duration = 0;  // µs
  int type = ChakraProtoMsg::COMP_NODE;
  bool cpu = true;
  int64_t tid = 1;
  std::optional<int64_t> stream;  // GPU nodes
  uint64_t start = 0;             // start_time_micros (0: none)
  std::optional<int64_t> comm_type;
  int64_t comm_size = 0;
  std::optional<int64_t> peer;  // comm_dst (send) / comm_src (recv)
  std::string pg_name;
  std::string name;
  std::string inputs_values;  // METADATA: the process groups
};

// Node builders.
inline SimTraceNode cpu(uint64_t id, std::vector<uint64_t> deps, uint64_t us, int64_t tid = 1) {
  SimTraceNode n;
  n.id = id;
  n.deps = std::move(deps);
  n.duration = us;
  n.tid = tid;
  return n;
}
inline SimTraceNode gpu(uint64_t id, std::vector<uint64_t> deps, uint64_t us, int64_t stream = 7) {
  SimTraceNode n = cpu(id, std::move(deps), us);
  n.cpu = false;
  n.stream = stream;
  return n;
}
inline SimTraceNode coll(uint64_t id, std::vector<uint64_t> deps, int64_t comm_type, int64_t bytes,
                         uint64_t recorded_us = 0, std::string pg = "", int64_t stream = 9) {
  SimTraceNode n = gpu(id, std::move(deps), recorded_us, stream);
  n.type = ChakraProtoMsg::COMM_COLL_NODE;
  n.comm_type = comm_type;
  n.comm_size = bytes;
  n.pg_name = std::move(pg);
  return n;
}
inline SimTraceNode send(uint64_t id, std::vector<uint64_t> deps, int64_t dst, int64_t bytes,
                         int64_t stream = 9) {
  SimTraceNode n = gpu(id, std::move(deps), 0, stream);
  n.type = ChakraProtoMsg::COMM_SEND_NODE;
  n.peer = dst;
  n.comm_size = bytes;
  return n;
}
inline SimTraceNode recv(uint64_t id, std::vector<uint64_t> deps, int64_t src, int64_t bytes,
                         int64_t stream = 9) {
  SimTraceNode n = send(id, std::move(deps), src, bytes, stream);
  n.type = ChakraProtoMsg::COMM_RECV_NODE;
  return n;
}
// `groups`: the JSON list PyTorch records, e.g. [{"pg_name": "1", "ranks": [0, 1]}].
inline SimTraceNode process_groups(uint64_t id, const std::string& groups) {
  SimTraceNode n = cpu(id, {}, 0);
  n.type = ChakraProtoMsg::METADATA_NODE;
  n.name = "## process_group:init ##";
  n.inputs_values = "['" + groups + "']";
  return n;
}

inline ChakraProtoMsg::Node to_proto(const SimTraceNode& n) {
  namespace pb = ChakraProtoMsg;
  pb::Node node;
  node.set_id(n.id);
  node.set_name(n.name.empty() ? "n" + std::to_string(n.id) : n.name);
  node.set_type(static_cast<pb::NodeType>(n.type));
  node.set_duration_micros(n.duration);
  if (n.start) node.set_start_time_micros(n.start);
  for (uint64_t d : n.deps) node.add_data_deps(d);
  if (!n.inputs_values.empty()) node.mutable_inputs()->set_values(n.inputs_values);
  auto add = [&](const char* name) {
    pb::AttributeProto* a = node.add_attr();
    a->set_name(name);
    return a;
  };
  add("is_cpu_op")->set_bool_val(n.cpu);
  add("tid")->set_int64_val(n.tid);
  if (n.stream) add("stream")->set_int64_val(*n.stream);
  if (n.comm_type) add("comm_type")->set_int64_val(*n.comm_type);
  if (n.comm_size) add("comm_size")->set_int64_val(n.comm_size);
  if (n.peer) {
    add(n.type == pb::COMM_SEND_NODE ? "comm_dst" : "comm_src")
        ->set_int32_val(static_cast<int32_t>(*n.peer));
  }
  if (!n.pg_name.empty()) add("pg_name")->set_string_val(n.pg_name);
  return node;
}

// Writes a GlobalMetadata (with step_time_us when `measured_us` is given) and the nodes.
inline void write_sim_trace(const std::string& path, const std::vector<SimTraceNode>& nodes,
                            std::optional<double> measured_us = std::nullopt) {
  auto writer = EtWriter::open(path);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  ChakraProtoMsg::GlobalMetadata meta;
  meta.set_version("1.0.0");
  if (measured_us) {
    auto* a = meta.add_attr();
    a->set_name("step_time_us");
    a->set_double_val(*measured_us);
  }
  writer->write(meta);
  for (const SimTraceNode& n : nodes) writer->write(to_proto(n));
  Status committed = writer->commit();
  ASSERT_TRUE(committed.ok()) << committed.message();
}

}  // namespace chakraflow::testing
