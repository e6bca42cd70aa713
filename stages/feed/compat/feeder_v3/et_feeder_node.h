// Chakra::FeederV3::ETFeederNode: source-compatible with the astra-sim fork of Chakra's
// src/feeder_v3/et_feeder_node.h (reference/astra_sim_feeder_v3.md), the node current ASTRA-sim
// reads. Installed as <prefix>/include/chakraflow/compat/feeder_v3/et_feeder_node.h.
//
// A node is a handle (feeder, id): lookupNode() makes one for any id at any time, and its
// contents are read from the trace when first asked for, then kept by the handle.
//
// Same as FeederV3:
// - id(), name(), type(), runtime() (= duration_micros).
// - Per attribute X of the list below, `template <T> T X()` and `template <T> T X(default)`: the
//   first throws std::runtime_error when the node has no X, except is_cpu_op (default false),
//   tensor_loc and comm_priority (default 0). The non-template is_cpu_op(), num_ops(), ... call
//   them with FeederV3's types. `comm_src(my_rank)` deduces T from its argument, the default.
// - has_attr(name); get_attr_msg(name) returns a copy of the first attribute of that name and
//   throws std::runtime_error if there is none; get_attr<T>(name[, default]) converts its value:
//   an integer (bool included) to any integer type, unchecked; an integer or floating value to a
//   floating type; floating to integer throws std::bad_cast, as does string/bytes to anything but
//   std::string; list values throw std::invalid_argument. `strict` requires T to be the field's
//   exact type. T = ChakraAttr gives the message itself.
// - get_inputs_values(default) etc.: the IOInfo strings, `default` when absent.
// Differences (docs/compatibility.md, "FeederV3"):
// - id() never reads the trace; the other accessors of a node whose id is not in the trace throw
//   std::runtime_error naming the id and the file (FeederV3: "Node N not found in index").
// - comm_type() converts the stored integer to CollectiveCommType (FeederV3 throws bad_cast
//   unless the attribute was stored as that exact enum type, which the schema cannot express).
//
// Thread safety: a node may be used from one thread at a time; its feeder is not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>

#include "common.h"

namespace chakraflow {
class NodeRecord;
}

namespace Chakra {
namespace FeederV3 {

class ETFeeder;

class ETFeederNode {
 public:
  ETFeederNode(ETFeeder& etfeeder, NodeId node_id) : feeder_(&etfeeder), node_id_(node_id) {}

  bool has_attr(const std::string& attr_name) const;
  const ChakraAttr get_attr_msg(const std::string& attr_name) const;
  // Points *attr at the attribute (valid while this node lives); false if absent.
  bool get_attr_msg(const std::string& attr_name, const ChakraAttr** attr) const;
  ChakraAttr::ValueCase get_attr_type(const ChakraAttr& attr) const { return attr.value_case(); }

