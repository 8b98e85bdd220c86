// Kafka wire protocol for listing groups of a given type on every broker: DescribeCluster v0
// names the brokers, ListGroups v5 (KIP-848) with a types filter asks each for the groups it
// coordinates. librdkafka 2.0.2 lists with ListGroups v4, which a Kafka 4.3 broker answers without
// its share and streams groups (verified, docs/facts.md), so lagsight lists those itself
// (share_group_client.h, streams_group_lister.h).
//
// As wire.h: encoders return a whole frame, decoders take its payload, never read past it and
// refuse counts that cannot fit in the bytes left before allocating for them. Pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "kafka/wire.h"

namespace lagsight::kafka::wire {

constexpr std::int16_t kListGroups = 16;
constexpr std::int16_t kDescribeCluster = 60;
constexpr std::int16_t kListGroupsTypesVersion = 5;  // KIP-848: the types filter
constexpr std::int16_t kDescribeClusterVersion = 0;

// The brokers of the cluster, without authorized operations.
Bytes DescribeClusterRequest(std::int32_t correlation_id, std::string_view client_id);
// The groups of the given types (Kafka's names: "share", "streams") the broker coordinates, in
// every state.
Bytes ListGroupsRequest(std::int32_t correlation_id, std::string_view client_id,
                        const std::vector<std::string_view>& types);

struct Broker {
  std::int32_t node_id = -1;
  std::string host;
  std::int32_t port = 0;
};
// An answer with an error code, or naming more than `max_brokers` brokers (each is connected
// to), fails.
constexpr std::size_t kMaxBrokers = 10'000;
Result<std::vector<Broker>> ParseDescribeClusterResponse(std::span<const std::uint8_t> payload,
                                                         std::int32_t correlation_id,
                                                         std::size_t max_brokers = kMaxBrokers);

struct ListedGroup {
  std::string group;
  std::string protocol_type;
  std::string state;  // as Kafka names it ("Stable", "NotReady")
  std::string type;   // as Kafka names it ("Share", "Streams")
};
struct ListedGroups {
  // The answer's error (14, COORDINATOR_LOAD_IN_PROGRESS, for a moment after a broker starts);
  // the caller decides whether to ask again.
  std::int16_t error_code = 0;
  std::vector<ListedGroup> groups;
};
// An answer naming more than `max_groups` groups fails. A listed group takes 5 bytes in the frame
// at least but ~130 decoded, so the count is what bounds the answer: kMaxListedGroups (~26 MB
// decoded) is far above any broker's share or streams groups.
constexpr std::size_t kMaxListedGroups = 200'000;
Result<ListedGroups> ParseListGroupsResponse(std::span<const std::uint8_t> payload,
                                             std::int32_t correlation_id,
                                             std::size_t max_groups = kMaxListedGroups);

}  // namespace lagsight::kafka::wire
