// Helpers for the feeder tests: hand-made .et traces and a bounded synchronous feed loop.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "proto/et_def.pb.h"
#include "stages/et/et_io.h"
#include "stages/feed/et_feeder.h"

namespace chakraflow::testing {

struct TraceNode {
  uint64_t id = 0;
  std::vector<uint64_t> data_deps;
  std::vector<uint64_t> ctrl_deps;
  uint64_t duration = 0;
  int type = ChakraProtoMsg::COMP_NODE;
  std::string name;  // empty: "n<id>"
};

inline ChakraProtoMsg::Node to_proto(const TraceNode& n) {
  ChakraProtoMsg::Node node;
  node.set_id(n.id);
  node.set_name(n.name.empty() ? "n" + std::to_string(n.id) : n.name);
  node.set_type(static_cast<ChakraProtoMsg::NodeType>(n.type));
  node.set_duration_micros(n.duration);
  for (uint64_t d : n.data_deps) node.add_data_deps(d);
  for (uint64_t d : n.ctrl_deps) node.add_ctrl_deps(d);
  return node;
}

// Writes a GlobalMetadata (unless `metadata` is false) and the nodes, in the given order. A path
// ending in .gz is compressed.
inline void write_trace(const std::string& path, const std::vector<TraceNode>& nodes,
                        bool metadata = true) {
  auto writer = EtWriter::open(path);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  if (metadata) {
    ChakraProtoMsg::GlobalMetadata meta;
    meta.set_version("0.0.4");
    writer->write(meta);
  }
  for (const TraceNode& n : nodes) writer->write(to_proto(n));
  Status committed = writer->commit();
  ASSERT_TRUE(committed.ok()) << committed.message();
}

struct FeedResult {
  std::vector<NodeId> order;
  FeedState state = FeedState::kRunning;
  StallReport report;
  FeederStats stats;
  std::string error;
};

// issue -> complete until nothing is ready; at most `max_steps` issues (no test can hang).
inline FeedResult feed_sync(const std::string& path, const FeederOptions& options = {},
                            uint64_t max_steps = 10'000'000) {
  FeedResult r;
  auto feeder = EtFeeder::open(path, options);
  if (!feeder.ok()) {
    r.state = FeedState::kError;
    r.error = feeder.status().message();
    return r;
  }
  EtFeeder& f = **feeder;
  while (r.order.size() < max_steps) {
    const FeederNode* node = f.issue();
    if (node == nullptr) break;
    r.order.push_back(node->id);
    Status s = f.complete(node->id);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  r.state = f.state();
  r.report = f.stall_report();
  r.stats = f.stats();
  r.error = f.error().message();
  return r;
}

}  // namespace chakraflow::testing
