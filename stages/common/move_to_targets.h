// Moving records to new positions in place, for vectors of large records (converter nodes) that
// must not be copied into a second vector: a second vector's fresh pages cost the kernel's zeroing
// and raise the peak memory.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "stages/common/ordered_batches.h"

namespace chakraflow {

// Moves v[i] to position target[i] for every i < v.size(), in place: each record is moved once
// (plus one move per cycle), filling each position from the record that goes there, and no second
// vector of records is allocated (one index per position instead). `target` must be one-to-one into
// [0, total), total >= v.size(); v is grown to `total` first, and a position no record targets
// holds a default-constructed record.
//
// The moves form paths (from each position past the records back to a position no record
// targets) and cycles (among the records' own positions); no two share a position. `batches` (may
// be null): the index and the paths in ranges on it, concurrently (a linked rank's nodes move
// along paths only: its GPU ops' nodes are the positions past the records); the cycles after, in
// turn. The result is the same whatever the batches.
template <typename T>
void move_to_targets(std::vector<T>& v, const std::vector<uint32_t>& target, size_t total,
                     const OrderedBatches* batches = nullptr) {
  constexpr uint32_t kNone = UINT32_MAX;
  constexpr size_t kRange = 16384;  // positions per range of the index and of the paths' ends
  const OrderedBatches& run = batches_or_in_turn(batches);
  const size_t per_range = run.range_size(kRange);
  const size_t n = v.size();
  v.resize(total);
  std::vector<uint32_t> source(total, kNone);  // the record that goes to each position
  for_each_range(run, n, per_range, [&](size_t, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) source[target[i]] = static_cast<uint32_t>(i);
  });
  // Paths: from each position past the records (empty), back to a position no record targets.
  for_each_range(run, total - n, per_range, [&](size_t, size_t begin, size_t end) {
    for (size_t path = n + begin; path < n + end; ++path) {
      size_t hole = path;
      while (source[hole] != kNone) {
        const uint32_t from = source[hole];
        v[hole] = std::move(v[from]);
        source[hole] = kNone;  // filled
        hole = from;
      }
      if (hole != path) v[hole] = T();
    }
  });
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
