// The shards a loader reads one trace's array in (json::read_array_in_shards): shard 0 through the
// loader's own parser, into its trace; shard k >= 1 through a parser of its own, into a part trace
// appended after the shards before it. Internal to the two loaders; no TBB (the reading runs
// through ParseShards' workers).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "stages/common/json_util.h"

namespace chakraflow {

// Trace: what a shard reads into; Parser: the loader's parser; Reader: its ArrayWindowReader
// (constructed from a Parser&, with elements(): the elements it read).
template <typename Trace, typename Parser, typename Reader>
class LoaderShards {
 public:
  // `count` shards; make(part, k) makes shard k's parser (k >= 1) reading into `part`.
  template <typename Make>
  LoaderShards(size_t count, Parser& first, const Make& make) : parts_(count - 1) {
    for (size_t k = 0; k < count; ++k) {
      Parser* p = &first;
      if (k > 0) {
        parsers_.push_back(make(parts_[k - 1], k));
        p = parsers_.back().get();
      }
      readers_.push_back(std::make_unique<Reader>(*p));
      reader_ptrs_.push_back(readers_.back().get());
    }
  }

  size_t count() const { return readers_.size(); }
  const std::vector<json::ArrayWindowReader*>& readers() const { return reader_ptrs_; }
  // Shard k's (k >= 1) trace and parser; the elements shard k read.
  Trace& part(size_t k) { return parts_[k - 1]; }
  Parser& parser(size_t k) { return *parsers_[k - 1]; }
  size_t elements(size_t k) const { return readers_[k]->elements(); }

 private:
  std::vector<Trace> parts_;
  std::vector<std::unique_ptr<Parser>> parsers_;
  std::vector<std::unique_ptr<Reader>> readers_;
  std::vector<json::ArrayWindowReader*> reader_ptrs_;
};

}  // namespace chakraflow
