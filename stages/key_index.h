// An index from 64-bit keys (rf_ids, correlation ids) to 32-bit positions in a vector of records,
// for the stages that look records up by an id of the trace. Open addressing in two flat arrays: a
// std::unordered_map allocated a node per key and divided for every lookup, a few percent of a
// link's time on maps with one key per event. Lookups only (no iteration), so the layout, which
// depends on insertion order, never reaches an output.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace chakraflow {

class KeyIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;  // no value: not a valid position

  // Room for `expected` keys before the first growth.
  explicit KeyIndex(size_t expected = 0) { rehash(capacity_for(expected)); }

  // The value stored for `key`, after storing `value` there if the key was absent. Returns a
  // pointer to the stored value (valid until the next insertion) and whether it was inserted.
  std::pair<uint32_t*, bool> try_emplace(uint64_t key, uint32_t value) {
    if (2 * (size_ + 1) > keys_.size()) rehash(2 * keys_.size());
    size_t s = slot(key);
    while (values_[s] != kNone) {
      if (keys_[s] == key) return {&values_[s], false};
      s = (s + 1) & mask_;
    }
    keys_[s] = key;
    values_[s] = value;
    ++size_;
    return {&values_[s], true};
  }
  // Stores `value` for `key`, replacing the value stored before.
  void assign(uint64_t key, uint32_t value) { *try_emplace(key, value).first = value; }

  // The value stored for `key`, or kNone.
  uint32_t find(uint64_t key) const {
    for (size_t s = slot(key);; s = (s + 1) & mask_) {
      if (values_[s] == kNone || keys_[s] == key) return values_[s];
    }
  }

  size_t size() const { return size_; }

 private:
  static size_t capacity_for(size_t keys) {
    size_t c = 16;
    while (c < 2 * keys) c *= 2;
    return c;
  }
  // Fibonacci hashing: the top bits of the key times 2^64 / golden ratio.
  size_t slot(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void rehash(size_t capacity) {
    std::vector<uint64_t> old_keys = std::move(keys_);
    std::vector<uint32_t> old_values = std::move(values_);
    keys_.assign(capacity, 0);
    values_.assign(capacity, kNone);
    mask_ = capacity - 1;
    shift_ = 64;
    for (size_t c = capacity; c > 1; c /= 2) --shift_;
    size_ = 0;
    for (size_t s = 0; s < old_values.size(); ++s) {
      if (old_values[s] != kNone) try_emplace(old_keys[s], old_values[s]);
    }
  }

  std::vector<uint64_t> keys_;
  std::vector<uint32_t> values_;  // kNone: an empty slot
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace chakraflow
