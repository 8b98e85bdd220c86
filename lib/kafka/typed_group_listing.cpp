#include "kafka/typed_group_listing.h"

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>

#include "kafka/error_names.h"
#include "kafka/snapshot.h"

namespace lagsight::kafka {

namespace asio = boost::asio;

// A broker still loading its groups is asked again a few times, 200 ms apart (within the
// session's time), as librdkafka does for the main listing: just after a broker starts, a poll
// would otherwise miss its groups and say so.
asio::awaitable<Result<std::vector<wire::ListedGroup>>> ListGroupsOfTypes(
    CoordinatorSession& session, BrokerConnection& connection,
    std::vector<std::string_view> types) {
  constexpr std::int16_t kCoordinatorLoadInProgress = 14;
  constexpr int kLoadRetries = 5;
  const std::string where = "ListGroups to " + connection.where + ": ";
  for (int attempt = 0;; ++attempt) {
    const std::int32_t id = session.NextCorrelationId();
    auto payload = co_await session.Exchange(
        connection, wire::ListGroupsRequest(id, session.client_id(), types));
    if (!payload) co_return Error{where + payload.error().message};
    auto listed = wire::ParseListGroupsResponse(*payload, id);
    if (!listed) co_return Error{where + listed.error().message};
    if (listed->error_code == kCoordinatorLoadInProgress && attempt < kLoadRetries) {
      asio::steady_timer pause(co_await asio::this_coro::executor, std::chrono::milliseconds(200));
      co_await pause.async_wait(asio::use_awaitable);
      continue;
    }
    if (listed->error_code != 0) {
      co_return Error{where + "answered " + KafkaErrorName(listed->error_code)};
    }
    std::vector<wire::ListedGroup> groups;
    for (wire::ListedGroup& group : listed->groups) {
      group.type = SnakeCase(group.type);
      // The filter asked for these types; a broker that ignored it must not add others.
      if (std::find(types.begin(), types.end(), group.type) == types.end()) continue;
      group.state = SnakeCase(group.state);
      groups.push_back(std::move(group));
    }
    co_return groups;
  }
}

}  // namespace lagsight::kafka
