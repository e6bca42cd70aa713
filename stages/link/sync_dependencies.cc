#include "stages/link/sync_dependencies.h"

#include <simdjson.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "stages/common/json_util.h"
#include "stages/link/exclusive_durations.h"

namespace chakraflow {
namespace {

namespace od = simdjson::ondemand;

std::optional<SyncKind> sync_kind_of_call(std::string_view name) {
  if (name == "cudaDeviceSynchronize" || name == "hipDeviceSynchronize" ||
      name == "cuCtxSynchronize") {
    return SyncKind::kDevice;
  }
  if (name == "cudaStreamSynchronize" || name == "hipStreamSynchronize" ||
      name == "cuStreamSynchronize") {
    return SyncKind::kStream;
  }
  if (name == "cudaEventSynchronize" || name == "hipEventSynchronize" ||
      name == "cuEventSynchronize") {
    return SyncKind::kEvent;
  }
  if (name == "cudaStreamWaitEvent" || name == "hipStreamWaitEvent" ||
      name == "cuStreamWaitEvent") {
    return SyncKind::kStreamWait;
  }
  return std::nullopt;
}

bool is_event_record_name(std::string_view name) {
  return name == "cudaEventRecord" || name == "cudaEventRecordWithFlags" ||
         name == "hipEventRecord" || name == "hipEventRecordWithFlags" || name == "cuEventRecord" ||
         name == "cuEventRecordWithFlags";
}

// Kineto's `cuda_sync` record of one sync call (CUPTI synchronization activity).
struct SyncRecord {
  DeviceEventIdx event;
  SyncKind kind = SyncKind::kDevice;
  int64_t device = 0;
  int64_t stream = -1;              // the synced stream (Stream Sync) / the waiting stream (wait)
  int64_t wait_on_stream = -1;      // the stream the event was recorded on
  int64_t record_correlation = -1;  // correlation of that cudaEventRecord; -1: never recorded
};

// Reads a cuda_sync record from the raw JSON text of an event's args. `text` is the trace text
// that holds `args` (padded by the loader, so simdjson may read past the object's end).
std::optional<SyncRecord> parse_sync_record(od::parser& parser, const InputText& text,
                                            std::string_view args) {
  if (args.find("\"cuda_sync_kind\"") == std::string_view::npos) return std::nullopt;
  const char* text_end = text.data() + text.capacity();
  simdjson::padded_string copy;
  simdjson::padded_string_view view;
  if (args.data() >= text.data() &&
      args.data() + args.size() + simdjson::SIMDJSON_PADDING <= text_end) {
    view = simdjson::padded_string_view(args.data(), args.size(),
                                        static_cast<size_t>(text_end - args.data()));
  } else {
    copy = simdjson::padded_string(args);
    view = copy;
  }
  od::document doc;
  od::object obj;
  if (parser.iterate(view).get(doc) || doc.get_object().get(obj)) return std::nullopt;
  SyncRecord r;
  bool has_kind = false;
  for (auto field_result : obj) {
    od::field field;
    if (std::move(field_result).get(field)) return std::nullopt;
    std::string_view key;
    if (field.unescaped_key().get(key)) return std::nullopt;
    od::value v = field.value();
    int64_t n = 0;
    if (key == "cuda_sync_kind") {
      std::string_view s;
      if (v.get_string().get(s)) return std::nullopt;
      if (s == "Context Sync") {
        r.kind = SyncKind::kDevice;
      } else if (s == "Stream Sync") {
        r.kind = SyncKind::kStream;
      } else if (s == "Event Sync") {
        r.kind = SyncKind::kEvent;
      } else if (s == "Stream Wait Event") {
        r.kind = SyncKind::kStreamWait;
      } else {
        return std::nullopt;  // "Unknown" and future kinds
      }
      has_kind = true;
    } else if (key == "device") {
      if (json::get_int64(v, &n)) r.device = n;
    } else if (key == "stream") {
      if (json::get_int64(v, &n)) r.stream = n;
    } else if (key == "wait_on_stream") {
      if (json::get_int64(v, &n)) r.wait_on_stream = n;
    } else if (key == "wait_on_cuda_event_record_corr_id") {
      if (json::get_int64(v, &n)) r.record_correlation = n;
    }
  }
  if (!has_kind) return std::nullopt;
  return r;
}

using StreamKey = std::pair<int64_t, int64_t>;  // (device, stream)

StreamKey stream_of(const DeviceEvent& g) {
  return {g.device, g.stream};
}

// A GPU op with its launch event.
struct Launched {
  TimeNs launch_ts = 0;
  TimeNs launch_end = 0;
  int64_t launch_tid = 0;
  uint32_t launch_index = 0;  // DeviceEventIdx of the launch
  DeviceEventIdx gpu;
  TimeNs gpu_ts = 0;
};

bool launch_order(const Launched& a, const Launched& b) {
  if (a.launch_ts != b.launch_ts) return a.launch_ts < b.launch_ts;
  if (a.launch_index != b.launch_index) return a.launch_index < b.launch_index;
  if (a.gpu_ts != b.gpu_ts) return a.gpu_ts < b.gpu_ts;
  return a.gpu < b.gpu;
}

// See the header: on the call's thread, before it in (ts, file order); on another thread, ended
// before the call started.
bool launched_before(const Launched& l, const DeviceEvent& call, DeviceEventIdx call_idx) {
  if (l.launch_tid == call.tid) {
    return l.launch_ts != call.ts ? l.launch_ts < call.ts : l.launch_index < call_idx.value;
  }
  return l.launch_end <= call.ts;
}
bool launched_after(const Launched& l, const DeviceEvent& call, DeviceEventIdx call_idx) {
  if (l.launch_tid == call.tid) {
    return l.launch_ts != call.ts ? l.launch_ts > call.ts : l.launch_index > call_idx.value;
  }
  return l.launch_ts >= call.end();
}

// The last op of `ops` (in launch order) launched before the call.
const Launched* last_launched_before(const std::vector<Launched>& ops, const DeviceEvent& call,
                                     DeviceEventIdx call_idx) {
  auto it = std::upper_bound(ops.begin(), ops.end(), call.ts,
                             [](TimeNs ts, const Launched& l) { return ts < l.launch_ts; });
  // Ops launched at or before call.ts; skip the ones that overlap the call (other threads) or tie
  // with it on its own thread but come after it in the file.
  while (it != ops.begin()) {
    --it;
    if (launched_before(*it, call, call_idx)) return &*it;
  }
  return nullptr;
}

// The first op of `ops` (in launch order) launched after the call.
const Launched* first_launched_after(const std::vector<Launched>& ops, const DeviceEvent& call,
                                     DeviceEventIdx call_idx) {
  auto it = std::lower_bound(ops.begin(), ops.end(), call.ts,
                             [](const Launched& l, TimeNs ts) { return l.launch_ts < ts; });
  for (; it != ops.end(); ++it) {
    if (launched_after(*it, call, call_idx)) return &*it;
  }
  return nullptr;
}

// CPU ops of one thread in (ts, file order), with their ts for binary search.
struct ThreadOps {
  std::vector<DeviceEventIdx> ops;
  std::vector<TimeNs> ts;
};

// The first CPU op of the thread starting at or after `t`; of several at that ts, the longest.
DeviceEventIdx first_op_starting_at_or_after(const DeviceTrace& trace, const ThreadOps& thread,
                                             TimeNs t) {
  size_t p = static_cast<size_t>(std::lower_bound(thread.ts.begin(), thread.ts.end(), t) -
                                 thread.ts.begin());
  if (p == thread.ops.size()) return {};
  DeviceEventIdx best = thread.ops[p];
  for (size_t q = p + 1; q < thread.ops.size() && thread.ts[q] == thread.ts[p]; ++q) {
    if (trace[thread.ops[q]].dur > trace[best].dur) best = thread.ops[q];
  }
  return best;
}

std::string describe(const DeviceTrace& trace, DeviceEventIdx idx) {
  const DeviceEvent& e = trace[idx];
  return fmt::format("'{}' correlation {} at byte {}", trace.name(e), e.correlation, e.byte_offset);
}

class SyncResolver {
 public:
  // The three indexes, concurrently through `workers` (each writes only its own members).
  SyncResolver(const DeviceTrace& trace, const LauncherLinks& launchers, DataProblems& stats,
               const OrderedBatches& workers)
      : trace_(trace), stats_(stats) {
    workers.for_each(3, [&](size_t task) {
      if (task == 0) {
        index_launched(launchers);
      } else if (task == 1) {
        index_cpu_ops();
      } else {
        index_records();
      }
    });
  }

