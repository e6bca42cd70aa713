// What the three files of the Python extension (_chakraflow) share: the exception that becomes
// chakraflow.Error, the conversion of counted problems and of Chakra nodes to Python values, and
// the registration functions. Every function that builds Python objects needs the GIL; the ones
// that read or write traces release it around that work.
#pragma once

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "stages/common/stats.h"
#include "stages/common/status.h"

namespace ChakraProtoMsg {
class AttributeProto;
class Node;
}  // namespace ChakraProtoMsg

namespace chakraflow::python {

namespace py = pybind11;

// Thrown (GIL held or not) for a failed Status; translated to chakraflow.Error, whose str() is the
// Status message: the located message the CLI prints after "error: ".
class CfError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
[[noreturn]] inline void raise(const Status& status) {
  throw CfError(status.message());
}

// Runs `work` (returning a Status; it must not touch Python objects) with the GIL released, and
// raises its error, the GIL held again.
template <typename Work>
void run_released(Work&& work) {
  Status status;
  {
    py::gil_scoped_release release;
    status = work();
  }
  if (!status.ok()) raise(status);
}

// DataProblems -> {key: {"count": n, "examples": [...]}}, keyed by the kinds' stable keys
// (stat_key).
py::dict stats_to_dict(const DataProblems& stats);

// An attribute's value as a Python value: int, float, bool, str, bytes, or a list of them.
py::object attr_value(const ChakraProtoMsg::AttributeProto& attr);

// A decoded node as a chakraflow.Node.
py::object make_node(const ChakraProtoMsg::Node& node);

void bind_trace(py::module_& m);   // Node, Trace, read_et
void bind_feeder(py::module_& m);  // Feeder

}  // namespace chakraflow::python
