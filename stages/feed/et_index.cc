#include "stages/feed/et_index.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "stages/et/et_io.h"
#include "stages/et/node_scan.h"
#include "stages/et/wire_format.h"

namespace chakraflow {

// Reads records of a plain file by offset through a few blocks, least recently used replaced: a
// run of lookups in ascending file order costs one pread per block, and so do several such runs
// at once in different regions of the file (a simulator walks its CPU ops, each GPU stream and
// the communication at their own pace: with one block, each switch of region read a block again).
// A .et.gz of ours (its block index) is read the same way, a block of its text inflated where a
// plain file's is read: the index's blocks are the text's 256 KB, the grid of these.
struct EtIndex::BlockReader {
  static constexpr size_t kBlock = size_t{256} << 10;
  static constexpr size_t kBlocks = 16;  // 4 MB per open trace
  // The never-read records rescued from evicted blocks, at most this many bytes (then a record
  // is read again from the file when it is first asked for).
  static constexpr uint64_t kRescueLimit = uint64_t{64} << 20;
  // The largest record across a block's end that the scan keeps (seed), and the most bytes of them
  // kept (a trace of records of many KB would keep a large share of itself).
  static constexpr size_t kAcrossBytes = size_t{64} << 10;
  static constexpr size_t kAcrossLimit = size_t{16} << 20;
  struct Block {
    std::string bytes;
    uint64_t start = 0;
    size_t len = 0;
    uint64_t used = 0;   // the lookup that used it last
    bool whole = false;  // read whole (a block the scan kept holds only the records inside it)
  };
  BlockReader(EtFile f, std::unique_ptr<GzipBlockReader> blocks_of_gz)
      : file(std::move(f)), gz(std::move(blocks_of_gz)) {}
  // The index's records, once scanned: offsets ascending.
  void attach(const std::vector<uint64_t>& record_offsets,
              const std::vector<uint32_t>& record_sizes) {
    offsets = &record_offsets;
    sizes = &record_sizes;
    asked.assign(record_offsets.size(), false);
  }
  // During the index's scan: record `index` at `offset` (its bytes, after its length) is kept when
  // it lies in one of the first kBlocks blocks, so that the walk, which starts there, does not
  // read them again. A seeded block holds every record inside it; the bytes between records are
  // never served. A record across a block's end (one per block at most) is kept on its own, up
  // to kAcrossBytes: read again, it would cost a read of its own (a plain file) or the two blocks
  // it spans inflated (a .et.gz), which may evict a block another region still needs.
  void seed(uint32_t index, uint64_t offset, std::string_view record) {
    const uint64_t start = offset & ~uint64_t{kBlock - 1};
    if (offset + record.size() > start + kBlock) {
      if (record.size() <= kAcrossBytes && across_bytes.size() + record.size() <= kAcrossLimit) {
        across.emplace_back(index, static_cast<uint32_t>(across_bytes.size()));
        across_bytes.append(record);
      }
      return;
    }
    if (start / kBlock >= kBlocks) return;
    const auto k = static_cast<size_t>(start / kBlock);
    if (blocks.size() <= k) blocks.resize(k + 1);
    Block& b = blocks[k];
    b.bytes.resize(kBlock);
    b.start = start;
    std::memcpy(b.bytes.data() + (offset - start), record.data(), record.size());
    b.len = std::max<size_t>(b.len, static_cast<size_t>(offset + record.size() - start));
  }
  EtFile file;
  std::unique_ptr<GzipBlockReader> gz;  // a .et.gz's blocks, or null: a plain file
  // The records across a block's end kept by the scan: (index, position in across_bytes),
  // ascending.
  std::vector<std::pair<uint32_t, uint32_t>> across;
  std::string across_bytes;
  const std::vector<uint64_t>* offsets = nullptr;
  const std::vector<uint32_t>* sizes = nullptr;
  std::vector<Block> blocks;
  // Records asked for at least once; the never-asked records of evicted blocks, by index.
  std::vector<bool> asked;
  // The never-asked records of one evicted block, copied one after another; freed when the last
  // is asked for.
  struct Rescued {
    std::string bytes;
    std::vector<std::pair<uint32_t, uint32_t>> records;  // (index, position in bytes), ascending
    size_t left = 0;
  };
  std::map<uint64_t, Rescued> rescued;  // by the block's start
  uint64_t rescued_bytes = 0;
  uint64_t lookups = 0;
  EtIndex::IoStats io;

