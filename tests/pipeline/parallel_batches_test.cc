// ParallelBatches: batches produced on oneTBB's workers, consumed in order; the ET+ writer through
// it writes the bytes it writes one batch after another, whatever the thread count.
#include "pipeline/parallel_batches.h"

#include <gtest/gtest.h>
#include <oneapi/tbb/global_control.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "stages/generate/synthetic_trace.h"
#include "stages/link/device_trace_loader.h"
#include "stages/link/et_plus_writer.h"
#include "stages/link/host_et_loader.h"
#include "stages/link/link.h"

namespace chakraflow {
namespace {

TEST(ParallelBatches, ConsumesInOrderAndStopsAtTheFirstFailure) {
  const ParallelBatches batches(8);
  std::vector<size_t> seen;
  std::atomic<size_t> produced{0};
  Status s = batches.run(
      1000,
      [&](size_t i, std::string& out) {
        ++produced;
        out = std::to_string(i);
      },
      [&](std::string& out) {
        seen.push_back(std::stoul(out));
        return Status();
      });
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(seen.size(), 1000u);
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], i);
  EXPECT_EQ(produced.load(), 1000u);

  seen.clear();
  Status failed = batches.run(
      1000, [&](size_t i, std::string& out) { out = std::to_string(i); },
      [&](std::string& out) {
        seen.push_back(std::stoul(out));
        return seen.size() == 10 ? Status::error("disk full") : Status();
      });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.message(), "disk full");
  EXPECT_EQ(seen.size(), 10u);  // nothing consumed after the failure
}

std::string write_with(const HostTrace& host, const DeviceTrace& device, const LinkedTrace& linked,
                       const LinkOptions& options, const OrderedBatches* batches,
                       uint32_t batch_nodes = kEtPlusBatchNodes) {
  std::string out;
  Status s = write_et_plus(
      host, device, linked, options, [&](std::string_view b) { out.append(b); }, batches,
      batch_nodes);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

// A generated rank of several thousand host nodes (several batches), with collectives and
// sync dependencies: the same bytes with 1, 2 and 16 workers as without ParallelBatches.
TEST(ParallelBatches, EtPlusIsTheSameBytesWhateverTheThreads) {
  SynthOptions opt;
  opt.ranks = 2;
  opt.scale = 1.0;
  const SynthRankText text = synthesize_rank_text(opt, 1);
  auto host = parse_host_trace("host.json", text.host);
  ASSERT_TRUE(host.ok()) << host.status().message();
  ASSERT_GT(host->nodes.size(), 3u * 2048);
  auto device = parse_device_trace("kineto.json", text.device);
  ASSERT_TRUE(device.ok()) << device.status().message();
  LinkOptions options;
  auto linked = link_traces(*host, *device, options);
  ASSERT_TRUE(linked.ok()) << linked.status().message();
  options.mode = resolve_mode(*device, options.mode);

  const std::string sequential = write_with(*host, *device, *linked, options, nullptr);
  ASSERT_GT(sequential.size(), 1000000u);
  for (int threads : {1, 2, 16}) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    const ParallelBatches batches(2 * static_cast<size_t>(threads));
    const std::string parallel = write_with(*host, *device, *linked, options, &batches);
    EXPECT_TRUE(parallel == sequential)
        << threads << " threads: " << parallel.size() << " vs " << sequential.size() << " bytes";
  }
}

// Batches of any size start their cursors where they begin: the ops run off their thread
// ("exec_tid") and the sync dependencies of a gloo rank (../shared/data), in batches of 1, 7 and
// 500 host nodes, on 2 workers.
TEST(ParallelBatches, EtPlusCursorsStartWhereTheBatchDoes) {
  const std::string dir = std::string(CHAKRAFLOW_SHARED_DATA) + "/pt211_h200/gloo_4rank/rank0";
  if (!std::filesystem::exists(dir + "/host_et.json.gz")) {
    GTEST_SKIP() << "SKIPPED LOUDLY: " << dir << " is absent (../shared/data)";
  }
  auto host = load_host_trace(dir + "/host_et.json.gz");
  ASSERT_TRUE(host.ok()) << host.status().message();
  auto device = load_device_trace(dir + "/kineto.json.gz");
  ASSERT_TRUE(device.ok()) << device.status().message();
  LinkOptions options;
  auto linked = link_traces(*host, *device, options);
  ASSERT_TRUE(linked.ok()) << linked.status().message();
  ASSERT_FALSE(linked->exec_tids.empty());
  options.mode = resolve_mode(*device, options.mode);

  const std::string sequential = write_with(*host, *device, *linked, options, nullptr);
  ASSERT_NE(sequential.find("\"exec_tid\""), std::string::npos);
  ASSERT_NE(sequential.find("\"sync_dep\""), std::string::npos);
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 2);
  const ParallelBatches batches(4);
  for (uint32_t batch_nodes : {1u, 7u, 500u}) {
    const std::string parallel =
        write_with(*host, *device, *linked, options, &batches, batch_nodes);
    EXPECT_TRUE(parallel == sequential) << "batches of " << batch_nodes << " host nodes";
  }
}

}  // namespace
}  // namespace chakraflow
