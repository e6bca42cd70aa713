// EtIndex: a whole .et trace as a static dependency graph in compact arrays, with every node's
// record served from the file by its offset. What a feeder needs when callers may look up any node
// at any time and the graph is known before the first issue (Chakra's FeederV3 API,
// stages/compat/feeder_v3/).
//
// Contract
// - build() opens the file once (EtFile) and reads it once (EtReader: `.et` or `.et.gz`, by
//   content), scanning each Node's
//   top-level fields (scan_node) without decoding it. It keeps, per node: its id, the record's
//   offset and size, its count of distinct parents and its children (CSR arrays of dense
//   indexes). Memory: about 40 bytes per node plus 4 per distinct dependency edge, and an id
//   table (4 bytes per id of the id range when ids are dense, else a hash table). During build, a
//   temporary 16 bytes per listed dependency.
// - Records: read_record() returns a node's bytes. A plain file is read again by offset (pread
//   through 16 blocks of 256 KB, least recently used replaced: ascending access is sequential I/O,
//   also in several regions of the file at once), so the records are not held in memory. The
//   scan keeps the first 16 blocks (where a walk starts), and the records across a block's end
//   (one per block at most, each up to 64 KB, 16 MB in all). When a block is replaced, the records
//   in it never asked for yet are kept (up to 64 MB, each until it is first asked for): a
//   simulator asks for every node, and those are the ones waiting far behind the others. A
//   .et.gz that chakraflow wrote (its block index, GzipBlockReader) is read the same way, each
//   block of its text inflated from its compressed bytes (a record across a block's end that
//   the scan did not keep put together from the blocks it spans). Another gzip'd file cannot be
//   read by offset: its decompressed records are kept in one buffer (memory = the decompressed
//   size), which build() reports in records_in_memory().
// - Dependencies: data_deps, and ctrl_deps when asked. A dependency listed twice counts once. A
//   dependency on an id that is no node of the file is dropped and counted (dangling); a node
//   that depends on itself keeps that edge (it can never be issued: a cycle of one).
// - Errors: unreadable file, malformed record, a node id that appears twice: build() fails with a
//   message naming the file, the record and its byte offset.
// Thread safety: const methods other than read_record may be called concurrently; read_record
// uses the block buffers and must be called from one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stages/common/status.h"
#include "stages/et/et_io.h"

namespace chakraflow {

class EtReader;

struct EtIndexOptions {
  bool data_deps = true;
  bool ctrl_deps = true;
  // Keep the dropped dangling dependencies as (missing id, child index) pairs (dangling_edges()).
  bool keep_dangling = false;
};

class EtIndex {
 public:
  static constexpr uint32_t kNoIndex = UINT32_MAX;

  static StatusOr<std::unique_ptr<EtIndex>> build(const std::string& path,
                                                  const EtIndexOptions& options = {});
  // The same over a file already open (the compat feeders open it first, to tell a file that
  // cannot be opened from one that is not a trace).
  static StatusOr<std::unique_ptr<EtIndex>> build(EtFile file, const EtIndexOptions& options = {});
  ~EtIndex();
  EtIndex(const EtIndex&) = delete;
  EtIndex& operator=(const EtIndex&) = delete;

  const std::string& path() const { return path_; }
  // The serialized GlobalMetadata record; empty when the file starts with a Node.
  const std::string& metadata() const { return metadata_; }
  bool metadata_missing() const { return metadata_missing_; }

  uint32_t size() const { return static_cast<uint32_t>(ids_.size()); }
  // Dense index of node `id`, or kNoIndex.
  uint32_t index_of(uint64_t id) const;
  uint64_t id(uint32_t index) const { return ids_[index]; }
  uint32_t parent_count(uint32_t index) const { return parent_count_[index]; }
  // Children (dense indexes, ascending, distinct) of node `index`.
  const uint32_t* children_begin(uint32_t index) const {
    return children_.data() + child_begin_[index];
  }
  const uint32_t* children_end(uint32_t index) const {
    return children_.data() + child_begin_[index + 1];
  }

