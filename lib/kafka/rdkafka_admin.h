// RdKafkaAdmin: KafkaAdmin over librdkafka 2.0.2 (Debian 12).
//
// Owns one consumer-type client handle (no group.id: it never joins or commits) that is reused
// across polls, so connections survive between polls and librdkafka reconnects by itself after a
// broker restart. Admin requests go through a private queue and are always polled with a
// timeout. Not thread-safe: one poll at a time.
//
// One librdkafka client must never talk to two clusters: librdkafka leaves that undefined, and
// 2.0.2 crashed (SIGSEGV in its main thread, within seconds) when a bootstrap list named two
// single-node clusters whose brokers both have node id 1. So with several bootstrap addresses
// the cluster clients (main client and record reader) are opened only once IdentifyBootstraps
// has seen the answering addresses agree on one cluster id, through those addresses alone; they
// are closed as soon as two ids answer, or the agreed id changes. While closed, every request
// fails with the reason.
//
// Two kinds of helper handles, also long-lived: with several bootstrap addresses, one client per
// address (bootstrap.servers = that address alone, same security settings) to learn which
// cluster answers there; and, created on the first record-timestamp read, a consumer that reads
// single records with assign() at explicit offsets (two: one per isolation level, the
// read_committed one also listing last stable offsets). That consumer carries a throwaway group.id
// because librdkafka 2.0.2 refuses assign() without one (Local: Unknown group, checked against
// Kafka 4.1); it never subscribes, joins, fetches or commits offsets for it, so the broker never
// creates that group.
#pragma once

#include <librdkafka/rdkafka.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "kafka/admin.h"
#include "kafka/offset_fetch_client.h"

namespace lagsight::kafka {

struct RdKafkaDeleter {
  void operator()(rd_kafka_t* handle) const { rd_kafka_destroy(handle); }
  void operator()(rd_kafka_queue_t* queue) const { rd_kafka_queue_destroy(queue); }
};

// The record reader never joined a group, so there is nothing to leave: skipping the consumer
// close keeps shutdown from waiting on a coordinator that may be unreachable.
struct RecordReaderDeleter {
  void operator()(rd_kafka_t* handle) const {
    rd_kafka_destroy_flags(handle, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
  }
};

// The latest connection-level error librdkafka reported for a client (a wrong password, an
// untrusted certificate), kept until a poll succeeds: a failed request itself only says
// "timed out". Written by the error callback, which librdkafka runs inside rd_kafka_poll.
struct ClientErrors {
  std::mutex mutex;
  rd_kafka_resp_err_t code = RD_KAFKA_RESP_ERR_NO_ERROR;
  std::string reason;
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
  std::optional<std::string> ClusterId() override;
  std::vector<BootstrapIdentity> IdentifyBootstraps(std::chrono::milliseconds timeout) override;
  Result<std::string> BrokerConfig(const std::string& name,
                                   std::chrono::milliseconds timeout) override;
  Result<FetchedTimestamps> RecordTimestamps(const std::vector<RecordKey>& positions,
                                             std::chrono::milliseconds request_timeout,
                                             std::chrono::milliseconds total_timeout) override;

 private:
  using Handle = std::unique_ptr<rd_kafka_t, RdKafkaDeleter>;

  // One configured address and the client that asks it alone.
  struct BootstrapClient {
    std::string address;
    std::unique_ptr<ClientErrors> errors;  // outlives handle
    Handle handle;
  };

  RdKafkaAdmin(std::string cluster_name, std::map<std::string, std::string> properties,
               std::vector<BootstrapClient> bootstrap_clients);

  // Opens the main client with bootstrap.servers = `bootstrap_servers`.
  std::optional<Error> OpenClusterClients(const std::string& bootstrap_servers);
  void CloseClusterClients(std::string reason);
  // Opens, keeps or closes the cluster clients after the addresses answered with `identities`.
  void FollowBootstraps(const std::vector<BootstrapIdentity>& identities);

  // The record reader of that isolation, created on first use.
  Result<rd_kafka_t*> RecordReader(bool read_committed);
  // Reads the records at `positions` (all of the reader's isolation) into `answer`; fails only
  // when the reader cannot be assigned partitions.
  std::optional<Error> ReadRecords(rd_kafka_t* reader, bool read_committed,
                                   const std::vector<RecordKey>& positions,
                                   std::chrono::milliseconds request_timeout,
                                   std::chrono::steady_clock::time_point total_deadline,
                                   FetchedTimestamps& answer);

  // `message`, followed by the main client's latest connection-level error, if any.
  std::string WithClientError(std::string message);

  std::string cluster_name_;
  // The main client's (its bootstrap.servers as it was opened with), for the record reader.
  std::map<std::string, std::string> properties_;
  std::unique_ptr<ClientErrors> client_errors_;  // the main client's; outlives handle_
  Handle handle_;                                // null while the cluster clients are closed
  std::unique_ptr<rd_kafka_queue_t, RdKafkaDeleter> queue_;  // destroyed before handle_
  std::string closed_reason_;  // why handle_ is null, in the words every request fails with
  std::optional<std::string> opened_for_cluster_id_;  // the id the addresses agreed on
  // One client per bootstrap address, in config order; empty with a single address.
  std::vector<BootstrapClient> bootstrap_clients_;
  std::unique_ptr<rd_kafka_t, RecordReaderDeleter> record_reader_;  // created on first use
  // The same with isolation.level=read_committed: reads for read_committed readers, and lists
  // last stable offsets. Created on first use, so a cluster without such readers never opens it.
  std::unique_ptr<rd_kafka_t, RecordReaderDeleter> committed_reader_;
  // Reads committed offsets many groups a request while the cluster clients are open, if the
  // cluster config asks for it and the cluster is reached over PLAINTEXT; null otherwise.
  bool batched_offset_fetch_ = false;
  std::unique_ptr<BatchedOffsetFetcher> batched_;
  std::string batched_state_;  // how the last poll read committed offsets, as last logged
};

}  // namespace lagsight::kafka
