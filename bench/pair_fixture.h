// A real (host ET, device trace) pair from ../shared/data, read and parsed once for the benchmarks.
#pragma once

#include <filesystem>
#include <string>

#include "stages/common/file_io.h"
#include "stages/link/device_trace_loader.h"
#include "stages/link/host_et_loader.h"

namespace chakraflow::bench {

// ../shared/data/pairs/PAIR, or empty when absent.
inline std::string pair_dir(const char* pair) {
  std::string dir = std::string(CHAKRAFLOW_SHARED_DATA) + "/pairs/" + pair;
  return std::filesystem::exists(dir) ? dir : std::string();
}

struct PairFixture {
  std::string host_text, device_text;
  HostTrace host;
  DeviceTrace device;
  bool ok = false;
  PairFixture(const char* pair, const char* device_file) {
    std::string dir = pair_dir(pair);
    if (dir.empty()) return;
    auto h = read_input_file(dir + "/host_et.json.gz");
    auto d = read_input_file(dir + "/" + device_file);
    if (!h.ok() || !d.ok()) return;
    host_text = *h;
    device_text = *d;
    auto ht = parse_host_trace("host", host_text);
    auto dt = parse_device_trace("device", device_text);
    if (!ht.ok() || !dt.ok()) return;
    host = std::move(ht).value();
    device = std::move(dt).value();
    ok = true;
  }
};

}  // namespace chakraflow::bench
