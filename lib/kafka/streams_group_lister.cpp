#include "kafka/streams_group_lister.h"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <map>
#include <set>

#include "kafka/coordinator_session.h"
#include "kafka/wire_streams.h"

namespace lagsight::kafka {

namespace asio = boost::asio;

namespace {

// Outside the coroutine: GCC 12 cannot keep a braced list of string literals in its frame.
wire::Bytes ListStreamsGroupsRequest(std::int32_t correlation_id, std::string_view client_id) {
  return wire::ListGroupsRequest(correlation_id, client_id, {"streams"});
}

// The error codes ListGroups answers with: a broker still loading its groups (after a start or a
// coordinator move) answers 14 for a moment.
std::string ListErrorName(std::int16_t code) {
  static const std::map<std::int16_t, const char*> kNames = {{14, "COORDINATOR_LOAD_IN_PROGRESS"},
                                                             {15, "COORDINATOR_NOT_AVAILABLE"},
                                                             {29, "GROUP_AUTHORIZATION_FAILED"}};
  const std::string number = "error code " + std::to_string(code);
  const auto found = kNames.find(code);
  return found == kNames.end() ? number : std::string(found->second) + " (" + number + ")";
}

// Asks the broker on `connection` for its streams groups, into `answer` (each group once). A
// broker still loading its groups is asked again a few times, 200 ms apart (within the session's
// time), as librdkafka does for the main listing: just after a broker starts, a poll would
// otherwise miss its streams groups and say so.
asio::awaitable<std::optional<std::string>> ListOn(ListedStreamsGroups& answer,
                                                   std::set<std::string>& seen,
                                                   CoordinatorSession& session,
                                                   BrokerConnection& connection) {
  constexpr std::int16_t kCoordinatorLoadInProgress = 14;
  constexpr int kLoadRetries = 5;
  const std::string where = "ListGroups to " + connection.where + ": ";
  for (int attempt = 0;; ++attempt) {
    const std::int32_t id = session.NextCorrelationId();
    auto payload =
        co_await session.Exchange(connection, ListStreamsGroupsRequest(id, session.client_id()));
    if (!payload) co_return where + payload.error().message;
    auto listed = wire::ParseListGroupsResponse(*payload, id);
    if (!listed) co_return where + listed.error().message;
    if (listed->error_code == kCoordinatorLoadInProgress && attempt < kLoadRetries) {
      asio::steady_timer pause(co_await asio::this_coro::executor, std::chrono::milliseconds(200));
      co_await pause.async_wait(asio::use_awaitable);
      continue;
    }
    if (listed->error_code != 0) co_return where + "answered " + ListErrorName(listed->error_code);
    for (wire::ListedGroup& group : listed->groups) {
      if (group.type != "streams" || !seen.insert(group.group).second) continue;
      answer.groups.push_back(GroupListing{std::move(group.group), SnakeCase(group.state), false});
      answer.groups.back().streams = true;
    }
    co_return std::nullopt;
  }
}

std::optional<std::string> LacksListGroupsTypes(
    const std::map<std::int16_t, wire::VersionRange>& versions, const std::string& where) {
  if (Supports(versions, wire::kListGroups, wire::kListGroupsTypesVersion)) return std::nullopt;
  return "the broker at " + where + " predates ListGroups v5 (Kafka 4.0), so has no streams groups";
}

}  // namespace

StreamsGroupLister::StreamsGroupLister(BatchedOffsetFetcherOptions options)
    : options_(std::move(options)), resolved_(std::make_unique<ResolvedAddresses>()) {
  if (options_.tls) tls_ = LoadTlsContext(*options_.tls, tls_failure_);
}

StreamsGroupLister::~StreamsGroupLister() = default;

ListedStreamsGroups StreamsGroupLister::List(const std::vector<std::string>& brokers,
                                             std::chrono::milliseconds request_timeout,
                                             std::chrono::milliseconds total_timeout) {
  ListedStreamsGroups answer;
  if (brokers.empty()) return answer;
  if (!tls_failure_.empty()) {
    answer.failure = tls_failure_;
    return answer;
  }
  const std::vector<std::string> no_groups;
  std::set<std::string> seen;
  CoordinatorSession session(
      options_, tls_.get(), request_timeout, no_groups, *resolved_, "ListGroups",
      LacksListGroupsTypes,
      [&answer, &seen](CoordinatorSession& running, BrokerConnection& connection,
                       const std::vector<std::size_t>& /*indices*/) {
        return ListOn(answer, seen, running, connection);
      });
  session.RunOnEach(brokers, total_timeout);
  answer.failure = session.failure();
  answer.unsupported = session.unsupported();
  return answer;
}

}  // namespace lagsight::kafka
