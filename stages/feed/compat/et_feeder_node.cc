#include "stages/feed/compat/et_feeder_node.h"

#include "stages/et/node_record.h"
#include "stages/feed/compat/child_source.h"

#include <algorithm>
#include <stdexcept>
#include <type_traits>

namespace Chakra {
namespace {

// The value of an attribute stored in any scalar numeric oneof field (Chakra reads one fixed field
// per attribute and gets 0 from the others).
bool attr_as_int(const ChakraProtoMsg::AttributeProto& a, int64_t* out) {
  using A = ChakraProtoMsg::AttributeProto;
  switch (a.value_case()) {
    case A::kInt32Val:
      *out = a.int32_val();
      return true;
    case A::kInt64Val:
      *out = a.int64_val();
      return true;
    case A::kUint32Val:
      *out = a.uint32_val();
      return true;
    case A::kUint64Val:
      *out = static_cast<int64_t>(a.uint64_val());
      return true;
    case A::kSint32Val:
      *out = a.sint32_val();
      return true;
    case A::kSint64Val:
      *out = a.sint64_val();
      return true;
    case A::kFixed32Val:
      *out = a.fixed32_val();
      return true;
    case A::kFixed64Val:
      *out = static_cast<int64_t>(a.fixed64_val());
      return true;
    case A::kSfixed32Val:
      *out = a.sfixed32_val();
      return true;
    case A::kSfixed64Val:
      *out = a.sfixed64_val();
      return true;
    case A::kBoolVal:
      *out = a.bool_val() ? 1 : 0;
      return true;
    case A::kDoubleVal:
      *out = static_cast<int64_t>(a.double_val());
      return true;
    case A::kFloatVal:
      *out = static_cast<int64_t>(a.float_val());
      return true;
    default:
      return false;
  }
}

}  // namespace

bool ETFeederNode::is_known_attr(std::string_view attr_name) {
  using namespace std::string_view_literals;
  static constexpr std::string_view kKnown[] = {
      "is_cpu_op"sv, "num_ops"sv,  "tensor_size"sv, "comm_type"sv, "comm_priority"sv,
      "comm_size"sv, "comm_src"sv, "comm_dst"sv,    "comm_tag"sv,  "pg_name"sv};
  if (attr_name.size() < 7 || attr_name.size() > 13) return false;
  for (std::string_view k : kKnown) {
    if (attr_name.size() == k.size() && attr_name == k) return true;
  }
  return false;
}

// One of the known attributes: the last one of a name wins, as in Chakra.
void ETFeederNode::set_known_attr(const std::string& attr_name,
                                  const ChakraProtoMsg::AttributeProto& attr) {
  int64_t v = 0;
  const bool numeric = attr_as_int(attr, &v);
  auto set = [&](auto* member, uint32_t bit) {
    *member = static_cast<std::remove_pointer_t<decltype(member)>>(v);
    present_ = numeric ? present_ | bit : present_ & ~bit;
  };
  if (attr_name == "is_cpu_op") {
    is_cpu_op_ = v != 0;
    present_ = numeric ? present_ | kIsCpuOp : present_ & ~kIsCpuOp;
  } else if (attr_name == "num_ops") {
    set(&num_ops_, kNumOps);
  } else if (attr_name == "tensor_size") {
    set(&tensor_size_, kTensorSize);
  } else if (attr_name == "comm_type") {
    comm_type_ = static_cast<ChakraProtoMsg::CollectiveCommType>(v);
    present_ = numeric ? present_ | kCommType : present_ & ~kCommType;
  } else if (attr_name == "comm_priority") {
    set(&comm_priority_, kCommPriority);
  } else if (attr_name == "comm_size") {
    set(&comm_size_, kCommSize);
  } else if (attr_name == "comm_src") {
    set(&comm_src_, kCommSrc);
  } else if (attr_name == "comm_dst") {
    set(&comm_dst_, kCommDst);
  } else if (attr_name == "comm_tag") {
    set(&comm_tag_, kCommTag);
  } else if (attr_name == "pg_name") {
    pg_name_ = attr.value_case() == ChakraProtoMsg::AttributeProto::kStringVal ? attr.string_val()
               : numeric                                                       ? std::to_string(v)
                                                                               : std::string();
    present_ |= kPgName;
  }
}

ETFeederNode::ETFeederNode(std::shared_ptr<ChakraProtoMsg::Node> node) : node_(std::move(node)) {
  id_ = node_->id();
  name_ = node_->name();
  type_ = node_->type();
  runtime_ = node_->duration_micros();
  for (const auto& attr : node_->attr()) {
    if (is_known_attr(attr.name())) {
      set_known_attr(attr.name(), attr);
    } else {
      other_attrs_.emplace(attr.name(), &attr);  // the first of a name wins, as in Chakra
    }
  }
  others_indexed_ = true;
}

ETFeederNode::ETFeederNode(RecordKey, std::shared_ptr<const chakraflow::NodeRecord> record,
                           std::weak_ptr<chakraflow::compat::ChildSource> children)
    : record_(std::move(record)), child_source_(std::move(children)) {
  const chakraflow::NodeRecord& r = *record_;
  id_ = r.id();
  name_ = std::string(r.name());
  type_ = static_cast<ChakraProtoMsg::NodeType>(r.type());
  runtime_ = r.duration_micros();
  ChakraProtoMsg::AttributeProto attr;
  for (size_t i = 0; i < r.attr_count(); ++i) {
    if (!is_known_attr(r.attr_name(i))) continue;  // decoded when asked for
    attr.Clear();
    if (r.parse_attr(i, &attr)) set_known_attr(attr.name(), attr);
  }
}

// A record's other attributes point into its parsed message, made on first need.
void ETFeederNode::index_other_attrs() const {
  if (others_indexed_) return;
  others_indexed_ = true;
  for (const auto& attr : getChakraNodeConst().attr()) {
    if (!is_known_attr(attr.name())) other_attrs_.emplace(attr.name(), &attr);
  }
}

const ChakraProtoMsg::Node& ETFeederNode::getChakraNodeConst() const {
  if (!node_) {
    auto node = std::make_shared<ChakraProtoMsg::Node>();
    chakraflow::Status parsed = record_->parse(node.get());
    if (!parsed.ok()) throw std::runtime_error(parsed.message());
    node_ = std::move(node);
  }
  return *node_;
}

std::shared_ptr<ChakraProtoMsg::Node> ETFeederNode::getChakraNode() {
  getChakraNodeConst();
  return node_;
}

void ETFeederNode::addChild(std::shared_ptr<ETFeederNode> node) {
  constexpr size_t kIndexAbove = 16;
  if (children_set_) {
    if (!children_set_->insert(node.get()).second) return;
  } else {
    if (std::find(children_vec_.begin(), children_vec_.end(), node) != children_vec_.end()) return;
    if (children_vec_.size() >= kIndexAbove) {
      children_set_ = std::make_unique<std::unordered_set<const ETFeederNode*>>();
      for (const auto& c : children_vec_) children_set_->insert(c.get());
      children_set_->insert(node.get());
    }
  }
  children_vec_.push_back(std::move(node));
}

std::vector<std::shared_ptr<ETFeederNode>> ETFeederNode::getChildren() {
  // A feeder's node: the children the feeder linked (computed from its index), then any added.
  if (auto source = child_source_.lock()) {
    std::vector<std::shared_ptr<ETFeederNode>> out = source->children_of(id_);
    for (const auto& c : children_vec_) {
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    }
    return out;
  }
  return children_vec_;
}

void ETFeederNode::addDepUnresolvedParentID(uint64_t node_id) {
  dep_unresolved_parent_ids_.push_back(node_id);
}

std::vector<uint64_t> ETFeederNode::getDepUnresolvedParentIDs() {
  return dep_unresolved_parent_ids_;
}

void ETFeederNode::setDepUnresolvedParentIDs(std::vector<uint64_t> const& ids) {
  dep_unresolved_parent_ids_ = ids;
}

const ChakraProtoMsg::AttributeProto& ETFeederNode::get_other_attr(
    const std::string& attr_name) const {
  index_other_attrs();
  auto it = other_attrs_.find(attr_name);
  if (it != other_attrs_.end()) return *it->second;
  throw std::runtime_error("Asked for attr \"" + attr_name + "\" from node " + std::to_string(id_) +
                           ", which do not exist");
}

bool ETFeederNode::has_other_attr(const std::string& attr_name) const {
  if (!others_indexed_ && record_) {
    return !is_known_attr(attr_name) && record_->find_attr(attr_name) >= 0;
  }
  return other_attrs_.count(attr_name) > 0;
}

std::string ETFeederNode::get_inputs_values() const {
  if (!node_) return record_->io_field(8, 1, std::string());
  return node_->has_inputs() ? node_->inputs().values() : std::string();
}
std::string ETFeederNode::get_inputs_shapes() const {
  if (!node_) return record_->io_field(8, 2, std::string());
  return node_->has_inputs() ? node_->inputs().shapes() : std::string();
}
std::string ETFeederNode::get_inputs_types() const {
  if (!node_) return record_->io_field(8, 3, std::string());
  return node_->has_inputs() ? node_->inputs().types() : std::string();
}
std::string ETFeederNode::get_outputs_values() const {
  if (!node_) return record_->io_field(9, 1, std::string());
  return node_->has_outputs() ? node_->outputs().values() : std::string();
}
std::string ETFeederNode::get_outputs_shapes() const {
  if (!node_) return record_->io_field(9, 2, std::string());
  return node_->has_outputs() ? node_->outputs().shapes() : std::string();
}
std::string ETFeederNode::get_outputs_types() const {
  if (!node_) return record_->io_field(9, 3, std::string());
  return node_->has_outputs() ? node_->outputs().types() : std::string();
}

}  // namespace Chakra
