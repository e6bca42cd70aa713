// Chakra::ETFeederNode: source-compatible with mlcommons/chakra's src/feeder/et_feeder_node.h
// (reference/chakra_spec.md §4.1), so that simulator code written against Chakra's feeder compiles
// unchanged. Installed as <prefix>/include/chakraflow/compat/et_feeder_node.h.
//
// Same as Chakra: the constructor caches id, name, runtime (= duration_micros) and the known
// attributes (is_cpu_op, num_ops, tensor_size, comm_type, comm_priority, comm_size, comm_src,
// comm_dst, comm_tag, pg_name: the last one of a name wins); every other attribute is kept for
// get_other_attr (the first one of a name wins), which throws std::runtime_error when absent.
// addChild ignores a child already added; getChildren returns them in insertion order.
//
// Differences (docs/compatibility.md, "Feeder"):
// - Every getter is defined when its attribute is absent: 0 (false for is_cpu_op, "" for
//   pg_name). Chakra leaves tensor_size and the comm_* fields uninitialized and never sets
//   tensor_loc. has_*() tell whether the attribute was present.
// - Integer attributes are read from whichever integer oneof field is set (int32_val, int64_val,
//   uint64_val, ..., bool_val); Chakra reads one fixed field (comm_size must be int64_val) and
//   gets 0 for any other.
// - Getters are const.
//
// Not thread-safe (like Chakra's): use a node from one thread at a time.
#pragma once

#if defined(CHAKRAFLOW_FEEDER_V3_ALIASES)
#error \
    "Include Chakra's old feeder (et_feeder_node.h) before feeder_v3/et_feeder_node.h, or define CHAKRAFLOW_NO_FEEDER_V3_ALIASES: both define Chakra::ETFeederNode"
#endif
#define CHAKRAFLOW_COMPAT_V1_FEEDER 1

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "proto/et_def.pb.h"

namespace chakraflow {
class NodeRecord;
namespace compat {
class ChildSource;
}  // namespace compat
}  // namespace chakraflow

namespace Chakra {

class ETFeeder;

class ETFeederNode {
 public:
  ETFeederNode(std::shared_ptr<ChakraProtoMsg::Node> node);  // NOLINT: implicit as in Chakra

  // The feeder's nodes (only ETFeeder can make a RecordKey): the record's bytes, decoded on
  // demand; no protobuf Node unless getChakraNode() or get_other_attr() asks for one.
  class RecordKey {
    friend class ETFeeder;
    RecordKey() = default;
  };
  ETFeederNode(RecordKey, std::shared_ptr<const chakraflow::NodeRecord> record,
               std::weak_ptr<chakraflow::compat::ChildSource> children);

  std::shared_ptr<ChakraProtoMsg::Node> getChakraNode();
  void addChild(std::shared_ptr<ETFeederNode> node);
  std::vector<std::shared_ptr<ETFeederNode>> getChildren();
  void addDepUnresolvedParentID(uint64_t node_id);
  std::vector<uint64_t> getDepUnresolvedParentIDs();
  void setDepUnresolvedParentIDs(std::vector<uint64_t> const& dep_unresolved_parent_ids);

  const ChakraProtoMsg::AttributeProto& get_other_attr(const std::string& attr_name) const;
  bool has_other_attr(const std::string& attr_name) const;

  uint64_t id() const { return id_; }
  std::string name() const { return name_; }
  bool is_cpu_op() const { return is_cpu_op_; }
  ChakraProtoMsg::NodeType type() const { return type_; }
  uint64_t runtime() const { return runtime_; }
  uint64_t num_ops() const { return num_ops_; }
  uint32_t tensor_loc() const { return tensor_loc_; }
  uint64_t tensor_size() const { return tensor_size_; }
  ChakraProtoMsg::CollectiveCommType comm_type() const { return comm_type_; }
  uint32_t comm_priority() const { return comm_priority_; }
  uint64_t comm_size() const { return comm_size_; }
  uint32_t comm_src() const { return comm_src_; }
  uint32_t comm_dst() const { return comm_dst_; }
  uint32_t comm_tag() const { return comm_tag_; }
  std::string pg_name() const { return pg_name_; }
  std::string get_inputs_values() const;
  std::string get_inputs_shapes() const;
  std::string get_inputs_types() const;
  std::string get_outputs_values() const;
  std::string get_outputs_shapes() const;
  std::string get_outputs_types() const;

  // chakraflow extensions: whether the attribute was present.
  bool has_is_cpu_op() const { return present_ & kIsCpuOp; }
  bool has_num_ops() const { return present_ & kNumOps; }
  bool has_tensor_size() const { return present_ & kTensorSize; }
  bool has_comm_type() const { return present_ & kCommType; }
  bool has_comm_priority() const { return present_ & kCommPriority; }
  bool has_comm_size() const { return present_ & kCommSize; }
  bool has_comm_src() const { return present_ & kCommSrc; }
  bool has_comm_dst() const { return present_ & kCommDst; }
  bool has_comm_tag() const { return present_ & kCommTag; }
  bool has_pg_name() const { return present_ & kPgName; }

 private:
  friend class ETFeeder;
  enum : uint32_t {
    kIsCpuOp = 1u << 0,
    kNumOps = 1u << 1,
    kTensorSize = 1u << 2,
    kCommType = 1u << 3,
    kCommPriority = 1u << 4,
    kCommSize = 1u << 5,
    kCommSrc = 1u << 6,
    kCommDst = 1u << 7,
    kCommTag = 1u << 8,
    kPgName = 1u << 9,
  };
  void set_known_attr(const std::string& attr_name, const ChakraProtoMsg::AttributeProto& attr);
  static bool is_known_attr(std::string_view attr_name);
  void index_other_attrs() const;
  const ChakraProtoMsg::Node& getChakraNodeConst() const;
  // The feeder links children it has already de-duplicated.
  void add_child_unchecked(std::shared_ptr<ETFeederNode> node) {
    children_vec_.push_back(std::move(node));
  }

  mutable std::shared_ptr<ChakraProtoMsg::Node> node_;  // parsed on first need for records
  std::shared_ptr<const chakraflow::NodeRecord> record_;
  std::weak_ptr<chakraflow::compat::ChildSource> child_source_;  // the feeder, while it lives
  mutable bool others_indexed_ = false;
  std::vector<std::shared_ptr<ETFeederNode>> children_vec_;
  std::unique_ptr<std::unordered_set<const ETFeederNode*>> children_set_;  // built when large
  std::vector<uint64_t> dep_unresolved_parent_ids_;
  mutable std::unordered_map<std::string, const ChakraProtoMsg::AttributeProto*> other_attrs_;
  ChakraProtoMsg::NodeType type_ = ChakraProtoMsg::INVALID_NODE;

  uint64_t id_ = 0;
  std::string name_;
  bool is_cpu_op_ = false;
  uint64_t runtime_ = 0;
  uint64_t num_ops_ = 0;
  uint32_t tensor_loc_ = 0;
  uint64_t tensor_size_ = 0;
  ChakraProtoMsg::CollectiveCommType comm_type_ = ChakraProtoMsg::ALL_REDUCE;
  uint32_t comm_priority_ = 0;
  uint64_t comm_size_ = 0;
  uint32_t comm_src_ = 0;
  uint32_t comm_dst_ = 0;
  uint32_t comm_tag_ = 0;
  std::string pg_name_;
  uint32_t present_ = 0;
};

}  // namespace Chakra
