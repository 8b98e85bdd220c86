// RdKafkaAdmin: KafkaAdmin over librdkafka 2.0.2 (Debian 12).
//
// Owns one consumer-type client handle (it never joins or commits; its group.id is
// kClientGroupId, client_properties.h) that is reused across polls, so connections survive
// between polls and librdkafka reconnects by itself after a broker restart; it is opened afresh
// only when a group's coordinator moved (ListCommittedOffsets). Admin requests go through a private
// queue and are always polled with a timeout. Not thread-safe: one poll at a time.
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
// cluster answers there; and the record reader (kafka/record_timestamp_reader.h), whose consumers
// read single records at explicit offsets for their timestamps, and list last stable offsets.
#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "kafka/admin.h"
#include "kafka/group_describe_client.h"
#include "kafka/offset_fetch_client.h"
#include "kafka/rdkafka_client.h"
#include "kafka/record_timestamp_reader.h"
#include "kafka/share_group_client.h"
#include "kafka/streams_group_lister.h"

namespace lagsight::kafka {

class RdKafkaAdmin final : public KafkaAdmin {
 public:
  // Fails with a message naming the offending property when librdkafka rejects the settings.
  static Result<std::unique_ptr<RdKafkaAdmin>> Create(const config::KafkaClusterConfig& cluster);
  ~RdKafkaAdmin() override;

  Result<std::vector<GroupListing>> ListGroups(std::chrono::milliseconds timeout) override;
  // Through ClassicDescribeApi() where lagsight's own clients connect and the brokers speak
  // DescribeGroups v5; through librdkafka otherwise.
  Result<std::vector<GroupDescription>> DescribeGroups(const std::vector<std::string>& ids,
                                                       std::chrono::milliseconds timeout) override;
  // Through ConsumerGroupDescriber, which librdkafka 2.0.2 lacks.
  ConsumerGroupDescriptions DescribeConsumerGroups(
      const std::vector<std::string>& ids, std::chrono::milliseconds request_timeout,
      std::chrono::milliseconds total_timeout) override;
  // Through ShareGroupReader (librdkafka 2.0.2 has no share groups); in rdkafka_share_groups.cpp.
  ShareGroupListings ListShareGroups(std::chrono::milliseconds request_timeout,
                                     std::chrono::milliseconds total_timeout) override;
  ShareGroupProgress DescribeShareGroupOffsets(const std::vector<std::string>& ids,
                                               std::chrono::milliseconds request_timeout,
                                               std::chrono::milliseconds total_timeout) override;
  // Through StreamsGroupLister and a ConsumerGroupDescriber speaking StreamsGroupDescribe.
  StreamsGroupListings ListStreamsGroups(std::chrono::milliseconds request_timeout,
                                         std::chrono::milliseconds total_timeout) override;
  ConsumerGroupDescriptions DescribeStreamsGroups(const std::vector<std::string>& ids,
                                                  std::chrono::milliseconds request_timeout,
                                                  std::chrono::milliseconds total_timeout) override;
  // Defined in rdkafka_committed_offsets.cpp, with ReadBatched, LogBatchedState and ReadPerGroup.
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

  // Committed offsets through the batched fetch, into `results`; returns the indexes (into
  // `ids`) of the groups left to the per-group path: those of a cluster it cannot serve.
  std::vector<std::size_t> ReadBatched(const std::vector<std::string>& ids,
                                       std::chrono::milliseconds request_timeout,
                                       std::chrono::milliseconds total_timeout,
                                       std::vector<Result<CommittedOffsets>>& results);
  // Replaces the main client with a new one, which knows no coordinator yet; false (and a
  // warning) when librdkafka refuses to create it.
  bool ReopenMainClient(std::size_t moved_groups);
  // Logs how committed offsets were read when that differs from the last poll's.
  void LogBatchedState(const std::string& failure, bool unsupported, std::size_t answered,
                       std::size_t asked);
  // Says once (again only when it changes) why the brokers cannot serve share groups, and clears
  // `failure` then: an older broker is no error of every poll.
  void SayShareGroupsUnsupported(bool unsupported, std::string& failure);
  // Committed offsets of the groups ids[per_group[...]] into `results`, one librdkafka request
  // per group, at most `max_in_flight` at once, until `deadline`. Returns the indexes (into
  // `ids`) of the groups whose answer said their coordinator moved (NOT_COORDINATOR).
  std::vector<std::size_t> ReadPerGroup(const std::vector<std::string>& ids,
                                        const std::vector<std::size_t>& per_group,
                                        int max_in_flight,
                                        std::chrono::milliseconds request_timeout,
                                        std::chrono::milliseconds total_timeout,
                                        std::chrono::steady_clock::time_point deadline,
                                        std::vector<Result<CommittedOffsets>>& results);

  // `described`, with a broker's lack of the describe API said once (in `said`, as last logged)
  // instead of failed each poll.
  ConsumerGroupDescriptions Unsupported(DescribedGroups described, const char* kinds,
                                        std::string& said);

  // The groups' descriptions through classic_describer_: one per group asked, those it could
  // not read this poll with an error saying why (never asked again through librdkafka, whose
  // admin worker is what it keeps out). nullopt when a broker lacks DescribeGroups v5 or the
  // TLS settings do not load in lagsight's own client.
  std::optional<std::vector<GroupDescription>> DescribeClassicGroups(
      const std::vector<std::string>& ids, std::chrono::milliseconds timeout);

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
  // Reads record timestamps and lists last stable offsets; null while the cluster clients are
  // closed. Its consumers are created on first use.
  std::unique_ptr<RecordTimestampReader> record_reader_;
  // Reads committed offsets many groups a request while the cluster clients are open, if the
  // cluster config asks for it and the cluster is reached over PLAINTEXT; null otherwise.
  bool batched_offset_fetch_ = false;
  std::unique_ptr<BatchedOffsetFetcher> batched_;
  std::string batched_state_;  // how the last poll read committed offsets, as last logged
  // Describes KIP-848 groups while the cluster clients are open, if the cluster is reached over
  // PLAINTEXT or TLS as the batched fetch speaks them; null otherwise (none is described).
  std::unique_ptr<ConsumerGroupDescriber> describer_;
  std::string describer_unsupported_;  // why the broker cannot describe them, as last logged
  // Describes classic and simple groups (DescribeGroups v5) under the same conditions; null
  // otherwise, and librdkafka describes them.
  std::unique_ptr<ConsumerGroupDescriber> classic_describer_;
  std::string classic_unsupported_;  // why librdkafka describes them after all, as last logged
  // Lists and describes share groups, where the describer can run; null otherwise (none).
  std::unique_ptr<ShareGroupReader> share_reader_;
  std::string share_unsupported_;  // why the brokers cannot serve it, as last logged
  // When a broker last said it has no share groups: they are asked again only every few minutes.
  std::optional<std::chrono::steady_clock::time_point> share_unsupported_at_;
  // Lists and describes streams groups, under the same conditions as describer_.
  std::unique_ptr<StreamsGroupLister> streams_lister_;
  std::unique_ptr<ConsumerGroupDescriber> streams_describer_;
  std::string streams_unsupported_;  // why the cluster cannot list or describe them, as logged
  // Since when a broker has been found without ListGroups v5 and no streams group listed: such
  // a cluster (before Kafka 4.0) is asked again only every few minutes, not every poll.
  std::optional<std::chrono::steady_clock::time_point> streams_unlisted_since_;
};

}  // namespace lagsight::kafka
