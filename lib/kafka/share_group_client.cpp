#include "kafka/share_group_client.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "kafka/coordinator_session.h"
#include "kafka/error_names.h"
#include "kafka/share_wire.h"
#include "kafka/typed_group_listing.h"

namespace lagsight::kafka {

namespace asio = boost::asio;

namespace {

constexpr const char* kShareType = "share";

// Why a broker cannot serve the reader, or nullopt: it must list by type, name the cluster's
// brokers, locate coordinators in batches and describe share group offsets.
std::optional<std::string> LacksShareGroups(
    const std::map<std::int16_t, wire::VersionRange>& versions, const std::string& where) {
  const auto offsets = versions.find(wire::kDescribeShareGroupOffsets);
  if (offsets == versions.end() || offsets->second.max < 0 ||
      offsets->second.min > wire::kDescribeShareGroupOffsetsMaxVersion) {
    return "the broker at " + where +
           " predates share groups (no DescribeShareGroupOffsets, KIP-932)";
  }
  if (!Supports(versions, wire::kFindCoordinator, wire::kFindCoordinatorVersion) ||
      !Supports(versions, wire::kListGroups, wire::kListGroupsTypesVersion) ||
      !Supports(versions, wire::kDescribeCluster, wire::kDescribeClusterVersion)) {
    return "the broker at " + where +
           " lacks FindCoordinator v4, ListGroups v5 or DescribeCluster v0";
  }
  return std::nullopt;
}

// Asks one broker for the share groups it coordinates, into `answer`.
asio::awaitable<std::optional<std::string>> ListOn(ShareGroupListings& answer,
                                                   CoordinatorSession& session,
                                                   BrokerConnection& connection) {
  // Built before the co_await: GCC 12 cannot keep a braced list in a coroutine frame.
  std::vector<std::string_view> types = {kShareType};
  auto listed = co_await ListGroupsOfTypes(session, connection, std::move(types));
  if (!listed) co_return listed.error().message;
  for (wire::ListedGroup& group : *listed) {
    GroupListing listing;
    listing.id = std::move(group.group);
    listing.state = std::move(group.state);
    answer.groups.push_back(std::move(listing));
  }
  co_return std::nullopt;
}

// A group's answer as ShareGroupProgress holds it: its partitions sorted, each once; a partition
// answered with an error is left out and said in `errors`.
ShareGroup ProgressOf(wire::ShareGroupOffsets&& answered, std::vector<std::string>& errors) {
  ShareGroup group;
  group.id = std::move(answered.group);
  for (wire::ShareOffsetsTopic& topic : answered.topics) {
    for (const wire::SharePartitionOffset& partition : topic.partitions) {
      if (partition.error_code != 0) {
        errors.push_back("share group \"" + group.id + "\" on " + topic.name + "[" +
                         std::to_string(partition.partition) +
                         "]: DescribeShareGroupOffsets answered " +
                         KafkaErrorName(partition.error_code));
        continue;
      }
      SharePartition progress;
      progress.partition = {topic.name, partition.partition};
      progress.start_offset = partition.start_offset;
      if (partition.lag >= 0) progress.lag = partition.lag;
      group.partitions.push_back(std::move(progress));
    }
  }
  const auto by_partition = [](const SharePartition& a, const SharePartition& b) {
    return a.partition < b.partition;
  };
  std::stable_sort(group.partitions.begin(), group.partitions.end(), by_partition);
  group.partitions.erase(std::unique(group.partitions.begin(), group.partitions.end(),
                                     [](const SharePartition& a, const SharePartition& b) {
                                       return a.partition == b.partition;
                                     }),
                         group.partitions.end());
  return group;
}

// Sends one ShareGroupDescribe for the groups answer.groups[first...] (those the batch's
// DescribeShareGroupOffsets answered), and gives each its members. Only where the broker speaks it.
asio::awaitable<std::optional<std::string>> DescribeMembers(ShareGroupProgress& answer,
                                                            std::size_t first,
                                                            CoordinatorSession& session,
                                                            BrokerConnection& connection) {
  if (first >= answer.groups.size() ||
      !Supports(connection.versions, wire::kShareGroupDescribe, wire::kShareGroupDescribeVersion)) {
    co_return std::nullopt;
  }
  std::vector<std::string_view> groups;
  std::unordered_map<std::string_view, std::size_t> index_of;
  for (std::size_t index = first; index < answer.groups.size(); ++index) {
    groups.push_back(answer.groups[index].id);
    index_of.emplace(answer.groups[index].id, index);
  }
  const std::int32_t id = session.NextCorrelationId();
  auto payload = co_await session.Exchange(
      connection, wire::ShareGroupDescribeRequest(id, session.client_id(), groups));
  const std::string where = "ShareGroupDescribe to " + connection.where + ": ";
  if (!payload) co_return where + payload.error().message;
  auto described = wire::ParseShareGroupDescribeResponse(*payload, id, groups.size());
  if (!described) co_return where + described.error().message;
  for (wire::DescribedShareGroup& group : *described) {
    const auto found = index_of.find(group.group);
    if (found == index_of.end()) continue;  // not asked, or named twice
    ShareGroup& target = answer.groups[found->second];
    index_of.erase(found);
    if (group.error_code == kGroupIdNotFound) continue;
    if (group.error_code != 0) {
      answer.errors.push_back("share group \"" + target.id + "\": ShareGroupDescribe answered " +
                              KafkaErrorName(group.error_code) +
                              (group.error_message.empty() ? "" : ": " + group.error_message));
      continue;
    }
    target.members = static_cast<int>(group.members.size());
    target.member_list = std::move(group.members);
  }
  co_return std::nullopt;
}

// Sends one DescribeShareGroupOffsets, at the highest version both sides speak, for the groups
// ids[indices], and takes the groups it names among them into `answer`.
asio::awaitable<std::optional<std::string>> DescribeBatch(const std::vector<std::string>& ids,
                                                          ShareGroupProgress& answer,
                                                          CoordinatorSession& session,
                                                          BrokerConnection& connection,
                                                          const std::vector<std::size_t>& indices) {
  std::vector<std::string_view> groups;
  std::unordered_map<std::string_view, bool> asked;
  for (std::size_t index : indices) {
    groups.push_back(ids[index]);
    asked.emplace(ids[index], false);
  }
  const auto& range = connection.versions.at(wire::kDescribeShareGroupOffsets);  // checked
  const std::int16_t version = std::min(range.max, wire::kDescribeShareGroupOffsetsMaxVersion);
  const std::int32_t id = session.NextCorrelationId();
  auto payload = co_await session.Exchange(
      connection, wire::DescribeShareGroupOffsetsRequest(id, session.client_id(), version, groups));
  const std::string where = "DescribeShareGroupOffsets to " + connection.where + ": ";
  if (!payload) co_return where + payload.error().message;
  auto described =
      wire::ParseDescribeShareGroupOffsetsResponse(*payload, id, version, groups.size());
  if (!described) co_return where + described.error().message;
  ++answer.requests;
  const std::size_t first = answer.groups.size();
  for (wire::ShareGroupOffsets& group : *described) {
    const auto found = asked.find(group.group);
    if (found == asked.end() || found->second) continue;  // not asked, or named twice
    found->second = true;
    if (group.error_code == kGroupIdNotFound) continue;  // deleted meanwhile
    if (group.error_code != 0) {
      answer.errors.push_back("share group \"" + group.group +
                              "\": DescribeShareGroupOffsets answered " +
                              KafkaErrorName(group.error_code) +
                              (group.error_message.empty() ? "" : ": " + group.error_message));
      continue;
    }
    answer.groups.push_back(ProgressOf(std::move(group), answer.errors));
  }
  co_return co_await DescribeMembers(answer, first, session, connection);
}

}  // namespace

ShareGroupReader::ShareGroupReader(BatchedOffsetFetcherOptions options)
    : connections_(std::move(options)) {}

ShareGroupReader::~ShareGroupReader() = default;

ShareGroupListings ShareGroupReader::List(std::chrono::milliseconds request_timeout,
                                          std::chrono::milliseconds total_timeout) {
  ShareGroupListings answer;
  if (!connections_.tls_failure().empty()) {
    answer.failure = connections_.tls_failure();
    return answer;
  }
  const std::vector<std::string> no_ids;
  {
    CoordinatorSession session(connections_, request_timeout, no_ids, "ListGroups",
                               LacksShareGroups, nullptr);
    session.RunOnEveryBroker(total_timeout,
                             [&answer](CoordinatorSession& running, BrokerConnection& connection) {
                               return ListOn(answer, running, connection);
                             });
    answer.failure = session.failure();
    answer.unsupported = session.unsupported();
  }
  // A group is listed by its coordinator alone; sorted, and once, whatever brokers answer.
  std::sort(answer.groups.begin(), answer.groups.end(),
            [](const GroupListing& a, const GroupListing& b) { return a.id < b.id; });
  answer.groups.erase(
      std::unique(answer.groups.begin(), answer.groups.end(),
                  [](const GroupListing& a, const GroupListing& b) { return a.id == b.id; }),
      answer.groups.end());
  return answer;
}

ShareGroupProgress ShareGroupReader::Describe(const std::vector<std::string>& ids,
                                              std::chrono::milliseconds request_timeout,
                                              std::chrono::milliseconds total_timeout) {
  ShareGroupProgress answer;
  if (ids.empty()) return answer;
  if (!connections_.tls_failure().empty()) {
    answer.failure = connections_.tls_failure();
    return answer;
  }
  {
    // Whatever it had not answered at the deadline stays without progress.
    CoordinatorSession session(
        connections_, request_timeout, ids, "DescribeShareGroupOffsets", LacksShareGroups,
        [&ids, &answer](CoordinatorSession& running, BrokerConnection& connection,
                        const std::vector<std::size_t>& indices) {
          return DescribeBatch(ids, answer, running, connection, indices);
        });
    session.Run(total_timeout);
    answer.failure = session.failure();
    answer.unsupported = session.unsupported();
  }
  return answer;
}

}  // namespace lagsight::kafka
