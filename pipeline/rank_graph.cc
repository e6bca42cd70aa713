#include "pipeline/rank_graph.h"

#include <oneapi/tbb/flow_graph.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "pipeline/parallel_batches.h"
#include "stages/common/file_io.h"
#include "stages/common/profile.h"
#include "stages/convert/cycle_check.h"
#include "stages/convert/dependency_encoding.h"
#include "stages/convert/et_plus_nodes.h"
#include "stages/link/device_trace_loader.h"
#include "stages/link/et_plus_legacy_writer.h"
#include "stages/link/et_plus_writer.h"
#include "stages/link/host_et_loader.h"

namespace chakraflow {
namespace {

namespace flow = oneapi::tbb::flow;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A message before the join: the job's sequence number and a shared value (const where several
// nodes read it), or the error that stopped the job upstream.
template <typename T>
struct Msg {
  size_t seq = 0;
  std::shared_ptr<T> value;
  std::shared_ptr<const Status> error;
};

// The host trace as loaded, with (in-memory conversion) the converter's node of every host node,
// made in the loader's pass. complete_nodes takes them; nothing else changes it.
struct LoadedHost {
  HostTrace trace;
  std::optional<EtPlusNodeSink> nodes;
};

// One job after the join, passed from node to node of the chain (each node has one successor, so
// a node may move out what it consumes). Dropping it frees the job's traces.
struct RankInFlight {
  size_t seq = 0;
  std::shared_ptr<LoadedHost> host;
  std::shared_ptr<const DeviceTrace> device;  // freed by release_device
  std::optional<LinkedRank> linked;
  // What add_sync reads besides the job's traces (assign_ids to add_sync).
  std::shared_ptr<const ExclusiveDurations> exclusive;
  std::shared_ptr<const GapDependencies> gaps;
  std::shared_ptr<const std::pair<LauncherLinks, DataProblems>> launchers;
  std::shared_ptr<const std::pair<HostDeviceMap, DataProblems>> mapping;
  std::optional<LinkedDeviceFacts> device_facts;
  std::unique_ptr<HostTrace> et_plus_host;  // the ET+ file's text, when the nodes come from a file
  std::optional<EtPlusTrace> nodes;         // the converter's input
  DataProblems convert_stats;               // the converter's data problems (the nodes' first)
  std::optional<Conversion> conversion;     // select_nodes to drop_dangling
  std::optional<ChakraTrace> chakra;        // the nodes written, from drop_dangling on
  std::string et_plus_file;                 // the ET+ written (or to read)
  bool et_plus_is_temporary = false;        // removed by finish
  RemoveOnSignal temporary_guard;
};
using Job = std::shared_ptr<RankInFlight>;

// How each of a rank's `traces` traces loaded at the same time is read: in shards on its share of
// the workers (shards_per_trace). Where the ranks side by side or the two loads already keep every
// worker busy (two workers; a batch of as many ranks as workers), each trace is one piece: shards
// would only add their merging (the parts' own vectors, appended by copying).
ParseShards shards_for(const OrderedBatches& workers, size_t traces, size_t ranks_side_by_side) {
  return ParseShards{&workers,
                     shards_per_trace(ParallelBatches::workers(), traces, ranks_side_by_side)};
}

// Runs `body` turning exceptions into a Status.
template <typename Body>
Status guarded(std::string_view stage, Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Status::errorf("{}: out of memory", stage);
  } catch (const std::exception& e) {
    return Status::errorf("{}: internal error: {}", stage, e.what());
  }
}

// A message that lets go of `p` where it is received: the last reference, its memory freed on
// that node's worker.
template <typename T>
struct Release {
  mutable std::shared_ptr<T> p;
};

// A device-side stage: runs `compute` on a device trace unless the job already failed.
template <typename T, typename Compute>
Msg<const T> device_stage(const Msg<const DeviceTrace>& in, const char* stage, int64_t rank,
                          double& seconds, Compute&& compute) {
  if (!in.value) return Msg<const T>{in.seq, nullptr, in.error};
  const profile::Span span(stage, rank);
  std::shared_ptr<const T> value;
  auto t0 = Clock::now();
  Status s = guarded(stage, [&] {
    value = std::make_shared<const T>(compute(*in.value));
    return Status();
  });
  seconds = seconds_since(t0);
  if (!s.ok()) return Msg<const T>{in.seq, nullptr, std::make_shared<const Status>(std::move(s))};
  return Msg<const T>{in.seq, std::move(value), nullptr};
}

// Graphviz dot of the edges made, in the order they were made.
class Wiring {
 public:
  template <typename From, typename To>
  void edge(From& from, std::string_view from_name, To& to, std::string_view to_name,
            std::string_view label = {}) {
    flow::make_edge(from, to);
    dot_ += fmt::format("  {} -> {}", from_name, to_name);
    if (!label.empty()) dot_ += fmt::format(" [label=\"{}\"]", label);
    dot_ += ";\n";
  }
  // What a node does besides what its name says.
  void label(std::string_view name, std::string_view text) {
    dot_ += fmt::format("  {} [label=\"{}\"];\n", name, text);
  }
  std::string dot() const {
    return "digraph rank_pipeline {\n  node [shape=box, fontname=\"monospace\"];\n" + dot_ + "}\n";
  }

