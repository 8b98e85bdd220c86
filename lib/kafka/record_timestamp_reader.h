// RecordTimestampReader: learns when the records at given offsets were written, for lag in
// seconds, by reading those records (RdKafkaAdmin's KafkaAdmin::RecordTimestamps).
//
// Owns, created on the first read, a consumer that reads single records with assign() at
// explicit offsets (two: one per isolation level, the read_committed one also listing last
// stable offsets for RdKafkaAdmin::ListOffsets). That consumer carries lagsight's fixed group.id
// because librdkafka 2.0.2 refuses assign() without one (Local: Unknown group, checked against
// Kafka 4.1); it never subscribes, joins, fetches or commits offsets for it, so the broker never
// creates that group.
//
// Reads are bounded: each partition's wait for its next answer by the request timeout, all of
// them by the total timeout; a position not read in time is reported among the answer's errors,
// not waited for. All partitions are read at once, each from its lowest position up, so many
// positions of one partition cost one pass, not a fetch each. Not
// thread-safe: one poll at a time.
#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "kafka/admin.h"

namespace lagsight::kafka {

// The record reader never joined a group, so there is nothing to leave: skipping the consumer
// close keeps shutdown from waiting on a coordinator that may be unreachable.
struct RecordReaderDeleter {
  void operator()(rd_kafka_t* handle) const {
    rd_kafka_destroy_flags(handle, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
  }
};

class RecordTimestampReader {
 public:
  // Reads with clients of `properties`: the main client's, bootstrap.servers included, so the
  // reader talks to the cluster the main client was opened for.
  RecordTimestampReader(std::string cluster_name, std::map<std::string, std::string> properties);

  // The timestamp of the first record at or after each position that a reader of the position's
  // isolation receives (KafkaAdmin::RecordTimestamps). Fails only when a consumer cannot be
  // created or assigned partitions; positions that could not be read are the answer's errors.
  Result<FetchedTimestamps> Read(const std::vector<RecordKey>& positions,
                                 std::chrono::milliseconds request_timeout,
                                 std::chrono::milliseconds total_timeout);

  // The consumer of that isolation, created on first use. The read_committed one's ListOffsets
  // answer the last stable offset as the log end (librdkafka sends the handle's isolation level).
  Result<rd_kafka_t*> Consumer(bool read_committed);

 private:
  std::string cluster_name_;
  std::map<std::string, std::string> properties_;
  std::unique_ptr<rd_kafka_t, RecordReaderDeleter> record_reader_;  // created on first use
  // The same with isolation.level=read_committed: reads for read_committed readers, and lists
  // last stable offsets. Created on first use, so a cluster without such readers never opens it.
  std::unique_ptr<rd_kafka_t, RecordReaderDeleter> committed_reader_;
};

}  // namespace lagsight::kafka
