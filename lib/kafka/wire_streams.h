// Kafka wire protocol for streams groups (KIP-1071, Kafka Streams with group.protocol=streams),
// which librdkafka 2.0.2 neither lists nor describes: ListGroups v5 filtered by group type (the
// v4 that librdkafka sends leaves streams groups out, verified on Kafka 4.3.2), and
// StreamsGroupDescribe v0 (API key 89, Kafka 4.1; 4.3.2 answers v0 only).
//
// A streams group's members hold tasks (a subtopology id and partitions), not topic partitions;
// the decoder maps each member's active tasks to the partitions they read, through the
// topology in the same answer: task (subtopology s, partition p) reads partition p of every
// source topic of s, its repartition source topics included. The answer decodes into the
// shape of a ConsumerGroupDescribe answer, so the describe client and the collector take both
// alike. Same promises as wire.h: frames in, payloads out, no read past the payload, no count
// trusted before it fits, decoded size bounded. Pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "kafka/group_listing_wire.h"
#include "kafka/wire.h"

namespace lagsight::kafka::wire {

constexpr std::int16_t kStreamsGroupDescribe = 89;
constexpr std::int16_t kStreamsGroupDescribeMaxVersion = 0;

// The groups' descriptions, without authorized operations. `version`: 0.
Bytes StreamsGroupDescribeRequest(std::int32_t correlation_id, std::string_view client_id,
                                  std::int16_t version,
                                  const std::vector<std::string_view>& groups);

// Each member's assignment: the partitions of its active tasks (standby and warm-up tasks read
// only changelogs, which hold no group offsets). An answer naming more than `max_groups` groups,
// a topic name longer than Kafka allows, or decoding to more than `max_decoded_bytes` fails.
Result<std::vector<DescribedConsumerGroup>> ParseStreamsGroupDescribeResponse(
    std::span<const std::uint8_t> payload, std::int32_t correlation_id, std::int16_t version,
    std::size_t max_groups, std::size_t max_decoded_bytes = kMaxDescribedBytes);

}  // namespace lagsight::kafka::wire
