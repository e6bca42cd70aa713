// The compat feeders' one way to a node's contents: its record read again from the trace's index
// (stages/feed/et_index.h) and decoded (stages/et/node_record.h). Internal. The compat APIs
// report bad input by exceptions, as Chakra's do: the error names the file, the record and the
// node.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "stages/et/node_record.h"
#include "stages/feed/et_index.h"

namespace chakraflow::compat {

// Node `i` of `index` (`scratch` holds its bytes meanwhile). std::runtime_error if the record
// cannot be read again or is malformed below its top level.
inline std::shared_ptr<NodeRecord> load_node_record(const EtIndex& index, uint32_t i,
                                                    std::string& scratch) {
  Status status = index.read_record(i, &scratch);
  auto record = std::make_shared<NodeRecord>();
  if (status.ok()) status = NodeRecord::decode(scratch, record.get());
  if (!status.ok()) {
    throw std::runtime_error(index.path() + ": record #" + std::to_string(index.record_number(i)) +
                             " (node " + std::to_string(index.id(i)) + "): " + status.message());
  }
  return record;
}

}  // namespace chakraflow::compat