 private:
  std::string dot_;
};

// The per-device stages' messages; DataProblems ride with the stages that count problems.
using HostMsg = Msg<LoadedHost>;  // to the join only: the chain takes the converter's nodes
using DeviceMsg = Msg<const DeviceTrace>;
using ExclusiveMsg = Msg<const ExclusiveDurations>;
using GapsMsg = Msg<const GapDependencies>;
using LaunchersMsg = Msg<const std::pair<LauncherLinks, DataProblems>>;
using SyncMsg = Msg<const std::pair<SyncDependencies, DataProblems>>;
using MapMsg = Msg<const std::pair<HostDeviceMap, DataProblems>>;
using Joined = std::tuple<HostMsg, DeviceMsg, ExclusiveMsg, GapsMsg, LaunchersMsg, MapMsg>;

// The graph of one plan over a list of jobs. Construct, then run() (or dot() only).
class RankGraph {
 public:
  RankGraph(const RankPlan& plan, const std::vector<RankJob>& jobs, size_t max_in_flight,
            const std::function<void(size_t, const RankJobResult&)>& on_done)
      : plan_(plan),
        jobs_(jobs),
        on_done_(on_done),
        max_in_flight_(std::max<size_t>(max_in_flight, 1)),
        unfinished_(jobs.size()),
        results_(jobs.size()),
        started_(jobs.size()),
        source_(graph_, [this](oneapi::tbb::flow_control& fc) { return next_job(fc); }),
        limiter_(graph_, max_in_flight_),
        fan_out_(graph_),
        start_(graph_, flow::unlimited, [this](size_t seq) { return new_job(seq); }),
        load_host_(graph_, flow::unlimited, [this](size_t seq) { return load_host(seq); }),
        load_device_(graph_, flow::unlimited, [this](size_t seq) { return load_device(seq); }),
        device_out_(graph_),
        exclusive_(graph_, flow::unlimited, [this](const DeviceMsg& m) { return exclusive(m); }),
        gaps_(graph_, flow::unlimited, [this](const DeviceMsg& m) { return gaps(m); }),
        launchers_(graph_, flow::unlimited, [this](const DeviceMsg& m) { return launchers(m); }),
        device_and_launchers_(graph_, seq_of<DeviceMsg>, seq_of<LaunchersMsg>),
        sync_(graph_, flow::unlimited,
              [this](const std::tuple<DeviceMsg, LaunchersMsg>& in) { return sync(in); }),
        host_and_device_(graph_, seq_of<HostMsg>, seq_of<DeviceMsg>),
        map_(graph_, flow::unlimited,
             [this](const std::tuple<HostMsg, DeviceMsg>& in) { return map(in); }),
        join_(graph_, seq_of<HostMsg>, seq_of<DeviceMsg>, seq_of<ExclusiveMsg>, seq_of<GapsMsg>,
              seq_of<LaunchersMsg>, seq_of<MapMsg>),
        assign_ids_(graph_, flow::unlimited, [this](const Joined& in) { return assign_ids(in); }),
        ids_and_sync_(graph_, seq_of_job, seq_of<SyncMsg>),
        add_sync_(graph_, flow::unlimited,
                  [this](const std::tuple<Job, SyncMsg>& in) { return add_sync(in); }),
        write_et_plus_(graph_, flow::unlimited, step("write ET+", &RankGraph::write_et_plus)),
        release_device_(graph_, flow::unlimited,
                        step("release device trace", &RankGraph::release_device)),
        complete_nodes_(graph_, flow::unlimited,
                        convert_step("complete nodes", &RankGraph::complete_nodes)),
        read_et_plus_(graph_, flow::unlimited, convert_step("read ET+", &RankGraph::read_et_plus)),
        select_nodes_(graph_, flow::unlimited,
                      convert_step("select nodes", &RankGraph::select_nodes)),
        encode_dependencies_(graph_, flow::unlimited,
                             convert_step("encode dependencies", &RankGraph::encode_dependencies)),
        drop_dangling_(graph_, flow::unlimited,
                       convert_step("drop dangling nodes", &RankGraph::drop_dangling)),
        write_et_(graph_, flow::unlimited, convert_step("write .et", &RankGraph::write_et)),
        finish_(graph_, flow::unlimited, [this](const Job& job) { return finish(job); }),
        free_device_(graph_, flow::unlimited, [](const Release<const DeviceTrace>& r) {
          const profile::Span span("free device trace");
          r.p.reset();
          return flow::continue_msg();
        }) {
    wire();
  }

