#include "analysis/kafka_lag.h"

#include <algorithm>
#include <set>

#include "kafka/topic_cursor.h"

namespace lagsight::analysis {

PartitionLag ComputePartitionLag(std::int32_t partition, std::optional<std::int64_t> committed,
                                 const kafka::PartitionOffsets& offsets, bool read_committed) {
  PartitionLag result;
  result.partition = partition;
  result.committed = committed;
  if (!committed) {
    result.position = CommitPosition::kNoCommit;
    return result;
  }
  if (!offsets.log_end) {
    result.position = CommitPosition::kLogEndUnknown;
    return result;
  }
  const std::int64_t end = *offsets.log_end;
  result.lag = std::max<std::int64_t>(0, *kafka::ReadableEnd(offsets, read_committed) - *committed);
  if (*committed > end) {
    result.position = CommitPosition::kBeyondLogEnd;
  } else if (offsets.log_start && *committed < *offsets.log_start) {
    result.position = CommitPosition::kBeforeLogStart;
  }
  return result;
}

std::vector<GroupLag> ComputeGroupLags(const kafka::KafkaSnapshot& snapshot) {
  std::vector<GroupLag> groups;
  groups.reserve(snapshot.groups.size());
  for (const kafka::ConsumerGroup& group : snapshot.groups) {
    if (!group.offsets_known) continue;
    GroupLag group_lag;
    group_lag.group = group.id;
    group_lag.read_committed = group.read_committed;
    std::set<std::string> topics;
    for (const auto& [tp, offset] : group.committed) topics.insert(tp.topic);
    for (const std::string& topic : topics) {
      const auto count = snapshot.topic_partitions.find(topic);
      if (count == snapshot.topic_partitions.end()) continue;  // topic gone: nothing to compare
      TopicLag topic_lag;
      topic_lag.topic = topic;
      topic_lag.partitions.reserve(static_cast<std::size_t>(std::max(count->second, 0)));
      kafka::TopicCursor committed_of(group.committed, topic);
      kafka::TopicCursor offsets_of(snapshot.partitions, topic);
      for (std::int32_t p = 0; p < count->second; ++p) {
        const std::int64_t* committed = committed_of.Find(p);
        const kafka::PartitionOffsets* offsets = offsets_of.Find(p);
        PartitionLag partition = ComputePartitionLag(
            p, committed == nullptr ? std::nullopt : std::optional<std::int64_t>(*committed),
            offsets == nullptr ? kafka::PartitionOffsets{} : *offsets, group.read_committed);
        if (partition.position == CommitPosition::kNoCommit) ++topic_lag.uncommitted_partitions;
        // Read to the end: only a transaction's commit marker is left, which no consumer gets.
        if (partition.lag && *partition.lag > 0) {
          partition.lag = kafka::UnreadRecords(snapshot, {topic, p}, *partition.committed,
                                               *kafka::ReadableEnd(*offsets, group.read_committed),
                                               group.read_committed);
        }
        if (partition.lag) {
          topic_lag.lag_sum += *partition.lag;
          group_lag.max_lag = std::max(group_lag.max_lag.value_or(0), *partition.lag);
        }
        topic_lag.partitions.push_back(partition);
      }
      group_lag.topics.push_back(std::move(topic_lag));
    }
    groups.push_back(std::move(group_lag));
  }
  return groups;
}

}  // namespace lagsight::analysis
