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
#include "kafka/group_listing_wire.h"
#include "kafka/wire.h"

namespace lagsight::kafka::wire {

constexpr std::int16_t kShareGroupDescribe = 77;
constexpr std::int16_t kDescribeShareGroupOffsets = 90;

// v1 (KIP-1226, Kafka 4.3) adds each partition's lag as the coordinator computes it.
constexpr std::int16_t kDescribeShareGroupOffsetsMaxVersion = 1;
// The only version since Kafka 4.1 (v0 was 4.0's early access, since removed).
constexpr std::int16_t kShareGroupDescribeVersion = 1;

// Every partition of each group (topics = null). `version`: 0 or 1.
Bytes DescribeShareGroupOffsetsRequest(std::int32_t correlation_id, std::string_view client_id,
                                       std::int16_t version,
                                       const std::vector<std::string_view>& groups);

// The groups' members and assignments (v1), without authorized operations.
Bytes ShareGroupDescribeRequest(std::int32_t correlation_id, std::string_view client_id,
                                const std::vector<std::string_view>& groups);

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
// assignments by topic name (several members may hold one partition), in the broker's order;
// the fields of a ConsumerGroupDescribe group, group_instance_id empty (share groups have none).
using DescribedShareGroup = DescribedConsumerGroup;
// Bounded as ParseConsumerGroupDescribeResponse: more groups than asked, a topic name Kafka
// refuses, or more than `max_decoded_bytes` decoded fails.
Result<std::vector<DescribedShareGroup>> ParseShareGroupDescribeResponse(
    std::span<const std::uint8_t> payload, std::int32_t correlation_id, std::size_t max_groups,
    std::size_t max_decoded_bytes = kMaxDescribedBytes);

}  // namespace lagsight::kafka::wire