  std::vector<RankJobResult> run() {
    if (!jobs_.empty()) {
      source_.activate();
      graph_.wait_for_all();
    }
    return std::move(results_);
  }
  std::string dot() const { return wiring_.dot(); }

 private:
  template <typename M>
  static size_t seq_of(const M& m) {
    return m.seq;
  }
  static size_t seq_of_job(const Job& job) { return job->seq; }

  // The graph, in one place.
  void wire() {
    Wiring& w = wiring_;
    w.edge(source_, "source", limiter_, "limiter");
    flow::sender<Job>* chain = nullptr;
    const char* chain_name = nullptr;
    if (plan_.input == RankInput::kEtPlus) {
      w.edge(limiter_, "limiter", start_, "start");
      chain = &start_;
      chain_name = "start";
    } else {
      w.edge(limiter_, "limiter", fan_out_, "fan_out");
      // The host loader's edge last: on one thread the successor added last runs first, and the
      // host trace loaded before the device trace lowers the peak (the device events, larger
      // than the host nodes, are not yet alive while the parser's index of the larger host text
      // is).
      w.edge(fan_out_, "fan_out", load_device_, "load_device");
      w.edge(fan_out_, "fan_out", load_host_, "load_host");
      if (plan_.converts_in_memory()) w.label("load_host", "load_host\\n+ converter nodes");
      w.edge(load_device_, "load_device", device_out_, "device_out");
      w.edge(device_out_, "device_out", exclusive_, "exclusive");
      w.edge(device_out_, "device_out", gaps_, "gaps");
      w.edge(device_out_, "device_out", launchers_, "launchers");
      w.edge(device_out_, "device_out", flow::input_port<0>(device_and_launchers_),
             "device_and_launchers", "device");
      w.edge(launchers_, "launchers", flow::input_port<1>(device_and_launchers_),
             "device_and_launchers", "launchers");
      w.edge(device_and_launchers_, "device_and_launchers", sync_, "sync");
      // The host-device map needs neither launchers nor sync: it runs while they do.
      w.edge(load_host_, "load_host", flow::input_port<0>(host_and_device_), "host_and_device",
             "host");
      w.edge(device_out_, "device_out", flow::input_port<1>(host_and_device_), "host_and_device",
             "device");
      w.edge(host_and_device_, "host_and_device", map_, "map");
      w.edge(load_host_, "load_host", flow::input_port<0>(join_), "join", "host");
      w.edge(device_out_, "device_out", flow::input_port<1>(join_), "join", "device");
      w.edge(exclusive_, "exclusive", flow::input_port<2>(join_), "join", "exclusive");
      w.edge(gaps_, "gaps", flow::input_port<3>(join_), "join", "gaps");
      w.edge(launchers_, "launchers", flow::input_port<4>(join_), "join", "launchers");
      w.edge(map_, "map", flow::input_port<5>(join_), "join", "map");
      w.edge(join_, "join", assign_ids_, "assign_ids");
      // The ids are numbered while the sync stage runs; its dependencies join them after.
      w.edge(assign_ids_, "assign_ids", flow::input_port<0>(ids_and_sync_), "ids_and_sync", "ids");
      w.edge(sync_, "sync", flow::input_port<1>(ids_and_sync_), "ids_and_sync", "sync");
      w.edge(ids_and_sync_, "ids_and_sync", add_sync_, "add_sync");
      chain = &add_sync_;
      chain_name = "add_sync";
      if (plan_.writes_et_plus_file()) {
        w.edge(*chain, chain_name, write_et_plus_, "write_et_plus");
        chain = &write_et_plus_;
        chain_name = "write_et_plus";
      }
      if (plan_.converts_in_memory()) {
        w.edge(*chain, chain_name, release_device_, "release_device");
        chain = &release_device_;
        chain_name = "release_device";
      }
    }
    if (plan_.convert) {
      // The converter's stages (stages/convert/pytorch_converter.h), one node each, from its
      // nodes: completed in memory (their first stage ran in load_host), or read from an ET+.
      if (plan_.converts_in_memory()) {
        w.edge(*chain, chain_name, complete_nodes_, "complete_nodes");
        w.edge(complete_nodes_, "complete_nodes", select_nodes_, "select_nodes");
      } else {
        w.edge(*chain, chain_name, read_et_plus_, "read_et_plus");
        w.edge(read_et_plus_, "read_et_plus", select_nodes_, "select_nodes");
      }
      w.edge(select_nodes_, "select_nodes", encode_dependencies_, "encode_dependencies");
      w.edge(encode_dependencies_, "encode_dependencies", drop_dangling_, "drop_dangling");
      w.edge(drop_dangling_, "drop_dangling", write_et_, "write_et");
      chain = &write_et_;
      chain_name = "write_et";
    }
    w.edge(*chain, chain_name, finish_, "finish");
    w.edge(finish_, "finish", limiter_.decrementer(), "limiter", "decrement");
  }

