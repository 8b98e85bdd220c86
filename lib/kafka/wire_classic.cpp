#include "kafka/wire_classic.h"

#include <algorithm>
#include <string>
#include <utility>

#include "kafka/wire_codec.h"

namespace lagsight::kafka::wire {

using detail::DecodeBudget;
using detail::Reader;

namespace {

// Smallest encodings, for the counts a reader checks against the bytes left: a member of six
// empty compact strings and no tags; a group of five, an empty member array, authorized
// operations and no tags; a ConsumerProtocolAssignment topic of an empty name and no partitions.
constexpr std::size_t kMemberBytes = 7;
constexpr std::size_t kGroupBytes = 12;
constexpr std::size_t kAssignedTopicBytes = 6;

constexpr std::string_view kConsumerProtocol = "consumer";

// Decodes the groups of one answer for ParseDescribedGroups; what it keeps is charged to a budget
// of bytes, and the first failure sticks.
class ClassicGroupDecoder {
 public:
  ClassicGroupDecoder(std::span<const std::uint8_t> payload, std::size_t budget)
      : reader_(payload), budget_("DescribeGroups", budget), max_member_bytes_(budget) {}

  Reader& reader() { return reader_; }
  const std::optional<Error>& failure() const { return budget_.failure(); }

  DescribedConsumerGroup Group() {
    DescribedConsumerGroup group;
    group.error_code = reader_.Int16();
    group.group = budget_.Charged(reader_.CompactString());
    group.state = budget_.Charged(reader_.CompactString());
    const std::string_view protocol_type = reader_.CompactString();
    group.simple = protocol_type.empty();
    reader_.CompactString();  // protocol_data: the assignor's name
    const std::int64_t count = reader_.CompactArrayLength(kMemberBytes);
    const auto members = static_cast<std::size_t>(std::max<std::int64_t>(count, 0));
    budget_.Charge(members * sizeof(GroupMember));  // before reserving
    if (Fine()) group.members.reserve(members);
    for (std::int64_t m = 0; Fine() && m < count; ++m) {
      group.members.push_back(Member(protocol_type == kConsumerProtocol));
    }
    reader_.Int32();  // authorized_operations
    reader_.SkipTaggedFields();
    return group;
  }

 private:
  bool Fine() const { return reader_.ok() && !budget_.failure(); }

  GroupMember Member(bool consumer_protocol) {
    GroupMember member;
    member.member_id = budget_.Charged(reader_.CompactString());
    member.group_instance_id = budget_.Charged(reader_.CompactString());  // null: ""
    member.client_id = budget_.Charged(reader_.CompactString());
    member.host = budget_.Charged(reader_.CompactString());
    reader_.CompactString();  // member_metadata: the subscription, not what it holds
    const std::string_view assignment = reader_.CompactString();
    reader_.SkipTaggedFields();
    if (!consumer_protocol || !reader_.ok()) return member;
    // The group's leader wrote these bytes, not the broker: one member's that do not decode cost
    // that member its assignment, not the answer its groups.
    auto partitions = ParseConsumerProtocolAssignment(assignment, max_member_bytes_);
    if (!partitions) return member;
    for (const TopicPartition& tp : *partitions) budget_.Charge(sizeof(tp) + tp.topic.size());
    if (!budget_.failure()) member.assignment = std::move(*partitions);
    return member;
  }

  Reader reader_;
  DecodeBudget budget_;
  std::size_t max_member_bytes_;  // what one member's decoded assignment may take at most
};

}  // namespace

Bytes DescribeGroupsRequest(std::int32_t correlation_id, std::string_view client_id,
                            std::int16_t version, const std::vector<std::string_view>& groups) {
  // v5's body is the one the newer describe APIs kept: the groups, no authorized operations.
  return detail::DescribeGroupsRequest(kDescribeGroups, version, correlation_id, client_id, groups);
}

Result<std::vector<DescribedConsumerGroup>> ParseDescribeGroupsResponse(
    std::span<const std::uint8_t> payload, std::int32_t correlation_id, std::int16_t version,
    std::size_t max_groups, std::size_t max_decoded_bytes) {
  if (version != kDescribeGroupsVersion) {
    return Error{"DescribeGroups response: version " + std::to_string(version) +
                 " (lagsight decodes v" + std::to_string(kDescribeGroupsVersion) + ")"};
  }
  ClassicGroupDecoder decoder(payload, max_decoded_bytes);
  return detail::ParseDescribedGroups(decoder, "DescribeGroups", correlation_id, kGroupBytes,
                                      max_groups);
}

Result<std::vector<TopicPartition>> ParseConsumerProtocolAssignment(std::string_view bytes,
                                                                    std::size_t max_decoded_bytes) {
  std::vector<TopicPartition> partitions;
  if (bytes.empty()) return partitions;
  Reader reader(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                              bytes.size()));
  const std::int16_t version = reader.Int16();
  if (reader.ok() && version < 0) return Error{"ConsumerProtocolAssignment: a negative version"};
  // Every version so far (0-3) starts with the assigned partitions; user data follows, unread.
  std::size_t decoded = 0;
  const std::int64_t topics = reader.ArrayLength(kAssignedTopicBytes);
  for (std::int64_t t = 0; reader.ok() && t < topics; ++t) {
    const std::string_view name = reader.String();
    if (reader.ok() && (name.empty() || name.size() > kMaxTopicNameLength)) {
      return Error{"ConsumerProtocolAssignment: a topic name of " + std::to_string(name.size()) +
                   " characters"};
    }
    const std::int64_t count = reader.ArrayLength(4);
    decoded += static_cast<std::size_t>(std::max<std::int64_t>(count, 0)) *
               (sizeof(TopicPartition) + name.size());
    if (decoded > max_decoded_bytes) {
      return Error{"ConsumerProtocolAssignment: decoded, it would take more than " +
                   std::to_string(max_decoded_bytes) + " bytes"};
    }
    for (std::int64_t p = 0; reader.ok() && p < count; ++p) {
      partitions.push_back(TopicPartition{std::string(name), reader.Int32()});
    }
  }
  if (!reader.ok()) return Error{"ConsumerProtocolAssignment: truncated or malformed"};
  return partitions;
}

}  // namespace lagsight::kafka::wire
