// LinkStats: counts of the data problems a stage met without stopping, by kind, with a few
// examples each (docs/bad_input.md). Every stage of every library reports into one; a run prints
// them and writes them to its summary. Value type; thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace chakraflow {

// Counts of data problems by kind, with a few examples each. Printed at the end of a run and
// written to the run summary; nothing is only logged.
class LinkStats {
 public:
  static constexpr size_t kMaxExamples = 5;
  void add(const std::string& kind, std::string example = {});
  void add_count(const std::string& kind, uint64_t n);
  uint64_t count(const std::string& kind) const;
  struct Entry {
    uint64_t count = 0;
    std::vector<std::string> examples;
  };
  const std::map<std::string, Entry>& entries() const { return entries_; }
  void merge(const LinkStats& other);

 private:
  std::map<std::string, Entry> entries_;
};

}  // namespace chakraflow