  // ---- node bodies ----
  size_t next_job(oneapi::tbb::flow_control& fc) {
    if (next_ >= jobs_.size()) {
      fc.stop();
      return 0;
    }
    started_[next_] = Clock::now();
    return next_++;
  }

  Job new_job(size_t seq) {
    auto job = std::make_shared<RankInFlight>();
    job->seq = seq;
    job->et_plus_file = jobs_[seq].host_path;
    return job;
  }

  HostMsg load_host(size_t seq) {
    const profile::Span span("load host trace", rank_of(seq));
    auto t0 = Clock::now();
    auto host = std::make_shared<LoadedHost>();
    const std::string& path = jobs_[seq].host_path;
    Status s = guarded("load host trace", [&]() -> Status {
      if (plan_.converts_in_memory()) host->nodes = EtPlusNodeSink::for_linking(path);
      const ParallelBatches workers = ParallelBatches::two_per_worker();
      auto trace = load_host_trace(path, host->nodes ? &*host->nodes : nullptr, kHostWindowBytes,
                                   shards_for(workers, 2, ranks_side_by_side()));
      if (!trace.ok()) return trace.status();
      host->trace = std::move(trace).value();
      return Status();
    });
    results_[seq].times.load_host = seconds_since(t0);
    if (!s.ok()) return HostMsg{seq, nullptr, std::make_shared<const Status>(std::move(s))};
    return HostMsg{seq, std::move(host), nullptr};
  }

  DeviceMsg load_device(size_t seq) {
    const profile::Span span("load device trace", rank_of(seq));
    auto t0 = Clock::now();
    std::shared_ptr<const DeviceTrace> device;
    Status s = guarded("load device trace", [&]() -> Status {
      const ParallelBatches workers = ParallelBatches::two_per_worker();
      auto trace =
          load_device_trace(jobs_[seq].device_path, shards_for(workers, 2, ranks_side_by_side()));
      if (!trace.ok()) return trace.status();
      LinkOptions options = jobs_[seq].link;
      if (!jobs_[seq].step_time_path.empty()) {
        CF_ASSIGN_OR_RETURN(options.step_time, load_step_time(jobs_[seq].step_time_path));
      }
      CF_ASSIGN_OR_RETURN(results_[seq].profiler, prepare_device_trace(*trace, options));
      device = std::make_shared<const DeviceTrace>(std::move(trace).value());
      return Status();
    });
    results_[seq].times.load_device = seconds_since(t0);
    if (!s.ok()) return DeviceMsg{seq, nullptr, std::make_shared<const Status>(std::move(s))};
    return DeviceMsg{seq, std::move(device), nullptr};
  }

  ExclusiveMsg exclusive(const DeviceMsg& m) {
    const LinkOptions& o = jobs_[m.seq].link;
    return device_stage<ExclusiveDurations>(
        m, "exclusive durations", rank_of(m.seq), results_[m.seq].times.exclusive,
        [&](const DeviceTrace& d) { return compute_exclusive_durations(d, o.compat); });
  }

