#include "kafka/group_describe_client.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>

#include "kafka/coordinator_session.h"
#include "kafka/error_names.h"
#include "kafka/wire.h"
#include "kafka/wire_classic.h"
#include "kafka/wire_streams.h"

namespace lagsight::kafka {

namespace asio = boost::asio;

namespace {

GroupDescription DescriptionOf(wire::DescribedConsumerGroup&& described, const DescribeApi& api) {
  GroupDescription description;
  description.id = std::move(described.group);
  if (described.error_code == kGroupIdNotFound) {
    description.not_found = true;
    return description;
  }
  if (described.error_code != 0) {
    description.error = std::string(api.name) + " answered " +
                        KafkaErrorName(described.error_code) +
                        (described.error_message.empty() ? "" : ": " + described.error_message);
    return description;
  }
  description.state = SnakeCase(described.state);
  description.simple = described.simple;
  description.members = static_cast<int>(described.members.size());
  description.member_list = std::move(described.members);
  for (const GroupMember& member : description.member_list) {
    for (const TopicPartition& tp : member.assignment) description.assigned_topics.insert(tp.topic);
  }
  return description;
}

// Sends one describe request, at the highest version both sides speak, for the groups
// ids[indices], and takes the groups it names among them into `answer`.
asio::awaitable<std::optional<std::string>> DescribeBatch(const DescribeApi& api,
                                                          const std::vector<std::string>& ids,
                                                          DescribedGroups& answer,
                                                          CoordinatorSession& session,
                                                          BrokerConnection& connection,
                                                          const std::vector<std::size_t>& indices) {
  std::vector<std::string_view> groups;
  std::unordered_map<std::string_view, bool> asked;
  for (std::size_t index : indices) {
    groups.push_back(ids[index]);
    asked.emplace(ids[index], false);
  }
  const auto& range = connection.versions.at(api.key);  // checked on open
  const std::int16_t version = std::min(range.max, api.max_version);
  const std::int32_t id = session.NextCorrelationId();
  auto payload =
      co_await session.Exchange(connection, api.request(id, session.client_id(), version, groups));
  const std::string where = std::string(api.name) + " to " + connection.where + ": ";
  if (!payload) co_return where + payload.error().message;
  auto described = api.parse(*payload, id, version, groups.size(), wire::kMaxDescribedBytes);
  if (!described) co_return where + described.error().message;
  ++answer.requests;
  for (wire::DescribedConsumerGroup& group : *described) {
    const auto found = asked.find(group.group);
    if (found == asked.end() || found->second) continue;  // not asked, or named twice
    found->second = true;
    answer.groups.push_back(DescriptionOf(std::move(group), api));
  }
  co_return std::nullopt;
}

std::optional<std::string> LacksDescribeApi(
    const DescribeApi& api, const std::map<std::int16_t, wire::VersionRange>& versions,
    const std::string& where) {
  const auto found = versions.find(api.key);
  if (Supports(versions, wire::kFindCoordinator, wire::kFindCoordinatorVersion) &&
      found != versions.end() && found->second.min <= api.max_version &&
      found->second.max >= api.min_version) {
    return std::nullopt;
  }
  return "the broker at " + where + " predates " + api.name + " (" + api.introduced + ")";
}

}  // namespace

const DescribeApi& ConsumerDescribeApi() {
  static const DescribeApi kApi{"ConsumerGroupDescribe",
                                "Kafka 4.0, KIP-848",
                                wire::kConsumerGroupDescribe,
                                0,
                                wire::kConsumerGroupDescribeMaxVersion,
                                wire::ConsumerGroupDescribeRequest,
                                wire::ParseConsumerGroupDescribeResponse};
  return kApi;
}

const DescribeApi& StreamsDescribeApi() {
  static const DescribeApi kApi{"StreamsGroupDescribe",
                                "Kafka 4.1, KIP-1071",
                                wire::kStreamsGroupDescribe,
                                0,
                                wire::kStreamsGroupDescribeMaxVersion,
                                wire::StreamsGroupDescribeRequest,
                                wire::ParseStreamsGroupDescribeResponse};
  return kApi;
}

const DescribeApi& ClassicDescribeApi() {
  static const DescribeApi kApi{"DescribeGroups v5",
                                "Kafka 2.4",
                                wire::kDescribeGroups,
                                wire::kDescribeGroupsVersion,
                                wire::kDescribeGroupsVersion,
                                wire::DescribeGroupsRequest,
                                wire::ParseDescribeGroupsResponse};
  return kApi;
}

ConsumerGroupDescriber::ConsumerGroupDescriber(ConsumerGroupDescriberOptions options,
                                               const DescribeApi& api)
    : connections_(std::move(options)), api_(api) {}

ConsumerGroupDescriber::~ConsumerGroupDescriber() = default;

DescribedGroups ConsumerGroupDescriber::Describe(const std::vector<std::string>& ids,
                                                 std::chrono::milliseconds request_timeout,
                                                 std::chrono::milliseconds total_timeout) {
  DescribedGroups answer;
  if (ids.empty()) return answer;
  if (!connections_.tls_failure().empty()) {
    answer.failure = connections_.tls_failure();
    answer.tls_unusable = true;
    return answer;
  }
  {
    // Whatever it had not answered at the deadline stays without members.
    CoordinatorSession session(
        connections_, request_timeout, ids, api_.name,
        [this](const std::map<std::int16_t, wire::VersionRange>& versions,
               const std::string& where) { return LacksDescribeApi(api_, versions, where); },
        [this, &ids, &answer](CoordinatorSession& running, BrokerConnection& connection,
                              const std::vector<std::size_t>& indices) {
          return DescribeBatch(api_, ids, answer, running, connection, indices);
        });
    session.Run(total_timeout);
    answer.failure = session.failure();
    answer.unsupported = session.unsupported();
  }
  return answer;
}

}  // namespace lagsight::kafka
