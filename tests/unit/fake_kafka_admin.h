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
  std::map<std::string, kafka::CommittedOffsets> committed;
  std::map<std::string, std::string> committed_errors;
  std::map<std::string, std::int32_t> topics;
  std::map<kafka::TopicPartition, std::int64_t> log_start;
  std::map<kafka::TopicPartition, std::int64_t> log_end;
  std::optional<std::string> list_groups_error;
  std::optional<std::string> log_end_error;

  // What was asked.
  std::vector<std::string> described_ids;
  std::vector<std::string> offset_ids;
  std::set<kafka::TopicPartition> offsets_asked;
  int max_in_flight_seen = 0;

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

  std::vector<Result<kafka::CommittedOffsets>> ListCommittedOffsets(
      const std::vector<std::string>& ids, int max_in_flight, std::chrono::milliseconds,
      std::chrono::milliseconds) override {
    max_in_flight_seen = max_in_flight;
    std::vector<Result<kafka::CommittedOffsets>> out;
    for (const std::string& id : ids) {
      offset_ids.push_back(id);
      if (committed_errors.contains(id)) {
        out.push_back(Error{committed_errors.at(id)});
      } else {
        out.push_back(committed.contains(id) ? committed.at(id) : kafka::CommittedOffsets{});
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
    const auto& source = spec == kafka::OffsetSpec::kLatest ? log_end : log_start;
    kafka::ListedOffsets answer;
    for (const auto& tp : partitions) {
      offsets_asked.insert(tp);
      if (source.contains(tp)) {
        answer.offsets[tp] = source.at(tp);
      } else {
        answer.errors.push_back(tp.topic + "/" + std::to_string(tp.partition) +
                                ": leader not available");
      }
    }
    return answer;
  }
};

}  // namespace lagsight::testing
