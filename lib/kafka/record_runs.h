// RecordRuns: the records the record reader read on its way between positions, kept so that a
// later position among them needs no read of its own.
//
// To date a position the reader reads a partition in order from its lowest position up, through
// every record in between (record_timestamp_reader.h). Each such pass is a run: the offset it
// started from and every record it received after it, in order. Any position from the run's
// start up to its last record is answered by the run: the first record at or after it is the
// first one the run received at or after it (records never change once written). Where consumers
// are behind, their positions move through records a pass already read, so the next polls find
// them here instead of reading them again.
//
// Bounded: at most `max_records` records in all; a run that would pass it is not kept. Retain()
// drops what no wanted position can use. Not thread-safe: one poll at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "kafka/snapshot.h"

namespace lagsight::kafka {

// One pass of the reader over a partition, as a reader of its isolation received it.
struct RecordRun {
  TopicPartition partition;
  bool read_committed = false;
  std::int64_t from = 0;  // the position the pass started from
  // Every record received from there, ascending offsets, none skipped.
  std::vector<std::pair<std::int64_t, RecordTimestamp>> records;
};

class RecordRuns {
 public:
  explicit RecordRuns(std::size_t max_records) : max_records_(max_records) {}

  // Keeps `run` (when it holds a record and fits), replacing the kept runs it overlaps.
  void Add(RecordRun run);

  // The timestamp of the first record at or after the position, where a kept run covers it.
  std::optional<RecordTimestamp> Find(const RecordKey& position) const;

  // Drops runs of partitions no position in `wanted` lies on, and the records below the lowest
  // wanted position of each partition (positions move forward).
  void Retain(const std::map<RecordKey, std::int64_t>& wanted);

  std::size_t records() const { return records_; }

 private:
  using Key = std::pair<TopicPartition, bool>;  // partition, read_committed
  struct Run {
    std::int64_t from = 0;
    std::vector<std::pair<std::int64_t, RecordTimestamp>> records;
  };
  std::map<Key, std::vector<Run>> runs_;  // per partition, by `from`, not overlapping
  std::size_t max_records_;
  std::size_t records_ = 0;
};

}  // namespace lagsight::kafka
