// Chakra::FeederV3 common names: source-compatible with the astra-sim fork of Chakra's
// src/feeder_v3/common.h (reference/astra_sim_feeder_v3.md). Installed as
// <prefix>/include/chakraflow/compat/feeder_v3/common.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "proto/et_def.pb.h"

namespace Chakra {
namespace FeederV3 {

using NodeId = uint64_t;
using ETFeederId = uint64_t;
using ChakraNode = ChakraProtoMsg::Node;
using ChakraGlobalMetadata = ChakraProtoMsg::GlobalMetadata;
using ChakraAttr = ChakraProtoMsg::AttributeProto;

// How get_attr<T> converts an attribute's value to T when not strict (FeederV3's settings).
constexpr bool ALLOW_IMPLICIT_INTEGER_CONVERSION = true;            // integer (bool too) -> integer
constexpr bool ALLOW_IMPLICIT_FLOAT_CONVERSION = true;              // floating -> floating
constexpr bool ALLOW_IMPLICIT_INTEGER_TO_FLOAT_CONVERSION = true;   // integer -> floating
constexpr bool ALLOW_IMPLICIT_FLOAT_TO_INTEGER_CONVERSION = false;  // floating -> integer throws
constexpr bool NO_IMPLICIT_CONVERSION = false;
constexpr bool DEFAULT_STRICT_TYPING = NO_IMPLICIT_CONVERSION;

// FeederV3's cache of parsed nodes holds 16,384 entries; chakraflow's holds this many decoded
// records per feeder (bounded memory, see et_feeder.h).
constexpr size_t DEFAULT_ETFEEDER_CACHE_SIZE = 16384;
constexpr bool USE_DATA_DEPS = true;
constexpr bool USE_CTRL_DEPS = true;

}  // namespace FeederV3
}  // namespace Chakra
