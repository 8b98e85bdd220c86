#include "kafka/streams_group_lister.h"

#include <chrono>
#include <map>
#include <set>

#include "kafka/coordinator_session.h"
#include "kafka/typed_group_listing.h"

namespace lagsight::kafka {

namespace asio = boost::asio;

namespace {

// Asks the broker on `connection` for its streams groups, into `answer` (each group once).
asio::awaitable<std::optional<std::string>> ListOn(ListedStreamsGroups& answer,
                                                   std::set<std::string>& seen,
                                                   CoordinatorSession& session,
                                                   BrokerConnection& connection) {
  // Built before the co_await: GCC 12 cannot keep a braced list in a coroutine frame.
  std::vector<std::string_view> types = {"streams"};
  auto listed = co_await ListGroupsOfTypes(session, connection, std::move(types));
  if (!listed) co_return listed.error().message;
  for (wire::ListedGroup& group : *listed) {
    if (!seen.insert(group.group).second) continue;
    answer.groups.push_back(GroupListing{std::move(group.group), std::move(group.state), false});
    answer.groups.back().streams = true;
  }
  co_return std::nullopt;
}

std::optional<std::string> LacksListGroupsTypes(
    const std::map<std::int16_t, wire::VersionRange>& versions, const std::string& where) {
  if (Supports(versions, wire::kListGroups, wire::kListGroupsTypesVersion)) return std::nullopt;
  return "the broker at " + where + " predates ListGroups v5 (Kafka 4.0), so has no streams groups";
}

}  // namespace

StreamsGroupLister::StreamsGroupLister(BatchedOffsetFetcherOptions options)
    : connections_(std::move(options)) {}

StreamsGroupLister::~StreamsGroupLister() = default;

ListedStreamsGroups StreamsGroupLister::List(std::chrono::milliseconds request_timeout,
                                             std::chrono::milliseconds total_timeout) {
  ListedStreamsGroups answer;
  if (!connections_.tls_failure().empty()) {
    answer.failure = connections_.tls_failure();
    return answer;
  }
  const std::vector<std::string> no_groups;
  std::set<std::string> seen;
  CoordinatorSession session(connections_, request_timeout, no_groups, "ListGroups",
                             LacksListGroupsTypes, nullptr);
  session.RunOnEveryBroker(
      total_timeout, [&answer, &seen](CoordinatorSession& running, BrokerConnection& connection) {
        return ListOn(answer, seen, running, connection);
      });
  answer.failure = session.failure();
  answer.unsupported = session.unsupported();
  return answer;
}

}  // namespace lagsight::kafka