 private:
  // The launched GPU ops by stream and by launching thread, and the devices.
  void index_launched(const LauncherLinks& launchers) {
    const DeviceTrace& trace = trace_;
    // A few streams, threads and devices: each is looked up once per run of ops on the same one
    // (the groups' vectors stay where they are as the containers grow).
    std::vector<Launched>* stream_ops = nullptr;
    std::vector<Launched>* thread_ops = nullptr;
    StreamKey last_stream{};
    int64_t last_tid = 0, last_device = 0;
    // A group's vector has room for every op from the start: the room never touched costs no
    // memory, and the vector is not copied as it grows.
    const std::vector<DeviceEventIdx>& gpu_ops = launchers.gpu_ops;
    auto group = [&gpu_ops](std::vector<Launched>& ops) {
      if (ops.capacity() == 0) ops.reserve(gpu_ops.size());
      return &ops;
    };
    // The ops and their launches lie all over the device trace: asked for a few ops ahead.
    constexpr size_t kAhead = 8;
    for (size_t k = 0; k < gpu_ops.size(); ++k) {
      if (k + kAhead < gpu_ops.size()) {
        const DeviceEventIdx ahead = gpu_ops[k + kAhead];
        __builtin_prefetch(&trace[ahead]);
        if (const DeviceEventIdx la = launchers.launch_of[ahead.value]; la.valid()) {
          __builtin_prefetch(&trace[la]);
        }
      }
      const DeviceEventIdx g = gpu_ops[k];
      DeviceEventIdx launch = launchers.launch_of[g.value];
      if (!launch.valid()) continue;  // never a node; nothing can be said about its order
      const DeviceEvent& l = trace[launch];
      const DeviceEvent& e = trace[g];
      Launched x{l.ts, l.end(), l.tid, launch.value, g, e.ts};
      const StreamKey key = stream_of(e);
      if (stream_ops == nullptr || key != last_stream) {
        stream_ops = group(by_stream_[key]);
        last_stream = key;
      }
      if (thread_ops == nullptr || l.tid != last_tid) {
        thread_ops = group(by_thread_[l.tid]);
        last_tid = l.tid;
      }
      stream_ops->push_back(x);
      thread_ops->push_back(x);
      if (devices_.empty() || e.device != last_device) {
        devices_.insert(e.device);
        last_device = e.device;
      }
    }
    // Launches come in ts order: usually sorted already.
    auto sort = [](std::vector<Launched>& ops) {
      if (!std::is_sorted(ops.begin(), ops.end(), launch_order)) {
        std::sort(ops.begin(), ops.end(), launch_order);
      }
    };
    for (auto& [key, ops] : by_stream_) sort(ops);
    for (auto& [tid, ops] : by_thread_) sort(ops);
  }

