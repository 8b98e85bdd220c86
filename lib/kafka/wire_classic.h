// Kafka wire protocol for the classic DescribeGroups (API key 15) at v5 (flexible, Kafka 2.4):
// who the members of a classic group are and which partitions each holds, decoded from the
// ConsumerProtocolAssignment bytes of "consumer" protocol groups.
//
// Why by hand: librdkafka 2.0.2 speaks DescribeGroups too, but its admin worker can abort the
// process (`rd_kafka_enq_once_del_source_return: Assertion 'eonce->refcnt > 0'`, librdkafka
// issue #4605, PR #5397) when a coordinator's connection drops under a request: the moment a
// broker fails is the moment lagsight must stay up. Sent by the describe client
// (group_describe_client.h) that already describes KIP-848 and streams groups, the answer decodes
// into the same shape. Same promises as wire.h: frames in, payloads out, no read past the
// payload, no count trusted before it fits, decoded size bounded. Pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "kafka/wire.h"

namespace lagsight::kafka::wire {

constexpr std::int16_t kDescribeGroups = 15;
// v5 is the first flexible version (Kafka 2.4) and the only one lagsight speaks: a broker that
// predates it is described by librdkafka, as before.
constexpr std::int16_t kDescribeGroupsVersion = 5;

// The groups' descriptions, without authorized operations. `version`: 5.
Bytes DescribeGroupsRequest(std::int32_t correlation_id, std::string_view client_id,
                            std::int16_t version, const std::vector<std::string_view>& groups);

// Each group's state as Kafka names it ("Stable", "Dead" for a group the coordinator does not
// know), `simple` when it has no protocol type (offsets committed without membership), and its
// members with their assignments: the partitions a "consumer" protocol group's leader assigned
// (ConsumerProtocolAssignment v0-v3); none for another protocol (Connect's workers hold
// connectors, not partitions) or an assignment that does not decode as one. An answer naming
// more than `max_groups` groups or decoding to more than `max_decoded_bytes` fails.
Result<std::vector<DescribedConsumerGroup>> ParseDescribeGroupsResponse(
    std::span<const std::uint8_t> payload, std::int32_t correlation_id, std::int16_t version,
    std::size_t max_groups, std::size_t max_decoded_bytes = kMaxDescribedBytes);

// The partitions of a ConsumerProtocolAssignment (what a classic consumer group's leader hands
// each member), in its order; empty bytes (no assignment yet) are none. Fails when the bytes do
// not decode as one, name a topic Kafka would not allow, or would decode to more than
// `max_decoded_bytes`.
Result<std::vector<TopicPartition>> ParseConsumerProtocolAssignment(
    std::string_view bytes, std::size_t max_decoded_bytes = kMaxDescribedBytes);

}  // namespace lagsight::kafka::wire
