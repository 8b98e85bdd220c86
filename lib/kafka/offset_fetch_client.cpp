#include "kafka/offset_fetch_client.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_map>

#include "kafka/coordinator_session.h"
#include "kafka/error_names.h"
#include "kafka/wire.h"

namespace lagsight::kafka {

namespace asio = boost::asio;

namespace {

// Sends one OffsetFetch for the groups ids[indices] and takes the offsets of those answered
// exactly into `answer` (a group or partition with an error code is left out, the code named).
asio::awaitable<std::optional<std::string>> FetchBatch(const std::vector<std::string>& ids,
                                                       BatchedOffsets& answer,
                                                       CoordinatorSession& session,
                                                       BrokerConnection& connection,
                                                       const std::vector<std::size_t>& indices) {
  std::vector<std::string_view> groups;
  std::unordered_map<std::string_view, std::size_t> index_of;
  for (std::size_t index : indices) {
    groups.push_back(ids[index]);
    index_of.emplace(ids[index], index);
  }
  const std::string client_id = session.client_id();
  const std::int32_t id = session.NextCorrelationId();
  auto payload =
      co_await session.Exchange(connection, wire::OffsetFetchRequest(id, client_id, groups));
  if (!payload) co_return "OffsetFetch to " + connection.where + ": " + payload.error().message;
  auto fetched = wire::ParseOffsetFetchResponse(*payload, id, groups.size());
  if (!fetched) co_return "OffsetFetch to " + connection.where + ": " + fetched.error().message;
  ++answer.requests;
  for (wire::FetchedGroup& group : *fetched) {
    const auto found = index_of.find(group.group);
    if (found == index_of.end()) continue;
    if (group.error_code != 0) {
      answer.errors[found->second] = "OffsetFetch answered " + KafkaErrorName(group.error_code);
      continue;
    }
    if (group.partition_error_code != 0) {
      answer.errors[found->second] =
          "OffsetFetch answered " + KafkaErrorName(group.partition_error_code) + " for a partition";
      continue;
    }
    CommittedOffsets::sequence_type entries;
    for (const wire::FetchedTopic& topic : group.topics) {
      for (const auto& [partition, offset] : topic.partitions) {
        // -1: no commit for this partition; leave it out, as the per-group path does.
        if (offset >= 0) entries.emplace_back(TopicPartition{topic.name, partition}, offset);
      }
    }
    CommittedOffsets offsets;
    offsets.adopt_sequence(std::move(entries));  // sorts; Kafka names each partition once
    answer.offsets[found->second] = std::move(offsets);
  }
  co_return std::nullopt;
}

std::optional<std::string> LacksBatchedOffsetFetch(
    const std::map<std::int16_t, wire::VersionRange>& versions, const std::string& where) {
  if (Supports(versions, wire::kFindCoordinator, wire::kFindCoordinatorVersion) &&
      Supports(versions, wire::kOffsetFetch, wire::kOffsetFetchVersion)) {
    return std::nullopt;
  }
  return "the broker at " + where +
         " predates OffsetFetch v8 and FindCoordinator v4 (Kafka 3.0, KIP-709)";
}

}  // namespace

BatchedOffsetFetcher::BatchedOffsetFetcher(BatchedOffsetFetcherOptions options)
    : connections_(std::move(options)) {}

BatchedOffsetFetcher::~BatchedOffsetFetcher() = default;

BatchedOffsets BatchedOffsetFetcher::Fetch(const std::vector<std::string>& ids,
                                           std::chrono::milliseconds request_timeout,
                                           std::chrono::milliseconds total_timeout) {
  BatchedOffsets answer;
  answer.offsets.resize(ids.size());
  answer.errors.resize(ids.size());
  if (ids.empty()) return answer;
  if (!connections_.tls_failure().empty()) {
    answer.failure = connections_.tls_failure();
    answer.unsupported = true;
    return answer;
  }
  {
    // Whatever it had not answered at the deadline is not read this poll.
    CoordinatorSession session(
        connections_, request_timeout, ids, "OffsetFetch", LacksBatchedOffsetFetch,
        [&ids, &answer](CoordinatorSession& running, BrokerConnection& connection,
                        const std::vector<std::size_t>& indices) {
          return FetchBatch(ids, answer, running, connection, indices);
        });
    session.Run(total_timeout);
    answer.failure = session.failure();
    answer.unsupported = session.unsupported();
    for (const auto& [index, code] : session.lookup_errors()) {
      answer.errors[index] = "FindCoordinator answered " + KafkaErrorName(code);
    }
  }
  return answer;
}

}  // namespace lagsight::kafka