  // Each thread's CPU ops, with their starts.
  void index_cpu_ops() {
    const DeviceTrace& trace = trace_;
    for (auto& ops : cpu_ops_by_thread(trace)) {
      ThreadOps& t = cpu_by_thread_[trace[ops.front()].tid];
      t.ts.reserve(ops.size());
      for (DeviceEventIdx i : ops) t.ts.push_back(trace[i].ts);
      t.ops = std::move(ops);
    }
  }

  // cuda_sync records by correlation, and event records by correlation (only when needed).
  void index_records() {
    const DeviceTrace& trace = trace_;
    od::parser parser;
    for (DeviceEventIdx i : trace.other_with_args) {  // not a pass over every event
      const DeviceEvent& e = trace[i];
      auto r = parse_sync_record(parser, trace.text, trace.args_raw(e));
      if (!r) continue;
      r->event = i;
      records_.try_emplace(e.correlation, *r);
    }
    if (!records_.empty()) {
      for (DeviceEventIdx idx : trace.launches) {
        const DeviceEvent& e = trace[idx];
        if (e.has(kHasCorrelation) && is_event_record_name(trace.name(e)))
          event_records_.try_emplace(e.correlation, idx);
      }
    }
  }

 public:
  void resolve(DeviceEventIdx idx, SyncKind kind, SyncDependencies& out) {
    const DeviceEvent& c = trace_[idx];
    SyncCall call;
    call.call = idx;
    call.kind = kind;
    call.targets_begin = static_cast<uint32_t>(out.targets.size());
    const SyncRecord* rec = record_of(c, kind);
    if (rec) call.record = rec->event;

    std::vector<DeviceEventIdx> targets;
    switch (kind) {
      case SyncKind::kDevice:
        device_targets(c, idx, rec, call, targets);
        break;
      case SyncKind::kStream:
        stream_targets(c, idx, rec, call, targets);
        break;
      case SyncKind::kEvent:
      case SyncKind::kStreamWait:
        event_targets(kind, rec, call, targets);
        break;
    }
    if (!targets.empty()) call.waiter = waiter_of(c, idx, kind, rec);

    // Never a dependency on a later op: drop the targets the timestamps contradict.
    const size_t before = targets.size();
    std::erase_if(targets, [&](DeviceEventIdx t) {
      const DeviceEvent& g = trace_[t];
      if (kind != SyncKind::kStreamWait && g.end() > c.end()) return true;
      if (call.waiter.valid()) {
        const DeviceEvent& w = trace_[call.waiter];
        if (g.end() > w.ts || g.ts >= w.ts) return true;
      }
      return false;
    });
    if (targets.size() < before) {
      stats_.add_count(StatKind::kSyncTargetAfterReturnDropped, before - targets.size());
    }

    if (call.problem == SyncProblem::kNone) {
      if (targets.empty()) {
        call.problem = before > 0 ? SyncProblem::kContradicted : SyncProblem::kNothingToWaitFor;
      } else if (!call.waiter.valid()) {
        call.problem = SyncProblem::kNoWaiter;
      }
    }
    count(call, out);
    for (DeviceEventIdx t : targets) {
      out.targets.push_back(t);
      if (call.problem != SyncProblem::kNone) continue;
      auto& edges = kind == SyncKind::kStreamWait ? out.gpu_waits : out.cpu_waits;
      edges.push_back({call.waiter, t});
    }
    call.targets_end = static_cast<uint32_t>(out.targets.size());
    out.calls.push_back(call);
  }

