#include "stages/generate/synthetic_trace.h"

#include <gtest/gtest.h>

#include "stages/link/device_trace_loader.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/link.h"

namespace chakraflow {
namespace {

using Generated = SynthRankText;

Generated generate(const SynthOptions& opt, int rank) {
  return synthesize_rank_text(opt, rank);
}

TEST(SyntheticTrace, LinksCompletelyInBothSchemas) {
  for (bool legacy : {false, true}) {
    SynthOptions opt;
    opt.ranks = 4;
    opt.scale = 0.05;
    opt.legacy = legacy;
    Generated g = generate(opt, 2);
    auto host = parse_host_trace("h", g.host);
    auto device = parse_device_trace("d", g.device);
    ASSERT_TRUE(host.ok()) << host.status().message();
    ASSERT_TRUE(device.ok()) << device.status().message();
    EXPECT_EQ(host->layout, legacy ? HostLayout::kFlat : HostLayout::kAttrs);
    EXPECT_EQ(host->nodes.size(), g.stats.host_nodes);
    // Every event is read; the ac2g flow events are counted, not kept.
    EXPECT_EQ(device->events.size() + device->flow_events, g.stats.device_events);
    EXPECT_GT(device->flow_events, 0u);
    auto linked = link_traces(*host, *device, {});
    ASSERT_TRUE(linked.ok()) << linked.status().message();
    // Every host op with an rf_id and every GPU op is linked.
    uint64_t with_rf = 0, matched = 0;
    for (size_t i = 0; i < host->nodes.size(); ++i) {
      with_rf += host->nodes[i].rf_id != 0;
      matched += linked->ops[i].device_event.valid();
    }
    EXPECT_EQ(matched, with_rf);
    EXPECT_EQ(linked->gpu_events.size(), device->gpu_ops.size());
    EXPECT_EQ(linked->gpu_events.size(), g.stats.kernels);
    EXPECT_TRUE(linked->stats.entries().empty());
  }
}

TEST(SyntheticTrace, DeterministicAndConsistentAcrossRanks) {
  SynthOptions opt;
  opt.ranks = 3;
  opt.scale = 0.05;
  opt.seed = 42;
  Generated a = generate(opt, 1), b = generate(opt, 1), other = generate(opt, 2);
  EXPECT_EQ(a.host, b.host);
  EXPECT_EQ(a.device, b.device);
  EXPECT_NE(a.device, other.device);  // ranks differ in timing
  EXPECT_EQ(a.stats.collectives, other.stats.collectives);
  EXPECT_EQ(a.stats.host_nodes, other.stats.host_nodes);
  opt.seed = 43;
  EXPECT_NE(generate(opt, 1).device, a.device);
}

TEST(SyntheticTrace, SizeGrowsLinearlyWithScale) {
  SynthOptions opt;
  opt.scale = 0.1;
  Generated small = generate(opt, 0);
  opt.scale = 0.4;
  Generated large = generate(opt, 0);
  double ratio = static_cast<double>(large.host.size() + large.device.size()) /
                 static_cast<double>(small.host.size() + small.device.size());
  EXPECT_GT(ratio, 3.6);
  EXPECT_LT(ratio, 4.4);
}

}  // namespace
}  // namespace chakraflow
