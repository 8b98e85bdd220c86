// Kafka wire protocol for share groups (KIP-932): the codecs of what lagsight reads of them.
//
// librdkafka 2.0.2 lists groups with ListGroups v4, which a Kafka 4.3 broker answers without its
// share groups (verified, docs/facts.md), and knows no share group request at all. So lagsight
// lists them itself: DescribeCluster v0 names every broker, ListGroups v5 with the types filter
// ["share"] asks each for the share groups it coordinates; DescribeShareGroupOffsets (v0, and v1
// with the coordinator's lag, KIP-1226) reads each group's share-partition start offsets, and
// ShareGroupDescribe (v1) its members and their assignments.
//
// As wire.h: encoders return a whole frame, decoders take its payload, never read past it and
// refuse counts that cannot fit in the bytes left before allocating for them. Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "kafka/wire.h"

namespace lagsight::kafka::wire {

constexpr std::int16_t kListGroups = 16;
constexpr std::int16_t kDescribeCluster = 60;
constexpr std::int16_t kShareGroupDescribe = 77;
constexpr std::int16_t kDescribeShareGroupOffsets = 90;

constexpr std::int16_t kListGroupsTypesVersion = 5;  // KIP-848: the types filter
constexpr std::int16_t kDescribeClusterVersion = 0;
// v1 (KIP-1226, Kafka 4.3) adds each partition's lag as the coordinator computes it.
constexpr std::int16_t kDescribeShareGroupOffsetsMaxVersion = 1;
// The only version since Kafka 4.1 (v0 was 4.0's early access, since removed).
constexpr std::int16_t kShareGroupDescribeVersion = 1;

// The brokers of the cluster, without authorized operations.
Bytes DescribeClusterRequest(std::int32_t correlation_id, std::string_view client_id);
// The groups of the given types (Kafka's names: "share") the broker coordinates, in every state.
Bytes ListGroupsRequest(std::int32_t correlation_id, std::string_view client_id,
                        const std::vector<std::string_view>& types);
// Every partition of each group (topics = null). `version`: 0 or 1.
Bytes DescribeShareGroupOffsetsRequest(std::int32_t correlation_id, std::string_view client_id,
                                       std::int16_t version,
                                       const std::vector<std::string_view>& groups);

// The groups' members and assignments (v1), without authorized operations.
Bytes ShareGroupDescribeRequest(std::int32_t correlation_id, std::string_view client_id,
                                const std::vector<std::string_view>& groups);

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
  std::string state;  // as Kafka names it ("Stable")
  std::string type;   // as Kafka names it ("Share")
};
// An answer with an error code, or naming more than `max_groups` groups, fails. A listed group
// takes 5 bytes in the frame at least but ~130 decoded, so the count is what bounds the answer:
// kMaxListedGroups (~26 MB decoded) is far above any broker's share groups.
constexpr std::size_t kMaxListedGroups = 200'000;
Result<std::vector<ListedGroup>> ParseListGroupsResponse(std::span<const std::uint8_t> payload,
                                                         std::int32_t correlation_id,
                                                         std::size_t max_groups = kMaxListedGroups);

// One partition of a DescribeShareGroupOffsets answer.
struct SharePartitionOffset {
  std::int32_t partition = 0;
  std::int64_t start_offset = -1;  // -1: the share-partition is not initialized
  std::int64_t lag = -1;           // -1: not computed, or a v0 answer
  std::int16_t error_code = 0;
};
struct ShareOffsetsTopic {
  std::string name;
  std::vector<SharePartitionOffset> partitions;
};
struct ShareGroupOffsets {
  std::string group;
  std::int16_t error_code = 0;
  std::string error_message;  // empty when null
  std::vector<ShareOffsetsTopic> topics;
};
// An answer naming more than `max_groups` groups (those asked for), or a topic name that is empty
// or longer than Kafka allows, fails: so the decoded answer takes at most a few times the
// frame's bytes.
Result<std::vector<ShareGroupOffsets>> ParseDescribeShareGroupOffsetsResponse(
    std::span<const std::uint8_t> payload, std::int32_t correlation_id, std::int16_t version,
    std::size_t max_groups);

// One group of a ShareGroupDescribe answer: its state as Kafka names it, its members with their
// assignments by topic name (several members may hold one partition), in the broker's order.
struct DescribedShareGroup {
  std::string group;
  std::int16_t error_code = 0;
  std::string error_message;  // empty when null
  std::string state;
  std::vector<GroupMember> members;  // group_instance_id empty: share groups have none
};
// Bounded as ParseConsumerGroupDescribeResponse: more groups than asked, a topic name Kafka
// refuses, or more than `max_decoded_bytes` decoded fails.
Result<std::vector<DescribedShareGroup>> ParseShareGroupDescribeResponse(
    std::span<const std::uint8_t> payload, std::int32_t correlation_id, std::size_t max_groups,
    std::size_t max_decoded_bytes = kMaxDescribedBytes);

}  // namespace lagsight::kafka::wire
