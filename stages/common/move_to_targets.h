// Moving records to new positions in place, for vectors of large records (converter nodes) that
// must not be copied into a second vector: a second vector's fresh pages cost the kernel's zeroing
// and raise the peak memory.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace chakraflow {

// Moves v[i] to position target[i] for every i < v.size(), in place: each record is moved once
// (plus one move per cycle), filling each position from the record that goes there, and no second
// vector of records is allocated (one index per position instead). `target` must be one-to-one into
// [0, total), total >= v.size(); v is grown to `total` first, and a position no record targets
// holds a default-constructed record.
template <typename T>
void move_to_targets(std::vector<T>& v, const std::vector<uint32_t>& target, size_t total) {
  constexpr uint32_t kNone = UINT32_MAX;
  const size_t n = v.size();
  v.resize(total);
  std::vector<uint32_t> source(total, kNone);  // the record that goes to each position
  for (uint32_t i = 0; i < n; ++i) source[target[i]] = i;
  // Paths: from each position past the records (empty), back to a position no record targets.
  for (size_t end = n; end < total; ++end) {
    size_t hole = end;
    while (source[hole] != kNone) {
      const uint32_t from = source[hole];
      v[hole] = std::move(v[from]);
      source[hole] = kNone;  // filled
      hole = from;
    }
    if (hole != end) v[hole] = T();
  }
  // What is left is cycles among the records' own positions.
  for (uint32_t start = 0; start < n; ++start) {
    if (source[start] == kNone || source[start] == start) continue;  // filled, or stays
    T carried = std::move(v[start]);
    size_t hole = start;
    while (source[hole] != start) {
      const uint32_t from = source[hole];
      v[hole] = std::move(v[from]);
      source[hole] = kNone;
      hole = from;
    }
    v[hole] = std::move(carried);
    source[hole] = kNone;
  }
}

}  // namespace chakraflow
