#include "kafka/wire.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace lagsight::kafka::wire {
namespace {

// Appends big-endian integers, varints and strings; the frame's size is patched in at the end.
class Writer {
 public:
  Writer() { bytes_.resize(4); }

  void Int8(std::int8_t value) { bytes_.push_back(static_cast<std::uint8_t>(value)); }
  void Bool(bool value) { bytes_.push_back(value ? 1 : 0); }
  void Int16(std::int16_t value) { Big(static_cast<std::uint16_t>(value), 2); }
  void Int32(std::int32_t value) { Big(static_cast<std::uint32_t>(value), 4); }
  void UVarint(std::uint32_t value) {
    while (value >= 0x80) {
      bytes_.push_back(static_cast<std::uint8_t>(value | 0x80));
      value >>= 7;
    }
    bytes_.push_back(static_cast<std::uint8_t>(value));
  }
  // NULLABLE_STRING of the non-flexible headers: int16 length.
  void String(std::string_view text) {
    Int16(static_cast<std::int16_t>(text.size()));
    bytes_.insert(bytes_.end(), text.begin(), text.end());
  }
  // COMPACT_STRING: length + 1 as an unsigned varint.
  void CompactString(std::string_view text) {
    UVarint(static_cast<std::uint32_t>(text.size()) + 1);
    bytes_.insert(bytes_.end(), text.begin(), text.end());
  }
  void CompactArrayLength(std::size_t count) { UVarint(static_cast<std::uint32_t>(count) + 1); }
  void NullCompactArray() { UVarint(0); }
  void NoTaggedFields() { UVarint(0); }

  Bytes Frame() && {
    const auto size = static_cast<std::uint32_t>(bytes_.size() - 4);
    for (int i = 0; i < 4; ++i) bytes_[i] = static_cast<std::uint8_t>(size >> (24 - 8 * i));
    return std::move(bytes_);
  }

 private:
  void Big(std::uint32_t value, int width) {
    for (int i = width - 1; i >= 0; --i)
      bytes_.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
  }
  Bytes bytes_;
};

// Request header v1 (ApiVersions v0) or v2 (flexible requests: a tag buffer follows).
Writer Header(std::int16_t api_key, std::int16_t version, std::int32_t correlation_id,
              std::string_view client_id, bool flexible) {
  Writer writer;
  writer.Int16(api_key);
  writer.Int16(version);
  writer.Int32(correlation_id);
  writer.String(client_id.substr(0, std::numeric_limits<std::int16_t>::max()));
  if (flexible) writer.NoTaggedFields();
  return writer;
}

// Reads what Writer writes, failing (sticky) on the first read past the end.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}

  bool ok() const { return ok_; }
  std::size_t left() const { return ok_ ? bytes_.size() - at_ : 0; }

  std::int8_t Int8() { return static_cast<std::int8_t>(Big(1)); }
  std::int16_t Int16() { return static_cast<std::int16_t>(Big(2)); }
  std::int32_t Int32() { return static_cast<std::int32_t>(Big(4)); }
  std::int64_t Int64() { return static_cast<std::int64_t>(Big(8)); }

