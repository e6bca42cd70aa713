// An index from 64-bit keys (node ids, rf_ids, correlation ids) to 32-bit values (positions in a
// vector of records, list heads): open addressing with linear probing in one flat table, Fibonacci
// hashing, backward-shift deletion. The feeder keeps its live nodes and waiting lists in it; the
// linker its rf_id lookups and (through DenseKeyIndex, below) its correlation lookups of spread
// ids, where a std::unordered_map allocated a node per key and divided on every lookup (a few
// percent of a link's time). There is no iteration: the layout, which depends on the order of
// insertion, never reaches an output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace chakraflow {

class KeyIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;  // no value; never stored

  // Room for `expected` keys before the first growth.
  explicit KeyIndex(size_t expected = 0) {
    size_t capacity = 16;
    while (capacity < 2 * expected) capacity *= 2;
    reset(capacity);
  }

  // The value stored for `key`, or kNone.
  uint32_t find(uint64_t key) const {
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      const Entry& e = table_[i];
      if (e.val == kNone || e.key == key) return e.val;
    }
  }
  // The stored value, to change in place (valid until the next insertion or removal), or nullptr.
  uint32_t* find_ptr(uint64_t key) {
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      Entry& e = table_[i];
      if (e.val == kNone) return nullptr;
      if (e.key == key) return &e.val;
    }
  }
  // Stores `val` for `key`, which must be absent.
  void insert(uint64_t key, uint32_t val) {
    if ((size_ + 1) * 2 > table_.size()) grow();
    size_t i = home(key);
    while (table_[i].val != kNone) i = (i + 1) & mask_;
    table_[i] = Entry{key, val};
    ++size_;
  }
  // The value stored for `key`, after storing `val` there if the key was absent. Returns a pointer
  // to the stored value (valid until the next insertion or removal) and whether it was inserted.
  std::pair<uint32_t*, bool> try_emplace(uint64_t key, uint32_t val) {
    if ((size_ + 1) * 2 > table_.size()) grow();
    size_t i = home(key);
    for (; table_[i].val != kNone; i = (i + 1) & mask_) {
      if (table_[i].key == key) return {&table_[i].val, false};
    }
    table_[i] = Entry{key, val};
    ++size_;
    return {&table_[i].val, true};
  }
  // Stores `val` for `key`, replacing the value stored before.
  void assign(uint64_t key, uint32_t val) { *try_emplace(key, val).first = val; }
  // Removes `key`, returning its value (kNone if absent).
  uint32_t take(uint64_t key) {
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      Entry& e = table_[i];
      if (e.val == kNone) return kNone;
      if (e.key == key) {
        const uint32_t val = e.val;
        erase_at(i);
        return val;
      }
    }
  }
  // Asks for the cache line where a lookup of `key` starts (a few keys ahead of the lookups of a
  // loop: the table is too big for the cache, and Fibonacci hashing scatters consecutive keys).
  void prefetch(uint64_t key) const { __builtin_prefetch(&table_[home(key)]); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  struct Entry {
    uint64_t key = 0;
    uint32_t val = kNone;
  };
  // Fibonacci hashing: the top bits of the key times 2^64 / golden ratio (consecutive ids land
  // far apart).
  size_t home(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void reset(size_t capacity) {
    table_.assign(capacity, Entry{});
    mask_ = capacity - 1;
    shift_ = 64 - __builtin_ctzll(capacity);
    size_ = 0;
  }
  void grow() {
    std::vector<Entry> old = std::move(table_);
    reset(old.size() * 2);
    for (const Entry& e : old) {
      if (e.val != kNone) insert(e.key, e.val);
    }
  }
  void erase_at(size_t i) {
    for (size_t j = i;;) {
      j = (j + 1) & mask_;
      if (table_[j].val == kNone) break;
      const size_t k = home(table_[j].key);
      // The entry at j may fill the hole at i iff i lies cyclically in [k, j).
      if (((j - k) & mask_) >= ((j - i) & mask_)) {
        table_[i] = table_[j];
        i = j;
      }
    }
    table_[i].val = kNone;
    --size_;
  }

  std::vector<Entry> table_;
  size_t mask_ = 0;
  int shift_ = 0;
  size_t size_ = 0;
};

// The same lookups for keys that are dense over their range, as Kineto's correlation ids are
// (a counter of one process's runtime calls): a direct table indexed by key minus the least,
// read nearly in order by lookups in time order (the hash scatters them: half of a lookup loop's
// time was the miss on the table). Keys spread wider than 4 slots per key (merged or hand-made
// traces) go to a KeyIndex. Lookups give the same values either way.
class DenseKeyIndex {
 public:
  static constexpr uint32_t kNone = KeyIndex::kNone;

  DenseKeyIndex() = default;
  // For `count` keys, every one in [least, most] (none when least > most).
  DenseKeyIndex(uint64_t least, uint64_t most, size_t count) {
    if (least > most) return;
    const uint64_t range = most - least;
    if (range < 4 * static_cast<uint64_t>(count) + 1024) {
      least_ = least;
      table_.assign(range + 1, kNone);
    } else {
      hashed_ = KeyIndex(count);
    }
  }

  // Whether the keys are in the direct table.
  bool dense() const { return !table_.empty(); }
  uint32_t find(uint64_t key) const {
    if (table_.empty()) return hashed_.find(key);
    const uint64_t at = key - least_;
    return at < table_.size() ? table_[at] : kNone;
  }
  // The value stored for `key` (which must be in the range given), after storing `val` there if
  // there was none; whether it was.
  std::pair<uint32_t, bool> try_emplace(uint64_t key, uint32_t val) {
    if (table_.empty()) {
      auto [stored, inserted] = hashed_.try_emplace(key, val);
      return {*stored, inserted};
    }
    uint32_t& slot = table_[key - least_];
    if (slot != kNone) return {slot, false};
    slot = val;
    return {slot, true};
  }
  // Stores `val` for `key` (in the range given), replacing the value stored before.
  void assign(uint64_t key, uint32_t val) {
    if (table_.empty()) {
      hashed_.assign(key, val);
    } else {
      table_[key - least_] = val;
    }
  }
  // KeyIndex::prefetch; nothing for the direct table (its lookups come nearly in order).
  void prefetch(uint64_t key) const {
    if (table_.empty()) hashed_.prefetch(key);
  }

 private:
  uint64_t least_ = 0;
  std::vector<uint32_t> table_;  // value by key - least_ (dense keys)
  KeyIndex hashed_{0};           // value by key (other keys)
};

}  // namespace chakraflow
