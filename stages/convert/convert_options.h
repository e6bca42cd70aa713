// The converter's options by name: one parser for `chakraflow convert`'s flags, the run
// configuration's `convert:` section and the Python module's keywords.
#pragma once

#include <string_view>

#include "stages/common/status.h"
#include "stages/convert/convert_model.h"

namespace chakraflow {

// Sets the option `name` (compat: default | chakra; metadata_node: keep | compute;
// renumber_groups, keep_optimizer_step_duration: true | false) from its text. A leading "--" and
// '-' for '_' are accepted (the CLI's spelling); errors name the option as given.
Status set_convert_option(ConvertOptions& options, std::string_view name, std::string_view value);

}  // namespace chakraflow
