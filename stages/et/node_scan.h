// scan_node: the top-level fields of a serialized ChakraProtoMsg::Node that scheduling needs (id,
// type, duration, dependencies), read from its bytes without decoding the message: how the feeders
// and the static trace index (stages/feed/) and the simulator read a node. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "stages/common/status.h"

namespace chakraflow {

// A Node's id (ChakraProtoMsg::Node::id).
using NodeId = uint64_t;

// The top-level fields of a serialized Node the feeder needs, read without decoding the rest.
struct NodeHeader {
  NodeId id = 0;
  int32_t type = 0;
  uint64_t duration_micros = 0;
};

// Scans a serialized ChakraProtoMsg::Node: fills `header`, appends data_deps (and ctrl_deps when
// `ctrl_deps` is not null) in file order, packed or not. Checks the top-level wire structure;
// nested messages (inputs, outputs, attrs) are skipped unchecked. The error says what is wrong.
Status scan_node(std::string_view raw, NodeHeader* header, std::vector<NodeId>* data_deps,
                 std::vector<NodeId>* ctrl_deps);

}  // namespace chakraflow
