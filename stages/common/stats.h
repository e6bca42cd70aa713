// DataProblems: counts of the data problems a stage met without stopping, by kind (the closed set
// of stat_kinds.h), with a few examples each (docs/bad_input.md). Every stage of every library
// reports into one; a run prints them and writes them to its summary. Value type;
// thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stages/common/stat_kinds.h"

namespace chakraflow {

// Orders kinds by their key: reports and JSON documents list the kinds in this order.
struct StatKeyOrder {
  bool operator()(StatKind a, StatKind b) const { return stat_key(a) < stat_key(b); }
};

// Counts of data problems by kind, with a few examples each. Printed at the end of a run and
// written to the run summary; nothing is only logged.
class DataProblems {
 public:
  static constexpr size_t kMaxExamples = 5;
  struct Entry {
    uint64_t count = 0;
    std::vector<std::string> examples;
  };
  // One more problem of `kind`; `example` (if not empty) names where, kept among the first few.
  void add(StatKind kind, std::string example = {});
  // `n` more problems of `kind`, without examples (nothing when n is 0).
  void add_count(StatKind kind, uint64_t n);
  uint64_t count(StatKind kind) const;
  // The kinds counted at least once, by key.
  const std::map<StatKind, Entry, StatKeyOrder>& entries() const { return entries_; }
  void merge(const DataProblems& other);

 private:
  std::map<StatKind, Entry, StatKeyOrder> entries_;
};

}  // namespace chakraflow
