// FakeKafkaAdmin: a scripted KafkaAdmin for collector unit tests. It records what it was asked,
// so tests can prove that filters apply before anything is fetched.
#pragma once

#include <set>

#include "kafka/admin.h"

namespace lagsight::testing {

class FakeKafkaAdmin : public kafka::KafkaAdmin {
 public:
  std::vector<kafka::GroupListing> listings;
  std::map<std::string, kafka::GroupDescription> descriptions;
  // ConsumerGroupDescribe's answers (KIP-848 groups), and its failure.
  std::map<std::string, kafka::GroupDescription> consumer_descriptions;
  std::string consumer_describe_failure;
  // ListGroups v5's streams groups and StreamsGroupDescribe's answers, and their failures.
  std::vector<kafka::GroupListing> streams_listings;
  std::string streams_list_failure;
  std::map<std::string, kafka::GroupDescription> streams_descriptions;
  std::map<std::string, kafka::CommittedOffsets> committed;
  std::map<std::string, std::string> committed_errors;
  std::map<std::string, std::int32_t> topics;
  std::map<kafka::TopicPartition, std::int64_t> log_start;
  std::map<kafka::TopicPartition, std::int64_t> log_end;
  std::map<kafka::TopicPartition, std::int64_t> last_stable;
  std::optional<std::string> list_groups_error;
  std::optional<std::string> log_end_error;
  std::optional<std::string> cluster_id;
  std::vector<kafka::BootstrapIdentity> bootstrap_identities;
  std::map<std::string, std::string> broker_configs;
  std::optional<std::string> broker_config_error;
  std::map<kafka::RecordKey, std::int64_t> record_timestamps;  // a missing position fails
  // Positions with nothing but markers (or, read_committed, aborted records) up to the end.
  std::map<kafka::RecordKey, std::int64_t> markers_only;
  // Passes a read makes on its way, returned with every RecordTimestamps answer.
  std::vector<kafka::RecordRun> runs;

  // What was asked.
  std::vector<std::string> described_ids;
  std::vector<std::string> consumer_described_ids;
  std::vector<std::string> streams_described_ids;
  std::vector<std::string> offset_ids;
  std::set<kafka::TopicPartition> offsets_asked;
  std::set<kafka::TopicPartition> last_stable_asked;
  int max_in_flight_seen = 0;
  int identify_calls = 0;
  std::vector<std::string> broker_configs_asked;
  std::vector<std::vector<kafka::RecordKey>> timestamp_requests;  // one per RecordTimestamps call
  std::set<kafka::RecordKey> log_append_time;  // records whose timestamp the broker set

  Result<std::vector<kafka::GroupListing>> ListGroups(std::chrono::milliseconds) override {
    if (list_groups_error) return Error{*list_groups_error};
    return listings;
  }

  Result<std::vector<kafka::GroupDescription>> DescribeGroups(const std::vector<std::string>& ids,
                                                              std::chrono::milliseconds) override {
    std::vector<kafka::GroupDescription> out;
    for (const std::string& id : ids) {
      described_ids.push_back(id);
      if (descriptions.contains(id)) out.push_back(descriptions.at(id));
    }
    return out;
  }

  kafka::ConsumerGroupDescriptions DescribeConsumerGroups(const std::vector<std::string>& ids,
                                                          std::chrono::milliseconds,
                                                          std::chrono::milliseconds) override {
    kafka::ConsumerGroupDescriptions out;
    out.failure = consumer_describe_failure;
    for (const std::string& id : ids) {
      consumer_described_ids.push_back(id);
      if (consumer_descriptions.contains(id)) out.groups.push_back(consumer_descriptions.at(id));
    }
    return out;
  }

  kafka::StreamsGroupListings ListStreamsGroups(std::chrono::milliseconds,
                                                std::chrono::milliseconds) override {
    return {streams_listings, streams_list_failure};
  }

  kafka::ConsumerGroupDescriptions DescribeStreamsGroups(const std::vector<std::string>& ids,
                                                         std::chrono::milliseconds,
                                                         std::chrono::milliseconds) override {
    kafka::ConsumerGroupDescriptions out;
    for (const std::string& id : ids) {
      streams_described_ids.push_back(id);
      if (streams_descriptions.contains(id)) out.groups.push_back(streams_descriptions.at(id));
    }
    return out;
  }

  std::vector<Result<kafka::CommittedOffsets>> ListCommittedOffsets(
      const std::vector<std::string>& ids, int max_in_flight, std::chrono::milliseconds,
      std::chrono::milliseconds) override {
    max_in_flight_seen = max_in_flight;
    std::vector<Result<kafka::CommittedOffsets>> out;
    out.reserve(ids.size());
    for (const std::string& id : ids) {
      offset_ids.push_back(id);
      if (committed_errors.contains(id)) {
        out.emplace_back(Error{committed_errors.at(id)});
      } else {
        out.emplace_back(committed.contains(id) ? committed.at(id) : kafka::CommittedOffsets{});
      }
    }
    return out;
  }

  Result<std::map<std::string, std::int32_t>> TopicPartitionCounts(
      std::chrono::milliseconds) override {
    return topics;
  }

  Result<kafka::ListedOffsets> ListOffsets(const std::vector<kafka::TopicPartition>& partitions,
                                           kafka::OffsetSpec spec,
                                           std::chrono::milliseconds) override {
    if (spec == kafka::OffsetSpec::kLatest && log_end_error) return Error{*log_end_error};
    const auto& source = spec == kafka::OffsetSpec::kLatest       ? log_end
                         : spec == kafka::OffsetSpec::kLastStable ? last_stable
                                                                  : log_start;
    kafka::ListedOffsets answer;
    for (const auto& tp : partitions) {
      (spec == kafka::OffsetSpec::kLastStable ? last_stable_asked : offsets_asked).insert(tp);
      if (source.contains(tp)) {
        answer.offsets[tp] = source.at(tp);
      } else {
        answer.errors.push_back(tp.topic + "/" + std::to_string(tp.partition) +
                                ": leader not available");
      }
    }
    return answer;
  }

  std::optional<std::string> ClusterId() override { return cluster_id; }

  std::vector<kafka::BootstrapIdentity> IdentifyBootstraps(std::chrono::milliseconds) override {
    ++identify_calls;
    return bootstrap_identities;
  }

  Result<std::string> BrokerConfig(const std::string& name, std::chrono::milliseconds) override {
    broker_configs_asked.push_back(name);
    if (broker_config_error) return Error{*broker_config_error};
    if (!broker_configs.contains(name)) return Error{"broker 1 has no config " + name};
    return broker_configs.at(name);
  }

  Result<kafka::FetchedTimestamps> RecordTimestamps(const std::vector<kafka::RecordKey>& positions,
                                                    std::chrono::milliseconds,
                                                    std::chrono::milliseconds) override {
    timestamp_requests.push_back(positions);
    kafka::FetchedTimestamps answer;
    for (const kafka::RecordKey& key : positions) {
      if (markers_only.contains(key)) {
        answer.markers_only[key] = markers_only.at(key);
      } else if (record_timestamps.contains(key)) {
        answer.timestamps[key] = {record_timestamps.at(key), log_append_time.contains(key)};
      } else {
        answer.errors.push_back(key.partition.topic + "/" +
                                std::to_string(key.partition.partition) + "@" +
                                std::to_string(key.offset) + ": Broker: Not leader");
      }
    }
    answer.runs = runs;
    return answer;
  }
};

}  // namespace lagsight::testing
