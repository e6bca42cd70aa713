// `run`'s whole path on one rank's texts, as bytes to compare: the traces read (in shards through
// `workers` when given), linked, the ET+ written, the converter's nodes read from the link and
// converted, every stage that splits its work running it through `workers` (null: one pass in
// order). Header-only: its users link chakraflow_convert and chakraflow_generate.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>

#include "stages/common/ordered_batches.h"
#include "stages/convert/et_plus_nodes.h"
#include "stages/convert/pytorch_converter.h"
#include "stages/link/device_trace_loader.h"
#include "stages/link/et_plus_writer.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/link.h"
#include "tests/testing/generated_ranks.h"
#include "tests/testing/test_util.h"

namespace chakraflow::testing {

// The ET+, the number of the link's problem kinds, the .et (written to `dir`) and the converter's
// problems (kind, count, examples), one after another; empty on a failure (reported).
inline std::string linked_rank_bytes(const std::string& host_text, const std::string& device_text,
                                     Compat compat, const OrderedBatches* workers,
                                     const TempDir& dir) {
  const ParseShards shards =
      workers != nullptr ? ParseShards{workers, 8, size_t{16} << 10} : ParseShards{};
  EtPlusNodeSink sink("host.json", /*keep_host_nodes=*/true);
  auto host = parse_host_trace("host.json", host_text, kHostWindowBytes, shards, &sink);
  auto device = parse_device_trace("kineto.json", device_text, kDeviceWindowBytes, shards);
  EXPECT_TRUE(host.ok() && device.ok());
  if (!host.ok() || !device.ok()) return std::string();
  LinkOptions options;
  options.compat = compat;
  auto linked = link_traces(*host, *device, options, workers);
  EXPECT_TRUE(linked.ok()) << linked.status().message();
  if (!linked.ok()) return std::string();
  options.mode = resolve_mode(*device, options.mode);
  std::string out;
  Status s = write_et_plus(
      *host, *device, *linked, options, [&out](std::string_view b) { out.append(b); }, workers);
  EXPECT_TRUE(s.ok()) << s.message();
  out += fmt::format("/{}/", linked->stats.entries().size());
  ConvertOptions convert;
  convert.compat = compat;
  auto trace =
      read_linked_nodes(*host, std::move(sink), linked_device_facts(*device, *linked, workers),
                        *linked, options, convert, workers);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  if (!trace.ok()) return std::string();
  ConvertReport report;
  s = convert_trace(*trace, dir.file("trace.et"), convert, &report, workers);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return std::string();
  out += read_text(dir.file("trace.et"));
  for (const auto& [kind, entry] : report.stats.entries()) {
    out += fmt::format("/{}:{}:{}", static_cast<int>(kind), entry.count,
                       fmt::join(entry.examples, ","));
  }
  return out;
}

// A generated rank of `scale` through linked_rank_bytes with each of `runs` (workers, and how
// they are told apart in a failure), in both compat modes: the same bytes as one pass in order.
struct WorkersRun {
  const OrderedBatches* workers;
  const char* what;
};
inline void expect_linked_rank_bytes_as_in_order(double scale,
                                                 std::initializer_list<WorkersRun> runs) {
  const SynthRankText text = generated_rank_text(scale);
  TempDir dir;
  for (Compat compat : {Compat::kDefault, Compat::kChakra}) {
    const std::string one = linked_rank_bytes(text.host, text.device, compat, nullptr, dir);
    ASSERT_GT(one.size(), 100000u);
    for (const WorkersRun& run : runs) {
      EXPECT_TRUE(linked_rank_bytes(text.host, text.device, compat, run.workers, dir) == one)
          << run.what << (compat == Compat::kChakra ? " (chakra)" : " (default)");
    }
  }
}

}  // namespace chakraflow::testing