 private:
  // The call's cuda_sync record, when it has one of its kind.
  const SyncRecord* record_of(const DeviceEvent& c, SyncKind kind) const {
    if (!c.has(kHasCorrelation)) return nullptr;
    auto it = records_.find(c.correlation);
    return it != records_.end() && it->second.kind == kind ? &it->second : nullptr;
  }

  // A device sync waits on the last op launched before it on every stream of its device: the
  // record's, else the only device, else the device of the thread's last launch (inferred).
  void device_targets(const DeviceEvent& c, DeviceEventIdx idx, const SyncRecord* rec,
                      SyncCall& call, std::vector<DeviceEventIdx>& targets) const {
    std::optional<int64_t> device;
    if (rec) {
      device = rec->device;
    } else if (devices_.size() <= 1) {
      device = devices_.empty() ? 0 : *devices_.begin();
    } else if (const Launched* last = thread_last_launch(c, idx)) {
      device = trace_[last->gpu].device;
      call.inferred = true;
    } else {
      call.problem = SyncProblem::kUnknownStream;
    }
    if (!device) return;
    for (const auto& [key, ops] : by_stream_) {
      if (key.first != *device) continue;
      if (const Launched* l = last_launched_before(ops, c, idx)) targets.push_back(l->gpu);
    }
  }

  // A stream sync waits on the last op launched before it on the record's stream, else on the
  // stream of the thread's last launch (inferred).
  void stream_targets(const DeviceEvent& c, DeviceEventIdx idx, const SyncRecord* rec,
                      SyncCall& call, std::vector<DeviceEventIdx>& targets) const {
    std::optional<StreamKey> key;
    if (rec) {
      key = StreamKey{rec->device, rec->stream};
    } else if (const Launched* last = thread_last_launch(c, idx)) {
      key = stream_of(trace_[last->gpu]);
      call.inferred = true;
    } else {
      call.problem = SyncProblem::kUnknownStream;
    }
    if (!key) return;
    auto it = by_stream_.find(*key);
    if (it == by_stream_.end()) return;
    if (const Launched* l = last_launched_before(it->second, c, idx)) targets.push_back(l->gpu);
  }

