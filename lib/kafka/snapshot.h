// KafkaSnapshot: what one poll of one Kafka cluster saw, as plain data.
//
// Produced by kafka::Collector, consumed by the pure analysis and the metrics renderer. It holds
// only what Kafka said (no derived numbers), already narrowed by the cluster's group and topic
// filters. Immutable once published; share it as shared_ptr<const KafkaSnapshot>.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lagsight::kafka {

struct TopicPartition {
  std::string topic;
  std::int32_t partition = 0;

  friend auto operator<=>(const TopicPartition&, const TopicPartition&) = default;
};

// How the group is coordinated: "classic" (JoinGroup protocol with members), "simple" (only
// offset commits, no membership: Flink's KafkaSource, manual assign()), "consumer" (KIP-848).
enum class GroupKind { kClassic, kSimple, kConsumer };
inline const char* GroupKindName(GroupKind kind) {
  switch (kind) {
    case GroupKind::kSimple:
      return "simple";
    case GroupKind::kConsumer:
      return "consumer";
    case GroupKind::kClassic:
      break;
  }
  return "classic";
}

struct ConsumerGroup {
  std::string id;
  std::string state;  // Kafka's state in snake case: stable, empty, preparing_rebalance, ...
  GroupKind kind = GroupKind::kClassic;
  std::optional<int> members;  // unknown where the broker does not describe the group to us
  // Committed offsets (the next offset the group would read), of every partition the group
  // committed on, assigned or not.
  std::map<TopicPartition, std::int64_t> committed;
  bool offsets_known = true;  // false when reading this group's offsets failed in this poll
};

struct PartitionOffsets {
  std::optional<std::int64_t> log_start;  // earliest offset still in the log
  std::optional<std::int64_t> log_end;    // high watermark: offset of the next record written
};

struct KafkaSnapshot {
  std::vector<ConsumerGroup> groups;  // sorted by id
  // Partition counts of every topic any group committed on (after the topic filter), and of the
  // topics the Flink half asked for.
  std::map<std::string, std::int32_t> topic_partitions;
  // Every topic of the cluster that passes the topic filter, for mapping Flink's escaped topic
  // names back to real ones.
  std::vector<std::string> all_topics;
  // Offsets of every partition of those topics; a partition whose offsets could not be read
  // has empty optionals.
  std::map<TopicPartition, PartitionOffsets> partitions;
  // Per-group and per-partition failures that did not fail the whole poll.
  std::vector<std::string> partial_errors;
};

}  // namespace lagsight::kafka
