// The Chakra schema's enums (proto/et_def.proto's NodeType and CollectiveCommType) as plain C++
// enums, for the stages that write or read their values without the generated code (the
// converter, the simulator), and their names. Constant data; thread-safe.
#pragma once

#include <cstdint>

namespace chakraflow {

// Chakra NodeType values (proto/et_def.proto).
enum class ChakraNodeType : uint8_t {
  kInvalid = 0,
  kMetadata = 1,
  kMemLoad = 2,
  kMemStore = 3,
  kComp = 4,
  kCommSend = 5,
  kCommRecv = 6,
  kCommColl = 7,
};

// Chakra CollectiveCommType values.
enum class CollectiveType : uint8_t {
  kAllReduce = 0,
  kReduce = 1,
  kAllGather = 2,
  kGather = 3,
  kScatter = 4,
  kBroadcast = 5,
  kAllToAll = 6,
  kReduceScatter = 7,
  kReduceScatterBlock = 8,
  kBarrier = 9,
};

// The snake_case name of a CollectiveCommType value ("all_reduce"); "collective" for a value the
// schema does not have.
const char* collective_name(int32_t comm_type);

}  // namespace chakraflow
