// stores::StoreSnapshot: what one poll of an external position store read, as plain data.
//
// Per Flink job the store was asked about: the next offsets it holds per (real) topic and
// partition, the write time it records (when the layout has such a field), and what could not be
// read. Nothing derived (lags, drift): that is the analysis' (analysis/stored_positions.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kafka/snapshot.h"

namespace lagsight::stores {

struct StoredJob {
  std::string flink_cluster;
  std::string job_id;
  std::string job_name;
  std::vector<std::string> topics;                        // the real topics the job reads
  std::vector<std::string> keys;                          // the hashes read, in order
  std::map<kafka::TopicPartition, std::int64_t> offsets;  // the next offset the job would read
  std::optional<double> updated_at_unix_seconds;          // newest write time over its keys
  // Topics whose hash could not be read this poll (refused for its size, a read that failed):
  // their partitions are unknown, not missing.
  std::vector<std::string> unread_topics;
};

struct StoreSnapshot {
  std::vector<StoredJob> jobs;  // in the order they were asked for
  // Keys that do not exist, values that are not offsets, fields that name no partition of a
  // topic the job reads: the rest of the poll stands.
  std::vector<std::string> partial_errors;
  // When the poll began and when it had read everything (unix seconds, 0: unknown): a stored
  // offset can only be held against a log end read after it (analysis/stored_positions.h).
  double requested_at = 0;
  double read_until = 0;
};

}  // namespace lagsight::stores
