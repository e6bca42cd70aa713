// What the simulator reads from a Chakra node and from the process-group METADATA node.
//
// scan_sim_fields reads a serialized ChakraProtoMsg::Node (the feeder's FeederNode::raw) without
// decoding it into a message: the top-level fields it needs (name, type, start_time_micros,
// duration_micros, inputs.values of METADATA nodes) and the attributes is_cpu_op, tid, stream,
// comm_type, comm_size, comm_src, comm_dst, comm_tag and pg_name. Integer attributes are accepted
// in any varint field of AttributeProto (int32/int64/uint32/uint64/sint*), not only the one the
// convention names (Chakra's feeder reads 0 otherwise, spec §5 #31). Views point into `raw`.
//
// parse_process_groups reads the `## process_group:init ##` node's inputs.values: the Python
// str() of a one-string list whose string is PyTorch's JSON list of groups
// (`['[{"pg_name": "0", "ranks": [0, 1], "group_size": 2, ...}]']`), or the same as JSON. An empty
// `ranks` list means every rank (PyTorch records the world group so).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stages/common/status.h"

namespace chakraflow {

struct SimNodeFields {
  uint64_t id = 0;
  int32_t type = 0;                // ChakraProtoMsg::NodeType
  uint64_t start_time_micros = 0;  // 0: not recorded
  uint64_t duration_micros = 0;
  std::string_view name;
  std::string_view inputs_values;  // METADATA nodes only
  bool is_cpu_op = false;          // Chakra's feeder default when the attr is absent
  std::optional<int64_t> tid;
  std::optional<int64_t> stream;
  std::optional<int64_t> comm_type;
  int64_t comm_size = 0;
  std::optional<int64_t> comm_src;
  std::optional<int64_t> comm_dst;
  int64_t comm_tag = 0;
  std::string_view pg_name;
};

// The error says what is malformed and where in the record.
Status scan_sim_fields(std::string_view raw, SimNodeFields* out);

struct ProcessGroupDef {
  std::string name;             // pg_name
  std::string desc;             // pg_desc, when recorded
  std::vector<uint32_t> ranks;  // sorted, unique; empty: every rank
  int64_t group_size = 0;       // as recorded (0 when absent)
};

StatusOr<std::vector<ProcessGroupDef>> parse_process_groups(std::string_view inputs_values);

}  // namespace chakraflow
