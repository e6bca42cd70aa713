// chakraflow.Feeder: the windowed feeder (stages/feed/et_feeder.h) driven from Python, by
// iteration (issue -> complete, as `chakraflow feed` does for one file) or by hand.
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proto/et_def.pb.h"
#include "python/binding.h"
#include "stages/feed/et_feeder.h"

namespace chakraflow::python {
namespace {

namespace pb = ChakraProtoMsg;

class Feeder {
 public:
  Feeder(const std::string& path, std::optional<uint64_t> window, bool ctrl_deps) {
    FeederOptions options;
    if (window) {
      if (*window < 1) throw py::value_error("window must be at least 1");
      options.window = *window;
    }
    options.ctrl_deps = ctrl_deps;
    StatusOr<std::unique_ptr<EtFeeder>> opened = Status();
    {
      py::gil_scoped_release release;
      opened = EtFeeder::open(path, options);
    }
    if (!opened.ok()) raise(opened.status());
    feeder_ = std::move(*opened);
  }

  // The iteration: completes the node it returned last (unless completed by hand), then issues
  // the next; `chakraflow feed`'s loop for one file.
  py::object next() {
    if (pending_) {
      const NodeId id = *pending_;
      pending_.reset();
      if (feeder_->is_in_flight(id)) check(feeder_->complete(id));
    }
    const FeederNode* node = issue_one();
    if (node == nullptr) {
      if (feeder_->state() == FeedState::kError) raise(feeder_->error());
      throw py::stop_iteration();
    }
    pending_ = node->id;
    return decode(*node);
  }

  // Issues the next ready node (now in flight), or None when none is ready now.
  py::object issue() {
    const FeederNode* node = issue_one();
    if (node == nullptr) {
      if (feeder_->state() == FeedState::kError) raise(feeder_->error());
      return py::none();
    }
    return decode(*node);
  }

  // Issues every node ready now, in issue order.
  py::list issuable() {
    py::list out;
    while (const FeederNode* node = issue_one()) out.append(decode(*node));
    if (out.empty() && feeder_->state() == FeedState::kError) raise(feeder_->error());
    return out;
  }

  void complete(NodeId id) {
    if (pending_ == id) pending_.reset();
    check(feeder_->complete(id));
  }

  std::string state() {
    FeedState s;
    {
      py::gil_scoped_release release;
      s = feeder_->state();
    }
    return to_string(s);
  }

  // Why the feed stalled: the report `chakraflow feed` prints, and the ids.
  py::dict stall() const {
    const StallReport report = feeder_->stall_report();
    py::dict out;
    out["report"] = report.to_string();
    out["waiting_nodes"] = report.waiting_nodes;
    std::vector<NodeId> missing, unreleased;
    for (const auto& b : report.missing) missing.push_back(b.id);
    for (const auto& b : report.unreleased) unreleased.push_back(b.id);
    out["missing"] = missing;
    out["unreleased"] = unreleased;
    out["cycles"] = report.cycles;
    return out;
  }

  std::string checksum() const { return fmt::format("{:016x}", checksum_.value()); }
  uint64_t issued() const { return issued_; }
  const std::string& path() const { return feeder_->path(); }

 private:
  const FeederNode* issue_one() {
    const FeederNode* node;
    {
      py::gil_scoped_release release;  // may read the next part of the file
      node = feeder_->issue();
    }
    if (node != nullptr) {
      checksum_.add(node->id);
      ++issued_;
    }
    return node;
  }

  py::object decode(const FeederNode& node) const {
    pb::Node message;
    check(node.parse(&message));
    return make_node(message);
  }

  static void check(const Status& s) {
    if (!s.ok()) raise(s);
  }

  std::unique_ptr<EtFeeder> feeder_;
  std::optional<NodeId> pending_;  // returned by the iteration, not completed yet
  IssueChecksum checksum_;
  uint64_t issued_ = 0;
};

}  // namespace

void bind_feeder(py::module_& m) {
  py::class_<Feeder>(m, "Feeder",
                     "Issues the nodes of a Chakra .et trace in dependency order, reading it in a "
                     "bounded window (the feeder simulators use).")
      .def(py::init<const std::string&, std::optional<uint64_t>, bool>(), py::arg("path"),
           py::kw_only(), py::arg("window") = py::none(), py::arg("ctrl_deps") = false)
      .def("__iter__", [](Feeder& f) -> Feeder& { return f; })
      .def("__next__", &Feeder::next)
      .def("issue", &Feeder::issue)
      .def("issuable", &Feeder::issuable)
      .def("complete", &Feeder::complete, py::arg("node_id"))
      .def_property_readonly("state", &Feeder::state)
      .def_property_readonly("stall", &Feeder::stall)
      .def_property_readonly("checksum", &Feeder::checksum)
      .def_property_readonly("issued", &Feeder::issued)
      .def_property_readonly("path", &Feeder::path);
}

}  // namespace chakraflow::python
