#include "kafka/share_wire.h"

#include <algorithm>

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
constexpr std::size_t kShareGroupBytes = 6;    // empty id, no topics, error, null message, tags
constexpr std::size_t kShareTopicBytes = 19;   // empty name, id, no partitions, no tags
constexpr std::size_t kSharePartitionV0 = 20;  // index, start, epoch, error, null message, tags
constexpr std::size_t kLagBytes = 8;
constexpr std::size_t kUuidBytes = 16;

}  // namespace

Bytes DescribeShareGroupOffsetsRequest(std::int32_t correlation_id, std::string_view client_id,
                                       std::int16_t version,
                                       const std::vector<std::string_view>& groups) {
  Writer writer = Header(kDescribeShareGroupOffsets, version, correlation_id, client_id, true);
  writer.CompactArrayLength(groups.size());
  for (std::string_view group : groups) {
    writer.CompactString(group);
    writer.NullCompactArray();  // topics: every partition the group has state on
    writer.NoTaggedFields();
  }
  writer.NoTaggedFields();
  return std::move(writer).Frame();
}

Bytes ShareGroupDescribeRequest(std::int32_t correlation_id, std::string_view client_id,
                                const std::vector<std::string_view>& groups) {
  return DescribeGroupsRequest(kShareGroupDescribe, kShareGroupDescribeVersion, correlation_id,
                               client_id, groups);
}

namespace {

// One topic of a DescribeShareGroupOffsets answer; an error for a name Kafka would not allow.
std::optional<Error> ReadShareTopic(Reader& reader, std::int16_t version,
                                    ShareOffsetsTopic& topic) {
  const std::string_view name = reader.CompactString();
  if (reader.ok() && (name.empty() || name.size() > kMaxTopicNameLength)) {
    return Error{"DescribeShareGroupOffsets response: a topic name of " +
                 std::to_string(name.size()) + " characters (Kafka allows 1 to " +
                 std::to_string(kMaxTopicNameLength) + ")"};
  }
  topic.name = name;
  reader.Skip(kUuidBytes);  // topic_id: lagsight names topics
  const std::int64_t count =
      reader.CompactArrayLength(kSharePartitionV0 + (version >= 1 ? kLagBytes : 0));
  topic.partitions.reserve(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)));
  for (std::int64_t p = 0; reader.ok() && p < count; ++p) {
    SharePartitionOffset& partition = topic.partitions.emplace_back();
    partition.partition = reader.Int32();
    partition.start_offset = reader.Int64();
    reader.Int32();  // leader_epoch
    if (version >= 1) partition.lag = reader.Int64();
    partition.error_code = reader.Int16();
    reader.CompactString();  // error_message
    reader.SkipTaggedFields();
  }
  reader.SkipTaggedFields();
  return std::nullopt;
}

}  // namespace

Result<std::vector<ShareGroupOffsets>> ParseDescribeShareGroupOffsetsResponse(
    std::span<const std::uint8_t> payload, std::int32_t correlation_id, std::int16_t version,
    std::size_t max_groups) {
  Reader reader(payload);
  if (auto error = ReadHeader(reader, correlation_id, true, "DescribeShareGroupOffsets")) {
    return *error;
  }
  reader.Int32();  // throttle_time_ms
  const std::int64_t count = reader.CompactArrayLength(kShareGroupBytes);
  if (count > static_cast<std::int64_t>(max_groups)) {
    return Error{"DescribeShareGroupOffsets response: " + std::to_string(count) +
                 " groups, asked for " + std::to_string(max_groups)};
  }
  std::vector<ShareGroupOffsets> groups;
  groups.reserve(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)));
  for (std::int64_t g = 0; reader.ok() && g < count; ++g) {
    ShareGroupOffsets& group = groups.emplace_back();
    group.group = reader.CompactString();
    const std::int64_t topics = reader.CompactArrayLength(kShareTopicBytes);
    group.topics.reserve(static_cast<std::size_t>(std::max<std::int64_t>(topics, 0)));
    for (std::int64_t t = 0; reader.ok() && t < topics; ++t) {
      if (auto error = ReadShareTopic(reader, version, group.topics.emplace_back())) return *error;
    }
    group.error_code = reader.Int16();
    group.error_message = reader.CompactString();
    reader.SkipTaggedFields();
  }
  reader.SkipTaggedFields();
  if (!reader.ok()) return Truncated("DescribeShareGroupOffsets");
  return groups;
}

namespace {

// A group with empty strings, no members, no tags; a member likewise with an empty assignment;
// an assigned topic: its id, an empty name, no partitions, no tags.
constexpr std::size_t kShareDescribedGroupBytes = 20;
constexpr std::size_t kShareMemberBytes = 13;

// A member of a ShareGroupDescribe group: its ids and assignment, the rest skipped.
GroupMember ReadShareMember(Reader& reader, DecodeBudget& budget) {
  GroupMember member;
  member.member_id = budget.Charged(reader.CompactString());
  reader.CompactString();  // rack_id
  reader.Int32();          // member_epoch
  member.client_id = budget.Charged(reader.CompactString());
  member.host = budget.Charged(reader.CompactString());
  const std::int64_t subscribed = reader.CompactArrayLength(1);
  for (std::int64_t t = 0; reader.ok() && t < subscribed; ++t) reader.CompactString();
  ReadAssignment(reader, budget, &member.assignment);
  reader.SkipTaggedFields();
  return member;
}

}  // namespace

Result<std::vector<DescribedShareGroup>> ParseShareGroupDescribeResponse(
    std::span<const std::uint8_t> payload, std::int32_t correlation_id, std::size_t max_groups,
    std::size_t max_decoded_bytes) {
  GroupDescribeDecoder decoder(payload, "ShareGroupDescribe", max_decoded_bytes, kShareMemberBytes,
                               ReadShareMember);
  return ParseDescribedGroups(decoder, "ShareGroupDescribe", correlation_id,
                              kShareDescribedGroupBytes, max_groups);
}

}  // namespace lagsight::kafka::wire
