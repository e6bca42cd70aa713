#include "stages/simulate/simulator_timeline.h"

#include <algorithm>

#include "stages/common/file_io.h"
#include "stages/common/json_util.h"
#include "stages/et/schema.h"
#include "stages/simulate/simulator_comm.h"

namespace chakraflow {
namespace {

// µs with ns precision.
void append_us(std::string& out, int64_t ns) {
  const int64_t whole = ns / 1000, frac = ns % 1000;
  if (ns < 0) {
    out += fmt::format("{:.3f}", ns / 1000.0);
  } else if (frac == 0) {
    out += fmt::format("{}", whole);
  } else {
    out += fmt::format("{}.{:03}", whole, frac);
  }
}

const char* category(SimKind kind) {
  switch (kind) {
    case SimKind::kCpu:
      return "cpu";
    case SimKind::kGpu:
      return "gpu";
    case SimKind::kCollective:
      return "collective";
    case SimKind::kP2p:
      return "p2p";
  }
  return "?";
}

// The events of a timeline, comma-separated, one a line.
class EventList {
 public:
  EventList(std::string& out, bool* first) : out_(out), first_(first) {}
  // Starts the next event; returns the output to write it to.
  std::string& next() {
    out_ += *first_ ? "\n" : ",\n";
    *first_ = false;
    return out_;
  }

 private:
  std::string& out_;
  bool* first_;
};

// The metadata events naming a rank (a process) and its resources (threads), in order.
void append_names(const RankSimulator& rank, EventList& events) {
  const uint32_t pid = rank.rank();
  events.next() += fmt::format(
      "{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {}, \"args\": {{\"name\": \"rank "
      "{}\"}}}}",
      pid, pid);
  events.next() += fmt::format(
      "{{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": {}, \"args\": "
      "{{\"sort_index\": {}}}}}",
      pid, pid);
  const auto& resources = rank.resources();
  for (size_t k = 0; k < resources.size(); ++k) {
    events.next() += fmt::format(
        "{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {}, \"tid\": {}, \"args\": "
        "{{\"name\": \"{}\"}}}}",
        pid, k + 1, resources[k].label());
    events.next() += fmt::format(
        "{{\"ph\": \"M\", \"name\": \"thread_sort_index\", \"pid\": {}, \"tid\": {}, \"args\": "
        "{{\"sort_index\": {}}}}}",
        pid, k + 1, k + 1);
  }
}

// A communication node's args: its bytes, collective and group or peer, and (finished) how long
// it waited and transferred.
void append_comm_args(const SimNode& n, const SimComm& c, bool finished, std::string& out) {
  out += fmt::format(", \"bytes\": {}", c.bytes);
  if (c.kind == CommKind::kCollective) {
    out += fmt::format(", \"collective\": \"{}\"", collective_name(c.comm_type));
    if (!c.pg_name.empty()) {
      out += ", \"pg_name\": ";
      json::append_escaped(out, c.pg_name);
    }
  } else {
    out += fmt::format(", \"{}\": {}", c.kind == CommKind::kSend ? "dst" : "src", c.peer);
  }
  if (finished && c.transfer_start != kSimNever) {
    out += ", \"wait_us\": ";
    append_us(out, c.transfer_start - n.start);
    out += ", \"transfer_us\": ";
    append_us(out, n.end - c.transfer_start);
    if (c.remote_rank != kSimNone) out += fmt::format(", \"decided_by_rank\": {}", c.remote_rank);
  }
}

// A node that started: a complete event ("X"), or an instant one ("i") where it still waits.
void append_node(const RankSimulator& rank, const SimNode& n, std::string& out) {
  const bool finished = n.end != kSimNever;
  out += "{\"ph\": \"";
  out += finished ? "X" : "i";
  out += "\", \"name\": ";
  const std::string_view name = rank.name(n);
  const std::string label = name.empty() ? fmt::format("node {}", n.id) : std::string(name);
  json::append_escaped(out, finished ? label : "waiting: " + label);
  out += fmt::format(", \"cat\": \"{}\", \"pid\": {}, \"tid\": {}, \"ts\": ", category(n.kind),
                     rank.rank(), n.resource + 1);
  append_us(out, n.start);
  if (finished) {
    out += ", \"dur\": ";
    append_us(out, n.end - n.start);
  } else {
    out += ", \"s\": \"t\"";
  }
  out += fmt::format(", \"args\": {{\"id\": {}", n.id);
  if (n.delay > 0) {
    out += ", \"recorded_delay_us\": ";
    append_us(out, n.delay);
  }
  if (n.comm != kSimNone) append_comm_args(n, rank.comms()[n.comm], finished, out);
  out += "}}";
}

void append_rank(const RankSimulator& rank, std::string& out, bool* first) {
  EventList events(out, first);
  append_names(rank, events);
  // Nodes by simulated start (then index): the file reads in time order per rank.
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < rank.nodes().size(); ++i) {
    if (rank.nodes()[i].start != kSimNever) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return rank.nodes()[a].start < rank.nodes()[b].start;
  });
  for (uint32_t i : order) append_node(rank, rank.nodes()[i], events.next());
}

}  // namespace

void append_timeline_json(const std::vector<const RankSimulator*>& ranks, std::string& out) {
  out += "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [";
  bool first = true;
  for (const RankSimulator* r : ranks) append_rank(*r, out, &first);
  out += "\n]}\n";
}

Status write_timeline(const std::vector<const RankSimulator*>& ranks, const std::string& path) {
  CF_ASSIGN_OR_RETURN(OutputFile file, OutputFile::open(path));
  file.write("{\"displayTimeUnit\": \"ns\", \"traceEvents\": [");
  bool first = true;
  std::string chunk;
  for (const RankSimulator* r : ranks) {
    chunk.clear();
    append_rank(*r, chunk, &first);
    file.write(chunk);
  }
  file.write("\n]}\n");
  return file.commit();
}

}  // namespace chakraflow