  std::uint32_t UVarint() {
    std::uint32_t value = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      const std::uint64_t byte = Big(1);
      if (!ok_) return 0;
      if (shift == 28 && byte > 0x0f) break;  // more than 32 bits, as Kafka refuses too
      value |= static_cast<std::uint32_t>((byte & 0x7f) << shift);
      if ((byte & 0x80) == 0) return value;
    }
    ok_ = false;  // longer than a 32-bit varint
    return 0;
  }

  // COMPACT_STRING (or COMPACT_NULLABLE_STRING; null reads as empty).
  std::string_view CompactString() {
    const std::uint32_t length_plus_one = UVarint();
    if (length_plus_one == 0) return {};
    return Take(length_plus_one - 1);
  }

  // COMPACT_ARRAY: the element count, -1 for a null array; fails when that many elements of at
  // least `min_element_bytes` each cannot fit in the bytes left.
  std::int64_t CompactArrayLength(std::size_t min_element_bytes) {
    const std::uint32_t count_plus_one = UVarint();
    if (count_plus_one == 0) return -1;
    if (std::uint64_t{count_plus_one - 1} * min_element_bytes > left()) ok_ = false;
    return ok_ ? count_plus_one - 1 : 0;
  }

  // ARRAY of the non-flexible versions: int32 count, checked as CompactArrayLength is.
  std::int64_t ArrayLength(std::size_t min_element_bytes) {
    const std::int32_t count = Int32();
    if (count < -1 ||
        (count > 0 && static_cast<std::uint64_t>(count) * min_element_bytes > left())) {
      ok_ = false;
    }
    return ok_ ? count : 0;
  }

  void Skip(std::size_t length) { Take(length); }

  void SkipTaggedFields() {
    const std::uint32_t fields = UVarint();
    for (std::uint32_t i = 0; ok_ && i < fields; ++i) {
      UVarint();  // tag
      Take(UVarint());
    }
  }

 private:
  std::uint64_t Big(int width) {
    if (!ok_ || bytes_.size() - at_ < static_cast<std::size_t>(width)) {
      ok_ = false;
      return 0;
    }
    std::uint64_t value = 0;
    for (int i = 0; i < width; ++i) value = (value << 8) | bytes_[at_++];
    return value;
  }
  std::string_view Take(std::size_t length) {
    if (!ok_ || bytes_.size() - at_ < length) {
      ok_ = false;
      return {};
    }
    std::string_view text(reinterpret_cast<const char*>(bytes_.data() + at_), length);
    at_ += length;
    return text;
  }

  std::span<const std::uint8_t> bytes_;
  std::size_t at_ = 0;
  bool ok_ = true;
};

// Reads the response header (v0, or v1 with a tag buffer) and checks it answers `correlation_id`.
std::optional<Error> ReadHeader(Reader& reader, std::int32_t correlation_id, bool flexible,
                                const char* api) {
  const std::int32_t answered = reader.Int32();
  if (flexible) reader.SkipTaggedFields();
  if (!reader.ok()) return Error{std::string(api) + " response: truncated header"};
  if (answered != correlation_id) {
    return Error{std::string(api) + " response answers request " + std::to_string(answered) +
                 ", not " + std::to_string(correlation_id)};
  }
  return std::nullopt;
}

Error Truncated(const char* api) {
  return Error{std::string(api) + " response: truncated or malformed"};
}

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
constexpr std::size_t kAssignedTopicBytes = 19;
constexpr std::size_t kUuidBytes = 16;

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
  Writer writer = Header(kConsumerGroupDescribe, version, correlation_id, client_id, true);
  writer.CompactArrayLength(groups.size());
  for (std::string_view group : groups) writer.CompactString(group);
  writer.Bool(false);  // include_authorized_operations
  writer.NoTaggedFields();
  return std::move(writer).Frame();
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

// Decodes a ConsumerGroupDescribe answer, charging what it decodes against a budget of bytes: the
// first failure sticks.
class DescribeDecoder {
 public:
  DescribeDecoder(std::span<const std::uint8_t> payload, std::int16_t version, std::size_t budget)
      : reader_(payload), version_(version), budget_(budget), limit_(budget) {}

  Reader& reader() { return reader_; }
  const std::optional<Error>& failure() const { return failure_; }

  DescribedConsumerGroup Group() {
    DescribedConsumerGroup group;
    group.error_code = reader_.Int16();
    group.error_message = Charged(reader_.CompactString());
    group.group = Charged(reader_.CompactString());
    group.state = Charged(reader_.CompactString());
    reader_.Int32();          // group_epoch
    reader_.Int32();          // assignment_epoch
    reader_.CompactString();  // assignor_name
    const std::int64_t count = reader_.CompactArrayLength(kDescribedMemberBytes);
    const auto members = static_cast<std::size_t>(std::max<std::int64_t>(count, 0));
    Charge(members * sizeof(GroupMember));  // before reserving
    if (Fine()) group.members.reserve(members);
    for (std::int64_t m = 0; Fine() && m < count; ++m) group.members.push_back(Member());
    reader_.Int32();  // authorized_operations
    reader_.SkipTaggedFields();
    return group;
  }

 private:
  bool Fine() const { return reader_.ok() && !failure_; }

