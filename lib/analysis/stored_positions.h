// The third position: what an external store holds for a Flink job, joined with the job's own
// position (Flink) and the log (Kafka).
//
// Pure: a function of the store's snapshot and the other sources' latest state. Per stored
// partition:
//   lag   = max(0, log_end - stored)                 what a restart from the store would read;
//   drift = (currentOffset + 1) - stored             >= 0 and about one write-back period of
//           input when healthy; < 0: the store is ahead of what the job read (a restart would
//           skip records); none while the job reports no position for the partition.
// Per job and topic, the partitions of the topic the store has no entry for (a restart would
// start them from the job's default), and entries for partitions the topic does not have.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "stores/snapshot.h"

namespace lagsight::analysis {

struct StoredPartition {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t stored = 0;  // the next offset the store says the job would read
  std::optional<std::int64_t> lag;
  std::optional<std::int64_t> drift;
  bool beyond_log_end = false;  // stored > log end: the store belongs to another cluster or topic
};

struct StoredTopic {
  std::string topic;
  std::vector<std::int32_t> missing_partitions;  // of the topic, without an entry
  std::vector<std::int32_t> unknown_partitions;  // with an entry, not of the topic
  int beyond_log_end = 0;                        // entries above the partition's log end
};

struct StoredJobPositions {
  std::string flink_cluster;
  std::string job_id;
  std::string job_name;
  std::optional<double> updated_at_unix_seconds;
  std::vector<StoredPartition> partitions;  // by topic, partition
  std::vector<StoredTopic> topics;          // topics with a known partition count, by name
};

std::vector<StoredJobPositions> JoinStoredPositions(const stores::StoreSnapshot& store,
                                                    const SourcesView& sources);

}  // namespace lagsight::analysis
