// RdKafkaAdmin: KafkaAdmin over librdkafka 2.0.2 (Debian 12).
//
// Owns one consumer-type client handle (no group.id: it never joins or commits) that is reused
// across polls, so connections survive between polls and librdkafka reconnects by itself after a
// broker restart. Admin requests go through a private queue and are always polled with a
// timeout. Not thread-safe: one poll at a time.
#pragma once

#include <librdkafka/rdkafka.h>

#include <memory>

#include "config/config.h"
#include "kafka/admin.h"

namespace lagsight::kafka {

struct RdKafkaDeleter {
  void operator()(rd_kafka_t* handle) const { rd_kafka_destroy(handle); }
  void operator()(rd_kafka_queue_t* queue) const { rd_kafka_queue_destroy(queue); }
};

class RdKafkaAdmin final : public KafkaAdmin {
 public:
  // Fails with a message naming the offending property when librdkafka rejects the settings.
  static Result<std::unique_ptr<RdKafkaAdmin>> Create(const config::KafkaClusterConfig& cluster);
  ~RdKafkaAdmin() override;

  Result<std::vector<GroupListing>> ListGroups(std::chrono::milliseconds timeout) override;
  Result<std::vector<GroupDescription>> DescribeGroups(const std::vector<std::string>& ids,
                                                       std::chrono::milliseconds timeout) override;
  std::vector<Result<CommittedOffsets>> ListCommittedOffsets(
      const std::vector<std::string>& ids, int max_in_flight,
      std::chrono::milliseconds request_timeout, std::chrono::milliseconds total_timeout) override;
  Result<std::map<std::string, std::int32_t>> TopicPartitionCounts(
      std::chrono::milliseconds timeout) override;
  Result<ListedOffsets> ListOffsets(const std::vector<TopicPartition>& partitions, OffsetSpec spec,
                                    std::chrono::milliseconds timeout) override;

 private:
  RdKafkaAdmin(std::unique_ptr<rd_kafka_t, RdKafkaDeleter> handle,
               std::unique_ptr<rd_kafka_queue_t, RdKafkaDeleter> queue);

  std::unique_ptr<rd_kafka_t, RdKafkaDeleter> handle_;
  std::unique_ptr<rd_kafka_queue_t, RdKafkaDeleter> queue_;  // destroyed before handle_
};

}  // namespace lagsight::kafka
