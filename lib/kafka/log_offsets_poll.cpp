#include "kafka/log_offsets_poll.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kafka/topic_cursor.h"

namespace lagsight::kafka {

void AddClusterTopics(const std::map<std::string, std::int32_t>& counts,
                      const ExtraReads& extra_reads, const config::NameFilter& topic_filter,
                      KafkaSnapshot& snapshot, LogTopics& topics) {
  for (const auto& [topic, count] : counts) {
    if (!topic_filter.Accepts(topic)) continue;
    snapshot.all_topics.push_back(topic);
    const std::string unified = UnifyCollisionChars(topic);
    if (extra_reads.unified_topics.contains(unified)) topics.all.insert(topic);
    if (extra_reads.read_committed_topics.contains(unified)) {
      topics.all.insert(topic);
      topics.read_committed.insert(topic);
    }
  }
}

std::optional<Error> ReadLogOffsets(const LogTopics& topics,
                                    const std::map<std::string, std::int32_t>& counts,
                                    const Deadline& deadline, KafkaAdmin& admin,
                                    KafkaSnapshot& snapshot) {
  if (topics.all.empty()) return std::nullopt;
  std::vector<TopicPartition> partitions;
  for (const std::string& topic : topics.all) {
    const auto count = counts.find(topic);
    if (count == counts.end()) {
      snapshot.partial_errors.push_back("topic \"" + topic +
                                        "\" has committed offsets but does not exist");
      continue;
    }
    snapshot.topic_partitions[topic] = count->second;
    for (std::int32_t p = 0; p < count->second; ++p) {
      partitions.push_back({topic, p});
      snapshot.partitions[{topic, p}] = {};
    }
  }

  auto log_end = admin.ListOffsets(partitions, OffsetSpec::kLatest, deadline.NextRequest());
  if (!log_end) return log_end.error();
  for (const auto& [tp, offset] : log_end->offsets) snapshot.partitions[tp].log_end = offset;
  for (const std::string& error : log_end->errors) {
    snapshot.partial_errors.push_back("log-end offset of " + error);
  }

  auto log_start = admin.ListOffsets(partitions, OffsetSpec::kEarliest, deadline.NextRequest());
  if (log_start) {
    for (const auto& [tp, offset] : log_start->offsets) snapshot.partitions[tp].log_start = offset;
    for (const std::string& error : log_start->errors) {
      snapshot.partial_errors.push_back("log-start offset of " + error);
    }
  } else {
    snapshot.partial_errors.push_back(log_start.error().message);
  }

  std::vector<TopicPartition> stable;
  for (const TopicPartition& tp : partitions) {
    if (topics.read_committed.contains(tp.topic)) stable.push_back(tp);
  }
  if (stable.empty()) return std::nullopt;
  // Without it a read_committed reader's lag falls back to the high watermark (kafka::ReadableEnd).
  auto last_stable = admin.ListOffsets(stable, OffsetSpec::kLastStable, deadline.NextRequest());
  if (last_stable) {
    for (const auto& [tp, offset] : last_stable->offsets) {
      snapshot.partitions[tp].last_stable = offset;
    }
    for (const std::string& error : last_stable->errors) {
      snapshot.partial_errors.push_back("last stable offset of " + error);
    }
  } else {
    snapshot.partial_errors.push_back("last stable offsets: " + last_stable.error().message);
  }
  return std::nullopt;
}

std::map<RecordKey, std::int64_t> OldestUnconsumedPositions(const KafkaSnapshot& snapshot) {
  // Many groups wait at one position: gathered per partition first, the partition named by its
  // entry in snapshot.partitions, and put in the map sorted once each. Inserting every
  // group-partition into the map compared topic names ~16 times each: 0.16-0.4 s a poll at a
  // million group-partitions on one topic (50,000 positions), in the poll's time to fresh data.
  struct Position {
    const TopicPartition* partition;  // the key in snapshot.partitions
    std::int64_t offset;
    bool read_committed;
    bool operator==(const Position&) const = default;
  };
  struct PositionHash {
    std::size_t operator()(const Position& p) const {
      // Unsigned: an offset a broker answers near 2^63 must not overflow (signed overflow is
      // undefined behaviour).
      const std::size_t h = std::hash<const void*>{}(p.partition);
      const std::uint64_t offset =
          static_cast<std::uint64_t>(p.offset) * 2u + (p.read_committed ? 1u : 0u);
      return h ^ (std::hash<std::uint64_t>{}(offset) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
    }
  };
  std::unordered_map<Position, std::int64_t, PositionHash> largest_lag;
  for (const ConsumerGroup& group : snapshot.groups) {
    std::optional<TopicCursor<const std::map<TopicPartition, PartitionOffsets>>> offsets_of;
    const std::string* topic = nullptr;
    for (const auto& [tp, committed] : group.committed) {
      if (topic == nullptr || *topic != tp.topic) {
        topic = &tp.topic;
        offsets_of.emplace(snapshot.partitions, tp.topic);
      }
      const auto* found = offsets_of->FindEntry(tp.partition);
      if (found == nullptr) continue;
      const PartitionOffsets& offsets = found->second;
      const auto end = ReadableEnd(offsets, group.read_committed);
      if (!end) continue;
      const std::int64_t lag = *end - committed;
      if (lag <= 0) continue;
      const std::int64_t position = std::max(committed, offsets.log_start.value_or(0));
      if (position >= *end) continue;
      std::int64_t& largest = largest_lag[{&found->first, position, group.read_committed}];
      largest = std::max(largest, lag);
    }
  }
  std::vector<std::pair<RecordKey, std::int64_t>> sorted;
  sorted.reserve(largest_lag.size());
  for (const auto& [at, lag] : largest_lag) {
    sorted.emplace_back(RecordKey{*at.partition, at.offset, at.read_committed}, lag);
  }
  std::sort(sorted.begin(), sorted.end());
  std::map<RecordKey, std::int64_t> positions;
  for (auto& [key, lag] : sorted) positions.emplace_hint(positions.end(), std::move(key), lag);
  return positions;
}

void AddExtraPositions(const ExtraReads& reads, const KafkaSnapshot& snapshot,
                       std::map<RecordKey, std::int64_t>& positions) {
  if (reads.positions.empty()) return;
  std::map<std::string, std::vector<std::string>> real_topics;
  for (const auto& [topic, count] : snapshot.topic_partitions) {
    const std::string unified = UnifyCollisionChars(topic);
    if (reads.unified_topics.contains(unified)) real_topics[unified].push_back(topic);
  }
  for (const auto& [unified, partition, position, read_committed] : reads.positions) {
    const auto topics = real_topics.find(unified);
    if (topics == real_topics.end()) continue;
    for (const std::string& topic : topics->second) {
      const auto offsets = snapshot.partitions.find({topic, partition});
      if (offsets == snapshot.partitions.end()) continue;
      const auto end = ReadableEnd(offsets->second, read_committed);
      if (!end) continue;
      if (position < offsets->second.log_start.value_or(0)) continue;  // deleted: nothing to date
      const std::int64_t lag = *end - position;
      if (lag <= 0) continue;
      std::int64_t& largest = positions[RecordKey{{topic, partition}, position, read_committed}];
      largest = std::max(largest, lag);
    }
  }
}

}  // namespace lagsight::kafka
