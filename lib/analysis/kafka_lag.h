// Kafka-side lag: committed offsets joined with log offsets, per group, topic and partition.
//
// Pure: a function of one KafkaSnapshot, no I/O, no clock. The arithmetic and the cases that
// make lag look wrong are decided here and nowhere else:
//   lag = max(0, log_end - committed)
//   - no committed offset for a partition of a topic the group consumes: no lag, the partition is
//     reported as uncommitted (never as -1 or NaN lag);
//   - committed beyond log end (e.g. the topic was recreated): lag 0, flagged;
//   - committed before log start (retention deleted records the group never read): the lag is
//     still log_end - committed, as Kafka's own tool reports it, and the partition is flagged;
//   - log end unknown (its leader did not answer): no lag for that partition.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/packed_optional.h"
#include "kafka/snapshot.h"

namespace lagsight::analysis {

enum class CommitPosition : std::uint8_t {
  kInRange,         // log_start <= committed <= log_end (or log start unknown)
  kNoCommit,        // the group has no committed offset for this partition
  kBeyondLogEnd,    // committed > log_end
  kBeforeLogStart,  // committed < log_start: records were deleted before the group read them
  kLogEndUnknown,   // the partition's log end could not be read in this poll
};

// One per partition of every topic a group committed on (a million at issue 14's S3, two polls'
// worth while the next is analysed): packed optionals and the small fields together, 24 bytes
// rather than 48 with std::optional and padding.
struct PartitionLag {
  PackedOptional64 committed;
  PackedOptional64 lag;
  std::int32_t partition = 0;
  CommitPosition position = CommitPosition::kInRange;
};
static_assert(sizeof(PartitionLag) <= 24);

struct TopicLag {
  std::string topic;
  std::vector<PartitionLag> partitions;  // every partition of the topic, by number
  std::int64_t lag_sum = 0;              // over partitions with a known lag
  int uncommitted_partitions = 0;
};

struct GroupLag {
  std::string group;
  std::vector<TopicLag> topics;         // topics the group committed on, by name
  std::optional<std::int64_t> max_lag;  // over all its partitions with a known lag
  bool read_committed = false;          // lag up to the last stable offset (ConsumerGroup)
};

// One entry per group of the snapshot whose offsets are known, in the snapshot's order.
std::vector<GroupLag> ComputeGroupLags(const kafka::KafkaSnapshot& snapshot);

// The rule for one partition, exposed for tests and for the Flink side to reuse: the lag runs to
// kafka::ReadableEnd of the reader's isolation; "beyond the log end" is judged against the high
// watermark either way.
PartitionLag ComputePartitionLag(std::int32_t partition, std::optional<std::int64_t> committed,
                                 const kafka::PartitionOffsets& offsets,
                                 bool read_committed = false);

}  // namespace lagsight::analysis
