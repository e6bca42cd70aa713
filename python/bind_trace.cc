// chakraflow.Node, chakraflow.Trace and read_et: a Chakra .et file decoded into Python objects.
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "proto/et_def.pb.h"
#include "python/binding.h"
#include "stages/convert/jsonizer.h"

namespace chakraflow::python {
namespace {

namespace pb = ChakraProtoMsg;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// A node, decoded once; plain fields and a dict of its attributes.
struct Node {
  uint64_t id = 0;
  std::string name;
  std::string type;  // the NodeType's name, e.g. "COMP_NODE"
  uint64_t duration_micros = 0;
  uint64_t start_time_micros = 0;
  std::vector<uint64_t> data_deps;
  std::vector<uint64_t> ctrl_deps;
  py::dict attrs;
};

Node to_node(const pb::Node& n) {
  Node out;
  out.id = n.id();
  out.name = n.name();
  out.type = pb::NodeType_Name(n.type());
  out.duration_micros = n.duration_micros();
  out.start_time_micros = n.start_time_micros();
  out.data_deps.assign(n.data_deps().begin(), n.data_deps().end());
  out.ctrl_deps.assign(n.ctrl_deps().begin(), n.ctrl_deps().end());
  for (const pb::AttributeProto& a : n.attr()) out.attrs[py::str(a.name())] = attr_value(a);
  return out;
}

// Element `index` of a repeated field, or the singular field when index < 0.
py::object field_value(const Message& m, const Reflection& r, const FieldDescriptor* f, int index) {
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return py::int_(rep ? r.GetRepeatedInt32(m, f, index) : r.GetInt32(m, f));
    case FieldDescriptor::CPPTYPE_INT64:
      return py::int_(rep ? r.GetRepeatedInt64(m, f, index) : r.GetInt64(m, f));
    case FieldDescriptor::CPPTYPE_UINT32:
      return py::int_(rep ? r.GetRepeatedUInt32(m, f, index) : r.GetUInt32(m, f));
    case FieldDescriptor::CPPTYPE_UINT64:
      return py::int_(rep ? r.GetRepeatedUInt64(m, f, index) : r.GetUInt64(m, f));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return py::float_(rep ? r.GetRepeatedDouble(m, f, index) : r.GetDouble(m, f));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return py::float_(rep ? r.GetRepeatedFloat(m, f, index) : r.GetFloat(m, f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return py::bool_(rep ? r.GetRepeatedBool(m, f, index) : r.GetBool(m, f));
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string s = rep ? r.GetRepeatedString(m, f, index) : r.GetString(m, f);
      if (f->type() == FieldDescriptor::TYPE_BYTES) return py::bytes(s);
      return py::str(s);
    }
    default:
      return py::none();
  }
}

// The whole file, decoded: the metadata and every node.
struct Trace {
  std::string path;
  py::dict metadata;
  std::vector<Node> nodes;

  size_t index(int64_t i) const {
    const int64_t n = static_cast<int64_t>(nodes.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) throw py::index_error("node index out of range");
    return static_cast<size_t>(i);
  }

