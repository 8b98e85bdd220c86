// TopicCursor: the entries of one topic's partitions in a map keyed by TopicPartition, found in
// ascending partition order with one search for the topic and then steps that compare partition
// numbers only.
//
// A poll's analysis looks up every partition of every group's topics in maps of all partitions
// (log ends, their histories). Searched one by one, each lookup compared topic names ~17 times at
// 100,000 partitions: string compares were a third of tests/bench/analyzer_bench (2,000 groups of
// 50 partitions, each on its own topic). A group's partitions come by topic, then by number
// (TopicLag), so the walk visits each entry of the topic at most once. The poll finds the log
// offsets at every group-partition's position the same way (OldestUnconsumedPositions).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "kafka/snapshot.h"

namespace lagsight::kafka {

template <typename Map>
class TopicCursor {
 public:
  using Mapped = std::conditional_t<std::is_const_v<Map>, const typename Map::mapped_type,
                                    typename Map::mapped_type>;

  TopicCursor(Map& map, const std::string& topic)
      : at_(map.lower_bound(TopicPartition{topic, std::numeric_limits<std::int32_t>::min()})),
        end_(map.upper_bound(TopicPartition{topic, std::numeric_limits<std::int32_t>::max()})) {}

  // The entry of `partition`, or null. Each call must ask for a number above the one before.
  Mapped* Find(std::int32_t partition) {
    auto* entry = FindEntry(partition);
    return entry == nullptr ? nullptr : &entry->second;
  }

  // The same, with its key.
  auto* FindEntry(std::int32_t partition) {
    while (at_ != end_ && at_->first.partition < partition) ++at_;
    return at_ == end_ || at_->first.partition != partition ? nullptr : &*at_;
  }

 private:
  decltype(std::declval<Map&>().begin()) at_;
  decltype(std::declval<Map&>().begin()) end_;
};

}  // namespace lagsight::kafka
