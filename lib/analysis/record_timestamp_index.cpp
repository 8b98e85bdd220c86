#include "analysis/record_timestamp_index.h"

#include <algorithm>
#include <tuple>

namespace lagsight::analysis {

RecordTimestampIndex::RecordTimestampIndex(
    const std::map<kafka::RecordKey, kafka::RecordTimestamp>& records) {
  Topic* topic = nullptr;
  std::string_view topic_name;
  for (const auto& [key, timestamp] : records) {
    if (topic == nullptr || key.partition.topic != topic_name) {
      topic_name = key.partition.topic;
      topic = &topics_[topic_name];
    }
    topic->entries_.push_back({key.partition.partition, key.read_committed, key.offset, timestamp});
  }
}

const RecordTimestampIndex::Topic* RecordTimestampIndex::Of(const std::string& topic) const {
  const auto found = topics_.find(topic);
  return found == topics_.end() ? nullptr : &found->second;
}

std::optional<kafka::RecordTimestamp> RecordTimestampIndex::Topic::Find(std::int32_t partition,
                                                                        std::int64_t offset,
                                                                        bool read_committed) const {
  // The map orders by partition, then offset, then isolation.
  const auto key = [](const Entry& e) { return std::tie(e.partition, e.offset, e.read_committed); };
  const Entry wanted{partition, read_committed, offset, {}};
  const auto found = std::lower_bound(
      entries_.begin(), entries_.end(), wanted,
      [&](const Entry& left, const Entry& right) { return key(left) < key(right); });
  if (found == entries_.end() || key(*found) != key(wanted)) return std::nullopt;
  return found->timestamp;
}

}  // namespace lagsight::analysis
