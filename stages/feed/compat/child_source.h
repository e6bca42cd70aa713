// ChildSource: where the nodes of Chakra::ETFeeder (compat/et_feeder.h) find their children: the
// feeder's state, which the nodes reference weakly (a node may outlive its feeder). Internal.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "stages/feed/compat/et_feeder_node.h"

namespace chakraflow::compat {

class ChildSource {
 public:
  virtual ~ChildSource() = default;
  virtual std::vector<std::shared_ptr<Chakra::ETFeederNode>> children_of(uint64_t id) = 0;
};

}  // namespace chakraflow::compat
