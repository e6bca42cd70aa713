// Written against Chakra's feeder API only (Chakra::ETFeeder, Chakra::ETFeederNode), as simulator
// code is: it must compile and run unchanged on chakraflow's installed compatibility headers.
//   consumer TINY.et [chakra.0.et]
// writes a 5-node trace to TINY.et, feeds it, and feeds chakra.0.et when it exists.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "et_feeder.h"
#include "et_feeder_node.h"
#include "record_writer.h"

namespace {

bool write_tiny_trace(const char* path) {
  std::string bytes;
  ChakraProtoMsg::GlobalMetadata meta;
  meta.set_version("0.0.4");
  put_record(bytes, meta);
  // (id, data_deps): 3 and 0 are read before their parents (forward references).
  const std::vector<std::pair<uint64_t, std::vector<uint64_t>>> nodes = {
      {3, {1, 2}}, {2, {1}}, {1, {}}, {0, {4}}, {4, {}}};
  for (const auto& [id, deps] : nodes) {
    ChakraProtoMsg::Node node;
    node.set_id(id);
    node.set_name("node" + std::to_string(id));
    node.set_type(ChakraProtoMsg::COMP_NODE);
    node.set_duration_micros(10 * id);
    for (uint64_t d : deps) node.add_data_deps(d);
    ChakraProtoMsg::AttributeProto* attr = node.add_attr();
    attr->set_name("is_cpu_op");
    attr->set_bool_val(id % 2 == 0);
    put_record(bytes, node);
  }
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  return out.good();
}

// The synchronous simulator loop: issue, then free the children and remove the node.
int drive(Chakra::ETFeeder& feeder, std::string* order) {
  int issued = 0;
  uint64_t busy_us = 0;
  while (feeder.hasNodesToIssue()) {
    std::shared_ptr<Chakra::ETFeederNode> node = feeder.getNextIssuableNode();
    if (node == nullptr) break;
    if (node->type() == ChakraProtoMsg::COMM_COLL_NODE) {
      busy_us += node->comm_size() + node->comm_priority() + node->comm_type();
    } else if (!node->is_cpu_op() || node->runtime() > 0) {
      busy_us += node->runtime() + node->num_ops() + node->tensor_size();
    }
    if (node->has_other_attr("rf_id")) busy_us += node->get_other_attr("rf_id").int64_val() * 0;
    if (order != nullptr) *order += " " + std::to_string(node->id());
    feeder.freeChildrenNodes(node->id());
    feeder.removeNode(node->id());
    ++issued;
  }
  (void)busy_us;
  return issued;
}

}  // namespace

size_t chakra_includes_in_use();  // chakra_includes.cc

long old_astra_sim_walk(const std::string& path);  // astra_sim_old_path.cc

int main(int argc, char** argv) {
  if (chakra_includes_in_use() != 4) return 3;
  if (argc < 2 || !write_tiny_trace(argv[1])) {
    std::fprintf(stderr, "usage: consumer TINY.et [chakra.0.et]\n");
    return 2;
  }
  Chakra::ETFeeder tiny(argv[1]);
  std::string order;
  const int n = drive(tiny, &order);
  std::printf("tiny: %d nodes, order%s, more %d\n", n, order.c_str(),
              tiny.hasNodesToIssue() ? 1 : 0);
  if (old_astra_sim_walk(argv[1]) != n) return 4;  // by ASTRA-sim's include paths
  if (argc > 2 && std::ifstream(argv[2]).good()) {
    Chakra::ETFeeder big(argv[2]);
    std::printf("chakra.0.et: %d nodes\n", drive(big, nullptr));
  } else {
    std::printf("chakra.0.et: absent\n");
  }
  return 0;
}
