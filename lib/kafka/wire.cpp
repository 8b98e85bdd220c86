#include "kafka/wire.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "kafka/wire_codec.h"

namespace lagsight::kafka::wire {
namespace {

using detail::DecodeBudget;
using detail::DescribeGroupsRequest;
using detail::GroupDescribeDecoder;
using detail::Header;
using detail::ParseDescribedGroups;
using detail::ReadAssignment;
using detail::Reader;
using detail::ReadHeader;
using detail::Truncated;
using detail::Writer;

// The smallest encoding of each repeated element, for the counts' checks.
constexpr std::size_t kApiVersionBytes = 6;    // key, min, max
constexpr std::size_t kCoordinatorBytes = 14;  // empty key and host, null message, no tags
constexpr std::size_t kGroupBytes = 5;         // empty id, no topics, error, no tags
constexpr std::size_t kPartitionBytes = 20;    // index, offset, epoch, null metadata, error, tags
// A topic in an answer to "all topics" has a name and at least one partition (checked).
constexpr std::size_t kTopicBytes = 2 + 1 + kPartitionBytes + 1;
// ConsumerGroupDescribe: a group with empty strings, no members, no tags; a member likewise, with
// two empty assignments; an assigned topic: its id, an empty name, no partitions, no tags.
constexpr std::size_t kDescribedGroupBytes = 20;
constexpr std::size_t kDescribedMemberBytes = 16;

}  // namespace

Bytes ApiVersionsRequest(std::int32_t correlation_id, std::string_view client_id) {
  return Header(kApiVersions, 0, correlation_id, client_id, false).Frame();
}

Bytes FindCoordinatorRequest(std::int32_t correlation_id, std::string_view client_id,
                             const std::vector<std::string_view>& groups) {
  Writer writer =
      Header(kFindCoordinator, kFindCoordinatorVersion, correlation_id, client_id, true);
  writer.Int8(0);  // key_type: group
  writer.CompactArrayLength(groups.size());
  for (std::string_view group : groups) writer.CompactString(group);
  writer.NoTaggedFields();
  return std::move(writer).Frame();
}

Bytes OffsetFetchRequest(std::int32_t correlation_id, std::string_view client_id,
                         const std::vector<std::string_view>& groups) {
  Writer writer = Header(kOffsetFetch, kOffsetFetchVersion, correlation_id, client_id, true);
  writer.CompactArrayLength(groups.size());
  for (std::string_view group : groups) {
    writer.CompactString(group);
    writer.NullCompactArray();  // topics: all the group committed
    writer.NoTaggedFields();
  }
  writer.Int8(0);  // require_stable
  writer.NoTaggedFields();
  return std::move(writer).Frame();
}

Bytes ConsumerGroupDescribeRequest(std::int32_t correlation_id, std::string_view client_id,
                                   std::int16_t version,
                                   const std::vector<std::string_view>& groups) {
  return DescribeGroupsRequest(kConsumerGroupDescribe, version, correlation_id, client_id, groups);
}

Result<std::map<std::int16_t, VersionRange>> ParseApiVersionsResponse(
    std::span<const std::uint8_t> payload, std::int32_t correlation_id) {
  Reader reader(payload);
  // ApiVersions answers with header v0 whatever its version (KIP-511).
  if (auto error = ReadHeader(reader, correlation_id, false, "ApiVersions")) return *error;
  const std::int16_t error_code = reader.Int16();
  const std::int64_t count = reader.ArrayLength(kApiVersionBytes);
  std::map<std::int16_t, VersionRange> versions;
  for (std::int64_t i = 0; reader.ok() && i < count; ++i) {
    const std::int16_t key = reader.Int16();
    VersionRange range;
    range.min = reader.Int16();
    range.max = reader.Int16();
    versions[key] = range;
  }
  if (!reader.ok()) return Truncated("ApiVersions");
  if (error_code != 0) {
    return Error{"ApiVersions answered error code " + std::to_string(error_code)};
  }
  return versions;
}

Result<std::vector<Coordinator>> ParseFindCoordinatorResponse(std::span<const std::uint8_t> payload,
                                                              std::int32_t correlation_id) {
  Reader reader(payload);
  if (auto error = ReadHeader(reader, correlation_id, true, "FindCoordinator")) return *error;
  reader.Int32();  // throttle_time_ms
  const std::int64_t count = reader.CompactArrayLength(kCoordinatorBytes);
  std::vector<Coordinator> coordinators;
  coordinators.reserve(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)));
  for (std::int64_t i = 0; reader.ok() && i < count; ++i) {
    Coordinator coordinator;
    coordinator.group = reader.CompactString();
    coordinator.node_id = reader.Int32();
    coordinator.host = reader.CompactString();
    coordinator.port = reader.Int32();
    coordinator.error_code = reader.Int16();
    reader.CompactString();  // error_message
    reader.SkipTaggedFields();
    coordinators.push_back(std::move(coordinator));
  }
  reader.SkipTaggedFields();
  if (!reader.ok()) return Truncated("FindCoordinator");
  return coordinators;
}

