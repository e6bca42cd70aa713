// Moving records to new positions in place, for vectors of large records (converter nodes) that
// must not be copied into a second vector: a second vector's fresh pages cost the kernel's zeroing
// and raise the peak memory.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace chakraflow {

// Moves v[i] to position target[i] for every i < v.size(), following the permutation's cycles:
// each record is moved once (plus a swap), and no second vector is allocated beyond one bit per
// record. `target` must be one-to-one into [0, total), total >= v.size(); v is grown to `total`
// first, and a position no record targets holds a default-constructed record.
template <typename T>
void move_to_targets(std::vector<T>& v, const std::vector<uint32_t>& target, size_t total) {
  const size_t n = v.size();
  v.resize(total);
  std::vector<bool> taken(n);  // the record at this position has been picked up
  for (uint32_t start = 0; start < n; ++start) {
    if (taken[start]) continue;
    taken[start] = true;
    T carried = std::move(v[start]);
    uint32_t to = target[start];
    while (to < n && !taken[to]) {  // place it, and pick up the record that was there
      taken[to] = true;
      std::swap(carried, v[to]);
      to = target[to];
    }
    v[to] = std::move(carried);
  }
}

}  // namespace chakraflow
