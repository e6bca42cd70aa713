#include "stages/et/schema.h"

namespace chakraflow {

const char* collective_name(int32_t comm_type) {
  switch (static_cast<CollectiveType>(comm_type)) {
    case CollectiveType::kAllReduce:
      return "all_reduce";
    case CollectiveType::kReduce:
      return "reduce";
    case CollectiveType::kAllGather:
      return "all_gather";
    case CollectiveType::kGather:
      return "gather";
    case CollectiveType::kScatter:
      return "scatter";
    case CollectiveType::kBroadcast:
      return "broadcast";
    case CollectiveType::kAllToAll:
      return "all_to_all";
    case CollectiveType::kReduceScatter:
      return "reduce_scatter";
    case CollectiveType::kReduceScatterBlock:
      return "reduce_scatter_block";
    case CollectiveType::kBarrier:
      return "barrier";
  }
  return "collective";
}

}  // namespace chakraflow