  GapsMsg gaps(const DeviceMsg& m) {
    const LinkOptions& o = jobs_[m.seq].link;
    return device_stage<GapDependencies>(
        m, "gap dependencies", rank_of(m.seq), results_[m.seq].times.gaps,
        [&](const DeviceTrace& d) { return compute_gap_dependencies(d, o.gap_threshold); });
  }

  LaunchersMsg launchers(const DeviceMsg& m) {
    const LinkOptions& o = jobs_[m.seq].link;
    return device_stage<std::pair<LauncherLinks, DataProblems>>(
        m, "launcher correlation", rank_of(m.seq), results_[m.seq].times.launchers,
        [&](const DeviceTrace& d) {
          DataProblems stats;
          const ParallelBatches workers = ParallelBatches::two_per_worker();
          LauncherLinks links = correlate_launchers(d, o.compat, stats, &workers);
          return std::make_pair(std::move(links), std::move(stats));
        });
  }

  // Sync dependencies need the device trace and the launchers of its GPU ops.
  SyncMsg sync(const std::tuple<DeviceMsg, LaunchersMsg>& in) {
    const DeviceMsg& d = std::get<0>(in);
    const LaunchersMsg& l = std::get<1>(in);
    if (!l.value) return SyncMsg{d.seq, nullptr, d.error ? d.error : l.error};
    const LinkOptions& o = jobs_[d.seq].link;
    return device_stage<std::pair<SyncDependencies, DataProblems>>(
        d, "sync dependencies", rank_of(d.seq), results_[d.seq].times.sync,
        [&](const DeviceTrace& device) {
          DataProblems stats;
          const ParallelBatches workers = ParallelBatches::two_per_worker();
          SyncDependencies deps =
              compute_sync_dependencies(device, l.value->first, o.compat, stats, &workers);
          return std::make_pair(std::move(deps), std::move(stats));
        });
  }

  // Stage 6: the host-device map, from the loaded traces alone.
  MapMsg map(const std::tuple<HostMsg, DeviceMsg>& in) {
    const HostMsg& h = std::get<0>(in);
    const DeviceMsg& d = std::get<1>(in);
    if (!h.value || !d.value) return MapMsg{h.seq, nullptr, h.error ? h.error : d.error};
    const profile::Span span("map host to device", rank_of(h.seq));
    auto t0 = Clock::now();
    std::shared_ptr<const std::pair<HostDeviceMap, DataProblems>> value;
    Status s = guarded("link", [&]() -> Status {
      DataProblems stats;
      const ParallelBatches workers = ParallelBatches::two_per_worker();
      CF_ASSIGN_OR_RETURN(
          HostDeviceMap mapping,
          map_host_to_device(h.value->trace, *d.value, jobs_[h.seq].link, stats, &workers));
      value = std::make_shared<const std::pair<HostDeviceMap, DataProblems>>(std::move(mapping),
                                                                             std::move(stats));
      return Status();
    });
    results_[h.seq].times.map = seconds_since(t0);
    if (!s.ok()) return MapMsg{h.seq, nullptr, std::make_shared<const Status>(std::move(s))};
    return MapMsg{h.seq, std::move(value), nullptr};
  }

  // Stage 7: ids assigned, given every finding.
  Job assign_ids(const Joined& in) {
    auto job = std::make_shared<RankInFlight>();
    job->seq = std::get<0>(in).seq;
    RankJobResult& result = results_[job->seq];
    // The first error upstream wins (host before device before stages, the map's last).
    for (const Status* e :
         {std::get<0>(in).error.get(), std::get<1>(in).error.get(), std::get<2>(in).error.get(),
          std::get<3>(in).error.get(), std::get<4>(in).error.get(), std::get<5>(in).error.get()}) {
      if (e != nullptr) {
        result.status = *e;
        return job;
      }
    }
    job->host = std::get<0>(in).value;
    job->device = std::get<1>(in).value;
    // Named references, not structured bindings: the lambda below captures them, which C++20
    // allows but clang 14 rejects ("reference to local binding"), and fuzz.sh builds with clang.
    job->exclusive = std::get<2>(in).value;
    job->gaps = std::get<3>(in).value;
    job->launchers = std::get<4>(in).value;
    job->mapping = std::get<5>(in).value;
    const LauncherLinks& launch = job->launchers->first;
    const DataProblems& launch_stats = job->launchers->second;
    const HostDeviceMap& mapping = job->mapping->first;
    const DataProblems& map_stats = job->mapping->second;
    result.input_bytes = job->host->trace.text.size() + job->device->text.size();
    const profile::Span span("assign ids", rank_of(job->seq));
    auto t0 = Clock::now();
    result.status = guarded("link", [&]() -> Status {
      // In the order the stages would count them one after another (the sync stage's, of kinds
      // of its own, by add_sync).
      DataProblems stats = launch_stats;
      stats.merge(map_stats);
      const ParallelBatches workers = ParallelBatches::two_per_worker();
      LinkedRank linked = chakraflow::assign_linked_ids(
          job->host->trace, *job->device, {*job->exclusive, *job->gaps, launch, nullptr}, mapping,
          jobs_[job->seq].link, std::move(stats), &workers);
      result.summary = linked.summary;
      result.stats = linked.trace.stats;
      linked.trace.profiler = result.profiler;
      job->linked = std::move(linked);
      return Status();
    });
    result.times.link = seconds_since(t0);
    return job;
  }

