// FeederV3 reached as ASTRA-sim master reaches it: by its submodule path from ASTRA-sim's source
// root, with the installed include/chakraflow/astra-sim folder ahead on the include path, and
// spelled with the Chakra-level aliases master uses (Chakra::ETFeeder, Chakra::ETFeederNode).
#include "extern/graph_frontend/chakra/src/feeder_v3/et_feeder.h"

#include <cstdio>
#include <set>
#include <string>

// Issues every node of `path` in master's order; returns how many, or -1 on a stall.
long astra_sim_master_walk(const std::string& path) {
  Chakra::ETFeeder feeder(path);
  auto& resolver = feeder.getDependancyResolver();
  long issued = 0;
  while (!resolver.get_dependancy_free_nodes().empty()) {
    std::set<Chakra::FeederV3::NodeId> round(resolver.get_dependancy_free_nodes().begin(),
                                             resolver.get_dependancy_free_nodes().end());
    for (auto id : round) {
      std::shared_ptr<Chakra::ETFeederNode> node = feeder.lookupNode(id);
      resolver.take_node(node->id());
      (void)node->is_cpu_op<bool>(false);
      ++issued;
    }
    for (auto id : round) resolver.finish_node(id);
  }
  return resolver.stalled() ? -1 : issued;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const long issued = astra_sim_master_walk(argv[1]);
  std::printf("master-style: %ld nodes\n", issued);
  return issued > 0 ? 0 : 1;
}
