// The closed set of data problems that a stage counts and goes on past (docs/bad_input.md), as
// Perfetto's stats table is: one row per kind, with a stable snake_case key (what summary.json,
// simulation.json and the reports print, and what tests check) and a description for people. A
// key never changes once released (docs/compatibility.md lists them); a new problem is a new row.
// Rows are grouped by the stage that counts them; the prefix says which part of the input it is
// about. Constant data; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace chakraflow {

// X(enum name, key, description)
#define CHAKRAFLOW_STAT_KINDS(X)                                                                   \
  /* link: the loaders */                                                                          \
  X(kHostSchemaMissing, "host_schema_missing",                                                     \
    "host trace without \"schema\" (layout told by its nodes)")                                    \
  X(kHostInvalidUtf8Bytes, "host_invalid_utf8_bytes",                                              \
    "invalid UTF-8 bytes in the host trace (replaced by '?')")                                     \
  X(kDeviceInvalidUtf8Bytes, "device_invalid_utf8_bytes",                                          \
    "invalid UTF-8 bytes in the device trace (replaced by '?')")                                   \
  X(kDeviceEventWithoutPh, "device_event_without_ph",                                              \
    "device event without \"ph\" (read as a complete event)")                                      \
  X(kDeviceIdAsString, "device_id_as_string",                                                      \
    "device event id given as a JSON string (read as its number)")                                 \
  /* link: host and device ops */                                                                  \
  X(kHostPidNotInDevice, "host_pid_not_in_device_trace",                                           \
    "host trace pid not among the device trace's CPU-op pids (linked anyway)")                     \
  X(kHostParentMissingReattached, "host_parent_missing_reattached",                                \
    "host node whose parent is missing (reattached to its thread root)")                           \
  X(kHostOpsSharingRfId, "host_ops_sharing_rf_id", "host ops sharing an rf_id")                    \
  X(kHostRfIdNotInDevice, "host_rf_id_not_in_device_trace",                                        \
    "host ops whose rf_id is not in the device trace")                                             \
  X(kDuplicateCorrelationId, "duplicate_correlation_id", "duplicate correlation id")               \
  X(kGpuOpWithoutLaunchEvent, "gpu_op_without_launch_event", "GPU op without launch event")        \
  X(kGpuOpLaunchedOutsideCpuOp, "gpu_op_launched_outside_cpu_op",                                  \
    "GPU op launched outside any CPU op")                                                          \
  X(kGpuOpWithoutCpuOp, "gpu_op_without_cpu_op", "GPU op without launching CPU op")                \
  X(kGpuOpCpuOpWithoutHostOp, "gpu_op_cpu_op_without_host_op",                                     \
    "GPU ops whose launching CPU op has no host op")                                               \
  X(kChakraExclusiveBelowZero, "chakra_exclusive_dur_below_zero",                                  \
    "--compat chakra: exclusive duration below 0 in Chakra's float arithmetic (written as 0)")     \
  /* link: sequence matching (device traces without rf_ids) */                                     \
  X(kSeqHostPidNotInDevice, "seq_host_pid_not_in_device_trace",                                    \
    "sequence matching: host trace pid not in the device trace")                                   \
  X(kSeqAnnotationNotInDevice, "seq_annotation_not_in_device_trace",                               \
    "sequence matching: --annotation not in the device trace (windows found by name)")             \
  X(kSeqHostThreadWithoutDeviceThread, "seq_host_thread_without_device_thread",                    \
    "sequence matching: host thread without a device thread")                                      \
  X(kSeqHostOpWithoutDeviceOp, "seq_host_op_without_device_op",                                    \
    "sequence matching: host ops without a device CPU op")                                         \
  X(kSeqDeviceOpSkipped, "seq_device_op_skipped",                                                  \
    "sequence matching: device CPU ops skipped inside a matched window")                           \
  X(kSeqOutOfStartOrder, "seq_out_of_start_order",                                                 \
    "sequence matching: matched ops out of start order with another thread")                       \
  X(kSeqAnnotationIterations, "seq_annotation_iterations",                                         \
    "sequence matching: iterations delimited by --annotation")                                     \
  /* link: sync dependencies, by call kind (device sync, stream sync, event sync, stream wait) */  \
  X(kSyncTargetAfterReturnDropped, "sync_target_after_return_dropped",                             \
    "sync target dropped: it ends after the sync returned or its waiter started")                  \
  X(kSyncDeviceInferred, "sync_device_inferred",                                                   \
    "device sync without cuda_sync record on a multi-GPU trace: device taken from the thread's "   \
    "last launch")                                                                                 \
  X(kSyncStreamInferred, "sync_stream_inferred",                                                   \
    "stream sync without cuda_sync record: stream taken from the thread's last launch")            \
  X(kSyncDeviceUnknown, "sync_device_unknown",                                                     \
    "device sync without cuda_sync record on a multi-GPU trace and no earlier launch on its "      \
    "thread: device unknown (no dependency)")                                                      \
  X(kSyncStreamUnknown, "sync_stream_unknown",                                                     \
    "stream sync without cuda_sync record and no earlier launch on its thread: stream unknown "    \
    "(no dependency)")                                                                             \
  X(kSyncEventUnknownEvent, "sync_event_unknown_event",                                            \
    "event sync without cuda_sync record: the event is unknown (no dependency)")                   \
  X(kSyncStreamWaitUnknownEvent, "sync_stream_wait_unknown_event",                                 \
    "stream wait without cuda_sync record: the event is unknown (no dependency)")                  \
  X(kSyncEventRecordNotInTrace, "sync_event_record_not_in_trace",                                  \
    "event sync on an event whose cudaEventRecord is not in the trace (no dependency)")            \
  X(kSyncStreamWaitRecordNotInTrace, "sync_stream_wait_record_not_in_trace",                       \
    "stream wait on an event whose cudaEventRecord is not in the trace (no dependency)")           \
  X(kSyncDeviceTargetsAfterReturn, "sync_device_targets_after_return",                             \
    "device sync whose every target ends after it returned (no dependency)")                       \
  X(kSyncStreamTargetsAfterReturn, "sync_stream_targets_after_return",                             \
    "stream sync whose every target ends after it returned (no dependency)")                       \
  X(kSyncEventTargetsAfterReturn, "sync_event_targets_after_return",                               \
    "event sync whose every target ends after it returned (no dependency)")                        \
  X(kSyncStreamWaitTargetsAfterReturn, "sync_stream_wait_targets_after_return",                    \
    "stream wait whose every target ends after it returned (no dependency)")                       \
  X(kSyncDepTargetNotWritten, "sync_dep_target_not_written",                                       \
    "sync dependency dropped: the GPU op it waits on is not written (orphan, or outside the "      \
    "linked window)")                                                                              \
  X(kSyncDepWaiterNotWritten, "sync_dep_waiter_not_written",                                       \
    "sync dependency dropped: the waiting op is not written (outside the linked window)")          \
  /* convert: reading the ET+ */                                                                   \
  X(kEtPlusSchemaRejectedByChakra, "et_plus_schema_rejected_by_chakra",                            \
    "schema that Chakra 1.0.0's converter rejects (converted anyway)")                             \
  X(kEtPlusSchemaUnknown, "et_plus_schema_unknown",                                                \
    "unknown schema version (converted by its layout)")                                            \
  X(kEtPlusMetadataKeyMissing, "et_plus_metadata_key_missing",                                     \
    "global metadata key missing or not of the expected type (attr left out)")                     \
  X(kEtPlusInvalidUtf8Bytes, "et_plus_invalid_utf8_bytes",                                         \
    "invalid UTF-8 bytes in the input (replaced by '?')")                                          \
  X(kEtPlusStringNotUtf8, "et_plus_string_not_utf8",                                               \
    "string that is not valid UTF-8 (bytes replaced by '?')")                                      \
  X(kEtPlusNodeWithoutIo, "et_plus_node_without_io",                                               \
    "node without inputs/outputs lists (written as [])")                                           \
  X(kEtPlusOpSchemaNotString, "et_plus_op_schema_not_string",                                      \
    "attr \"op_schema\" that is not a string (ignored)")                                           \
  X(kEtPlusPgNameNotString, "et_plus_pg_name_not_string",                                          \
    "attr \"pg_name\" that is not a string (ignored)")                                             \
  X(kEtPlusCollectiveNameNotString, "et_plus_collective_name_not_string",                          \
    "attr \"collective_name\" that is not a string (ignored)")                                     \
  X(kEtPlusOldParentIdsMapped, "et_plus_old_parent_ids_mapped",                                    \
    "schema 1.0.1 ET+ with pre-renumbering parent ids (mapped to the new ids)")                    \
  X(kEtPlusOldParentNotRecovered, "et_plus_old_parent_not_recovered",                              \
    "schema 1.0.1 parent id not recovered (parent left missing)")                                  \
  X(kEtPlusOldParentIdsInconsistent, "et_plus_old_parent_ids_inconsistent",                        \
    "schema 1.0.1 parent ids inconsistent with renumbering (used as they are)")                    \
  X(kEtPlusProfilerOverheadUnreadable, "et_plus_profiler_overhead_unreadable",                     \
    "ET+ \"profiler_overhead\" object that does not parse (ignored)")                              \
  /* convert: the node tree */                                                                     \
  X(kConvertNegativeExclusiveDur, "convert_negative_exclusive_dur",                                \
    "negative exclusive_dur (written as 0)")                                                       \
  X(kConvertParentMissingAttached, "convert_parent_missing_attached",                              \
    "node whose parent is missing (attached to its thread root)")                                  \
  X(kConvertParentMissingOwnRoot, "convert_parent_missing_own_root",                               \
    "node whose parent is missing, no thread root for its tid (walked on its own)")                \
  X(kConvertSelfParentAttached, "convert_self_parent_attached",                                    \
    "node that is its own parent (attached to its thread root)")                                   \
  X(kConvertSelfParentOwnRoot, "convert_self_parent_own_root",                                     \
    "node that is its own parent, no thread root for its tid (walked on its own)")                 \
  X(kConvertSelfParentDropped, "convert_self_parent_dropped",                                      \
    "node that is its own parent (never walked: dropped, as Chakra does)")                         \
  X(kConvertCtrlCycleAttached, "convert_ctrl_cycle_attached",                                      \
    "node on a ctrl_deps cycle (attached to its thread root)")                                     \
  X(kConvertCtrlCycleOwnRoot, "convert_ctrl_cycle_own_root",                                       \
    "node on a ctrl_deps cycle, no thread root for its tid (walked on its own)")                   \
  X(kConvertCtrlCycleDropped, "convert_ctrl_cycle_dropped",                                        \
    "node on a ctrl_deps cycle (never walked: dropped, as Chakra does)")                           \
  X(kConvertGpuWithoutLauncher, "convert_gpu_without_launcher",                                    \
    "GPU node without a launching node (not converted)")                                           \
  X(kConvertGpuLauncherNotConverted, "convert_gpu_launcher_not_converted",                         \
    "GPU node launched by a node that is not converted (not converted)")                           \
  /* convert: dependencies */                                                                      \
  X(kConvertCtrlDepOnRemoved, "convert_ctrl_dep_on_removed",                                       \
    "ctrl_deps on a removed node (dropped)")                                                       \
  X(kConvertInterThreadDepOnSelf, "convert_inter_thread_dep_on_self",                              \
    "inter_thread_dep on the node itself (dropped)")                                               \
  X(kConvertInterThreadDepNotConverted, "convert_inter_thread_dep_not_converted",                  \
    "inter_thread_dep on a node that is not converted (dropped)")                                  \
  X(kConvertSyncDepNotConverted, "convert_sync_dep_not_converted",                                 \
    "sync_dep on a node that is not converted (dropped)")                                          \
  X(kConvertSyncDepAgainstOrder, "convert_sync_dep_against_order",                                 \
    "sync_dep against the dependency order (dropped: it would allow a cycle)")                     \
  X(kConvertStreamEdgeSkipped, "convert_stream_edge_skipped",                                      \
    "GPU op launched before the previous op of its stream (stream edge skipped)")                  \
  /* convert: communication attributes */                                                          \
  X(kCommCollectiveTypedFromLauncher, "comm_collective_typed_from_launcher",                       \
    "collective kernel typed from its launching op")                                               \
  X(kCommCollectiveUnknown, "comm_collective_unknown",                                             \
    "unknown collective kernel (written as COMP_NODE)")                                            \
  X(kCommCollectiveChakraUntyped, "comm_collective_chakra_untyped",                                \
    "collective kernel Chakra 1.0.0 cannot type (it aborts with ValueError); typed as in "         \
    "default mode")                                                                                \
  X(kCommSendRecvChakraUntyped, "comm_send_recv_chakra_untyped",                                   \
    "SendRecv kernel whose record_param_comms has no parent: Chakra 1.0.0 aborts (KeyError); "     \
    "typed from record_param_comms")                                                               \
  X(kCommSizeChakraUncomputable, "comm_size_chakra_uncomputable",                                  \
    "comm_size Chakra 1.0.0 cannot compute (it aborts); computed as in default mode")              \
  X(kCommPeerMissing, "comm_peer_missing",                                                         \
    "send/recv node without a recorded peer rank (no comm_src/comm_dst)")                          \
  X(kCommCpuCollectiveGroupGuessed, "comm_cpu_collective_group_guessed",                           \
    "CPU-side (gloo) collective of a rank in several process groups, no record naming its group "  \
    "(the default group written; chakraflow run places it across ranks)")                          \
  X(kCommCpuCollectiveThreadUnknown, "comm_cpu_collective_thread_unknown",                         \
    "CPU-side (gloo) collective without the thread it ran on (its recorded tid written)")          \
  X(kCommCpuCollectiveCallerUnknown, "comm_cpu_collective_caller_unknown",                         \
    "CPU-side (gloo) collective whose c10d op is not found by its tensors (recorded parent kept)") \
  /* simulate */                                                                                   \
  X(kSimEtWithoutMetadata, "sim_et_without_metadata",                                              \
    ".et file without a GlobalMetadata record (its first record read as a node)")                  \
  X(kSimParentIssuedEarly, "sim_parent_issued_early",                                              \
    "parent op issued before its next op on the thread was read (full exclusive time kept)")       \
  X(kSimCompletionBeforeClock, "sim_completion_before_clock",                                      \
    "completion delivered before the rank's clock (clamped)")                                      \
  X(kSimMessageUnreceived, "sim_message_unreceived", "messages sent that no rank received")        \
  X(kSimCollectiveWithoutCommType, "sim_collective_without_comm_type",                             \
    "collective without comm_type (modelled as an all-reduce)")                                    \
  X(kSimProcessGroupInitUnparsed, "sim_process_group_init_unparsed",                               \
    "process_group:init not understood (its groups are ignored)")                                  \
  X(kSimPgNameUndefined, "sim_pg_name_undefined",                                                  \
    "pg_name not defined by process_group:init (taken as every rank)")                             \
  X(kSimGroupSizeMismatch, "sim_group_size_mismatch",                                              \
    "process group of every rank whose group_size differs from the ranks simulated (taken as "     \
    "every rank)")                                                                                 \
  X(kSimGroupMembersDisagree, "sim_group_members_disagree",                                        \
    "ranks disagree on the members of a process group (the first definition used)")                \
  X(kSimRankNotInGroup, "sim_rank_not_in_group",                                                   \
    "collective on a process group that does not list its rank (never completes)")                 \
  X(kSimCollectiveMembersDisagree, "sim_collective_members_disagree",                              \
    "members of a collective disagree on its type or size (the largest size used)")