  // The sync stage's dependencies, translated to the ids assign_ids gave (add_linked_sync); the
  // findings assign_ids kept for it let go of here.
  Job add_sync(const std::tuple<Job, SyncMsg>& in) {
    const Job& job = std::get<0>(in);
    const SyncMsg& sync = std::get<1>(in);
    RankJobResult& result = results_[job->seq];
    if (result.status.ok() && sync.error) result.status = *sync.error;
    if (result.status.ok()) {
      const profile::Span span("add sync dependencies", rank_of(job->seq));
      auto t0 = Clock::now();
      result.status = guarded("link", [&]() -> Status {
        LinkedRank& linked = *job->linked;
        add_linked_sync(job->host->trace, *job->device,
                        {*job->exclusive, *job->gaps, job->launchers->first, &sync.value->first},
                        job->mapping->first, sync.value->second, linked);
        result.summary = linked.summary;
        result.stats = linked.trace.stats;
        return Status();
      });
      result.times.link += seconds_since(t0);
    }
    job->exclusive.reset();
    job->gaps.reset();
    job->launchers.reset();
    job->mapping.reset();
    return job;
  }

  // A chain node's body: runs `member` unless the job already failed, recording its error.
  std::function<Job(const Job&)> step(const char* stage,
                                      Status (RankGraph::*member)(RankInFlight&)) {
    return [this, stage, member](const Job& job) {
      RankJobResult& result = results_[job->seq];
      if (result.status.ok()) {
        const profile::Span span(stage, rank_of(job->seq));
        result.status = guarded(stage, [&] { return (this->*member)(*job); });
      }
      return job;
    };
  }

  // A converter stage's node: step() timed into the job's convert time.
  std::function<Job(const Job&)> convert_step(const char* stage,
                                              Status (RankGraph::*member)(RankInFlight&)) {
    return [this, stage, member](const Job& job) {
      RankJobResult& result = results_[job->seq];
      if (result.status.ok()) {
        const profile::Span span(stage, rank_of(job->seq));
        auto t0 = Clock::now();
        result.status = guarded(stage, [&] { return (this->*member)(*job); });
        result.times.convert += seconds_since(t0);
      }
      return job;
    };
  }

  Status write_et_plus(RankInFlight& job) {
    auto t0 = Clock::now();
    const RankJob& spec = jobs_[job.seq];
    RankJobResult& result = results_[job.seq];
    if (plan_.write_et_plus) {
      job.et_plus_file = spec.et_plus_path;
    } else {
      // The legacy layout is converted from a temporary ET+ beside the .et.
      job.et_plus_file = make_temp_path(spec.et_path);
      job.et_plus_is_temporary = true;
      job.temporary_guard = RemoveOnSignal(job.et_plus_file);
    }
    CF_ASSIGN_OR_RETURN(OutputFile out, OutputFile::open(job.et_plus_file));
    const LinkedRank& linked = *job.linked;
    const ByteSink sink = [&out](std::string_view bytes) { out.write(bytes); };
    // The nodes formatted in batches on the workers, two per worker in flight at most (and a
    // gzip'd ET+ compressed on them).
    const ParallelBatches batches = ParallelBatches::two_per_worker();
    out.compress_on(&batches);
    Status written =
        spec.link.format == OutputFormat::kLegacy
            ? write_et_plus_legacy(job.host->trace, *job.device, linked.trace, linked.options, sink)
            : chakraflow::write_et_plus(job.host->trace, *job.device, linked.trace, linked.options,
                                        sink, &batches);
    Status committed = written;
    if (written.ok()) {
      const profile::Span span("commit ET+");
      committed = out.commit();
    }
    result.output_bytes = out.bytes_written();
    result.times.write = seconds_since(t0);
    return committed;
  }