  // One list per column of to_pandas().
  py::dict columns() const {
    const size_t n = nodes.size();
    py::list id(n), name(n), type(n), dur(n), start(n), ndata(n), nctrl(n);
    static const char* const kAttrColumns[] = {"comm_type", "comm_size", "pg_name", "is_cpu_op"};
    std::vector<py::list> attr_columns;
    for (size_t c = 0; c < std::size(kAttrColumns); ++c) attr_columns.emplace_back(n);
    for (size_t i = 0; i < n; ++i) {
      const Node& node = nodes[i];
      id[i] = py::int_(node.id);
      name[i] = py::str(node.name);
      type[i] = py::str(node.type);
      dur[i] = py::int_(node.duration_micros);
      start[i] = py::int_(node.start_time_micros);
      ndata[i] = py::int_(node.data_deps.size());
      nctrl[i] = py::int_(node.ctrl_deps.size());
      for (size_t c = 0; c < std::size(kAttrColumns); ++c) {
        py::str key(kAttrColumns[c]);
        py::object value = py::none();
        if (node.attrs.contains(key)) value = node.attrs[key];
        attr_columns[c][i] = value;
      }
    }
    py::dict out;
    out["id"] = id;
    out["name"] = name;
    out["type"] = type;
    out["duration_micros"] = dur;
    out["start_time_micros"] = start;
    out["num_data_deps"] = ndata;
    out["num_ctrl_deps"] = nctrl;
    for (size_t c = 0; c < std::size(kAttrColumns); ++c) out[kAttrColumns[c]] = attr_columns[c];
    return out;
  }
};

// Reads every record as `chakraflow jsonize` does (EtNodeReader). Needs no GIL.
Status read_records(const std::string& path, pb::GlobalMetadata* metadata, bool* has_metadata,
                    std::vector<pb::Node>* nodes) {
  CF_ASSIGN_OR_RETURN(EtNodeReader reader, EtNodeReader::open(path));
  *has_metadata = reader.has_metadata();
  metadata->CopyFrom(reader.metadata());
  while (true) {
    pb::Node node;
    CF_ASSIGN_OR_RETURN(bool have, reader.next(&node));
    if (!have) return Status();
    nodes->push_back(std::move(node));
  }
}

Trace read_et(const std::string& path) {
  pb::GlobalMetadata metadata;
  bool has_metadata = false;
  std::vector<pb::Node> records;
  run_released([&] { return read_records(path, &metadata, &has_metadata, &records); });
  Trace trace;
  trace.path = path;
  if (has_metadata) {
    trace.metadata["version"] = py::str(metadata.version());
    for (const pb::AttributeProto& a : metadata.attr()) {
      trace.metadata[py::str(a.name())] = attr_value(a);
    }
  }
  trace.nodes.reserve(records.size());
  for (const pb::Node& n : records) trace.nodes.push_back(to_node(n));
  return trace;
}

std::string node_repr(const Node& n) {
  return "Node(id=" + std::to_string(n.id) +
         ", name=" + py::repr(py::str(n.name)).cast<std::string>() + ", type=" + n.type +
         ", duration_micros=" + std::to_string(n.duration_micros) + ")";
}

}  // namespace

py::dict stats_to_dict(const DataProblems& stats) {
  py::dict out;
  for (const auto& [kind, entry] : stats.entries()) {
    py::dict e;
    e["count"] = entry.count;
    e["examples"] = entry.examples;
    out[py::str(std::string(stat_key(kind)))] = e;
  }
  return out;
}

py::object attr_value(const pb::AttributeProto& attr) {
  const Reflection& r = *attr.GetReflection();
  const FieldDescriptor* f =
      r.GetOneofFieldDescriptor(attr, attr.GetDescriptor()->FindOneofByName("value"));
  if (f == nullptr) return py::none();
  if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) return field_value(attr, r, f, -1);
  // The *List messages: one repeated field, `values`.
  const Message& list = r.GetMessage(attr, f);
  const Reflection& lr = *list.GetReflection();
  const FieldDescriptor* values = list.GetDescriptor()->FindFieldByName("values");
  const int n = lr.FieldSize(list, values);
  py::list out(n);
  for (int i = 0; i < n; ++i) out[i] = field_value(list, lr, values, i);
  return out;
}

py::object make_node(const pb::Node& node) {
  return py::cast(to_node(node));
}

void bind_trace(py::module_& m) {
  py::class_<Node>(m, "Node", "One node of a Chakra trace.")
      .def_readonly("id", &Node::id)
      .def_readonly("name", &Node::name)
      .def_readonly("type", &Node::type, "the NodeType's name, e.g. \"COMP_NODE\"")
      .def_readonly("duration_micros", &Node::duration_micros)
      .def_readonly("start_time_micros", &Node::start_time_micros)
      .def_readonly("data_deps", &Node::data_deps)
      .def_readonly("ctrl_deps", &Node::ctrl_deps)
      .def_readonly("attrs", &Node::attrs, "attribute name -> Python value")
      .def("__repr__", &node_repr);

  py::class_<Trace>(m, "Trace", "A Chakra .et trace, decoded (chakraflow.read_et).")
      .def_readonly("path", &Trace::path)
      .def_readonly("metadata", &Trace::metadata,
                    "the GlobalMetadata record: \"version\" and its attributes by name")
      .def("__len__", [](const Trace& t) { return t.nodes.size(); })
      .def(
          "__getitem__",
          [](const Trace& t, int64_t i) -> const Node& { return t.nodes[t.index(i)]; },
          py::return_value_policy::reference_internal)
      .def(
          "__iter__",
          [](const Trace& t) { return py::make_iterator(t.nodes.begin(), t.nodes.end()); },
          py::keep_alive<0, 1>())
      .def("_columns", &Trace::columns)
      .def("__repr__", [](const Trace& t) {
        return "Trace(" + py::repr(py::str(t.path)).cast<std::string>() + ", " +
               std::to_string(t.nodes.size()) + " nodes)";
      });

  m.def("read_et", &read_et, py::arg("path"),
        "Reads a Chakra .et (or .et.gz) trace. Raises chakraflow.Error on bad input.");
}

}  // namespace chakraflow::python
