// Kafka wire protocol: encoders and decoders of the requests lagsight sends itself.
//
// librdkafka 2.0.2 reads committed offsets one group per OffsetFetch; a broker since Kafka 3.0
// answers one OffsetFetch v8 for many groups (KIP-709), and FindCoordinator v4 locates many
// groups at once (KIP-699). Measured at 2,000 groups on one broker, the one-group calls cost
// ~0.25 s of CPU a poll in librdkafka's threads, half of lagsight's whole idle cost (README
// "Measured"); these codecs let the batched fetcher (offset_fetch_client.h) send a few requests
// instead. Only what that needs is here: ApiVersions v0, FindCoordinator v4, OffsetFetch v8; and
// ConsumerGroupDescribe v0-v1 (KIP-848, Kafka 4.0), which librdkafka 2.0.2 lacks, for the members
// of "consumer" protocol groups (group_describe_client.h). Share groups' codecs are in
// share_wire.h, streams groups' in wire_streams.h; the byte reader and writer all of them use are
// in wire_codec.h.
//
// Encoders return a whole frame (the 4-byte size first). Decoders take the frame's payload (after
// the size) and never read past it or trust a declared length: a count whose elements, at their
// smallest encoding, would not fit in the bytes left, or a length longer than them, fails the
// decode before anything is allocated for it. Pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "kafka/snapshot.h"

namespace lagsight::kafka::wire {

constexpr std::int16_t kOffsetFetch = 9;
constexpr std::int16_t kFindCoordinator = 10;
constexpr std::int16_t kApiVersions = 18;
constexpr std::int16_t kConsumerGroupDescribe = 69;

constexpr std::int16_t kFindCoordinatorVersion = 4;  // KIP-699: many keys in one request
constexpr std::int16_t kOffsetFetchVersion = 8;      // KIP-709: many groups in one request
// v1 (KIP-1099) only adds each member's type to the answer; v0 answers the same otherwise.
constexpr std::int16_t kConsumerGroupDescribeMaxVersion = 1;

using Bytes = std::vector<std::uint8_t>;

struct VersionRange {
  std::int16_t min = 0;
  std::int16_t max = -1;
};

// Request frames. `client_id` is what the broker logs and quotas by (lagsight's client.id).
Bytes ApiVersionsRequest(std::int32_t correlation_id, std::string_view client_id);
Bytes FindCoordinatorRequest(std::int32_t correlation_id, std::string_view client_id,
                             const std::vector<std::string_view>& groups);
// Every committed partition of each group (topics = null); require_stable = false, as Kafka's
// consumer-groups tool and librdkafka's ListConsumerGroupOffsets ask.
Bytes OffsetFetchRequest(std::int32_t correlation_id, std::string_view client_id,
                         const std::vector<std::string_view>& groups);

// The groups' descriptions, without authorized operations. `version`: 0 or 1.
Bytes ConsumerGroupDescribeRequest(std::int32_t correlation_id, std::string_view client_id,
                                   std::int16_t version,
                                   const std::vector<std::string_view>& groups);

// The API versions the broker supports, by API key.
Result<std::map<std::int16_t, VersionRange>> ParseApiVersionsResponse(
    std::span<const std::uint8_t> payload, std::int32_t correlation_id);

struct Coordinator {
  std::string group;
  std::int32_t node_id = -1;
  std::string host;
  std::int32_t port = 0;
  std::int16_t error_code = 0;
};
Result<std::vector<Coordinator>> ParseFindCoordinatorResponse(std::span<const std::uint8_t> payload,
                                                              std::int32_t correlation_id);

// Kafka's limit on topic names; a longer one in an answer fails its decode.
constexpr std::size_t kMaxTopicNameLength = 249;

struct FetchedTopic {
  std::string name;
  // Committed partitions with their offsets (-1: none committed), in the broker's order.
  std::vector<std::pair<std::int32_t, std::int64_t>> partitions;
};

// One group of an OffsetFetch answer; each topic name held once.
struct FetchedGroup {
  std::string group;
  std::int16_t error_code = 0;  // the group's
  std::vector<FetchedTopic> topics;
  // The first partition-level error code, 0 if none.
  std::int16_t partition_error_code = 0;
};
// An answer naming more than `max_groups` groups (those asked for), a topic without a name or
// partitions, or a name longer than Kafka allows fails: so the decoded answer takes at most about
// three times the frame's bytes.
Result<std::vector<FetchedGroup>> ParseOffsetFetchResponse(std::span<const std::uint8_t> payload,
                                                           std::int32_t correlation_id,
                                                           std::size_t max_groups);

// One group of a describe answer (ConsumerGroupDescribe, StreamsGroupDescribe, the classic
// DescribeGroups): its state as Kafka names it ("Stable"), and its members with their current
// assignments (by topic name), in the broker's order.
struct DescribedConsumerGroup {
  std::string group;
  std::int16_t error_code = 0;
  std::string error_message;  // empty when null
  std::string state;
  // Classic DescribeGroups only: the group has no protocol type (offsets committed without
  // membership). The KIP-848 and streams describes leave it false.
  bool simple = false;
  std::vector<GroupMember> members;
};
// An answer naming more than `max_groups` groups, a topic name longer than Kafka allows, or one
// whose decoded members would take more than `max_decoded_bytes` fails. A partition takes 4 bytes
// in the frame but a TopicPartition with its topic's name once decoded, so no ratio to the
// frame's size bounds a legitimate answer: 64 MiB holds over a million assigned partitions.
constexpr std::size_t kMaxDescribedBytes = 64u << 20;
Result<std::vector<DescribedConsumerGroup>> ParseConsumerGroupDescribeResponse(
    std::span<const std::uint8_t> payload, std::int32_t correlation_id, std::int16_t version,
    std::size_t max_groups, std::size_t max_decoded_bytes = kMaxDescribedBytes);

// Reads the 4-byte size that starts every frame.
std::int32_t FrameSize(std::span<const std::uint8_t, 4> prefix);

}  // namespace lagsight::kafka::wire