  // The converter's nodes hold copies of what they take from the device trace (copied here, in
  // ranges on the workers): it is let go of here, before they are made.
  Status release_device(RankInFlight& job) {
    const ParallelBatches workers = ParallelBatches::two_per_worker();
    job.device_facts = linked_device_facts(*job.device, job.linked->trace, &workers);
    // The trace's memory (tens of MB: its text mapped, its events) returned to the system. For a
    // run of one rank on several workers, beside the stages that follow (the other workers are
    // idle). Otherwise here: with several ranks every worker is busy and the free would wait
    // behind their work while other traces load, raising the peak memory; on one worker it would
    // only come later, after the next stages took fresh pages where the trace's could have been
    // reused (docs/performance.md).
    if (jobs_.size() == 1 && ParallelBatches::workers() > 1) {
      free_device_.try_put(Release<const DeviceTrace>{std::move(job.device)});
    } else {
      job.device.reset();
    }
    return Status();
  }

  // In memory: the converter's nodes the host loader made, given what linking learned
  // (read_linked_nodes); nothing is read.
  Status complete_nodes(RankInFlight& job) {
    if (!job.host->nodes) return Status::error("internal error: host nodes not read");
    EtPlusNodeSink host_nodes = std::move(*job.host->nodes);
    job.host->nodes.reset();
    const ParallelBatches workers = ParallelBatches::two_per_worker();
    CF_ASSIGN_OR_RETURN(EtPlusTrace nodes,
                        read_linked_nodes(job.host->trace, std::move(host_nodes),
                                          std::move(*job.device_facts), job.linked->trace,
                                          job.linked->options, jobs_[job.seq].convert, &workers));
    job.device_facts.reset();
    job.nodes = std::move(nodes);
    // What linking kept and the converter does not read (each host op's link results, the host
    // nodes; the host text and its strings stay: the nodes view them), let go of before the
    // converter's stages take fresh pages, which can then be theirs.
    job.linked.reset();
    std::vector<HostNode>().swap(job.host->trace.nodes);
    return Status();
  }

  // From a file: the ET+ (or host ET) read into the converter's nodes (load_et_plus).
  Status read_et_plus(RankInFlight& job) {
    // One file: a large one read in shards on the rank's share of the workers.
    const ParallelBatches workers = ParallelBatches::two_per_worker();
    CF_ASSIGN_OR_RETURN(EtPlusFile file,
                        load_et_plus(job.et_plus_file, jobs_[job.seq].convert, kHostWindowBytes,
                                     shards_for(workers, 1, ranks_side_by_side())));
    job.et_plus_host = std::move(file.host);
    job.nodes = std::move(file.trace);
    return Status();
  }

  Status select_nodes(RankInFlight& job) {
    job.convert_stats = job.nodes->stats;
    // The nodes converted in ranges on the workers.
    const ParallelBatches workers = ParallelBatches::two_per_worker();
    job.conversion =
        chakraflow::select_nodes(*job.nodes, jobs_[job.seq].convert, job.convert_stats, &workers);
    return Status();
  }

  Status encode_dependencies(RankInFlight& job) {
    const ParallelBatches workers = ParallelBatches::two_per_worker();
    chakraflow::encode_dependencies(*job.nodes, jobs_[job.seq].convert, job.conversion->graph,
                                    job.convert_stats, &job.conversion->dependencies, &workers);
    return Status();
  }

  Status drop_dangling(RankInFlight& job) {
    const ParallelBatches workers = ParallelBatches::two_per_worker();
    job.chakra = drop_dangling_nodes(*job.nodes, jobs_[job.seq].convert, std::move(*job.conversion),
                                     job.convert_stats, &workers);
    job.conversion.reset();
    return Status();
  }

  Status write_et(RankInFlight& job) {
    const RankJob& spec = jobs_[job.seq];
    // The records encoded in batches on the workers, two per worker in flight at most.
    const ParallelBatches batches = ParallelBatches::two_per_worker();
    // The cycle check beside the encoding: the file is committed only when the trace is acyclic.
    const EtPlusTrace& nodes = *job.nodes;
    const ChakraTrace& chakra = *job.chakra;
    return write_converted(nodes, chakra, std::move(job.convert_stats), spec.et_path, spec.convert,
                           &results_[job.seq].convert, &batches,
                           [&] { return check_acyclic(nodes, chakra); });
  }

