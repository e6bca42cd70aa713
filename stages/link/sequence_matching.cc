#include "stages/link/sequence_matching.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

namespace chakraflow {
namespace {

using Pair = std::pair<uint32_t, uint32_t>;

// Exact dynamic programming up to this many cells (one byte each for the traceback).
constexpr uint64_t kDpCells = uint64_t{1} << 22;
// Anchors: names occurring equally often on both sides of a piece, at most this often.
constexpr uint32_t kMaxAnchorCount = 64;
// Window seeds: host k-grams occurring at most this often in the host thread.
constexpr uint32_t kMaxSeedOccurrences = 4;
// Candidate windows aligned per thread.
constexpr size_t kMaxCandidates = 64;

constexpr std::string_view kAnnotationFamilies[] = {"[pytorch|profiler|execution_trace|",
                                                    "[pytorch|profiler|execution_graph|"};

// ---------- alignment ----------

// Exact LCS of a[a0, a1) and b[b0, b1) by dynamic programming over suffixes, traced forward so
// that, among optimal alignments, ops are matched as early as possible.
class DpAligner {
 public:
  void align(std::span<const uint32_t> a, uint32_t a0, uint32_t a1, std::span<const uint32_t> b,
             uint32_t b0, uint32_t b1, std::vector<Pair>& out) {
    const size_t n = a1 - a0;
    const size_t m = b1 - b0;
    dir_.resize(n * m);
    rows_.assign(2 * (m + 1), 0);
    uint32_t* below = rows_.data();  // suffix lengths of row i + 1
    uint32_t* here = below + m + 1;  // row i
    for (size_t i = n; i-- > 0;) {
      here[m] = 0;
      const uint32_t ai = a[a0 + i];
      uint8_t* d = dir_.data() + i * m;
      for (size_t j = m; j-- > 0;) {
        if (ai == b[b0 + j]) {
          here[j] = below[j + 1] + 1;
          d[j] = kMatch;
        } else if (below[j] > here[j + 1]) {
          here[j] = below[j];
          d[j] = kSkipA;
        } else {
          here[j] = here[j + 1];
          d[j] = kSkipB;
        }
      }
      std::swap(below, here);
    }
    size_t i = 0, j = 0;
    while (i < n && j < m) {
      switch (dir_[i * m + j]) {
        case kMatch:
          out.emplace_back(a0 + i, b0 + j);
          ++i;
          ++j;
          break;
        case kSkipA:
          ++i;
          break;
        default:
          ++j;
          break;
      }
    }
  }