  void Charge(std::size_t bytes) {
    if (bytes > budget_ && !failure_) {
      failure_ = Error{"ConsumerGroupDescribe response: decoded, it would take more than " +
                       std::to_string(limit_) + " bytes"};
    }
    budget_ = bytes > budget_ ? 0 : budget_ - bytes;
  }
  std::string Charged(std::string_view text) {
    Charge(text.size());
    return std::string(text);
  }

  GroupMember Member() {
    GroupMember member;
    member.member_id = Charged(reader_.CompactString());
    member.group_instance_id = Charged(reader_.CompactString());  // null: ""
    reader_.CompactString();                                      // rack_id
    reader_.Int32();                                              // member_epoch
    member.client_id = Charged(reader_.CompactString());
    member.host = Charged(reader_.CompactString());
    const std::int64_t subscribed = reader_.CompactArrayLength(1);
    for (std::int64_t t = 0; reader_.ok() && t < subscribed; ++t) reader_.CompactString();
    reader_.CompactString();  // subscribed_topic_regex
    Assignment(&member.assignment);
    Assignment(nullptr);                // target_assignment: where it is going, not what it holds
    if (version_ >= 1) reader_.Int8();  // member_type
    reader_.SkipTaggedFields();
    return member;
  }

  // An Assignment, its partitions into `out` (or skipped).
  void Assignment(std::vector<TopicPartition>* out) {
    const std::int64_t topics = reader_.CompactArrayLength(kAssignedTopicBytes);
    for (std::int64_t t = 0; Fine() && t < topics; ++t) {
      reader_.Skip(kUuidBytes);  // topic_id: lagsight names topics
      const std::string_view name = reader_.CompactString();
      if (reader_.ok() && (name.empty() || name.size() > kMaxTopicNameLength) && !failure_) {
        failure_ =
            Error{"ConsumerGroupDescribe response: a topic name of " + std::to_string(name.size()) +
                  " characters (Kafka allows 1 to " + std::to_string(kMaxTopicNameLength) + ")"};
      }
      const std::int64_t partitions = reader_.CompactArrayLength(4);
      for (std::int64_t p = 0; Fine() && p < partitions; ++p) {
        const std::int32_t partition = reader_.Int32();
        if (out == nullptr) continue;
        Charge(sizeof(TopicPartition) + name.size());
        if (Fine()) out->push_back(TopicPartition{std::string(name), partition});
      }
      reader_.SkipTaggedFields();
    }
    reader_.SkipTaggedFields();
  }

  Reader reader_;
  std::int16_t version_;
  std::size_t budget_;
  std::size_t limit_;
  std::optional<Error> failure_;
};

}  // namespace

Result<std::vector<DescribedConsumerGroup>> ParseConsumerGroupDescribeResponse(
    std::span<const std::uint8_t> payload, std::int32_t correlation_id, std::int16_t version,
    std::size_t max_groups, std::size_t max_decoded_bytes) {
  DescribeDecoder decoder(payload, version, max_decoded_bytes);
  Reader& reader = decoder.reader();
  if (auto error = ReadHeader(reader, correlation_id, true, "ConsumerGroupDescribe")) {
    return *error;
  }
  reader.Int32();  // throttle_time_ms
  const std::int64_t count = reader.CompactArrayLength(kDescribedGroupBytes);
  if (count > static_cast<std::int64_t>(max_groups)) {
    return Error{"ConsumerGroupDescribe response: " + std::to_string(count) +
                 " groups, asked for " + std::to_string(max_groups)};
  }
  std::vector<DescribedConsumerGroup> groups;
  groups.reserve(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)));
  for (std::int64_t g = 0; reader.ok() && !decoder.failure() && g < count; ++g) {
    groups.push_back(decoder.Group());
  }
  reader.SkipTaggedFields();
  if (decoder.failure()) return *decoder.failure();
  if (!reader.ok()) return Truncated("ConsumerGroupDescribe");
  return groups;
}

std::int32_t FrameSize(std::span<const std::uint8_t, 4> prefix) {
  return static_cast<std::int32_t>((std::uint32_t{prefix[0]} << 24) |
                                   (std::uint32_t{prefix[1]} << 16) |
                                   (std::uint32_t{prefix[2]} << 8) | std::uint32_t{prefix[3]});
}

}  // namespace lagsight::kafka::wire
