// Installed as
// <prefix>/include/chakraflow/astra-sim/extern/graph_frontend/chakra/schema/protobuf/et_def.pb.h,
// the path ASTRA-sim includes Chakra's generated schema by, from its source root. With
// -I<prefix>/include/chakraflow/astra-sim ahead of ASTRA-sim's own source root on the include
// path, its #include finds chakraflow's (docs/astra-sim.md).
#pragma once

#include "../../../../../../proto/et_def.pb.h"
