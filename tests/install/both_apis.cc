// A simulator's translation unit that uses both of Chakra's feeder APIs through chakraflow's
// installed headers only: Chakra's old ETFeeder (et_feeder.h) and FeederV3 (feeder_v3/), and the
// schema under Chakra's name. Built with tests/install/poison/ ahead of the system headers, where
// fmt/format.h, simdjson.h and oneTBB's headers #error: the build fails if any installed header
// reaches them; it links chakraflow::feeder, whose users link only protobuf and zlib.
//   both_apis TRACE.et [chakra.0.et]
// writes a small trace to TRACE.et and walks it with both APIs, then chakra.0.et when it exists.
// Prints one line per trace; exits 1 if the two APIs disagree.
#include "et_def.pb.h"
#include "et_feeder.h"
#include "et_feeder_node.h"
#include "feeder_v3/et_feeder.h"
#include "feeder_v3/et_feeder_node.h"
#include "record_writer.h"

#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace {

// 40 nodes: a chain with skips, read partly before their parents; collectives carry comm_size.
bool write_trace(const char* path) {
  std::string bytes;
  ChakraProtoMsg::GlobalMetadata meta;
  meta.set_version("0.0.4");
  put_record(bytes, meta);
  for (uint64_t k = 0; k < 40; ++k) {
    const uint64_t id = (k * 7) % 40;  // a permutation of 0..39
    ChakraProtoMsg::Node node;
    node.set_id(id);
    node.set_name("node" + std::to_string(id));
    node.set_type(id % 5 == 0 ? ChakraProtoMsg::COMM_COLL_NODE : ChakraProtoMsg::COMP_NODE);
    node.set_duration_micros(id + 1);
    if (id > 0) node.add_data_deps(id - 1);
    if (id > 3) node.add_data_deps(id - 3);
    if (id % 5 == 0) {
      ChakraProtoMsg::AttributeProto* size = node.add_attr();
      size->set_name("comm_size");
      size->set_int64_val(static_cast<int64_t>(1024 * (id + 1)));
    }
    put_record(bytes, node);
  }
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  return out.good();
}

struct Walk {
  std::vector<uint64_t> order;
  uint64_t runtime = 0;
  uint64_t comm_bytes = 0;
};

// Chakra's old API, as ASTRA-sim's Aug 2025 Workload drives it.
Walk walk_v1(const std::string& path) {
  Walk w;
  Chakra::ETFeeder feeder(path);
  while (feeder.hasNodesToIssue()) {
    std::shared_ptr<Chakra::ETFeederNode> node = feeder.getNextIssuableNode();
    if (!node) break;
    w.order.push_back(node->id());
    w.runtime += node->runtime();
    if (node->type() == ChakraProtoMsg::COMM_COLL_NODE) w.comm_bytes += node->comm_size();
    feeder.freeChildrenNodes(node->id());
    feeder.removeNode(node->id());
  }
  return w;
}

// FeederV3, as ASTRA-sim master drives it: the free set in ascending id order through the
// resolver, nodes looked up by id. data_deps only, as Chakra's old feeder honours.
Walk walk_v3(const std::string& path) {
  Walk w;
  Chakra::FeederV3::ETFeeder feeder(path, /*data_deps=*/true, /*ctrl_deps=*/false);
  auto& resolver = feeder.getDependancyResolver();
  while (!resolver.get_dependancy_free_nodes().empty()) {
    const std::set<uint64_t> round(resolver.get_dependancy_free_nodes().begin(),
                                   resolver.get_dependancy_free_nodes().end());
    for (uint64_t id : round) {
      resolver.take_node(id);
      std::shared_ptr<Chakra::FeederV3::ETFeederNode> node = feeder.lookupNode(id);
      w.order.push_back(node->id());
      w.runtime += node->runtime();
      if (node->type() == ChakraProtoMsg::COMM_COLL_NODE) {
        w.comm_bytes += node->comm_size<uint64_t>(0);  // the old API gives 0 when absent
      }
    }
    for (uint64_t id : round) resolver.finish_node(id);
  }
  return w;
}

bool compare(const std::string& label, const std::string& path) {
  const Walk v1 = walk_v1(path);
  const Walk v3 = walk_v3(path);
  const std::set<uint64_t> s1(v1.order.begin(), v1.order.end());
  const std::set<uint64_t> s3(v3.order.begin(), v3.order.end());
  std::printf(
      "%s: v1 %zu nodes, v3 %zu nodes, runtime %llu/%llu us, comm %llu/%llu bytes\n", label.c_str(),
      v1.order.size(), v3.order.size(), static_cast<unsigned long long>(v1.runtime),
      static_cast<unsigned long long>(v3.runtime), static_cast<unsigned long long>(v1.comm_bytes),
      static_cast<unsigned long long>(v3.comm_bytes));
  return s1 == s3 && s1.size() == v1.order.size() && s3.size() == v3.order.size() &&
         v1.runtime == v3.runtime && v1.comm_bytes == v3.comm_bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !write_trace(argv[1])) {
    std::fprintf(stderr, "usage: both_apis TRACE.et [chakra.0.et]\n");
    return 2;
  }
  bool same = compare("small", argv[1]);
  if (argc > 2 && std::ifstream(argv[2]).good()) same = compare("chakra.0.et", argv[2]) && same;
  if (!same) {
    std::fprintf(stderr, "the two APIs disagree\n");
    return 1;
  }
  return 0;
}
