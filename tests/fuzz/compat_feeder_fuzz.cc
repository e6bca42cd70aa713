// Fuzz target: the compatibility feeders simulators link (Chakra's old ETFeeder and FeederV3, both
// on the trace's static index) and the communicator-group scan, on arbitrary bytes. Each must
// either throw std::runtime_error naming the file (bad input: at open, or when a node whose record
// is malformed below its top level is read) or walk the trace to its end, issuing every node at
// most once; node contents are read through every accessor a simulator uses.
#include <cstddef>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <unordered_set>

#include <google/protobuf/stubs/logging.h>

#include "stages/convert/comm_groups.h"
#include "stages/feed/compat/et_feeder.h"
#include "stages/feed/compat/feeder_v3/et_feeder.h"
#include "tests/fuzz/mem_file.h"

namespace {

// What a simulator reads of a node; the exceptions are the documented ones.
void touch(const std::shared_ptr<Chakra::FeederV3::ETFeederNode>& node) {
  (void)node->name();
  (void)node->type();
  (void)node->runtime();
  (void)node->get_inputs_values();
  try {
    (void)node->comm_size<uint64_t>(0);
    (void)node->pg_name<std::string>("");
    (void)node->is_cpu_op<bool>(false);
  } catch (const std::bad_cast&) {
  } catch (const std::invalid_argument&) {
  }
}

void touch(const std::shared_ptr<Chakra::ETFeederNode>& node) {
  (void)node->name();
  (void)node->type();
  (void)node->runtime();
  (void)node->comm_size();
  (void)node->pg_name();
  (void)node->get_inputs_values();
  try {
    (void)node->getChakraNode();
  } catch (const std::runtime_error&) {
  }
}

// A std::runtime_error must name the file.
void check_error(const std::runtime_error& e, const std::string& path) {
  if (std::string(e.what()).find(path) == std::string::npos) __builtin_trap();
}

void drive_v3(Chakra::FeederV3::ETFeeder* feeder) {
  auto& resolver = feeder->getDependancyResolver();
  std::unordered_set<uint64_t> issued;
  while (!resolver.get_dependancy_free_nodes().empty()) {
    const std::set<uint64_t> round(resolver.get_dependancy_free_nodes().begin(),
                                   resolver.get_dependancy_free_nodes().end());
    for (uint64_t id : round) {
      if (!issued.insert(id).second) __builtin_trap();
      resolver.take_node(id);
      touch(feeder->lookupNode(id));
    }
    for (uint64_t id : round) resolver.finish_node(id);
  }
  if (issued.size() > feeder->nodeCount()) __builtin_trap();
  if (resolver.stalled() != (issued.size() < feeder->nodeCount())) __builtin_trap();
}

void walk_v3(const std::string& path) {
  std::unique_ptr<Chakra::FeederV3::ETFeeder> feeder;
  try {
    feeder = std::make_unique<Chakra::FeederV3::ETFeeder>(path);
  } catch (const std::runtime_error& e) {
    check_error(e, path);
    return;
  }
  try {
    drive_v3(feeder.get());
  } catch (const std::runtime_error& e) {
    check_error(e, path);
  }
}

void drive_v1(Chakra::ETFeeder* feeder) {
  std::unordered_set<uint64_t> issued;
  std::unordered_set<uint64_t> pushed_back;
  while (auto node = feeder->getNextIssuableNode()) {
    const uint64_t id = node->id();
    touch(node);
    (void)node->getChildren();
    if (id % 4 == 1 && pushed_back.insert(id).second) {
      feeder->pushBackIssuableNode(id);
      continue;
    }
    if (!issued.insert(id).second) __builtin_trap();
    if (id % 8 == 6) {  // the Chakra wiki's order
      feeder->removeNode(id);
      feeder->freeChildrenNodes(id);
    } else {
      feeder->freeChildrenNodes(id);
      feeder->removeNode(id);
    }
  }
  if (feeder->isDone() == feeder->isStalled() && feeder->hasNodesToIssue()) __builtin_trap();
}

void walk_v1(const std::string& path) {
  Chakra::ETFeederOptions options;
  options.window = 4;
  std::unique_ptr<Chakra::ETFeeder> feeder;
  try {
    feeder = std::make_unique<Chakra::ETFeeder>(path, options);
  } catch (const std::runtime_error& e) {
    check_error(e, path);
    return;
  }
  try {
    drive_v1(feeder.get());
  } catch (const std::runtime_error& e) {
    check_error(e, path);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)quiet;
  static chakraflow::fuzz::MemFile file("fuzz.et");
  file.assign(data, size);
  walk_v3(file.path());
  walk_v1(file.path());
  auto groups = chakraflow::scan_comm_groups(file.path(), 0, 1);
  if (!groups.ok() && groups.status().message().find(file.path()) == std::string::npos) {
    __builtin_trap();
  }
  return 0;
}
