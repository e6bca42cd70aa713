// Converter stage 4: the data dependencies must form a DAG before anything is written.
//
// An iterative depth-first search (no recursion, linear in nodes + edges) over data_deps, from
// every node in id order. A cycle is reported with the ids (and names) of the nodes on it, in
// dependency order: "a -> b -> c -> a" reads "a depends on b, which depends on c, which depends on
// a". A dependency on a node that is not in the trace is reported too (Chakra stops there with a
// KeyError).
//
// Plain function; thread-safe on distinct inputs.
#pragma once

#include "stages/common/status.h"
#include "stages/convert/convert_model.h"

namespace chakraflow {

Status check_acyclic(const EtPlusTrace& trace, const ChakraTrace& chakra);

}  // namespace chakraflow
