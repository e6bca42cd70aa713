// Installed as
// <prefix>/include/chakraflow/astra-sim/extern/graph_frontend/chakra/src/feeder/et_feeder_node.h,
// the path ASTRA-sim includes Chakra's old feeder's node by, from its source root. With
// -I<prefix>/include/chakraflow/astra-sim ahead of ASTRA-sim's own source root on the include
// path, its #include finds chakraflow's (docs/astra-sim.md).
#pragma once

#include "../../../../../../compat/et_feeder_node.h"
