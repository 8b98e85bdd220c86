// RecordTimestampIndex: a poll's record timestamps (KafkaSnapshot::record_timestamps) by topic,
// each topic's in one sorted array searched by partition, offset and isolation, without
// comparing topic names again.
//
// Lag in seconds looks up the record at every lagging group-partition's position. In the
// snapshot's map each lookup compared the topic name ~20 times, whole names when the groups
// share one topic (the names are then equal up to their end): at a million group-partitions on
// one topic that was 11 % of the analysis (perf, tests/bench/analyzer_bench 4000 50 1 1). Built
// once per analysis in one pass over the map, which is already in this order.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kafka/snapshot.h"

namespace lagsight::analysis {

class RecordTimestampIndex {
 public:
  // One topic's records, ascending by partition, offset and isolation.
  class Topic {
   public:
    std::optional<kafka::RecordTimestamp> Find(std::int32_t partition, std::int64_t offset,
                                               bool read_committed) const;

   private:
    friend class RecordTimestampIndex;
    struct Entry {
      std::int32_t partition;
      bool read_committed;
      std::int64_t offset;
      kafka::RecordTimestamp timestamp;
    };
    std::vector<Entry> entries_;
  };

  // Views into `records`' keys: the index must not outlive the map.
  explicit RecordTimestampIndex(const std::map<kafka::RecordKey, kafka::RecordTimestamp>& records);

  // The records of `topic`, or null when none was read.
  const Topic* Of(const std::string& topic) const;

 private:
  std::unordered_map<std::string_view, Topic> topics_;
};

}  // namespace lagsight::analysis
