#include "stages/common/stats.h"

namespace chakraflow {

void DataProblems::add(StatKind kind, std::string example) {
  Entry& e = entries_[kind];
  ++e.count;
  if (!example.empty() && e.examples.size() < kMaxExamples)
    e.examples.push_back(std::move(example));
}

void DataProblems::add_count(StatKind kind, uint64_t n) {
  if (n == 0) return;
  entries_[kind].count += n;
}

uint64_t DataProblems::count(StatKind kind) const {
  auto it = entries_.find(kind);
  return it == entries_.end() ? 0 : it->second.count;
}

void DataProblems::merge(const DataProblems& other) {
  for (const auto& [kind, entry] : other.entries_) {
    Entry& e = entries_[kind];
    e.count += entry.count;
    for (const auto& ex : entry.examples) {
      if (e.examples.size() < kMaxExamples) e.examples.push_back(ex);
    }
  }
}

}  // namespace chakraflow