enum class StatKind : uint16_t {
#define CHAKRAFLOW_STAT_ENUM(name, key, description) name,
  CHAKRAFLOW_STAT_KINDS(CHAKRAFLOW_STAT_ENUM)
#undef CHAKRAFLOW_STAT_ENUM
};

inline constexpr size_t kStatKindCount = 0
#define CHAKRAFLOW_STAT_COUNT(name, key, description) +1
    CHAKRAFLOW_STAT_KINDS(CHAKRAFLOW_STAT_COUNT)
#undef CHAKRAFLOW_STAT_COUNT
    ;

namespace stat_kinds_internal {
inline constexpr std::array<std::string_view, kStatKindCount> kKeys = {
#define CHAKRAFLOW_STAT_KEY(name, key, description) key,
    CHAKRAFLOW_STAT_KINDS(CHAKRAFLOW_STAT_KEY)
#undef CHAKRAFLOW_STAT_KEY
};
inline constexpr std::array<std::string_view, kStatKindCount> kDescriptions = {
#define CHAKRAFLOW_STAT_DESCRIPTION(name, key, description) description,
    CHAKRAFLOW_STAT_KINDS(CHAKRAFLOW_STAT_DESCRIPTION)
#undef CHAKRAFLOW_STAT_DESCRIPTION
};
}  // namespace stat_kinds_internal

// The stable key: what outputs print and tests check.
constexpr std::string_view stat_key(StatKind kind) {
  return stat_kinds_internal::kKeys[static_cast<size_t>(kind)];
}

// What the kind means and what was done about it, for people.
constexpr std::string_view stat_description(StatKind kind) {
  return stat_kinds_internal::kDescriptions[static_cast<size_t>(kind)];
}

// The kind whose key is `key`, if any.
constexpr std::optional<StatKind> stat_kind_from_key(std::string_view key) {
  for (size_t k = 0; k < kStatKindCount; ++k) {
    if (stat_kinds_internal::kKeys[k] == key) return static_cast<StatKind>(k);
  }
  return std::nullopt;
}

}  // namespace chakraflow
