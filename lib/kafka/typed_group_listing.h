// ListGroupsOfTypes: one broker's groups of the given types (share, streams), asked with
// ListGroups v5 on a connection of a CoordinatorSession (group_listing_wire.h). The one place
// that sends it, for the share group reader and the streams group lister alike: a broker still
// loading its groups is asked again, and groups of another type are dropped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "kafka/coordinator_session.h"  // boost::asio::awaitable, included as Boost 1.74 needs
#include "kafka/group_listing_wire.h"

namespace lagsight::kafka {

// The groups of `types` (snake case: "share", "streams") the broker on `connection` coordinates,
// each with its type and state in snake case; or why not, naming the broker.
boost::asio::awaitable<Result<std::vector<wire::ListedGroup>>> ListGroupsOfTypes(
    CoordinatorSession& session, BrokerConnection& connection, std::vector<std::string_view> types);

}  // namespace lagsight::kafka
