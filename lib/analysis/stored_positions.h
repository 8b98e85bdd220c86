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
//
// An entry is beyond the log end only when it exceeds a log end read AFTER the store was:
// entries are read fresh while the log ends are a Kafka poll old, and a busy job's store holds
// offsets of records written since (at a 15 s poll that flagged every partition of a healthy
// job in 29 of 38 scrapes). The join (run at every render, with the newest log ends) therefore
// judges the newest reading that finished before the current Kafka poll began, and says
// "unknown" where there is none; an entry written beyond the log end on purpose stays there and
// is flagged by the first Kafka poll that began after a store reading saw it. A topic
// whose hash was not read has no missing partitions: not read is not absent.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/analysis_time.h"
#include "analysis/findings.h"
#include "stores/snapshot.h"

namespace lagsight::analysis {

struct StoredPartition {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t stored = 0;  // the next offset the store says the job would read
  std::optional<std::int64_t> lag;
  std::optional<std::int64_t> drift;
  // stored > log end (as read after the store): the store belongs to another cluster or topic;
  // none while no reading of the store was taken before the latest log ends.
  std::optional<bool> beyond_log_end;
};

struct StoredTopic {
  std::string topic;
  std::vector<std::int32_t> missing_partitions;  // of the topic, without an entry
  std::vector<std::int32_t> unknown_partitions;  // with an entry, not of the topic
  int beyond_log_end = 0;                        // entries above the partition's log end
  bool unread = false;  // its hash was not read this poll: nothing is known missing
};

struct StoredJobPositions {
  std::string flink_cluster;
  std::string job_id;
  std::string job_name;
  std::optional<double> updated_at_unix_seconds;
  std::vector<StoredPartition> partitions;  // by topic, partition
  std::vector<StoredTopic> topics;          // topics with a known partition count, by name
};

// `earlier`: the store's readings before `store`, newest first (they judge beyond_log_end).
std::vector<StoredJobPositions> JoinStoredPositions(
    const stores::StoreSnapshot& store, const std::vector<const stores::StoreSnapshot*>& earlier,
    const SourcesView& sources);

// One store's latest reading and the few before it, as the join judges them: what the daemon's
// store source keeps, and what a trace replay keeps of a recorded store. Plain value; shares
// the readings.
class StoreReadings {
 public:
  using Reading = std::shared_ptr<const stores::StoreSnapshot>;

  // A poll's reading (null: the poll failed) becomes the latest; the one it replaces, if any,
  // goes to the earlier ones.
  void Keep(Reading reading);
  // Null while the store is down.
  const Reading& latest() const { return latest_; }
  // The latest reading joined with `sources` (none while the store is down).
  std::vector<StoredJobPositions> Join(const SourcesView& sources) const;

 private:
  // An entry is judged against a log end read after it, when the latest reading is newer than
  // the log ends; a few earlier readings cover a Kafka poll interval several times the store's.
  static constexpr std::size_t kEarlierReadingsKept = 8;
  Reading latest_;
  std::vector<Reading> earlier_;  // newest first
};

}  // namespace lagsight::analysis