  // An event sync or a stream wait waits on the last op launched before the event's record, on
  // the stream it was recorded on.
  void event_targets(SyncKind kind, const SyncRecord* rec, SyncCall& call,
                     std::vector<DeviceEventIdx>& targets) const {
    if (!rec) {
      call.problem = SyncProblem::kNoSyncRecord;
      return;
    }
    if (rec->record_correlation < 0) return;  // the event was never recorded
    auto rit = event_records_.find(rec->record_correlation);
    if (rit == event_records_.end()) {
      call.problem = SyncProblem::kRecordNotInTrace;
      return;
    }
    StreamKey source{rec->device, rec->wait_on_stream};
    if (kind == SyncKind::kStreamWait && rec->stream == rec->wait_on_stream) {
      call.problem = SyncProblem::kSameStream;
      return;
    }
    auto it = by_stream_.find(source);
    if (it == by_stream_.end()) return;
    if (const Launched* l = last_launched_before(it->second, trace_[rit->second], rit->second)) {
      targets.push_back(l->gpu);
    }
  }

  // The op that waits: for a stream wait, the first op launched after it on the waiting stream;
  // otherwise the first CPU op of the call's thread once it has returned.
  DeviceEventIdx waiter_of(const DeviceEvent& c, DeviceEventIdx idx, SyncKind kind,
                           const SyncRecord* rec) const {
    if (kind == SyncKind::kStreamWait) {
      auto it = by_stream_.find(StreamKey{rec->device, rec->stream});
      if (it == by_stream_.end()) return {};
      const Launched* l = first_launched_after(it->second, c, idx);
      return l ? l->gpu : DeviceEventIdx{};
    }
    auto it = cpu_by_thread_.find(c.tid);
    if (it == cpu_by_thread_.end()) return {};
    return first_op_starting_at_or_after(trace_, it->second, c.end());
  }

  // The last GPU op the call's thread launched before it.
  const Launched* thread_last_launch(const DeviceEvent& c, DeviceEventIdx idx) const {
    auto it = by_thread_.find(c.tid);
    return it == by_thread_.end() ? nullptr : last_launched_before(it->second, c, idx);
  }

  void count(const SyncCall& call, SyncDependencies& out) {
    ++out.calls_by_kind[static_cast<size_t>(call.kind)];
    if (call.inferred) {
      ++out.inferred;
      stats_.add(call.kind == SyncKind::kStream ? StatKind::kSyncStreamInferred
                                                : StatKind::kSyncDeviceInferred,
                 describe(trace_, call.call));
    }
    if (auto kind = problem_kind(call.kind, call.problem)) {
      stats_.add(*kind, describe(trace_, call.call));
    }
  }

  // The data problem a call's kind and problem make, if any: one kind per call kind, so that the
  // counts say which calls lost their dependencies.
  static std::optional<StatKind> problem_kind(SyncKind call, SyncProblem problem) {
    const bool stream_wait = call == SyncKind::kStreamWait;
    switch (problem) {
      // Not data problems: nothing launched before, a wait within one stream, and a call with no
      // op after it (the end of the trace; every profile ends with a device sync).
      case SyncProblem::kNone:
      case SyncProblem::kNothingToWaitFor:
      case SyncProblem::kSameStream:
      case SyncProblem::kNoWaiter:
        return std::nullopt;
      case SyncProblem::kNoSyncRecord:  // event sync or stream wait
        return stream_wait ? StatKind::kSyncStreamWaitUnknownEvent
                           : StatKind::kSyncEventUnknownEvent;
      case SyncProblem::kUnknownStream:  // stream or device sync
        return call == SyncKind::kStream ? StatKind::kSyncStreamUnknown
                                         : StatKind::kSyncDeviceUnknown;
      case SyncProblem::kRecordNotInTrace:  // event sync or stream wait
        return stream_wait ? StatKind::kSyncStreamWaitRecordNotInTrace
                           : StatKind::kSyncEventRecordNotInTrace;
      case SyncProblem::kContradicted:
        switch (call) {
          case SyncKind::kDevice:
            return StatKind::kSyncDeviceTargetsAfterReturn;
          case SyncKind::kStream:
            return StatKind::kSyncStreamTargetsAfterReturn;
          case SyncKind::kEvent:
            return StatKind::kSyncEventTargetsAfterReturn;
          case SyncKind::kStreamWait:
            return StatKind::kSyncStreamWaitTargetsAfterReturn;
        }
        break;
    }
    return std::nullopt;
  }

