// Fuzz target: the Chakra .et reader on arbitrary bytes (every record parsed), then the feeder on
// the same bytes with a small window, to exercise dependency resolution on hostile graphs (cycles,
// dangling and duplicate ids, forward references, removals). The feed must end (done, stalled or
// error) and keep its counts consistent.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>

#include <google/protobuf/stubs/logging.h>

#include "proto/et_def.pb.h"
#include "stages/common/file_io.h"
#include "stages/et/et_io.h"
#include "stages/feed/et_feeder.h"
#include "tests/fuzz/mem_file.h"

namespace {

using chakraflow::EtFeeder;
using chakraflow::FeedState;
using chakraflow::NodeId;

bool names_file(const chakraflow::Status& s, const std::string& path) {
  return s.message().find(path) != std::string::npos;
}

void read_records(const std::string& path, const uint8_t* data, size_t size) {
  const bool gzipped =
      chakraflow::has_gzip_magic(std::string_view(reinterpret_cast<const char*>(data), size));
  auto reader = chakraflow::EtReader::open(path);
  if (!reader.ok()) __builtin_trap();  // the file exists
  ChakraProtoMsg::GlobalMetadata metadata;
  ChakraProtoMsg::Node node;
  for (uint64_t records = 0;; ++records) {
    auto got =
        reader->next(records == 0 ? static_cast<google::protobuf::MessageLite*>(&metadata) : &node);
    if (!got.ok()) {
      if (!names_file(got.status(), path)) __builtin_trap();
      return;
    }
    if (!*got) return;
    // Every record takes at least its length byte (of the decompressed stream when gzip'd).
    if (!gzipped && records >= size) __builtin_trap();
  }
}

void feed(const std::string& path, bool ctrl_deps) {
  chakraflow::FeederOptions options;
  options.window = 4;
  options.refill_below = 2;
  options.ctrl_deps = ctrl_deps;
  auto opened = EtFeeder::open(path, options);
  if (!opened.ok()) {
    if (!names_file(opened.status(), path)) __builtin_trap();
    return;
  }
  EtFeeder& feeder = **opened;
  std::unordered_set<NodeId> pushed_back;
  ChakraProtoMsg::Node node;
  FeedState state;
  while ((state = feeder.state()) == FeedState::kRunning) {
    // Every node issued below leaves flight before the next issue: running means one is ready.
    const chakraflow::FeederNode* issued = feeder.issue();
    if (issued == nullptr || feeder.in_flight() != 1) __builtin_trap();
    const NodeId id = issued->id;
    (void)issued->parse(&node);
    // A mix of the simulator's calls, chosen by id so that the sequence depends on the input only.
    // Each node is pushed back at most once, so the loop ends.
    bool ok = true;
    if (id % 4 == 1 && pushed_back.insert(id).second) {
      ok = feeder.push_back(id).ok();
    } else if (id % 8 == 6) {  // the Chakra wiki's order: remove, then release the children
      ok = feeder.remove(id).ok() && feeder.release_children(id).ok();
    } else if (id % 8 == 3) {
      ok = feeder.release_children(id).ok() && feeder.remove(id).ok();
    } else {
      ok = feeder.complete(id, static_cast<int64_t>(id % 3)).ok();
    }
    if (!ok || feeder.in_flight() != 0) __builtin_trap();
  }
  const chakraflow::FeederStats stats = feeder.stats();
  switch (state) {
    case FeedState::kDone:
      if (stats.nodes_completed != stats.nodes_read || feeder.in_graph() != 0) __builtin_trap();
      break;
    case FeedState::kStalled: {
      auto report = feeder.stall_report();
      if (report.empty() || report.waiting_nodes != feeder.in_graph()) __builtin_trap();
      if (report.missing.empty() && report.cycles.empty() && report.unreleased.empty()) {
        __builtin_trap();  // a stall always has a reason
      }
      if (report.to_string().empty()) __builtin_trap();
      break;
    }
    case FeedState::kError:
      if (!names_file(feeder.error(), path)) __builtin_trap();
      break;
    case FeedState::kRunning:
      __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 in a string field is logged, not fatal
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static chakraflow::fuzz::MemFile file("fuzz.et");
  file.assign(data, size);
  read_records(file.path(), data, size);
  feed(file.path(), false);
  feed(file.path(), true);
  return 0;
}
