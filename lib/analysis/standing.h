// Standing: since when each partition's offset (a group's committed offset, or a Flink job's
// position) has stood still, updated poll by poll.
//
// Pure: time is a parameter. Kept per group and per pair for every partition they read (a
// million entries at issue 14's largest scale), so it is a sorted vector rather than a tree.
#pragma once

#include <algorithm>
#include <boost/container/flat_map.hpp>
#include <cstdint>
#include <utility>

#include "kafka/snapshot.h"

namespace lagsight::analysis {

struct Standing {
  std::int64_t offset = 0;
  double since = 0;  // unix seconds
};

// By partition: 56 bytes an entry, where a std::map node took 96 with malloc's header.
using StandingOffsets = boost::container::flat_map<kafka::TopicPartition, Standing>;

// Calls `visit(tp, offset, before)` for each entry of `offsets` (sorted by partition), `before`
// being the standing entry of the same partition or null. Both are sorted: one walk, where a
// search per partition compared topic names a few times each.
template <typename SortedOffsets, typename Visit>
void ForEachWithStanding(const StandingOffsets& standing, const SortedOffsets& offsets,
                         Visit visit) {
  auto at = standing.begin();
  for (const auto& [tp, offset] : offsets) {
    while (at != standing.end() && at->first < tp) ++at;
    visit(tp, offset, at != standing.end() && at->first == tp ? &at->second : nullptr);
  }
}

// Makes `standing` hold the partitions of `offsets` (partition -> offset, sorted by partition):
// an offset that changed, or a partition new to it, stands since `now`; an unchanged one keeps
// its time; a partition `offsets` lacks is dropped. In place while the partitions stay the same,
// as they do poll after poll; rebuilt, one group's worth at a time, when they change.
template <typename SortedOffsets>
void UpdateStanding(StandingOffsets& standing, const SortedOffsets& offsets, double now) {
  const bool same_partitions =
      standing.size() == offsets.size() &&
      std::equal(standing.begin(), standing.end(), offsets.begin(),
                 [](const auto& a, const auto& b) { return a.first == b.first; });
  if (same_partitions) {
    auto at = standing.begin();
    for (const auto& [tp, offset] : offsets) {
      if (at->second.offset != offset) at->second = Standing{offset, now};
      ++at;
    }
    return;
  }
  StandingOffsets::sequence_type updated;
  updated.reserve(offsets.size());
  auto at = standing.begin();
  for (const auto& [tp, offset] : offsets) {
    while (at != standing.end() && at->first < tp) ++at;
    const bool stood = at != standing.end() && at->first == tp && at->second.offset == offset;
    updated.emplace_back(tp, stood ? at->second : Standing{offset, now});
  }
  standing.adopt_sequence(boost::container::ordered_unique_range, std::move(updated));
}

}  // namespace lagsight::analysis