  Status read_at(uint64_t offset, char* dst, size_t n) {
    const std::string& path = file.path();
    while (n > 0) {
      const ssize_t got = ::pread(file.fd(), dst, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0)
        return Status::errorf("{}: cannot read at byte {}: {}", path, offset, std::strerror(errno));
      ++io.reads;
      io.bytes_read += static_cast<uint64_t>(got);
      if (got == 0) {
        return Status::errorf("{}: ends before byte {} (the file changed after it was indexed)",
                              path, offset + n);
      }
      dst += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
    return Status();
  }

  // Before block `b` is reused: the records in it that no one asked for yet are kept. A
  // simulator asks for every node, and the ones it has not asked for when their block leaves
  // are those that wait far behind the others (ASTRA-sim: GPU ops queued behind the CPU ops that
  // launched them): kept, they are not read from the file a second time.
  void rescue_unasked(const Block& b) {
    if (b.len == 0) return;
    const std::vector<uint64_t>& at = *offsets;
    Rescued r;
    for (auto i = static_cast<size_t>(std::lower_bound(at.begin(), at.end(), b.start) - at.begin());
         i < at.size(); ++i) {
      const uint32_t size = (*sizes)[i];
      if (at[i] + size > b.start + b.len) break;
      if (asked[i]) continue;
      if (rescued_bytes + r.bytes.size() + size > kRescueLimit) break;
      r.records.emplace_back(static_cast<uint32_t>(i), static_cast<uint32_t>(r.bytes.size()));
      r.bytes.append(b.bytes.data() + (at[i] - b.start), size);
    }
    if (r.records.empty()) return;
    r.left = r.records.size();
    rescued_bytes += r.bytes.size();
    io.rescued_peak_bytes = std::max(io.rescued_peak_bytes, rescued_bytes);
    rescued[b.start] = std::move(r);
  }

  // Record `index` (offset, size) from the records rescued from its block, if it is there: true.
  // `first`: its first lookup (the last of its block's rescued records frees them).
  bool take_rescued(uint32_t index, uint64_t offset, uint32_t size, bool first, std::string* out) {
    auto it = rescued.find(offset & ~uint64_t{kBlock - 1});
    if (it == rescued.end()) return false;
    Rescued& r = it->second;
    auto rec = std::lower_bound(r.records.begin(), r.records.end(),
                                std::pair<uint32_t, uint32_t>(index, 0));
    if (rec == r.records.end() || rec->first != index) return false;
    out->assign(r.bytes.data() + rec->second, size);
    if (first && --r.left == 0) drop_rescued(it);
    return true;
  }

  void drop_rescued(std::map<uint64_t, Rescued>::iterator it) {
    rescued_bytes -= it->second.bytes.size();
    rescued.erase(it);
  }

  // The block to fill for a miss: a new one while fewer than kBlocks, else the least recently
  // used.
  Block& victim() {
    if (blocks.size() < kBlocks) return blocks.emplace_back();
    Block& b = *std::min_element(blocks.begin(), blocks.end(),
                                 [](const Block& x, const Block& y) { return x.used < y.used; });
    rescue_unasked(b);
    return b;
  }

  Status get(uint32_t index, std::string* out) {
    const uint64_t offset = (*offsets)[index];
    const uint32_t size = (*sizes)[index];
    ++lookups;
    const bool first = !asked[index];
    asked[index] = true;
    for (Block& b : blocks) {
      if (offset >= b.start && offset + size <= b.start + b.len) {
        b.used = lookups;
        out->assign(b.bytes.data() + (offset - b.start), size);
        return Status();
      }
    }
    // A block's records are in a cached block or rescued from it, never both: a block read
    // again drops what was rescued from it.
    if (!rescued.empty() && take_rescued(index, offset, size, first, out)) return Status();
    // Blocks sit on a grid of kBlock: lookups in two regions close to each other share a block
    // instead of each reading its own, overlapping one, and no byte is in two blocks. A record
    // across a block's end (one per block) or larger than a block comes from the scan's copy
    // (seed), else is read on its own from a plain file, or put together from the blocks it spans
    // of a .et.gz.
    const uint64_t start = offset & ~uint64_t{kBlock - 1};
    if (offset + size > start + kBlock) {
      const auto kept =
          std::lower_bound(across.begin(), across.end(), std::pair<uint32_t, uint32_t>(index, 0));
      if (kept != across.end() && kept->first == index) {
        out->assign(across_bytes.data() + kept->second, size);
        return Status();
      }
      if (gz == nullptr) {
        out->resize(size);
        return read_at(offset, out->data(), size);
      }
      out->clear();
      for (uint64_t at = offset; at < offset + size;) {
        const uint64_t block_start = at & ~uint64_t{kBlock - 1};
        Block* b = nullptr;
        CF_RETURN_IF_ERROR(load(block_start, &b));
        const uint64_t end = std::min<uint64_t>(offset + size, block_start + b->len);
        if (end <= at) return changed_before(offset + size);
        out->append(b->bytes.data() + (at - block_start), static_cast<size_t>(end - at));
        at = end;
      }
      return Status();
    }
    Block* b = nullptr;
    CF_RETURN_IF_ERROR(load(start, &b));
    if (offset + size > b->start + b->len) return changed_before(offset + size);
    out->assign(b->bytes.data() + (offset - b->start), size);
    return Status();
  }

  Status changed_before(uint64_t end) const {
    return Status::errorf("{}: ends before byte {} (the file changed after it was indexed)",
                          file.path(), end);
  }

  // The block at `start` (on the grid), whole: a cached one, else read (or inflated) into the
  // one the scan kept there, a free one or the least recently used. Its records rescued before
  // are dropped: they are in it again.
  Status load(uint64_t start, Block** out) {
    Block* kept = nullptr;
    for (Block& b : blocks) {
      if (b.start != start || b.len == 0) continue;
      if (b.whole) {
        b.used = lookups;
        *out = &b;
        return Status();
      }
      kept = &b;
    }
    if (auto it = rescued.find(start); it != rescued.end()) drop_rescued(it);
    Block& b = kept != nullptr ? *kept : victim();
    b.start = start;
    b.len = 0;
    b.whole = false;
    b.used = lookups;
    *out = &b;
    if (gz != nullptr) {
      if (start >= gz->text_bytes()) return changed_before(start + 1);
      const uint64_t before = gz->bytes_read();
      CF_RETURN_IF_ERROR(gz->read_block(start / kBlock, &b.bytes));
      ++io.reads;
      io.bytes_read += gz->bytes_read() - before;
      b.len = b.bytes.size();
      b.whole = true;
      return Status();
    }
    b.bytes.resize(kBlock);
    ssize_t got;
    do {
      got = ::pread(file.fd(), b.bytes.data(), kBlock, static_cast<off_t>(b.start));
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
      return Status::errorf("{}: cannot read at byte {}: {}", file.path(), b.start,
                            std::strerror(errno));
    }
    ++io.reads;
    io.bytes_read += static_cast<uint64_t>(got);
    b.len = static_cast<size_t>(got);
    b.whole = true;
    return Status();
  }
};

EtIndex::~EtIndex() = default;

StatusOr<std::unique_ptr<EtIndex>> EtIndex::build(const std::string& path,
                                                  const EtIndexOptions& options) {
  CF_ASSIGN_OR_RETURN(EtFile file, EtFile::open(path));
  return build(std::move(file), options);
}

StatusOr<std::unique_ptr<EtIndex>> EtIndex::build(EtFile file, const EtIndexOptions& options) {
  const std::string path = file.path();
  // Records are read again by offset from a plain regular file, or a .et.gz of ours (its block
  // index, blocks on the grid of the reader's), through the descriptor the reader reads too (a
  // duplicate: one open); another gzip'd file, or a file that cannot be read by offset, is kept in
  // memory.
  std::unique_ptr<BlockReader> by_offset;
  if (file.regular()) {
    CF_ASSIGN_OR_RETURN(EtFile duplicate, file.duplicate());
    std::unique_ptr<GzipBlockReader> gz;
    if (file.gzip()) {
      gz = GzipBlockReader::open(duplicate.fd(), path);  // reads through the duplicate
      if (gz != nullptr && gz->block_text() != BlockReader::kBlock) gz.reset();
    }
    if (!file.gzip() || gz != nullptr) {
      by_offset = std::make_unique<BlockReader>(std::move(duplicate), std::move(gz));
    }
  }
  const bool keep_records = by_offset == nullptr;
  CF_ASSIGN_OR_RETURN(EtReader reader, EtReader::open(std::move(file)));
  std::unique_ptr<EtIndex> index(new EtIndex());
  EtIndex& x = *index;
  x.path_ = path;
  Edges edges;
  CF_RETURN_IF_ERROR(x.scan_records(reader, options, keep_records, by_offset.get(), &edges));
  // The records will be read through the block index: it must describe the text just read.
  if (by_offset != nullptr && by_offset->gz != nullptr &&
      by_offset->gz->text_bytes() != reader.offset()) {
    return Status::errorf(
        "{}: its block index gives {} bytes of text where the file holds {}: the index is corrupt",
        path, by_offset->gz->text_bytes(), reader.offset());
  }
  x.deps_listed_ = edges.size();
  CF_RETURN_IF_ERROR(x.index_ids());
  x.open_records(std::move(by_offset));
  std::vector<uint64_t> count;
  x.resolve_edges(edges, options.keep_dangling, &count);
  x.set_children(std::move(edges), std::move(count));
  return index;
}

Status EtIndex::scan_records(EtReader& reader, const EtIndexOptions& options, bool keep_records,
                             BlockReader* by_offset, Edges* edges) {
  std::vector<NodeId> data_deps;
  std::vector<NodeId> ctrl_deps;
  std::string_view record;
  bool first = true;
  while (true) {
    const uint64_t record_index = reader.record_index();
    const uint64_t offset = reader.offset();
    CF_ASSIGN_OR_RETURN(bool more, reader.next_raw(&record));
    if (!more) break;
    if (first) {
      first = false;
      if (!first_record_is_node(record)) {
        metadata_.assign(record.data(), record.size());
        continue;
      }
      metadata_missing_ = true;
    }
    NodeHeader header;
    data_deps.clear();
    ctrl_deps.clear();
    Status scanned = scan_node(record, &header, &data_deps, &ctrl_deps);
    if (!scanned.ok()) {
      return Status::errorf("{}: record #{} at byte {}: {}", path_, record_index, offset,
                            scanned.message());
    }
    if (ids_.size() >= kNoIndex - 1) {
      return Status::errorf("{}: record #{} at byte {}: more than {} nodes", path_, record_index,
                            offset, kNoIndex - 1);
    }
    const auto child = static_cast<uint32_t>(ids_.size());
    ids_.push_back(header.id);
    if (keep_records) {
      offsets_.push_back(records_.size());
      records_.append(record.data(), record.size());
    } else {
      offsets_.push_back(offset + wire::varint_size(record.size()));
      if (by_offset != nullptr) by_offset->seed(child, offsets_.back(), record);
    }
    sizes_.push_back(static_cast<uint32_t>(record.size()));
    if (options.data_deps) {
      for (NodeId p : data_deps) edges->emplace_back(p, child);
    }
    if (options.ctrl_deps) {
      for (NodeId p : ctrl_deps) edges->emplace_back(p, child);
    }
  }
  return Status();
}

Status EtIndex::index_ids() {
  const uint32_t n = size();
  if (n == 0) return Status();
  auto [lo, hi] = std::minmax_element(ids_.begin(), ids_.end());
  const uint64_t span = *hi - *lo;
  if (span < uint64_t{4} * n + 1024) {
    id_base_ = *lo;
    dense_.assign(span + 1, kNoIndex);
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t& slot = dense_[ids_[i] - id_base_];
      if (slot != kNoIndex) {
        return Status::errorf("{}: record #{}: node id {} appears again (first at record #{})",
                              path_, record_number(i), ids_[i], record_number(slot));
      }
      slot = i;
    }
    return Status();
  }
  sparse_.reserve(n);
  for (uint32_t i = 0; i < n; ++i) sparse_.emplace_back(ids_[i], i);
  std::sort(sparse_.begin(), sparse_.end());
  for (size_t i = 1; i < sparse_.size(); ++i) {
    if (sparse_[i].first == sparse_[i - 1].first) {
      const uint32_t a = std::min(sparse_[i - 1].second, sparse_[i].second);
      const uint32_t b = std::max(sparse_[i - 1].second, sparse_[i].second);
      return Status::errorf("{}: record #{}: node id {} appears again (first at record #{})", path_,
                            record_number(b), ids_[b], record_number(a));
    }
  }
  return Status();
}

void EtIndex::open_records(std::unique_ptr<BlockReader> by_offset) {
  if (!by_offset) {
    records_.shrink_to_fit();  // offsets_ are into records_
    return;
  }
  fd_reader_ = std::move(by_offset);
  fd_reader_->attach(offsets_, sizes_);
}

void EtIndex::resolve_edges(Edges& edges, bool keep_dangling, std::vector<uint64_t>* count) {
  count->assign(static_cast<size_t>(size()) + 1, 0);
  size_t kept = 0;
  for (const auto& [parent_id, child] : edges) {
    const uint32_t parent = index_of(parent_id);
    if (parent == kNoIndex) {
      ++deps_dangling_;
      if (keep_dangling) dangling_edges_.emplace_back(parent_id, child);
      auto& ex = dangling_examples_;
      if (std::find(ex.begin(), ex.end(), parent_id) == ex.end()) {
        ex.push_back(parent_id);
        std::sort(ex.begin(), ex.end());
        if (ex.size() > 8) ex.pop_back();
      }
      continue;
    }
    edges[kept++] = {parent, child};
    ++(*count)[parent + 1];
  }
  edges.resize(kept);
  std::sort(dangling_edges_.begin(), dangling_edges_.end());
  dangling_edges_.erase(std::unique(dangling_edges_.begin(), dangling_edges_.end()),
                        dangling_edges_.end());
}

void EtIndex::set_children(Edges&& edges, std::vector<uint64_t>&& count) {
  const uint32_t n = size();
  // Counting sort by parent.
  for (uint32_t i = 0; i < n; ++i) count[i + 1] += count[i];
  std::vector<uint32_t> children(edges.size());
  {
    std::vector<uint64_t> fill(count.begin(), count.end() - 1);
    for (const auto& [parent, child] : edges) children[fill[parent]++] = child;
  }
  Edges().swap(edges);
  // Per parent: ascending, distinct children; parents counted per child.
  parent_count_.assign(n, 0);
  child_begin_.assign(static_cast<size_t>(n) + 1, 0);
  uint64_t out = 0;
  for (uint32_t p = 0; p < n; ++p) {
    auto b = children.begin() + static_cast<std::ptrdiff_t>(count[p]);
    auto e = children.begin() + static_cast<std::ptrdiff_t>(count[p + 1]);
    if (!std::is_sorted(b, e)) std::sort(b, e);
    child_begin_[p] = out;
    for (auto it = b; it != e; ++it) {
      if (it != b && *it == *(it - 1)) {
        ++deps_duplicate_;
        continue;
      }
      children[out++] = *it;
      ++parent_count_[*it];
    }
  }
  child_begin_[n] = out;
  children.resize(out);
  children.shrink_to_fit();
  children_ = std::move(children);
}

uint32_t EtIndex::index_of(uint64_t id) const {
  if (!dense_.empty()) {
    if (id < id_base_ || id - id_base_ >= dense_.size()) return kNoIndex;
    return dense_[id - id_base_];
  }
  auto it = std::lower_bound(sparse_.begin(), sparse_.end(), std::make_pair(id, uint32_t{0}));
  return it != sparse_.end() && it->first == id ? it->second : kNoIndex;
}

Status EtIndex::read_record(uint32_t index, std::string* out) const {
  if (!fd_reader_) {
    out->assign(records_.data() + offsets_[index], sizes_[index]);
    return Status();
  }
  return fd_reader_->get(index, out);
}

EtIndex::IoStats EtIndex::io_stats() const {
  return fd_reader_ ? fd_reader_->io : IoStats{};
}

uint64_t EtIndex::memory_bytes() const {
  return ids_.capacity() * 8 + offsets_.capacity() * 8 + sizes_.capacity() * 4 +
         parent_count_.capacity() * 4 + child_begin_.capacity() * 8 + children_.capacity() * 4 +
         dense_.capacity() * 4 + sparse_.capacity() * 16 + records_.capacity() +
         dangling_edges_.capacity() * 16;
}

}  // namespace chakraflow
