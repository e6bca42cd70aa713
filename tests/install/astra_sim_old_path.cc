// Chakra's old feeder reached as ASTRA-sim (Aug 2025) reaches it: by its submodule paths from
// ASTRA-sim's source root, with the installed include/chakraflow/astra-sim folder ahead on the
// include path. Linked into `consumer`, which calls it.
#include "extern/graph_frontend/chakra/schema/protobuf/et_def.pb.h"
#include "extern/graph_frontend/chakra/src/feeder/et_feeder.h"

#include <string>

// How many nodes ASTRA-sim's old loop issues from `path`.
long old_astra_sim_walk(const std::string& path) {
  Chakra::ETFeeder feeder(path);
  long issued = 0;
  while (feeder.hasNodesToIssue()) {
    std::shared_ptr<Chakra::ETFeederNode> node = feeder.getNextIssuableNode();
    if (!node) break;
    if (node->type() == ChakraProtoMsg::COMM_COLL_NODE) (void)node->comm_size();
    feeder.freeChildrenNodes(node->id());
    feeder.removeNode(node->id());
    ++issued;
  }
  return issued;
}
