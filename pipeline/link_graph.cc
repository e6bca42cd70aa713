#include "pipeline/link_graph.h"

#include <oneapi/tbb/flow_graph.h>

#include <chrono>
#include <memory>
#include <tuple>

#include "stages/link/device_trace_loader.h"
#include "stages/link/et_plus_legacy_writer.h"
#include "stages/link/et_plus_writer.h"
#include "stages/common/file_io.h"
#include "stages/link/host_et_loader.h"

namespace chakraflow {
namespace {

namespace flow = oneapi::tbb::flow;

// A cheap handle passed between nodes: the job's sequence number and a shared immutable value,
// or the error that stopped the job upstream.
template <typename T>
struct Msg {
  size_t seq = 0;
  // Mutable so that the last node can let go of a value early (LinkedRank::release_device).
  mutable std::shared_ptr<const T> value;
  std::shared_ptr<const Status> error;
  size_t key() const { return seq; }
};

template <typename T>
Msg<T> ok(size_t seq, T&& value) {
  return Msg<T>{seq, std::make_shared<const T>(std::move(value)), nullptr};
}
template <typename T>
Msg<T> failed(size_t seq, Status status) {
  return Msg<T>{seq, nullptr, std::make_shared<const Status>(std::move(status))};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs `body` turning exceptions into a failed message.
template <typename T, typename Body>
Msg<T> guarded(size_t seq, std::string_view stage, Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return failed<T>(seq, Status::errorf("{}: out of memory", stage));
  } catch (const std::exception& e) {
    return failed<T>(seq, Status::errorf("{}: internal error: {}", stage, e.what()));
  }
}

}  // namespace

std::vector<LinkJobResult> run_link_graph(const std::vector<LinkJob>& jobs, size_t max_in_flight,
                                          const LinkGraphHooks& hooks) {
  std::vector<LinkJobResult> results(jobs.size());
  if (jobs.empty()) return results;
  if (max_in_flight == 0) max_in_flight = 1;
  std::vector<std::chrono::steady_clock::time_point> started(jobs.size());

  using HostMsg = Msg<HostTrace>;
  using DeviceMsg = Msg<DeviceTrace>;
  using ExclusiveMsg = Msg<ExclusiveDurations>;
  using GapsMsg = Msg<GapDependencies>;
  using LaunchersMsg = Msg<std::pair<LauncherLinks, LinkStats>>;
  using SyncMsg = Msg<std::pair<SyncDependencies, LinkStats>>;
  using Joined = std::tuple<HostMsg, DeviceMsg, ExclusiveMsg, GapsMsg, LaunchersMsg, SyncMsg>;

  flow::graph g;

  size_t next = 0;
  flow::input_node<size_t> source(g, [&](oneapi::tbb::flow_control& fc) -> size_t {
    if (next >= jobs.size()) {
      fc.stop();
      return 0;
    }
    started[next] = std::chrono::steady_clock::now();
    return next++;
  });
  flow::limiter_node<size_t> limiter(g, max_in_flight);
  flow::broadcast_node<size_t> fan_out(g);

  flow::function_node<size_t, HostMsg> load_host(g, flow::unlimited, [&](size_t seq) {
    return guarded<HostTrace>(seq, "load host trace", [&] {
      auto t0 = std::chrono::steady_clock::now();
      auto trace = hooks.load_host ? hooks.load_host(seq) : load_host_trace(jobs[seq].host_path);
      results[seq].times.load_host = seconds_since(t0);
      if (!trace.ok()) return failed<HostTrace>(seq, trace.status());
      return ok(seq, std::move(trace).value());
    });
  });
  flow::function_node<size_t, DeviceMsg> load_device(g, flow::unlimited, [&](size_t seq) {
    return guarded<DeviceTrace>(seq, "load device trace", [&] {
      auto t0 = std::chrono::steady_clock::now();
      auto trace = load_device_trace(jobs[seq].device_path);
      results[seq].times.load_device = seconds_since(t0);
      if (!trace.ok()) return failed<DeviceTrace>(seq, trace.status());
      return ok(seq, std::move(trace).value());
    });
  });
  flow::broadcast_node<DeviceMsg> device_out(g);

  flow::function_node<DeviceMsg, ExclusiveMsg> exclusive(
      g, flow::unlimited, [&](const DeviceMsg& m) {
        if (!m.value) return ExclusiveMsg{m.seq, nullptr, m.error};
        return guarded<ExclusiveDurations>(m.seq, "exclusive durations", [&] {
          auto t0 = std::chrono::steady_clock::now();
          auto r = compute_exclusive_durations(*m.value, jobs[m.seq].options.compat);
          results[m.seq].times.exclusive = seconds_since(t0);
          return ok(m.seq, std::move(r));
        });
      });
  flow::function_node<DeviceMsg, GapsMsg> gaps(g, flow::unlimited, [&](const DeviceMsg& m) {
    if (!m.value) return GapsMsg{m.seq, nullptr, m.error};
    return guarded<GapDependencies>(m.seq, "gap dependencies", [&] {
      auto t0 = std::chrono::steady_clock::now();
      auto r = compute_gap_dependencies(*m.value, jobs[m.seq].options.gap_threshold);
      results[m.seq].times.gaps = seconds_since(t0);
      return ok(m.seq, std::move(r));
    });
  });
  flow::function_node<DeviceMsg, LaunchersMsg> launchers(
      g, flow::unlimited, [&](const DeviceMsg& m) {
        if (!m.value) return LaunchersMsg{m.seq, nullptr, m.error};
        return guarded<std::pair<LauncherLinks, LinkStats>>(m.seq, "launcher correlation", [&] {
          auto t0 = std::chrono::steady_clock::now();
          LinkStats stats;
          auto r = correlate_launchers(*m.value, jobs[m.seq].options.compat, stats);
          results[m.seq].times.launchers = seconds_since(t0);
          return ok(m.seq, std::make_pair(std::move(r), std::move(stats)));
        });
      });

  // Sync dependencies need the device trace and the launchers of its GPU ops.
  flow::join_node<std::tuple<DeviceMsg, LaunchersMsg>, flow::key_matching<size_t>>
      device_and_launchers(
          g, [](const DeviceMsg& m) { return m.seq; }, [](const LaunchersMsg& m) { return m.seq; });
  flow::function_node<std::tuple<DeviceMsg, LaunchersMsg>, SyncMsg> sync(
      g, flow::unlimited, [&](const std::tuple<DeviceMsg, LaunchersMsg>& in) {
        const DeviceMsg& d = std::get<0>(in);
        const LaunchersMsg& l = std::get<1>(in);
        if (!d.value) return SyncMsg{d.seq, nullptr, d.error};
        if (!l.value) return SyncMsg{d.seq, nullptr, l.error};
        return guarded<std::pair<SyncDependencies, LinkStats>>(d.seq, "sync dependencies", [&] {
          LinkStats stats;
          auto r = compute_sync_dependencies(*d.value, l.value->first, jobs[d.seq].options.compat,
                                             stats);
          return ok(d.seq, std::make_pair(std::move(r), std::move(stats)));
        });
      });

  flow::join_node<Joined, flow::key_matching<size_t>> join(
      g, [](const HostMsg& m) { return m.seq; }, [](const DeviceMsg& m) { return m.seq; },
      [](const ExclusiveMsg& m) { return m.seq; }, [](const GapsMsg& m) { return m.seq; },
      [](const LaunchersMsg& m) { return m.seq; }, [](const SyncMsg& m) { return m.seq; });

  flow::function_node<Joined, size_t> link_and_write(g, flow::unlimited, [&](const Joined& in) {
    const size_t seq = std::get<0>(in).seq;
    LinkJobResult& result = results[seq];
    const LinkJob& job = jobs[seq];
    try {
      // The first error upstream wins (host before device before stages).
      for (const Status* e : {std::get<0>(in).error.get(), std::get<1>(in).error.get(),
                              std::get<2>(in).error.get(), std::get<3>(in).error.get(),
                              std::get<4>(in).error.get(), std::get<5>(in).error.get()}) {
        if (e != nullptr) {
          result.status = *e;
          break;
        }
      }
      if (result.status.ok()) {
        const HostTrace& host = *std::get<0>(in).value;
        const DeviceTrace& device = *std::get<1>(in).value;
        const auto& [launch, launch_stats] = *std::get<4>(in).value;
        const auto& [sync, sync_stats] = *std::get<5>(in).value;
        result.input_bytes = host.text.size() + device.text.size();
        auto t0 = std::chrono::steady_clock::now();
        LinkStats stats = launch_stats;
        stats.merge(sync_stats);
        // Later stages need the mode actually used (auto resolves per device trace).
        LinkOptions options = job.options;
        options.mode = resolve_mode(device, options.mode);
        auto mapping = map_host_to_device(host, device, options, stats);
        if (!mapping.ok()) {
          result.status = mapping.status();
        } else {
          LinkedTrace linked = assign_ids({host, device, *std::get<2>(in).value,
                                           *std::get<3>(in).value, launch, *mapping, &sync},
                                          options, std::move(stats));
          result.times.link = seconds_since(t0);
          result.summary = summarize(host, device, launch, *mapping, *std::get<3>(in).value, linked,
                                     options.mode);
          result.stats = linked.stats;
          auto t1 = std::chrono::steady_clock::now();
          if (!job.output_path.empty()) {
            auto out = OutputFile::open(job.output_path);
            if (!out.ok()) {
              result.status = out.status();
            } else {
              auto write = job.options.format == OutputFormat::kLegacy ? write_et_plus_legacy
                                                                       : write_et_plus;
              Status written = write(host, device, linked, options,
                                     [&out](std::string_view bytes) { out->write(bytes); });
              result.status = written.ok() ? out->commit() : written;
              result.output_bytes = out->bytes_written();
            }
          }
          result.times.write = seconds_since(t1);
          if (result.status.ok() && hooks.convert_linked) {
            result.seconds = seconds_since(started[seq]);
            auto t2 = std::chrono::steady_clock::now();
            // The other messages' values (exclusive durations, launchers ...) hold indices, not
            // views into the device trace: once the hook lets go of it, it is freed.
            const std::function<void()> release_device = [&in] { std::get<1>(in).value.reset(); };
            try {
              result.after_status =
                  hooks.convert_linked(seq, {host, device, linked, options, release_device});
            } catch (const std::bad_alloc&) {
              result.after_status = Status::error("out of memory");
            } catch (const std::exception& e) {
              result.after_status = Status::errorf("internal error: {}", e.what());
            }
            result.after_seconds = seconds_since(t2);
            return seq;
          }
        }
      }
    } catch (const std::bad_alloc&) {
      result.status = Status::error("link: out of memory");
    } catch (const std::exception& e) {
      result.status = Status::errorf("link: internal error: {}", e.what());
    }
    result.seconds = seconds_since(started[seq]);
    return seq;
  });

  // What follows linking (e.g. conversion), then progress; the job leaves the limiter after it.
  flow::function_node<size_t, flow::continue_msg> finish(g, flow::unlimited, [&](size_t seq) {
    LinkJobResult& result = results[seq];
    if (result.status.ok() && hooks.after_link && !hooks.convert_linked) {
      auto t0 = std::chrono::steady_clock::now();
      try {
        result.after_status = hooks.after_link(seq);
      } catch (const std::bad_alloc&) {
        result.after_status = Status::error("out of memory");
      } catch (const std::exception& e) {
        result.after_status = Status::errorf("internal error: {}", e.what());
      }
      result.after_seconds = seconds_since(t0);
    }
    if (hooks.on_done) hooks.on_done(seq, result);
    return flow::continue_msg();
  });

  // The graph, in one place.
  flow::make_edge(source, limiter);
  flow::make_edge(limiter, fan_out);
  // The host loader's edge last: on one thread the successor added last runs first, and the host
  // trace loaded before the device trace lowers the peak (the device events, larger than the host
  // nodes, are not yet alive while the parser's index of the larger host text is).
  flow::make_edge(fan_out, load_device);
  flow::make_edge(fan_out, load_host);
  flow::make_edge(load_device, device_out);
  flow::make_edge(device_out, exclusive);
  flow::make_edge(device_out, gaps);
  flow::make_edge(device_out, launchers);
  flow::make_edge(load_host, flow::input_port<0>(join));
  flow::make_edge(device_out, flow::input_port<1>(join));
  flow::make_edge(exclusive, flow::input_port<2>(join));
  flow::make_edge(gaps, flow::input_port<3>(join));
  flow::make_edge(launchers, flow::input_port<4>(join));
  flow::make_edge(device_out, flow::input_port<0>(device_and_launchers));
  flow::make_edge(launchers, flow::input_port<1>(device_and_launchers));
  flow::make_edge(device_and_launchers, sync);
  flow::make_edge(sync, flow::input_port<5>(join));
  flow::make_edge(join, link_and_write);
  flow::make_edge(link_and_write, finish);
  flow::make_edge(finish, limiter.decrementer());

  source.activate();
  g.wait_for_all();
  return results;
}

}  // namespace chakraflow