 private:
  static constexpr uint8_t kMatch = 0, kSkipA = 1, kSkipB = 2;
  std::vector<uint8_t> dir_;
  std::vector<uint32_t> rows_;
};

// Longest strictly increasing chain (in .second) of pairs sorted by .first (strictly increasing).
std::vector<Pair> longest_increasing_chain(const std::vector<Pair>& pairs) {
  std::vector<uint32_t> tails;  // index in pairs of the smallest tail of each chain length
  std::vector<uint32_t> prev(pairs.size(), std::numeric_limits<uint32_t>::max());
  for (uint32_t k = 0; k < pairs.size(); ++k) {
    auto it = std::lower_bound(tails.begin(), tails.end(), pairs[k].second,
                               [&](uint32_t t, uint32_t v) { return pairs[t].second < v; });
    if (it != tails.begin()) prev[k] = *(it - 1);
    if (it == tails.end())
      tails.push_back(k);
    else
      *it = k;
  }
  std::vector<Pair> chain(tails.size());
  uint32_t k = tails.empty() ? 0 : tails.back();
  for (size_t c = tails.size(); c-- > 0;) {
    chain[c] = pairs[k];
    k = prev[k];
  }
  return chain;
}

// Anchors inside a[a0, a1) x b[b0, b1): the names that occur equally often (at most
// kMaxAnchorCount times) on both sides, their k-th occurrences paired, longest increasing chain.
std::vector<Pair> find_anchors(std::span<const uint32_t> a, uint32_t a0, uint32_t a1,
                               std::span<const uint32_t> b, uint32_t b0, uint32_t b1) {
  struct Counts {
    uint32_t in_a = 0, in_b = 0, seen_b = 0;
  };
  std::unordered_map<uint32_t, Counts> counts;
  counts.reserve(a1 - a0);
  for (uint32_t i = a0; i < a1; ++i) ++counts[a[i]].in_a;
  for (uint32_t j = b0; j < b1; ++j) {
    auto it = counts.find(b[j]);
    if (it != counts.end()) ++it->second.in_b;
  }
  auto usable = [](const Counts& c) { return c.in_a == c.in_b && c.in_a <= kMaxAnchorCount; };
  // The k-th occurrence in b of each usable name, then pair with the k-th in a.
  std::unordered_map<uint32_t, std::vector<uint32_t>> b_positions;
  for (uint32_t j = b0; j < b1; ++j) {
    auto it = counts.find(b[j]);
    if (it != counts.end() && usable(it->second)) b_positions[b[j]].push_back(j);
  }
  std::vector<Pair> pairs;
  for (uint32_t i = a0; i < a1; ++i) {
    Counts& c = counts[a[i]];
    if (!usable(c)) continue;
    pairs.emplace_back(i, b_positions[a[i]][c.seen_b++]);
  }
  return longest_increasing_chain(pairs);
}

}  // namespace

std::vector<std::pair<uint32_t, uint32_t>> align_sequences(std::span<const uint32_t> a,
                                                           std::span<const uint32_t> b) {
  struct Piece {
    uint32_t a0, a1, b0, b1;
  };
  std::vector<Pair> out;
  DpAligner dp;
  std::vector<Piece> pieces = {
      {0, static_cast<uint32_t>(a.size()), 0, static_cast<uint32_t>(b.size())}};
  while (!pieces.empty()) {
    Piece p = pieces.back();
    pieces.pop_back();
    while (p.a0 < p.a1 && p.b0 < p.b1 && a[p.a0] == b[p.b0]) out.emplace_back(p.a0++, p.b0++);
    auto cells = [&p] { return uint64_t{p.a1 - p.a0} * (p.b1 - p.b0); };
    if (cells() > kDpCells) {
      // Only for pieces too large for the DP: a common suffix is matched latest-first, which
      // can differ from the DP's earliest-first choice among equally good alignments.
      while (p.a0 < p.a1 && p.b0 < p.b1 && a[p.a1 - 1] == b[p.b1 - 1]) {
        out.emplace_back(--p.a1, --p.b1);
      }
    }
    const uint64_t n = p.a1 - p.a0, m = p.b1 - p.b0;
    if (n == 0 || m == 0) continue;
    if (cells() <= kDpCells) {
      dp.align(a, p.a0, p.a1, b, p.b0, p.b1, out);
      continue;
    }
    std::vector<Pair> anchors = find_anchors(a, p.a0, p.a1, b, p.b0, p.b1);
    if (anchors.empty()) {
      // No name to anchor on (pathological: no name is equally frequent on both sides). Cut
      // both sides in the middle; the pieces are solved as well as they can be.
      const uint32_t am = p.a0 + static_cast<uint32_t>(n / 2);
      const uint32_t bm = p.b0 + static_cast<uint32_t>(m / 2);
      pieces.push_back({am, p.a1, bm, p.b1});
      pieces.push_back({p.a0, am, p.b0, bm});
      continue;
    }
    uint32_t pa = p.a0, pb = p.b0;
    for (auto [i, j] : anchors) {
      out.emplace_back(i, j);
      if (i > pa && j > pb) pieces.push_back({pa, i, pb, j});
      pa = i + 1;
      pb = j + 1;
    }
    if (p.a1 > pa && p.b1 > pb) pieces.push_back({pa, p.a1, pb, p.b1});
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool is_process_annotation(std::string_view name) {
  for (std::string_view family : kAnnotationFamilies) {
    if (name.size() == family.size() + 8 && name.starts_with(family) &&
        name.ends_with("process]")) {
      return true;
    }
  }
  return false;
}

bool is_thread_annotation(std::string_view name) {
  for (std::string_view family : kAnnotationFamilies) {
    if (name.size() == family.size() + 7 && name.starts_with(family) && name.ends_with("thread]"))
      return true;
  }
  return false;
}

namespace {

// ---------- threads ----------

struct HostThread {
  uint64_t tid = 0;
  std::vector<HostNodeIdx> ops;  // id order
  std::vector<uint32_t> names;   // interned, parallel to ops
};

struct DeviceThread {
  int64_t pid = 0;
  int64_t tid = 0;
  std::vector<DeviceEventIdx> ops;  // ts order (file order for equal ts)
  std::vector<uint32_t> names;
  std::vector<TimeNs> ts;
};

// Where a host thread's ops landed in its device thread.
struct Placement {
  std::vector<Pair> pairs;  // (position in host thread, position in device thread)
  uint32_t lo = 0, hi = 0;  // the device window aligned with
  uint64_t consistent = 0;  // pairs in time order with the threads placed before
  uint64_t skipped = 0;     // device ops inside the matched span without a host op
  bool valid = false;
};

// Better placement: more time-consistent matches, fewer skipped device ops, earlier.
bool better(const Placement& x, const Placement& y) {
  if (!y.valid) return x.valid;
  if (x.consistent != y.consistent) return x.consistent > y.consistent;
  if (x.skipped != y.skipped) return x.skipped < y.skipped;
  return x.lo < y.lo;
}

class NameTable {
 public:
  uint32_t intern(std::string_view name) {
    auto [it, inserted] = ids_.try_emplace(name, static_cast<uint32_t>(ids_.size()));
    return it->second;
  }

 private:
  std::unordered_map<std::string_view, uint32_t> ids_;
};

// (host id, device ts) of the matched ops of the threads placed so far, sorted by host id.
class PlacedOps {
 public:
  bool empty() const { return ops_.empty(); }
  void add(uint64_t host_id, TimeNs ts) { ops_.emplace_back(host_id, ts); }
  void sort() { std::sort(ops_.begin(), ops_.end()); }
  // Host ids follow op start order across threads: a host op must start no earlier than the
  // placed op just before it in id order, and no later than the one just after it.
  // The time interval a thread whose host ids lie in [first_id, last_id] must fall in.
  std::pair<TimeNs, TimeNs> time_bounds(uint64_t first_id, uint64_t last_id) const {
    std::pair<TimeNs, TimeNs> bounds = {std::numeric_limits<TimeNs>::min(), kMaxTime};
    auto before = std::lower_bound(ops_.begin(), ops_.end(), std::make_pair(first_id, TimeNs{0}),
                                   [](const auto& x, const auto& y) { return x.first < y.first; });
    if (before != ops_.begin()) bounds.first = std::prev(before)->second;
    auto after = std::upper_bound(ops_.begin(), ops_.end(), std::make_pair(last_id, kMaxTime));
    if (after != ops_.end()) bounds.second = after->second;
    return bounds;
  }
  bool consistent(uint64_t host_id, TimeNs ts) const {
    auto after = std::upper_bound(ops_.begin(), ops_.end(), std::make_pair(host_id, kMaxTime));
    if (after != ops_.end() && ts > after->second) return false;
    if (after != ops_.begin() && ts < std::prev(after)->second) return false;
    return true;
  }

 private:
  static constexpr TimeNs kMaxTime = std::numeric_limits<TimeNs>::max();
  std::vector<std::pair<uint64_t, TimeNs>> ops_;
};

class SequenceMatcher {
 public:
  SequenceMatcher(const HostTrace& host, const DeviceTrace& device, const LinkOptions& options,
                  DataProblems& stats)
      : host_(host), dev_(device), opt_(options), stats_(stats) {}

  StatusOr<HostDeviceMap> run() {
    if (dev_.cpu_ops.empty()) {
      return Status::errorf(
          "{}: no cpu_op / user_annotation events: nothing to match the host ops of {} with",
          dev_.path, host_.path);
    }
    CF_RETURN_IF_ERROR(collect_threads());
    pair_threads();
    std::vector<Placement> placements(host_threads_.size());
    bool windowed = false;
    if (!opt_.annotation.empty()) windowed = place_in_iteration(placements);
    if (!windowed) place_by_names(placements);
    return build_map(placements);
  }

 private:
  // ----- step 1: threads -----
  Status collect_threads() {
    std::optional<int64_t> host_pid = host_pid_from_top_level();
    std::set<int64_t> device_pids;
    for (DeviceEventIdx e : dev_.cpu_ops) device_pids.insert(dev_[e].pid);
    const bool pid_present = host_pid && device_pids.count(*host_pid) > 0;
    // A timing trace (LinkOptions::other_process) comes from another process by design.
    if (host_pid && !pid_present && !opt_.other_process) {
      if (opt_.min_match_rate > 0) {
        return Status::errorf(
            "{} was recorded by process {}, but no CPU op of {} was (processes {}): the traces "
            "come from different processes (another rank or another run) and cannot be matched "
            "by operator order (--min-match-rate 0 matches them anyway)",
            host_.path, *host_pid, dev_.path, fmt::join(device_pids, ", "));
      }
      stats_.add(StatKind::kSeqHostPidNotInDevice, fmt::format("host pid {}", *host_pid));
    }
    const bool filter_pid = host_pid && pid_present;
    if (filter_pid) pid_filter_ = *host_pid;

    std::map<uint64_t, HostThread> by_tid;  // host threads in tid order
    for (uint32_t i = 0; i < host_.nodes.size(); ++i) {
      const HostNode& n = host_.nodes[i];
      if (is_process_annotation(n.name) || is_thread_annotation(n.name)) continue;
      HostThread& t = by_tid[n.tid];
      t.tid = n.tid;
      t.ops.push_back(HostNodeIdx{i});
      t.names.push_back(names_.intern(n.name));
    }
    for (auto& [tid, t] : by_tid) host_threads_.push_back(std::move(t));

    std::map<std::pair<int64_t, int64_t>, size_t> by_key;  // (pid, tid) -> device thread
    for (DeviceEventIdx e : dev_.cpu_ops) {
      const DeviceEvent& ev = dev_[e];
      if (filter_pid && ev.pid != *pid_filter_) continue;
      auto [it, inserted] = by_key.try_emplace({ev.pid, ev.tid}, device_threads_.size());
      if (inserted) device_threads_.push_back(DeviceThread{ev.pid, ev.tid, {}, {}, {}});
      DeviceThread* t = &device_threads_[it->second];
      t->ops.push_back(e);
      t->names.push_back(names_.intern(dev_.name(ev)));
      t->ts.push_back(ev.ts);
    }
    return Status();
  }

  std::optional<int64_t> host_pid_from_top_level() const {
    for (const TopLevelField& f : host_.top_level) {
      if (f.key_raw != "\"pid\"") continue;
      int64_t pid = 0;
      auto r = std::from_chars(f.value_raw.data(), f.value_raw.data() + f.value_raw.size(), pid);
      if (r.ec == std::errc() && r.ptr == f.value_raw.data() + f.value_raw.size()) return pid;
    }
    return std::nullopt;
  }

  // Each host thread gets the free device thread sharing the most operator names with it.
  void pair_threads() {
    struct Score {
      uint64_t shared;
      size_t h, d;
    };
    auto count_names = [](const std::vector<uint32_t>& names) {
      std::unordered_map<uint32_t, uint64_t> counts;
      for (uint32_t name : names) ++counts[name];
      return counts;
    };
    std::vector<std::unordered_map<uint32_t, uint64_t>> device_counts;
    for (const DeviceThread& d : device_threads_) device_counts.push_back(count_names(d.names));
    std::vector<Score> scores;
    for (size_t h = 0; h < host_threads_.size(); ++h) {
      const auto host_counts = count_names(host_threads_[h].names);
      for (size_t d = 0; d < device_threads_.size(); ++d) {
        uint64_t shared = 0;  // size of the multiset intersection
        for (const auto& [name, count] : host_counts) {
          auto it = device_counts[d].find(name);
          if (it != device_counts[d].end()) shared += std::min(count, it->second);
        }
        if (shared > 0) scores.push_back({shared, h, d});
      }
    }
    std::sort(scores.begin(), scores.end(), [](const Score& x, const Score& y) {
      if (x.shared != y.shared) return x.shared > y.shared;
      return x.h != y.h ? x.h < y.h : x.d < y.d;
    });
    device_of_thread_.assign(host_threads_.size(), kNoThread);
    windows_considered_.assign(host_threads_.size(), 0);
    std::vector<bool> taken(device_threads_.size(), false);
    for (const Score& s : scores) {
      if (device_of_thread_[s.h] != kNoThread || taken[s.d]) continue;
      device_of_thread_[s.h] = s.d;
      taken[s.d] = true;
    }
  }

  // Host threads by decreasing size (ties: by tid): the largest is placed first and anchors the
  // time order for the others.
  std::vector<size_t> placement_order() const {
    std::vector<size_t> order(host_threads_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return host_threads_[x].ops.size() > host_threads_[y].ops.size();
    });
    return order;
  }

  // ----- step 2: windows -----
  static uint32_t slack_for(size_t n) { return static_cast<uint32_t>(std::max<size_t>(16, n / 8)); }

  // Aligns host thread h with device window [lo, hi) of its device thread.
  Placement evaluate(size_t h, uint32_t lo, uint32_t hi, int64_t exact_at,
                     const PlacedOps& placed) {
    const HostThread& ht = host_threads_[h];
    const DeviceThread& dt = device_threads_[device_of_thread_[h]];
    Placement p;
    p.lo = lo;
    p.hi = hi;
    p.valid = true;
    const size_t n = ht.names.size();
    // The host ops verbatim at the voted diagonal: optimal, and no alignment needed.
    if (exact_at >= lo && static_cast<uint64_t>(exact_at) + n <= hi &&
        std::equal(ht.names.begin(), ht.names.end(), dt.names.begin() + exact_at)) {
      p.pairs.reserve(n);
      for (uint32_t i = 0; i < n; ++i) p.pairs.emplace_back(i, static_cast<uint32_t>(exact_at) + i);
    } else {
      std::span<const uint32_t> window(dt.names.data() + lo, hi - lo);
      p.pairs = align_sequences(ht.names, window);
      for (Pair& pr : p.pairs) pr.second += lo;
    }
    if (!p.pairs.empty()) {
      p.skipped = (p.pairs.back().second - p.pairs.front().second + 1) - p.pairs.size();
    }
    for (const Pair& pr : p.pairs) {
      p.consistent += placed.empty() ||
                      placed.consistent(host_.nodes[ht.ops[pr.first].value].id, dt.ts[pr.second]);
    }
    return p;
  }

  struct Candidate {
    uint32_t lo, hi;
    int64_t diagonal;  // device position of host op 0 on the voted diagonal
  };

  // Candidate windows of device thread `d` for host thread names `h`, inside the time interval
  // `bounds` (the threads placed before constrain where this one can be).
  static std::vector<Candidate> candidate_windows(const std::vector<uint32_t>& h,
                                                  const DeviceThread& d,
                                                  std::pair<TimeNs, TimeNs> bounds) {
    const size_t n = h.size(), m = d.names.size();
    const uint32_t slack = slack_for(n);
    if (m <= n + 2 * static_cast<size_t>(slack)) return {{0, static_cast<uint32_t>(m), 0}};
    for (size_t k : {size_t{8}, size_t{4}, size_t{2}, size_t{1}}) {
      k = std::min(k, n);
      std::vector<Candidate> c = vote(h, d, k, slack, bounds);
      if (!c.empty()) return c;
      if (k == 1) break;
    }
    // Only frequent names in common: align with the whole thread.
    return {{0, static_cast<uint32_t>(m), 0}};
  }

  // Visits (start, hash) of every k-gram of `s`, a rolling polynomial hash.
  template <typename Visit>
  static void for_each_gram(const std::vector<uint32_t>& s, size_t k, Visit&& visit) {
    constexpr uint64_t kBase = 0x100000001b3ull;
    uint64_t top = 1;  // kBase^(k-1)
    for (size_t t = 1; t < k; ++t) top *= kBase;
    uint64_t hash = 0;
    for (size_t t = 0; t < s.size(); ++t) {
      if (t >= k) hash -= (s[t - k] + 1ull) * top;
      hash = hash * kBase + (s[t] + 1ull);
      if (t + 1 >= k) visit(t + 1 - k, hash);
    }
  }

  // The host k-grams occurring at most kMaxSeedOccurrences times, as (hash, host position)
  // sorted.
  static std::vector<std::pair<uint64_t, uint32_t>> seed_grams(const std::vector<uint32_t>& h,
                                                               size_t k) {
    std::vector<std::pair<uint64_t, uint32_t>> grams;  // (hash, host position)
    grams.reserve(h.size());
    for_each_gram(
        h, k, [&](size_t i, uint64_t hash) { grams.emplace_back(hash, static_cast<uint32_t>(i)); });
    std::sort(grams.begin(), grams.end());
    std::vector<std::pair<uint64_t, uint32_t>> seeds;
    for (size_t s = 0; s < grams.size();) {
      size_t e = s;
      while (e < grams.size() && grams[e].first == grams[s].first) ++e;
      if (e - s <= kMaxSeedOccurrences)
        seeds.insert(seeds.end(), grams.begin() + s, grams.begin() + e);
      s = e;
    }
    return seeds;
  }

  // Diagonal votes of the host k-grams occurring at most kMaxSeedOccurrences times.
  static std::vector<Candidate> vote(const std::vector<uint32_t>& h, const DeviceThread& dt,
                                     size_t k, uint32_t slack, std::pair<TimeNs, TimeNs> bounds) {
    const std::vector<uint32_t>& d = dt.names;
    const size_t n = h.size(), m = d.size();
    if (k == 0 || n < k || m < k) return {};
    const std::vector<std::pair<uint64_t, uint32_t>> seeds = seed_grams(h, k);
    if (seeds.empty()) return {};
    // votes[j - i + n]: device position j of host position i.
    std::vector<uint32_t> votes(n + m + 1, 0);
    bool any = false;
    for_each_gram(d, k, [&](size_t j, uint64_t hash) {
      auto it = std::lower_bound(seeds.begin(), seeds.end(), std::make_pair(hash, uint32_t{0}));
      for (; it != seeds.end() && it->first == hash; ++it) {
        ++votes[j + n - it->second];
        any = true;
      }
    });
    if (!any) return {};
    return peaks_of(votes, dt, n, slack, bounds);
  }

  // The candidates the votes (vote()) make: smoothed over +-slack (insertions and deletions move
  // the diagonal), the peaks within a quarter of the best, apart from each other, whose window
  // overlaps `bounds` in time.
  static std::vector<Candidate> peaks_of(const std::vector<uint32_t>& votes, const DeviceThread& dt,
                                         size_t n, uint32_t slack,
                                         std::pair<TimeNs, TimeNs> bounds) {
    const size_t m = dt.names.size();
    std::vector<uint64_t> prefix(votes.size() + 1, 0);
    for (size_t o = 0; o < votes.size(); ++o) prefix[o + 1] = prefix[o] + votes[o];
    auto smoothed = [&](size_t o) {
      size_t a = o > slack ? o - slack : 0;
      size_t b = std::min(votes.size(), o + slack + 1);
      return prefix[b] - prefix[a];
    };
    auto window = [&](size_t o) {
      const int64_t start = static_cast<int64_t>(o) - static_cast<int64_t>(n);
      return std::make_pair(
          std::clamp<int64_t>(start - slack, 0, static_cast<int64_t>(m)),
          std::clamp<int64_t>(start + static_cast<int64_t>(n) + slack, 0, static_cast<int64_t>(m)));
    };
    std::vector<std::pair<uint64_t, size_t>> peaks;  // (smoothed, offset)
    for (size_t o = 0; o < votes.size(); ++o) {
      if (votes[o] == 0) continue;
      auto [lo, hi] = window(o);
      if (lo >= hi || dt.ts[hi - 1] < bounds.first || dt.ts[lo] > bounds.second) continue;
      peaks.emplace_back(smoothed(o), o);
    }
    if (peaks.empty()) return {};
    std::sort(peaks.begin(), peaks.end(), [&](const auto& x, const auto& y) {
      if (x.first != y.first) return x.first > y.first;
      if (votes[x.second] != votes[y.second]) return votes[x.second] > votes[y.second];
      return x.second < y.second;
    });
    const uint64_t best = peaks.front().first;
    std::vector<size_t> chosen;
    for (const auto& [score, o] : peaks) {
      if (score * 4 < best || chosen.size() == kMaxCandidates) break;
      bool near = false;
      for (size_t c : chosen) near |= (c > o ? c - o : o - c) <= 2 * static_cast<size_t>(slack);
      if (!near) chosen.push_back(o);
    }
    std::sort(chosen.begin(), chosen.end());
    std::vector<Candidate> out;
    for (size_t o : chosen) {
      auto [lo, hi] = window(o);
      out.push_back({static_cast<uint32_t>(lo), static_cast<uint32_t>(hi),
                     static_cast<int64_t>(o) - static_cast<int64_t>(n)});
    }
    return out;
  }

  // Each thread on its own: its best window given the threads placed before it.
  void place_by_names(std::vector<Placement>& placements) {
    PlacedOps placed;
    for (size_t h : placement_order()) {
      if (device_of_thread_[h] == kNoThread) continue;
      const DeviceThread& dt = device_threads_[device_of_thread_[h]];
      const HostThread& ht = host_threads_[h];
      std::vector<Candidate> candidates =
          candidate_windows(ht.names, dt,
                            placed.time_bounds(host_.nodes[ht.ops.front().value].id,
                                               host_.nodes[ht.ops.back().value].id));
      Placement best;
      const size_t n = ht.ops.size();
      for (const Candidate& c : candidates) {  // by window start
        Placement p = evaluate(h, c.lo, c.hi, c.diagonal, placed);
        ++windows_considered_[h];
        if (better(p, best)) best = std::move(p);
        // Every op matched, in time order, nothing skipped: no later window can do better.
        if (best.consistent == n && best.skipped == 0) break;
      }
      if (!best.valid) continue;
      for (const Pair& pr : best.pairs) {
        placed.add(host_.nodes[ht.ops[pr.first].value].id, dt.ts[pr.second]);
      }
      placed.sort();
      placements[h] = std::move(best);
    }
  }

  // Iterations delimited by the annotation; all threads placed in the best one. Returns false
  // (after counting it) when the device trace has no such annotation.
  bool place_in_iteration(std::vector<Placement>& placements) {
    // [ts, end) of the annotation events, nested ones merged: an iteration ends with one.
    std::vector<std::pair<TimeNs, TimeNs>> spans;
    for (const DeviceEvent& e : dev_.events) {
      if (e.cat != DeviceCategory::kCpuOp && e.cat != DeviceCategory::kUserAnnotation) continue;
      if (pid_filter_ && e.pid != *pid_filter_) continue;
      if (dev_.name(e).find(opt_.annotation) != std::string_view::npos) {
        spans.emplace_back(e.ts, e.end());
      }
    }
    if (spans.empty()) {
      stats_.add(StatKind::kSeqAnnotationNotInDevice, opt_.annotation);
      return false;
    }
    std::sort(spans.begin(), spans.end());
    std::vector<TimeNs> ends;
    TimeNs cur_end = spans.front().second;
    for (const auto& [ts, end] : spans) {
      if (ts >= cur_end) {
        ends.push_back(cur_end);
        cur_end = end;
      } else {
        cur_end = std::max(cur_end, end);
      }
    }
    ends.push_back(cur_end);
    std::vector<std::pair<TimeNs, TimeNs>> iterations;  // [begin, end) in time
    TimeNs begin = std::numeric_limits<TimeNs>::min();
    for (TimeNs end : ends) {
      iterations.emplace_back(begin, end);
      begin = end;
    }
    iterations.emplace_back(begin, std::numeric_limits<TimeNs>::max());
    iterations_ = iterations.size();

    const std::vector<size_t> order = placement_order();
    std::vector<Placement> best;
    uint64_t best_matched = 0, best_skipped = 0;
    for (const auto& [t0, t1] : iterations) {
      std::vector<Placement> current(host_threads_.size());
      uint64_t matched = 0, skipped = 0;
      PlacedOps none;
      for (size_t h : order) {
        if (device_of_thread_[h] == kNoThread) continue;
        const DeviceThread& dt = device_threads_[device_of_thread_[h]];
        auto lo = std::lower_bound(dt.ts.begin(), dt.ts.end(), t0) - dt.ts.begin();
        auto hi = std::lower_bound(dt.ts.begin(), dt.ts.end(), t1) - dt.ts.begin();
        if (lo >= hi) continue;
        current[h] = evaluate(h, static_cast<uint32_t>(lo), static_cast<uint32_t>(hi), lo, none);
        ++windows_considered_[h];
        matched += current[h].pairs.size();
        skipped += current[h].skipped;
      }
      if (best.empty() || matched > best_matched ||
          (matched == best_matched && skipped < best_skipped)) {
        best = std::move(current);
        best_matched = matched;
        best_skipped = skipped;
      }
    }
    placements = std::move(best);
    return true;
  }

  // ----- step 3: the map and the report -----
  StatusOr<HostDeviceMap> build_map(const std::vector<Placement>& placements) {
    HostDeviceMap map;
    map.device_of.assign(host_.nodes.size(), DeviceEventIdx{});
    map.host_of.assign(dev_.events.size(), HostNodeIdx{});
    std::vector<bool> reach;
    if (opt_.compat == Compat::kChakra) reach = reachable_from_root(host_);
    PlacedOps all;
    uint64_t considered = 0, skipped_device = 0;
    for (size_t h = 0; h < host_threads_.size(); ++h) {
      const HostThread& ht = host_threads_[h];
      considered += ht.ops.size();
      for (HostNodeIdx i : ht.ops) map.host_ops_with_rf_id += host_.nodes[i.value].rf_id != 0;
      ThreadMatch tm = match_thread(h, placements[h], reach, map, all);
      if (tm.paired) {
        skipped_device += placements[h].skipped;
      } else if (!ht.ops.empty()) {
        stats_.add(StatKind::kSeqHostThreadWithoutDeviceThread,
                   fmt::format("host tid {} ({} ops)", ht.tid, ht.ops.size()));
      }
      map.matched += tm.matched;
      map.threads.push_back(tm);
    }
    map.candidates = considered;
    count_unmatched(map, reach);
    stats_.add_count(StatKind::kSeqDeviceOpSkipped, skipped_device);
    all.sort();
    uint64_t out_of_order = 0;  // ops matched out of time order across threads
    for (uint32_t i = 0; i < host_.nodes.size(); ++i) {
      DeviceEventIdx e = map.device_of[i];
      if (e.valid() && !all.consistent(host_.nodes[i].id, dev_[e].ts)) ++out_of_order;
    }
    stats_.add_count(StatKind::kSeqOutOfStartOrder, out_of_order);
    if (iterations_ > 0) {
      stats_.add_count(StatKind::kSeqAnnotationIterations, iterations_);
    }
    CF_RETURN_IF_ERROR(check_rates(map, considered - map.unreachable));
    return map;
  }

  // Host thread h's pairs, placed by `p`, into the map (and `all`), but for ops the root does not
  // reach (Chakra mode: counted); its line of the report.
  ThreadMatch match_thread(size_t h, const Placement& p, const std::vector<bool>& reach,
                           HostDeviceMap& map, PlacedOps& all) const {
    const HostThread& ht = host_threads_[h];
    ThreadMatch tm;
    tm.host_tid = ht.tid;
    tm.host_ops = ht.ops.size();
    tm.windows_considered = windows_considered_[h];
    if (device_of_thread_[h] == kNoThread) return tm;
    const DeviceThread& dt = device_threads_[device_of_thread_[h]];
    tm.paired = true;
    tm.device_pid = dt.pid;
    tm.device_tid = dt.tid;
    tm.device_ops = dt.ops.size();
    if (p.valid && p.lo < p.hi) {
      tm.window_begin = p.lo;
      tm.window_end = p.hi;
      tm.window_ts_begin = dt.ts[p.lo];
      for (uint32_t j = p.lo; j < p.hi; ++j)
        tm.window_ts_end = std::max(tm.window_ts_end, dev_[dt.ops[j]].end());
    }
    for (const Pair& pr : p.pairs) {
      const HostNodeIdx hi = ht.ops[pr.first];
      const DeviceEventIdx di = dt.ops[pr.second];
      if (!reach.empty() && !reach[hi.value]) {
        ++map.unreachable;
        continue;
      }
      map.device_of[hi.value] = di;
      map.host_of[di.value] = hi;
      ++tm.matched;
      all.add(host_.nodes[hi.value].id, dev_[di].ts);
    }
    return tm;
  }

  // Unmatched host ops (that the root reaches), counted, with examples.
  void count_unmatched(const HostDeviceMap& map, const std::vector<bool>& reach) {
    uint64_t unmatched = 0;
    for (const HostThread& ht : host_threads_) {
      for (HostNodeIdx i : ht.ops) {
        if (map.device_of[i.value].valid()) continue;
        if (!reach.empty() && !reach[i.value]) continue;
        const HostNode& n = host_.nodes[i.value];
        ++unmatched;
        if (unmatched <= DataProblems::kMaxExamples) {
          stats_.add(StatKind::kSeqHostOpWithoutDeviceOp,
                     fmt::format("node {} '{}' (tid {})", n.id, n.name, n.tid));
        }
      }
    }
    if (unmatched > DataProblems::kMaxExamples) {
      stats_.add_count(StatKind::kSeqHostOpWithoutDeviceOp, unmatched - DataProblems::kMaxExamples);
    }
  }

  Status check_rates(const HostDeviceMap& map, uint64_t considered) const {
    if (opt_.min_match_rate <= 0) return Status();
    auto rate = [](uint64_t a, uint64_t b) {
      return b == 0 ? 1.0 : static_cast<double>(a) / static_cast<double>(b);
    };
    std::string why;
    if (rate(map.matched, considered) < opt_.min_match_rate) {
      why = fmt::format("{} of {} host ops matched ({:.1f}%)", map.matched, considered,
                        100.0 * rate(map.matched, considered));
    } else {
      for (const ThreadMatch& t : map.threads) {
        if (t.host_ops >= kMinThreadOpsForRate &&
            rate(t.matched, t.host_ops) < opt_.min_match_rate) {
          why = fmt::format("host thread {}: {} of {} ops matched ({:.1f}%)", t.host_tid, t.matched,
                            t.host_ops, 100.0 * rate(t.matched, t.host_ops));
          break;
        }
      }
    }
    if (why.empty()) return Status();
    std::string threads;
    for (const ThreadMatch& t : map.threads) threads += "\n  " + format_thread_match(t);
    return Status::errorf(
        "sequence matching of {} with {}: {}, below --min-match-rate {:.1f}%; the operator names "
        "do not align (different runs or programs?){}",
        host_.path, dev_.path, why, 100.0 * opt_.min_match_rate, threads);
  }

  static constexpr size_t kNoThread = std::numeric_limits<size_t>::max();

  const HostTrace& host_;
  const DeviceTrace& dev_;
  const LinkOptions& opt_;
  DataProblems& stats_;
  NameTable names_;
  std::optional<int64_t> pid_filter_;
  std::vector<HostThread> host_threads_;
  std::vector<DeviceThread> device_threads_;
  std::vector<size_t> device_of_thread_;  // by host thread
  std::vector<uint32_t> windows_considered_;
  size_t iterations_ = 0;
};

}  // namespace

std::string format_thread_match(const ThreadMatch& t) {
  double pct = t.host_ops == 0
                   ? 100.0
                   : 100.0 * static_cast<double>(t.matched) / static_cast<double>(t.host_ops);
  if (!t.paired) {
    return fmt::format("host tid {}: {} ops, no device thread shares their names", t.host_tid,
                       t.host_ops);
  }
  std::string window;
  if (t.window_end - t.window_begin < t.device_ops) {
    window = fmt::format(", window of device ops [{}, {}) of {} ({} considered)", t.window_begin,
                         t.window_end, t.device_ops, t.windows_considered);
  }
  return fmt::format("host tid {} -> device pid {} tid {}: {} / {} ops matched ({:.1f}%){}",
                     t.host_tid, t.device_pid, t.device_tid, t.matched, t.host_ops, pct, window);
}

StatusOr<HostDeviceMap> map_by_sequence(const HostTrace& host, const DeviceTrace& device,
                                        const LinkOptions& options, DataProblems& stats) {
  return SequenceMatcher(host, device, options, stats).run();
}

}  // namespace chakraflow