  const DeviceTrace& trace_;
  DataProblems& stats_;
  std::map<StreamKey, std::vector<Launched>> by_stream_;  // ordered: deterministic targets
  std::unordered_map<int64_t, std::vector<Launched>> by_thread_;
  std::set<int64_t> devices_;
  std::unordered_map<int64_t, ThreadOps> cpu_by_thread_;
  std::unordered_map<int64_t, SyncRecord> records_;            // by correlation
  std::unordered_map<int64_t, DeviceEventIdx> event_records_;  // by correlation
};

// Merges the edges of one kind: per waiter, the last target of each stream; sorted.
void minimize(const DeviceTrace& trace, std::vector<SyncEdge>& edges) {
  std::sort(edges.begin(), edges.end());
  std::vector<SyncEdge> out;
  out.reserve(edges.size());
  std::vector<DeviceEventIdx> targets;
  for (size_t i = 0; i < edges.size();) {
    size_t j = i;
    targets.clear();
    for (; j < edges.size() && edges[j].waiter == edges[i].waiter; ++j)
      targets.push_back(edges[j].target);
    keep_last_per_stream(trace, targets);
    for (DeviceEventIdx t : targets) out.push_back({edges[i].waiter, t});
    i = j;
  }
  edges = std::move(out);
}

}  // namespace

void keep_last_per_stream(const DeviceTrace& trace, std::vector<DeviceEventIdx>& ops) {
  // Per stream the op that starts last (then ends last, then comes last in the file): in stream
  // order it is the last one to run.
  std::map<StreamKey, DeviceEventIdx> last;
  for (DeviceEventIdx g : ops) {
    auto [it, inserted] = last.try_emplace(stream_of(trace[g]), g);
    if (inserted) continue;
    const DeviceEvent& a = trace[g];
    const DeviceEvent& b = trace[it->second];
    if (std::tuple(a.ts, a.end(), g) > std::tuple(b.ts, b.end(), it->second)) it->second = g;
  }
  ops.clear();
  for (const auto& [key, g] : last) ops.push_back(g);
  std::sort(ops.begin(), ops.end());
}

SyncDependencies compute_sync_dependencies(const DeviceTrace& trace, const LauncherLinks& launchers,
                                           Compat compat, DataProblems& stats,
                                           const OrderedBatches* workers) {
  SyncDependencies out;
  if (compat == Compat::kChakra) return out;
  std::vector<std::pair<DeviceEventIdx, SyncKind>> calls;
  for (DeviceEventIdx idx : trace.launches) {  // (ts, file order)
    if (auto kind = sync_kind_of_call(trace.name(idx))) calls.emplace_back(idx, *kind);
  }
  if (calls.empty()) return out;
  SyncResolver resolver(trace, launchers, stats, batches_or_in_turn(workers));
  for (auto [idx, kind] : calls) resolver.resolve(idx, kind, out);
  minimize(trace, out.cpu_waits);
  minimize(trace, out.gpu_waits);
  return out;
}

std::string_view sync_problem_name(SyncProblem problem) {
  switch (problem) {
    case SyncProblem::kNone:
      return "none";
    case SyncProblem::kNothingToWaitFor:
      return "nothing to wait for";
    case SyncProblem::kSameStream:
      return "same stream";
    case SyncProblem::kNoWaiter:
      return "no waiter";
    case SyncProblem::kNoSyncRecord:
      return "no cuda_sync record";
    case SyncProblem::kUnknownStream:
      return "unknown stream or device";
    case SyncProblem::kRecordNotInTrace:
      return "event record not in trace";
    case SyncProblem::kContradicted:
      return "contradicted by timestamps";
  }
  return "?";
}

}  // namespace chakraflow
