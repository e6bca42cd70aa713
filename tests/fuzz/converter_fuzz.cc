// Fuzz target: the PyTorch → Chakra converter (ET+ or host ET JSON → .et) in both compat modes:
// load_et_plus (convert_file's one-pass reader) from a file in memory, convert_et_plus and the
// messages write_chakra_trace writes. What it accepts must be a trace the feeder can play to the
// end: ids unique and sorted, every data dependency on a written node, no cycle, every node
// parsing back. The same text read in windows of 64 bytes (parse_et_plus, the loader's reading of
// large files), and read in shards and converted with every stage's ranges and batches cut to two
// items (what large traces on workers cross), must agree with it: all accept or all reject, and
// what they accept converts to the same bytes.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>

#include <google/protobuf/stubs/logging.h>

#include "proto/et_def.pb.h"
#include "stages/common/ordered_batches.h"
#include "stages/convert/et_plus_nodes.h"
#include "stages/convert/pytorch_converter.h"
#include "stages/et/et_io.h"
#include "stages/feed/et_feeder.h"
#include "stages/link/host_et_loader.h"
#include "tests/fuzz/mem_file.h"

namespace {

using chakraflow::ConvertOptions;
using chakraflow::EtPlusTrace;

void append_record(std::string& out, const google::protobuf::MessageLite& message) {
  const std::string bytes = message.SerializeAsString();
  chakraflow::append_varint(out, bytes.size());
  out += bytes;
}

// Plays `et` (a serialized .et) with the feeder on data dependencies: it must complete every node,
// and every node must parse back (strings in valid UTF-8, as proto3 requires).
void feed_to_the_end(const std::string& et, size_t nodes) {
  static chakraflow::fuzz::MemFile file("fuzz_converted.et");
  file.assign(et.data(), et.size());
  chakraflow::FeederOptions options;
  options.window = 16;
  auto feeder = chakraflow::EtFeeder::open(file.path(), options);
  if (!feeder.ok()) __builtin_trap();
  ChakraProtoMsg::Node parsed;
  while (const chakraflow::FeederNode* n = (*feeder)->issue()) {
    if (!n->parse(&parsed).ok()) __builtin_trap();
    if (!(*feeder)->complete(n->id).ok()) __builtin_trap();
  }
  if ((*feeder)->state() != chakraflow::FeedState::kDone) __builtin_trap();
  if ((*feeder)->stats().nodes_completed != nodes) __builtin_trap();
}

// The .et bytes the converter writes for `trace` (its stages' ranges through `workers`), or nullopt
// when it stops with an error (which must name `path`).
std::optional<std::string> convert(const EtPlusTrace& trace, const ConvertOptions& options,
                                   const std::string& path,
                                   const chakraflow::OrderedBatches* workers = nullptr) {
  chakraflow::DataProblems stats = trace.stats;
  auto chakra = chakraflow::convert_et_plus(trace, options, stats, workers);
  if (!chakra.ok()) {
    if (chakra.status().message().find(path) == std::string::npos) __builtin_trap();
    return std::nullopt;
  }
  std::string et;
  ChakraProtoMsg::GlobalMetadata metadata;
  chakraflow::fill_global_metadata(trace, options, &metadata);
  append_record(et, metadata);
  ChakraProtoMsg::Node node;
  std::unordered_set<uint64_t> written;
  uint64_t last_id = 0;
  for (const chakraflow::ChakraNodeRecord& rec : chakra->nodes) {
    if (rec.source >= trace.nodes.size()) __builtin_trap();
    if (chakraflow::Status s = chakraflow::fill_node(trace, *chakra, rec, &node); !s.ok()) {
      // A list that is not well-formed JSON: named in the error, as every failure is.
      if (s.message().find(path) == std::string::npos) __builtin_trap();
      return std::nullopt;
    }
    if (!written.empty() && node.id() <= last_id) __builtin_trap();  // sorted, unique
    last_id = node.id();
    written.insert(node.id());
    append_record(et, node);
  }
  for (const chakraflow::ChakraNodeRecord& rec : chakra->nodes) {
    for (uint32_t d : rec.data_deps) {
      if (d >= trace.nodes.size() || !written.count(trace.nodes[d].id)) __builtin_trap();
    }
  }
  feed_to_the_end(et, chakra->nodes.size());
  return et;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);  // a failed parse is caught above, not logged
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static chakraflow::fuzz::MemFile file("fuzz_et_plus.json");
  file.assign(data, size);
  for (auto compat : {chakraflow::Compat::kDefault, chakraflow::Compat::kChakra}) {
    ConvertOptions options;
    options.compat = compat;
    // The whole text at once (convert_file's reader).
    std::optional<std::string> whole;
    auto input = chakraflow::load_et_plus(file.path(), options);
    if (input.ok()) {
      whole = convert(input->trace, options, file.path());
    } else if (input.status().message().find(file.path()) == std::string::npos) {
      __builtin_trap();
    }
    // The nodes read in small windows of text (the loader's reading of large files).
    std::optional<std::string> in_windows;
    auto windowed = chakraflow::parse_et_plus(
        "fuzz.json", std::string(reinterpret_cast<const char*>(data), size), options, 64);
    if (windowed.ok()) {
      in_windows = convert(windowed->trace, options, "fuzz.json");
    } else if (windowed.status().message().find("fuzz.json") == std::string::npos) {
      __builtin_trap();
    }
    if (whole.has_value() != in_windows.has_value()) __builtin_trap();
    if (whole && in_windows && *whole != *in_windows) __builtin_trap();
    // In shards of 64 bytes, every stage's ranges of two items.
    const chakraflow::OrderedBatches fine(2);
    std::optional<std::string> in_ranges;
    auto sharded =
        chakraflow::load_et_plus(file.path(), options, 64, chakraflow::ParseShards{&fine, 4, 64});
    if (sharded.ok()) in_ranges = convert(sharded->trace, options, file.path(), &fine);
    if (sharded.ok() != input.ok()) __builtin_trap();
    if (!sharded.ok() && sharded.status().message() != input.status().message()) __builtin_trap();
    if (whole.has_value() != in_ranges.has_value()) __builtin_trap();
    if (whole && in_ranges && *whole != *in_ranges) __builtin_trap();
  }
  return 0;
}
