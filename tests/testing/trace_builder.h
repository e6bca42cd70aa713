// Builds small hand-written host ETs and Kineto traces as JSON text for unit tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace chakraflow::testing {

// Kineto traceEvents builder. Times in microseconds (may be fractional).
class KinetoBuilder {
 public:
  KinetoBuilder& cpu_op(const std::string& name, int64_t tid, double ts, double dur,
                        int64_t rf_id = 0, int64_t external_id = -1,
                        const std::string& cat = "cpu_op") {
    std::string args;
    if (external_id >= 0) args += fmt::format("\"External id\": {}", external_id);
    if (rf_id > 0)
      args += fmt::format("{}\"Record function id\": {}", args.empty() ? "" : ", ", rf_id);
    events_.push_back(fmt::format(
        R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": 1, "tid": {}, "ts": {}, "dur": {}, "args": {{{}}}}})",
        cat, name, tid, ts, dur, args));
    return *this;
  }
  KinetoBuilder& runtime(const std::string& name, int64_t tid, double ts, double dur,
                         int64_t correlation, const std::string& cat = "cuda_runtime") {
    events_.push_back(fmt::format(
        R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": 1, "tid": {}, "ts": {}, "dur": {}, "args": {{"correlation": {}, "External id": {}}}}})",
        cat, name, tid, ts, dur, correlation, correlation));
    return *this;
  }
  KinetoBuilder& gpu(const std::string& name, double ts, double dur, int64_t correlation,
                     int64_t stream = 7, const std::string& cat = "kernel",
                     int64_t external_id = -1) {
    events_.push_back(fmt::format(
        R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": 0, "tid": {}, "ts": {}, "dur": {}, "args": {{"correlation": {}, "stream": {}, "device": 0{}}}}})",
        cat, name, stream, ts, dur, correlation, stream,
        external_id >= 0 ? fmt::format(", \"External id\": {}", external_id) : std::string()));
    return *this;
  }
  // A GPU op on device `device` (gpu() puts everything on device 0).
  KinetoBuilder& gpu_on_device(int64_t device, const std::string& name, double ts, double dur,
                               int64_t correlation, int64_t stream) {
    events_.push_back(fmt::format(
        R"({{"ph": "X", "cat": "kernel", "name": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{"correlation": {}, "stream": {}, "device": {}}}}})",
        name, device, stream, ts, dur, correlation, stream, device));
    return *this;
  }
  // Kineto's `cuda_sync` record of a sync call (same correlation), written as Kineto writes
  // CUPTI's synchronization activity. kind: "Context Sync", "Stream Sync", "Event Sync" or
  // "Stream Wait Event". Event Sync / Stream Wait Event carry the wait_on_* args.
  KinetoBuilder& cuda_sync(const std::string& kind, double ts, double dur, int64_t correlation,
                           int64_t stream = -1, int64_t wait_on_stream = -1,
                           int64_t record_correlation = -1, int64_t device = 0) {
    std::string wait;
    if (kind == "Event Sync" || kind == "Stream Wait Event") {
      wait = fmt::format(
          R"("wait_on_stream": {}, "wait_on_cuda_event_record_corr_id": {}, "wait_on_cuda_event_id": 1, )",
          wait_on_stream, record_correlation);
    }
    events_.push_back(fmt::format(
        R"({{"ph": "X", "cat": "cuda_sync", "name": "{}", "pid": 0, "tid": {}, "ts": {}, "dur": {}, "args": {{"External id": {}, "cuda_sync_kind": "{}", {}"stream": {}, "correlation": {}, "device": {}, "context": 1}}}})",
        kind, stream, ts, dur, correlation, kind, wait, stream, correlation, device));
    return *this;
  }
  KinetoBuilder& raw(const std::string& event_json) {
    events_.push_back(event_json);
    return *this;
  }
  std::string json() const {
    return fmt::format("{{\"schemaVersion\": 1, \"traceEvents\": [\n{}\n]}}",
                       fmt::join(events_, ",\n"));
  }

 private:
  std::vector<std::string> events_;
};

// Host ET builder, schema 1.1.1 (attrs layout) or 1.0.1 (flat layout).
class HostBuilder {
 public:
  explicit HostBuilder(bool flat = false) : flat_(flat) {}
  HostBuilder& node(uint64_t id, const std::string& name, uint64_t parent, uint64_t rf_id,
                    uint64_t tid) {
    if (flat_) {
      nodes_.push_back(fmt::format(
          R"({{"name": "{}", "id": {}, "rf_id": {}, "parent": {}, "fw_parent": 0, "seq_id": -1, "scope": 0, "tid": {}, "fw_tid": 0, "op_schema": "", "inputs": [], "input_shapes": [], "input_types": [], "outputs": [], "output_shapes": [], "output_types": []}})",
          name, id, rf_id, parent, tid));
    } else {
      nodes_.push_back(fmt::format(
          R"({{"id": {}, "name": "{}", "ctrl_deps": {}, "inputs": {{"values": [], "shapes": [], "types": []}}, "outputs": {{"values": [], "shapes": [], "types": []}}, "attrs": [{{"name": "rf_id", "type": "uint64", "value": {}}}, {{"name": "fw_parent", "type": "uint64", "value": 0}}, {{"name": "seq_id", "type": "int64", "value": -1}}, {{"name": "scope", "type": "uint64", "value": 0}}, {{"name": "tid", "type": "uint64", "value": {}}}, {{"name": "fw_tid", "type": "uint64", "value": 0}}, {{"name": "op_schema", "type": "string", "value": ""}}]}})",
          id, name, parent, rf_id, tid));
    }
    return *this;
  }
  // Process root (id 1) and one thread root per tid, as the observer writes them.
  HostBuilder& roots(const std::vector<std::pair<uint64_t, uint64_t>>& thread_ids_and_tids) {
    node(1, "[pytorch|profiler|execution_trace|process]", 1, 0, 0);
    for (auto [id, tid] : thread_ids_and_tids)
      node(id, "[pytorch|profiler|execution_trace|thread]", 1, 0, tid);
    return *this;
  }
  // The recording process: KinetoBuilder's CPU ops are pid 1, so the pair is one process.
  HostBuilder& pid(int64_t pid) {
    pid_ = pid;
    return *this;
  }
  std::string json() const {
    return fmt::format(
        "{{\"schema\": \"{}\", \"pid\": {}, \"time\": \"2024-01-01 00:00:00\", \"start_ts\": 1, "
        "\"nodes\": [\n{}\n], \"finish_ts\": 2}}",
        flat_ ? "1.0.1" : "1.1.1-chakra.0.0.4", pid_, fmt::join(nodes_, ",\n"));
  }

 private:
  bool flat_;
  int64_t pid_ = 1;
  std::vector<std::string> nodes_;
};

}  // namespace chakraflow::testing
