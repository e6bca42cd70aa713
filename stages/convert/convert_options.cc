#include "stages/convert/convert_options.h"

#include <string>

namespace chakraflow {
namespace {

StatusOr<bool> parse_bool(std::string_view name, std::string_view value) {
  if (value == "true") return true;
  if (value == "false") return false;
  return Status::errorf("{}: unknown value '{}' (true, false)", name, value);
}

}  // namespace

Status set_convert_option(ConvertOptions& options, std::string_view name, std::string_view value) {
  std::string key(name.starts_with("--") ? name.substr(2) : name);
  for (char& c : key) c = c == '-' ? '_' : c;
  if (key == "compat") {
    if (value != "default" && value != "chakra") {
      return Status::errorf("{}: unknown value '{}' (default, chakra)", name, value);
    }
    options.compat = value == "chakra" ? Compat::kChakra : Compat::kDefault;
  } else if (key == "metadata_node") {
    if (value != "keep" && value != "compute") {
      return Status::errorf("{}: unknown value '{}' (keep, compute)", name, value);
    }
    options.metadata_as_compute = value == "compute";
  } else if (key == "renumber_groups") {
    CF_ASSIGN_OR_RETURN(bool on, parse_bool(name, value));
    options.pg_name_offset = on ? 1 : 0;
  } else if (key == "keep_optimizer_step_duration") {
    CF_ASSIGN_OR_RETURN(bool on, parse_bool(name, value));
    options.zero_optimizer_step = !on;
  } else {
    return Status::errorf(
        "{}: not a converter option (compat, metadata_node, renumber_groups, "
        "keep_optimizer_step_duration)",
        name);
  }
  return Status();
}

}  // namespace chakraflow