Result<std::vector<FetchedGroup>> ParseOffsetFetchResponse(std::span<const std::uint8_t> payload,
                                                           std::int32_t correlation_id,
                                                           std::size_t max_groups) {
  Reader reader(payload);
  if (auto error = ReadHeader(reader, correlation_id, true, "OffsetFetch")) return *error;
  reader.Int32();  // throttle_time_ms
  const std::int64_t group_count = reader.CompactArrayLength(kGroupBytes);
  if (group_count > static_cast<std::int64_t>(max_groups)) {
    return Error{"OffsetFetch response: " + std::to_string(group_count) + " groups, asked for " +
                 std::to_string(max_groups)};
  }
  std::vector<FetchedGroup> groups;
  groups.reserve(static_cast<std::size_t>(std::max<std::int64_t>(group_count, 0)));
  for (std::int64_t g = 0; reader.ok() && g < group_count; ++g) {
    FetchedGroup group;
    group.group = reader.CompactString();
    const std::int64_t topic_count = reader.CompactArrayLength(kTopicBytes);
    group.topics.reserve(static_cast<std::size_t>(std::max<std::int64_t>(topic_count, 0)));
    for (std::int64_t t = 0; reader.ok() && t < topic_count; ++t) {
      FetchedTopic& topic = group.topics.emplace_back();
      const std::string_view name = reader.CompactString();
      if (reader.ok() && (name.empty() || name.size() > kMaxTopicNameLength)) {
        return Error{"OffsetFetch response: a topic name of " + std::to_string(name.size()) +
                     " characters (Kafka allows 1 to " + std::to_string(kMaxTopicNameLength) + ")"};
      }
      topic.name = name;
      const std::int64_t partition_count = reader.CompactArrayLength(kPartitionBytes);
      if (reader.ok() && partition_count <= 0) return Truncated("OffsetFetch");
      topic.partitions.reserve(
          static_cast<std::size_t>(std::max<std::int64_t>(partition_count, 0)));
      for (std::int64_t p = 0; reader.ok() && p < partition_count; ++p) {
        const std::int32_t partition = reader.Int32();
        const std::int64_t offset = reader.Int64();
        reader.Int32();          // committed_leader_epoch
        reader.CompactString();  // metadata
        const std::int16_t error_code = reader.Int16();
        reader.SkipTaggedFields();
        if (error_code != 0 && group.partition_error_code == 0) {
          group.partition_error_code = error_code;
        }
        topic.partitions.emplace_back(partition, offset);
      }
      reader.SkipTaggedFields();
    }
    group.error_code = reader.Int16();
    reader.SkipTaggedFields();
    groups.push_back(std::move(group));
  }
  reader.SkipTaggedFields();
  if (!reader.ok()) return Truncated("OffsetFetch");
  return groups;
}

namespace {

// A member of a ConsumerGroupDescribe group: its ids and current assignment, the rest skipped.
GroupMember ReadConsumerMember(Reader& reader, DecodeBudget& budget, std::int16_t version) {
  GroupMember member;
  member.member_id = budget.Charged(reader.CompactString());
  member.group_instance_id = budget.Charged(reader.CompactString());  // null: ""
  reader.CompactString();                                             // rack_id
  reader.Int32();                                                     // member_epoch
  member.client_id = budget.Charged(reader.CompactString());
  member.host = budget.Charged(reader.CompactString());
  const std::int64_t subscribed = reader.CompactArrayLength(1);
  for (std::int64_t t = 0; reader.ok() && t < subscribed; ++t) reader.CompactString();
  reader.CompactString();  // subscribed_topic_regex
  ReadAssignment(reader, budget, &member.assignment);
  // target_assignment: where it is going, not what it holds
  ReadAssignment(reader, budget, nullptr);
  if (version >= 1) reader.Int8();  // member_type
  reader.SkipTaggedFields();
  return member;
}

}  // namespace

Result<std::vector<DescribedConsumerGroup>> ParseConsumerGroupDescribeResponse(
    std::span<const std::uint8_t> payload, std::int32_t correlation_id, std::int16_t version,
    std::size_t max_groups, std::size_t max_decoded_bytes) {
  GroupDescribeDecoder decoder(payload, "ConsumerGroupDescribe", max_decoded_bytes,
                               kDescribedMemberBytes,
                               [version](Reader& reader, DecodeBudget& budget) {
                                 return ReadConsumerMember(reader, budget, version);
                               });
  return ParseDescribedGroups(decoder, "ConsumerGroupDescribe", correlation_id,
                              kDescribedGroupBytes, max_groups);
}

std::int32_t FrameSize(std::span<const std::uint8_t, 4> prefix) {
  return static_cast<std::int32_t>((std::uint32_t{prefix[0]} << 24) |
                                   (std::uint32_t{prefix[1]} << 16) |
                                   (std::uint32_t{prefix[2]} << 8) | std::uint32_t{prefix[3]});
}

}  // namespace lagsight::kafka::wire
