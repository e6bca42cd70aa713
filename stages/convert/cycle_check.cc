#include "stages/convert/cycle_check.h"

#include <string>
#include <vector>

namespace chakraflow {

Status check_acyclic(const EtPlusTrace& t, const ChakraTrace& chakra) {
  const size_t n = t.nodes.size();
  // Position in chakra.nodes of every EtPlusTrace node that is written.
  std::vector<uint32_t> position(n, kNoNode);
  for (uint32_t p = 0; p < chakra.nodes.size(); ++p) position[chakra.nodes[p].source] = p;
  for (const ChakraNodeRecord& r : chakra.nodes) {
    for (uint32_t d : r.data_deps) {
      if (position[d] == kNoNode) {
        return Status::errorf("{}: node {} depends on node {}, which is not in the output", t.path,
                              t.nodes[r.source].id, t.nodes[d].id);
      }
    }
  }
  enum Color : uint8_t { kWhite, kGray, kBlack };
  std::vector<uint8_t> color(chakra.nodes.size(), kWhite);
  struct Frame {
    uint32_t node;  // position
    uint32_t next_edge;
  };
  std::vector<Frame> stack;
  for (uint32_t start = 0; start < chakra.nodes.size(); ++start) {
    if (color[start] != kWhite) continue;
    stack.push_back({start, 0});
    color[start] = kGray;
    while (!stack.empty()) {
      Frame& f = stack.back();
      const auto& deps = chakra.nodes[f.node].data_deps;
      if (f.next_edge == deps.size()) {
        color[f.node] = kBlack;
        stack.pop_back();
        continue;
      }
      const uint32_t next = position[deps[f.next_edge++]];
      if (color[next] == kWhite) {
        color[next] = kGray;
        stack.push_back({next, 0});
      } else if (color[next] == kGray) {
        // The cycle is the part of the DFS path from `next` to the top.
        size_t from = stack.size();
        while (from > 0 && stack[from - 1].node != next) --from;
        --from;
        std::string ids, names;
        const size_t length = stack.size() - from;
        constexpr size_t kShown = 32;
        for (size_t k = from; k < stack.size(); ++k) {
          if (k - from == kShown) {
            ids += fmt::format("... ({} more) -> ", length - kShown);
            break;
          }
          const EtPlusNode& node = t.nodes[chakra.nodes[stack[k].node].source];
          ids += fmt::format("{} -> ", node.id);
          if (k - from < 8)
            names += fmt::format("{}{} = {}", names.empty() ? "" : ", ", node.id, node.name);
        }
        ids += fmt::format("{}", t.nodes[chakra.nodes[next].source].id);
        return Status::errorf(
            "{}: cyclic data dependency over {} node(s): {} (each depends on the next). Nodes: {}",
            t.path, length, ids, names);
      }
    }
  }
  return Status();
}

}  // namespace chakraflow
