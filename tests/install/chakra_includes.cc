// Simulator code leans on what Chakra's feeder headers include (ASTRA-sim's Workload.cc uses
// std::queue with no include of its own): this file includes only Chakra's header names and uses
// the standard library names they bring, so that it compiles only if ours bring them too.
//
// It also includes the simulator's own generated schema header first, then ours under Chakra's
// name: one definition of every ChakraProtoMsg type must result (the headers share their include
// guard), where two would not compile ("multiple definition of enum ChakraProtoMsg::NodeType").
#include "et_def.pb.h"  // ours, installed under Chakra's name
#include "et_feeder.h"
#include "et_feeder_node.h"
#include "schema/protobuf/et_def.pb.h"  // the simulator's copy (tests/install/run_consumer_test.cmake)

// What Chakra's et_feeder.h and et_feeder_node.h include: <memory>, <queue>, <unordered_map>,
// <unordered_set>, <vector>, and the protobuf-generated schema.
size_t chakra_includes_in_use() {
  std::queue<std::shared_ptr<Chakra::ETFeederNode>> queue;
  std::priority_queue<uint64_t> ready;
  std::unordered_map<uint64_t, std::vector<uint64_t>> children;
  std::unordered_set<uint64_t> done;
  std::string name = "n";
  ready.push(1);
  children[1].push_back(2);
  done.insert(3);
  ChakraProtoMsg::Node node;
  node.set_name(name);
  return queue.size() + ready.size() + children.size() + done.size() + node.name().size();
}
