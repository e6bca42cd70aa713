// Fuzz target: the PyTorch → Chakra converter (ET+ or host ET JSON → .et) in both compat modes,
// in memory: the loader, read_et_plus_nodes, convert_et_plus and the messages write_chakra_trace
// writes. What it accepts must be a trace the feeder can play to the end: ids unique and sorted,
// every data dependency on a written node, no cycle.
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_set>

#include <google/protobuf/stubs/logging.h>

#include "proto/et_def.pb.h"
#include "stages/et_feeder.h"
#include "stages/et_io.h"
#include "stages/et_plus_nodes.h"
#include "stages/host_et_loader.h"
#include "stages/pytorch_converter.h"
#include "tests/fuzz/mem_file.h"

namespace {

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

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);  // a failed parse is caught below, not logged
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto host = chakraflow::parse_host_trace("fuzz.json", std::move(text));
  if (!host.ok()) return 0;  // the loader has its own target (fuzz_host_et)
  for (auto compat : {chakraflow::Compat::kDefault, chakraflow::Compat::kChakra}) {
    chakraflow::ConvertOptions options;
    options.compat = compat;
    auto trace = chakraflow::read_et_plus_nodes(*host, options);
    if (!trace.ok()) {
      if (trace.status().message().find("fuzz.json") == std::string::npos) __builtin_trap();
      continue;
    }
    chakraflow::LinkStats stats = trace->stats;
    auto chakra = chakraflow::convert_et_plus(*trace, options, stats);
    if (!chakra.ok()) {
      if (chakra.status().message().find("fuzz.json") == std::string::npos) __builtin_trap();
      continue;
    }
    std::string et;
    ChakraProtoMsg::GlobalMetadata metadata;
    chakraflow::fill_global_metadata(*trace, options, &metadata);
    append_record(et, metadata);
    ChakraProtoMsg::Node node;
    std::unordered_set<uint64_t> written;
    uint64_t last_id = 0;
    for (const chakraflow::ChakraNodeRecord& rec : chakra->nodes) {
      if (rec.source >= trace->nodes.size()) __builtin_trap();
      chakraflow::fill_node(*trace, rec, &node);
      if (!written.empty() && node.id() <= last_id) __builtin_trap();  // sorted, unique
      last_id = node.id();
      written.insert(node.id());
      append_record(et, node);
    }
    for (const chakraflow::ChakraNodeRecord& rec : chakra->nodes) {
      for (uint32_t d : rec.data_deps) {
        if (d >= trace->nodes.size() || !written.count(trace->nodes[d].id)) __builtin_trap();
      }
    }
    feed_to_the_end(et, chakra->nodes.size());
  }
  return 0;
}
