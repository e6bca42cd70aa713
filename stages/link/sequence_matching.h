// Stage 6 (sequence mode): pairs host ops with device CPU ops (cpu_op / user_annotation) by the
// order of operator names, for device traces captured before PyTorch wrote "Record function id".
//
//  1. Threads. Host ops are grouped by their RecordFunction tid (small integers), device CPU ops by
//     (pid, tid) (OS tids); device threads of another process than the host trace's are ignored.
//     Each host thread is paired with the free device thread whose operator names overlap its own
//     most (multiset intersection), greedily, best pair first.
//  2. Window. A device thread may cover many iterations and the host trace one of them. Without
//     an annotation, candidate windows are the diagonals most voted for by the name k-grams the
//     host thread holds at most a few times, within the time the threads placed before leave for
//     it (host ids follow start order across threads; the largest thread is placed first); each
//     candidate is aligned and the best one kept: the most matched ops that agree in time with
//     the threads already placed, then the fewest skipped device ops, then the earliest. With
//     `LinkOptions::annotation`, device events whose name contains it end the iterations, and
//     every thread is matched inside the one iteration where the threads match best together.
//  3. Alignment. Host ops (id order) against the window's device ops (ts order, file order for
//     equal ts) by name: a longest common subsequence, so inserted and missing ops on either side
//     cost only themselves. A common prefix is taken at once; pieces up to 4M cells are solved
//     exactly by dynamic programming (among equally long alignments, the earliest device ops);
//     larger ones lose their common suffix and are cut at anchors (names occurring equally often
//     on both sides, paired in order, longest increasing chain). Near-linear on traces of the
//     same program; exact up to the anchors.
//
// The result feeds the same later stages as map_by_rf_id. Process/thread annotation nodes are not
// matched (the device trace has no such events). Deterministic: a pure function of its inputs.
// Thread-compatible; no TBB.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stages/common/status.h"
#include "stages/link/host_device_mapping.h"
#include "stages/link/link_options.h"
#include "stages/link/trace_model.h"

namespace chakraflow {

// Pairs host ops with device CPU ops by operator order. Fills HostDeviceMap::threads (the match
// report) and counts unmatched ops in `stats`. Returns an error naming both files when the traces
// do not come from the same process or fewer than options.min_match_rate of the host ops (of the
// trace, or of a host thread with at least kMinThreadOpsForRate ops) are matched.
StatusOr<HostDeviceMap> map_by_sequence(const HostTrace& host, const DeviceTrace& device,
                                        const LinkOptions& options, DataProblems& stats);

inline constexpr uint64_t kMinThreadOpsForRate = 32;

// One line of the match report, e.g. "host tid 1 -> device pid 7 tid 23442: 704 / 704 ops matched
// (100.0%), window of device ops [2331, 3035) of 21326 (30 considered)".
std::string format_thread_match(const ThreadMatch& t);

// A longest common subsequence of `a` and `b` (symbols, e.g. interned names) as index pairs
// (i, j), strictly increasing in both. Exact when no anchor cut is needed (see above). Exposed
// for tests.
std::vector<std::pair<uint32_t, uint32_t>> align_sequences(std::span<const uint32_t> a,
                                                           std::span<const uint32_t> b);

// True for the observer's process/thread annotation node names (execution_trace and the older
// execution_graph spelling).
bool is_process_annotation(std::string_view name);
bool is_thread_annotation(std::string_view name);

}  // namespace chakraflow
