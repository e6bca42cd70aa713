// Communicator groups for ASTRA-sim (`--comm-group-configuration`): which ranks take part in each
// process group the traces' collectives name, as the JSON object ASTRA-sim reads:
//   {"0": [0, 1, 2, 3, 4, 5, 6, 7], "1": [0, 2, 4, 6]}
// (key: a process group's name, the `pg_name` attribute of the collectives; value: its ranks).
//
// Sources, per rank's .et (scan_comm_groups):
// - the PyTorch process-group METADATA node (`## process_group:init ##`, also when written as a
//   compute node): its inputs values list every group with its ranks; an empty rank list is the
//   default group, i.e. every rank of the run;
// - the pg_name of every collective / send / recv node.
// Combined over the ranks (build_comm_groups): a group declared by the metadata gets the declared
// ranks (the union where ranks disagree, counted); a group named by collectives but declared
// nowhere gets the ranks whose traces use it (counted as inferred); with no group at all (traces
// that record no process groups, such as the DLRM pairs) the file holds PyTorch's default group
// "0" with every rank of the run, the group such traces' collectives run on.
//
// Renumbering (`name_offset`): ASTRA-sim asserts on a group named "0" (PyTorch's default). With
// an offset k, every numeric group name n becomes n + k in the file; the converter applies the same
// offset to the pg_name attributes it writes (ConvertOptions::pg_name_offset), so that the names
// still match. Non-numeric names are kept.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "stages/common/ordered_batches.h"
#include "stages/common/status.h"

namespace chakraflow {

// A CPU-side collective of a rank (a communication node named as gloo's, comm_attributes.h), as
// its .et holds it: what placing collectives on groups across ranks reads
// (comm_group_inference.h).
struct CpuCollective {
  uint64_t node_id = 0;
  int32_t type = 0;        // ChakraNodeType value (collective, send, recv)
  int32_t comm_type = -1;  // CollectiveType value; -1: none
  int64_t comm_size = 0;
  uint64_t start_us = 0;  // start_time_micros; 0: none
  uint64_t duration_us = 0;
  std::string pg_name;  // as written
  friend bool operator==(const CpuCollective&, const CpuCollective&) = default;
};

struct RankCommGroups {
  int rank = 0;
  // Groups the metadata node declares, by name (numeric names already offset), with their ranks;
  // an empty list: every rank.
  std::map<std::string, std::vector<int>> declared;
  std::set<std::string> used;                  // pg_names on the rank's communication nodes
  uint64_t unreadable_metadata = 0;            // metadata nodes whose group list does not parse
  std::vector<CpuCollective> cpu_collectives;  // in id order
  friend bool operator==(const RankCommGroups&, const RankCommGroups&) = default;
};

struct EtPlusTrace;
struct ChakraTrace;

// What scan_comm_groups reads back from the .et write_chakra_trace writes for `chakra`, taken
// from the conversion in memory (the same node names, types, rendered inputs and pg_names), so
// that a run need not read its traces again. `rank` is left 0. Fails as render_io. `workers` (may
// be null) search the records in ranges, concurrently; the result is the same.
StatusOr<RankCommGroups> comm_groups_of(const EtPlusTrace& trace, const ChakraTrace& chakra,
                                        int name_offset, const OrderedBatches* workers = nullptr);

// Reads one rank's .et. `name_offset`: the offset the converter applied to the pg_name
// attributes, applied here to the metadata's names too. Errors name the file and the record.
StatusOr<RankCommGroups> scan_comm_groups(const std::string& et_path, int rank, int name_offset);

struct CommGroups {
  std::map<std::string, std::vector<int>> groups;
  uint64_t inferred = 0;       // groups named by collectives but declared by no metadata
  uint64_t disagreements = 0;  // groups whose declared ranks differ between ranks (union kept)
  bool default_world = false;  // no group anywhere: the default group of every rank was written
};

// `world`: the ranks of the run, ascending.
CommGroups build_comm_groups(const std::vector<RankCommGroups>& ranks,
                             const std::vector<int>& world, int name_offset);

// The JSON text ASTRA-sim reads: numeric names in numeric order, then the others; one line per
// group; ends with a newline. Deterministic.
std::string comm_groups_json(const CommGroups& groups);

// The group list in a process-group metadata node's inputs values (the Python str() of a list
// holding one JSON string, "['[{\"pg_name\": \"0\", \"ranks\": [...]}, ...]']"), added to
// *out by name (numeric names offset by `name_offset`), each group's ranks sorted (empty: every
// rank). False if it does not parse.
bool parse_group_list(const std::string& values, int name_offset,
                      std::map<std::string, std::vector<int>>* out);

// `name` + offset when `name` is a non-negative decimal number (the pg names PyTorch gives), else
// `name` unchanged.
std::string offset_group_name(const std::string& name, int offset);

}  // namespace chakraflow
