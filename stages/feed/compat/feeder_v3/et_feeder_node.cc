#include "stages/feed/compat/feeder_v3/et_feeder_node.h"

#include "stages/et/node_record.h"
#include "stages/feed/compat/feeder_v3/et_feeder.h"

namespace Chakra {
namespace FeederV3 {

const chakraflow::NodeRecord& ETFeederNode::record() const {
  if (!record_) record_ = feeder_->record(node_id_);
  return *record_;
}

bool ETFeederNode::load_attr(const std::string& attr_name, ChakraAttr* out) const {
  const chakraflow::NodeRecord& r = record();
  const int i = r.find_attr(attr_name);
  if (i < 0) return false;
  if (!r.parse_attr(static_cast<size_t>(i), out)) {
    throw std::runtime_error(feeder_->path() + ": node " + std::to_string(node_id_) +
                             ": attribute \"" + attr_name + "\" does not parse");
  }
  return true;
}

bool ETFeederNode::has_attr(const std::string& attr_name) const {
  return record().find_attr(attr_name) >= 0;
}

const ChakraAttr ETFeederNode::get_attr_msg(const std::string& attr_name) const {
  ChakraAttr attr;
  if (!load_attr(attr_name, &attr)) complain_attr_not_found(attr_name);
  return attr;
}

bool ETFeederNode::get_attr_msg(const std::string& attr_name, const ChakraAttr** attr) const {
  if (!has_attr(attr_name)) return false;
  if (!message_) message_ = std::make_shared<const ChakraNode>(getChakraNode());
  for (const ChakraAttr& a : message_->attr()) {
    if (a.name() == attr_name) {
      *attr = &a;
      return true;
    }
  }
  return false;
}

void ETFeederNode::complain_attr_not_found(const std::string& attr_name) const {
  throw std::runtime_error(
      "Attribute " + attr_name + " not found in node " + std::to_string(node_id_) +
      " feeder->id=" + std::to_string(feeder_->feeder_id()) + " (" + feeder_->path() + ")");
}

std::string ETFeederNode::name() const {
  return std::string(record().name());
}

ChakraProtoMsg::NodeType ETFeederNode::type() const {
  return static_cast<ChakraProtoMsg::NodeType>(record().type());
}

uint64_t ETFeederNode::runtime() const {
  return record().duration_micros();
}

ChakraNode ETFeederNode::getChakraNode() const {
  ChakraNode node;
  chakraflow::Status parsed = record().parse(&node);
  if (!parsed.ok()) throw std::runtime_error(feeder_->path() + ": " + parsed.message());
  return node;
}

std::string ETFeederNode::get_inputs_values(const std::string& default_) const {
  return record().io_field(8, 1, default_);
}
std::string ETFeederNode::get_inputs_shapes(const std::string& default_) const {
  return record().io_field(8, 2, default_);
}
std::string ETFeederNode::get_inputs_types(const std::string& default_) const {
  return record().io_field(8, 3, default_);
}
std::string ETFeederNode::get_outputs_values(const std::string& default_) const {
  return record().io_field(9, 1, default_);
}
std::string ETFeederNode::get_outputs_shapes(const std::string& default_) const {
  return record().io_field(9, 2, default_);
}
std::string ETFeederNode::get_outputs_types(const std::string& default_) const {
  return record().io_field(9, 3, default_);
}

}  // namespace FeederV3
}  // namespace Chakra