  template <typename T>
  T get_attr(const ChakraAttr& attr, const bool strict_type = DEFAULT_STRICT_TYPING) const;
  template <typename T>
  T get_attr(const std::string& attr_name, const T& default_value) const {
    ChakraAttr attr;
    if (!load_attr(attr_name, &attr)) return default_value;
    return get_attr<T>(attr, DEFAULT_STRICT_TYPING);
  }
  template <typename T>
  T get_attr(const std::string& attr_name) const {
    ChakraAttr attr;
    if (!load_attr(attr_name, &attr)) complain_attr_not_found(attr_name);
    return get_attr<T>(attr, DEFAULT_STRICT_TYPING);
  }

#define CHAKRAFLOW_V3_ATTR(attr_name)                    \
  template <typename T>                                  \
  T attr_name() const {                                  \
    return this->get_attr<T>(#attr_name);                \
  }                                                      \
  template <typename T>                                  \
  T attr_name(const T& default_value) const {            \
    return this->get_attr<T>(#attr_name, default_value); \
  }
#define CHAKRAFLOW_V3_ATTR_WITH_DEFAULT(attr_name, system_default)        \
  template <typename T>                                                   \
  T attr_name() const {                                                   \
    return this->get_attr<T>(#attr_name, static_cast<T>(system_default)); \
  }                                                                       \
  template <typename T>                                                   \
  T attr_name(const T& default_value) const {                             \
    return this->get_attr<T>(#attr_name, default_value);                  \
  }
  CHAKRAFLOW_V3_ATTR_WITH_DEFAULT(is_cpu_op, false)
  CHAKRAFLOW_V3_ATTR(num_ops)
  CHAKRAFLOW_V3_ATTR_WITH_DEFAULT(tensor_loc, 0u)
  CHAKRAFLOW_V3_ATTR(tensor_size)
  CHAKRAFLOW_V3_ATTR(comm_type)
  CHAKRAFLOW_V3_ATTR_WITH_DEFAULT(comm_priority, 0u)
  CHAKRAFLOW_V3_ATTR(comm_size)
  CHAKRAFLOW_V3_ATTR(comm_src)
  CHAKRAFLOW_V3_ATTR(comm_dst)
  CHAKRAFLOW_V3_ATTR(comm_tag)
  CHAKRAFLOW_V3_ATTR(pg_name)
#undef CHAKRAFLOW_V3_ATTR
#undef CHAKRAFLOW_V3_ATTR_WITH_DEFAULT

  NodeId id() const {
    return node_id_;
  }
  std::string name() const;
  ChakraProtoMsg::NodeType type() const;
  uint64_t runtime() const;

  bool is_cpu_op() const {
    return is_cpu_op<bool>();
  }
  uint64_t num_ops() const {
    return num_ops<uint64_t>();
  }
  uint32_t tensor_loc() const {
    return tensor_loc<uint32_t>();
  }
  uint64_t tensor_size() const {
    return tensor_size<uint64_t>();
  }
  ChakraProtoMsg::CollectiveCommType comm_type() const {
    return static_cast<ChakraProtoMsg::CollectiveCommType>(comm_type<uint64_t>());
  }
  uint32_t comm_priority() const {
    return comm_priority<uint32_t>();
  }
  uint64_t comm_size() const {
    return comm_size<uint64_t>();
  }
  uint32_t comm_src() const {
    return comm_src<uint32_t>();
  }
  uint32_t comm_dst() const {
    return comm_dst<uint32_t>();
  }
  uint32_t comm_tag() const {
    return comm_tag<uint32_t>();
  }

  std::string get_inputs_values(const std::string& default_ = "") const;
  std::string get_inputs_shapes(const std::string& default_ = "") const;
  std::string get_inputs_types(const std::string& default_ = "") const;
  std::string get_outputs_values(const std::string& default_ = "") const;
  std::string get_outputs_shapes(const std::string& default_ = "") const;
  std::string get_outputs_types(const std::string& default_ = "") const;

  // chakraflow extension: the whole node as a protobuf message (decoded on each call).
  ChakraNode getChakraNode() const;

 private:
  template <typename T, typename F>
  static T convert(F value, bool strict) {
    if constexpr (std::is_same_v<T, F>) {
      return value;
    } else {
      if (!strict) {
        if constexpr (std::is_integral_v<T> && std::is_integral_v<F>) {
          return static_cast<T>(value);
        } else if constexpr (std::is_floating_point_v<T> &&
                             (std::is_floating_point_v<F> || std::is_integral_v<F>)) {
          return static_cast<T>(value);
        }
      }
      throw std::bad_cast();
    }
  }

  const chakraflow::NodeRecord& record() const;
  bool load_attr(const std::string& attr_name, ChakraAttr* out) const;
  [[noreturn]] void complain_attr_not_found(const std::string& attr_name) const;

  ETFeeder* feeder_;
  NodeId node_id_;
  mutable std::shared_ptr<const chakraflow::NodeRecord> record_;
  mutable std::shared_ptr<const ChakraNode> message_;  // for get_attr_msg(name, const ChakraAttr**)
};

template <typename T>
T ETFeederNode::get_attr(const ChakraAttr& attr, const bool strict_type) const {
  switch (attr.value_case()) {
    case ChakraAttr::kDoubleVal:
      return convert<T>(attr.double_val(), strict_type);
    case ChakraAttr::kFloatVal:
      return convert<T>(attr.float_val(), strict_type);
    case ChakraAttr::kInt32Val:
      return convert<T>(attr.int32_val(), strict_type);
    case ChakraAttr::kInt64Val:
      return convert<T>(attr.int64_val(), strict_type);
    case ChakraAttr::kUint32Val:
      return convert<T>(attr.uint32_val(), strict_type);
    case ChakraAttr::kUint64Val:
      return convert<T>(attr.uint64_val(), strict_type);
    case ChakraAttr::kSint32Val:
      return convert<T>(attr.sint32_val(), strict_type);
    case ChakraAttr::kSint64Val:
      return convert<T>(attr.sint64_val(), strict_type);
    case ChakraAttr::kFixed32Val:
      return convert<T>(attr.fixed32_val(), strict_type);
    case ChakraAttr::kFixed64Val:
      return convert<T>(attr.fixed64_val(), strict_type);
    case ChakraAttr::kSfixed32Val:
      return convert<T>(attr.sfixed32_val(), strict_type);
    case ChakraAttr::kSfixed64Val:
      return convert<T>(attr.sfixed64_val(), strict_type);
    case ChakraAttr::kBoolVal:
      return convert<T>(attr.bool_val(), strict_type);
    case ChakraAttr::kStringVal:
      return convert<T>(attr.string_val(), strict_type);
    case ChakraAttr::kBytesVal:
      return convert<T>(attr.bytes_val(), strict_type);
    default:
      throw std::invalid_argument(
          "Attribute type not supported, for list types please handle them manually");
  }
}

template <>
inline ChakraAttr ETFeederNode::get_attr<ChakraAttr>(const ChakraAttr& attr, const bool) const {
  return attr;
}

}  // namespace FeederV3

#if !defined(CHAKRAFLOW_COMPAT_V1_FEEDER) && !defined(CHAKRAFLOW_NO_FEEDER_V3_ALIASES)
// FeederV3's names at namespace Chakra level, as ASTRA-sim master spells them. Left out when
// Chakra's old feeder (et_feeder.h, which defines Chakra::ETFeeder) is included first.
#define CHAKRAFLOW_FEEDER_V3_ALIASES 1
using ETFeederNode = FeederV3::ETFeederNode;
#endif

}  // namespace Chakra