  // The bytes of node `index`'s record into `out`. Error: the file changed or cannot be read.
  Status read_record(uint32_t index, std::string* out) const;

  // Record index in the file (1 is the first Node when there is a GlobalMetadata) and byte offset
  // of node `index`'s record, for messages.
  uint64_t record_number(uint32_t index) const { return index + (metadata_missing_ ? 0 : 1); }
  uint64_t record_offset(uint32_t index) const { return offsets_[index]; }

  uint64_t dependencies_listed() const { return deps_listed_; }
  uint64_t duplicate_dependencies() const { return deps_duplicate_; }
  uint64_t dangling_dependencies() const { return deps_dangling_; }
  // Some ids depended on that are no node of the file (at most 8, ascending).
  const std::vector<uint64_t>& dangling_examples() const { return dangling_examples_; }
  // With EtIndexOptions::keep_dangling: every dangling dependency as (missing id, child index),
  // sorted, one per distinct pair.
  const std::vector<std::pair<uint64_t, uint32_t>>& dangling_edges() const {
    return dangling_edges_;
  }
  bool records_in_memory() const { return !fd_reader_; }
  // Bytes of the arrays above and the record buffer (not the block buffer).
  uint64_t memory_bytes() const;
  // What read_record() read from the file: preads and bytes (a .et.gz's: blocks inflated and
  // their compressed bytes; zero when the records are in memory).
  struct IoStats {
    uint64_t reads = 0;
    uint64_t bytes_read = 0;
    // The most bytes of never-read records held at once, rescued from blocks as they left.
    uint64_t rescued_peak_bytes = 0;
  };
  IoStats io_stats() const;

 private:
  struct BlockReader;
  using Edges = std::vector<std::pair<uint64_t, uint32_t>>;
  // build()'s steps. The records: ids, offsets, the metadata, and every listed edge as (parent id,
  // child index).
  // A plain file's first blocks are kept in `by_offset` as they are scanned.
  Status scan_records(EtReader& reader, const EtIndexOptions& options, bool keep_records,
                      BlockReader* by_offset, Edges* edges);
  // id -> index (dense_ or sparse_); an id that appears twice is an error.
  Status index_ids();
  // Where read_record() finds the records: in memory (records_), or the file through
  // `by_offset` (the descriptor duplicated before the reader took it).
  void open_records(std::unique_ptr<BlockReader> by_offset);
  // The edges as (parent index, child index), dangling ones dropped (kept in dangling_edges_
  // with keep_dangling), each parent's count in (*count)[parent + 1].
  void resolve_edges(Edges& edges, bool keep_dangling, std::vector<uint64_t>* count);
  // The children lists (CSR) from the resolved edges: ascending and distinct per parent.
  void set_children(Edges&& edges, std::vector<uint64_t>&& count);
  EtIndex() = default;

  std::string path_;
  std::string metadata_;
  bool metadata_missing_ = false;
  std::vector<uint64_t> ids_;
  std::vector<uint64_t> offsets_;  // of each record's bytes (after its length)
  std::vector<uint32_t> sizes_;
  std::vector<uint32_t> parent_count_;
  std::vector<uint64_t> child_begin_;  // size() + 1
  std::vector<uint32_t> children_;
  // id -> index: dense table over [id_base_, id_base_ + dense_.size()) when ids are dense enough,
  // else sorted (id, index) pairs.
  uint64_t id_base_ = 0;
  std::vector<uint32_t> dense_;
  std::vector<std::pair<uint64_t, uint32_t>> sparse_;
  std::string records_;  // gzip'd input: every record's bytes, at offsets_
  std::unique_ptr<BlockReader> fd_reader_;
  uint64_t deps_listed_ = 0;
  uint64_t deps_duplicate_ = 0;
  uint64_t deps_dangling_ = 0;
  std::vector<uint64_t> dangling_examples_;
  std::vector<std::pair<uint64_t, uint32_t>> dangling_edges_;
};

}  // namespace chakraflow
