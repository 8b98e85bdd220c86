// The log side of one Kafka poll: which topics' log offsets it reads (the groups' and the other
// reader's), the log start, end and last stable offsets read for them into the KafkaSnapshot, and
// the positions whose records lag in seconds then dates. Kept apart from the groups' reading
// (collector.cpp): these take the groups as read and only add what the logs say of them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/result.h"
#include "config/config.h"
#include "kafka/admin.h"
#include "kafka/collector.h"
#include "kafka/poll_timing.h"
#include "kafka/snapshot.h"

namespace lagsight::kafka {

// The topics whose log offsets a poll reads, and of them those a read_committed reader reads
// (their last stable offsets are read too).
struct LogTopics {
  std::set<std::string> all;
  std::set<std::string> read_committed;
};

// The cluster's topics the filter accepts into `snapshot`, and those the other reader reads into
// `topics`.
void AddClusterTopics(const std::map<std::string, std::int32_t>& counts,
                      const ExtraReads& extra_reads, const config::NameFilter& topic_filter,
                      KafkaSnapshot& snapshot, LogTopics& topics);

// Reads log-start and log-end offsets of every partition of `topics.all`, and the last stable
// offsets of those of `topics.read_committed`. Fails (the poll) only when no log-end offset could
// be read at all: then there is no lag to report.
std::optional<Error> ReadLogOffsets(const LogTopics& topics,
                                    const std::map<std::string, std::int32_t>& counts,
                                    const Deadline& deadline, KafkaAdmin& admin,
                                    KafkaSnapshot& snapshot);

// Where each lagging group's oldest unconsumed record sits, with the largest lag of a group
// waiting there: the committed offset, or the log start when retention deleted past the commit.
std::map<RecordKey, std::int64_t> OldestUnconsumedPositions(const KafkaSnapshot& snapshot);

// The lagging positions of the other reader, on the real topics their unified names stand for,
// added to `positions` with their lag (a position two real topics fit is read on both: the join
// decides later which is the job's, and reports the ambiguity).
void AddExtraPositions(const ExtraReads& reads, const KafkaSnapshot& snapshot,
                       std::map<RecordKey, std::int64_t>& positions);

}  // namespace lagsight::kafka