  flow::continue_msg finish(const Job& job) {
    const profile::Span span("finish", rank_of(job->seq));
    RankJobResult& result = results_[job->seq];
    if (job->et_plus_is_temporary) {
      std::remove(job->et_plus_file.c_str());
      job->temporary_guard.release();
    }
    result.seconds = seconds_since(started_[job->seq]);
    unfinished_.fetch_sub(1, std::memory_order_relaxed);
    if (on_done_) on_done_(job->seq, result);
    return flow::continue_msg();
  }

  // A job's rank, for its spans on a profile (-1: none given).
  int64_t rank_of(size_t seq) const { return jobs_[seq].link.rank; }

  const RankPlan& plan_;
  const std::vector<RankJob>& jobs_;
  const std::function<void(size_t, const RankJobResult&)>& on_done_;
  // The ranks expected to be in flight side by side from here on: the limiter's bound, or fewer
  // at a batch's end (what the loads' shards are sized by; any count gives the same bytes).
  size_t ranks_side_by_side() const {
    return std::min(max_in_flight_, unfinished_.load(std::memory_order_relaxed));
  }
  const size_t max_in_flight_;
  std::atomic<size_t> unfinished_;  // jobs not yet through finish
  std::vector<RankJobResult> results_;
  std::vector<Clock::time_point> started_;
  size_t next_ = 0;
  Wiring wiring_;

  flow::graph graph_;
  flow::input_node<size_t> source_;
  flow::limiter_node<size_t> limiter_;
  flow::broadcast_node<size_t> fan_out_;
  flow::function_node<size_t, Job> start_;
  flow::function_node<size_t, HostMsg> load_host_;
  flow::function_node<size_t, DeviceMsg> load_device_;
  flow::broadcast_node<DeviceMsg> device_out_;
  flow::function_node<DeviceMsg, ExclusiveMsg> exclusive_;
  flow::function_node<DeviceMsg, GapsMsg> gaps_;
  flow::function_node<DeviceMsg, LaunchersMsg> launchers_;
  flow::join_node<std::tuple<DeviceMsg, LaunchersMsg>, flow::key_matching<size_t>>
      device_and_launchers_;
  flow::function_node<std::tuple<DeviceMsg, LaunchersMsg>, SyncMsg> sync_;
  flow::join_node<std::tuple<HostMsg, DeviceMsg>, flow::key_matching<size_t>> host_and_device_;
  flow::function_node<std::tuple<HostMsg, DeviceMsg>, MapMsg> map_;
  flow::join_node<Joined, flow::key_matching<size_t>> join_;
  flow::function_node<Joined, Job> assign_ids_;
  flow::join_node<std::tuple<Job, SyncMsg>, flow::key_matching<size_t>> ids_and_sync_;
  flow::function_node<std::tuple<Job, SyncMsg>, Job> add_sync_;
  flow::function_node<Job, Job> write_et_plus_;
  flow::function_node<Job, Job> release_device_;
  flow::function_node<Job, Job> complete_nodes_;
  flow::function_node<Job, Job> read_et_plus_;
  flow::function_node<Job, Job> select_nodes_;
  flow::function_node<Job, Job> encode_dependencies_;
  flow::function_node<Job, Job> drop_dangling_;
  flow::function_node<Job, Job> write_et_;
  flow::function_node<Job, flow::continue_msg> finish_;
  // Frees a device trace off its rank's chain of stages (put by release_device, no edges).
  flow::function_node<Release<const DeviceTrace>, flow::continue_msg> free_device_;
};

}  // namespace

std::vector<RankJobResult> run_rank_graph(
    const RankPlan& plan, const std::vector<RankJob>& jobs, size_t max_in_flight,
    const std::function<void(size_t seq, const RankJobResult& result)>& on_done) {
  return RankGraph(plan, jobs, max_in_flight, on_done).run();
}

RankJobResult run_link_job(const RankJob& job) {
  RankPlan plan;
  plan.format = job.link.format;
  return std::move(run_rank_graph(plan, {job}, 1).front());
}

std::string rank_graph_dot(const RankPlan& plan) {
  static const std::vector<RankJob> kNoJobs;
  static const std::function<void(size_t, const RankJobResult&)> kNoCallback;
  return RankGraph(plan, kNoJobs, 1, kNoCallback).dot();
}

}  // namespace chakraflow
