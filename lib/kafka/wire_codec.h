// The byte-level pieces every codec of lagsight's own Kafka clients shares: a Writer of request
// frames (big-endian integers, varints, compact strings and arrays; the frame's size patched in at
// the end), the request headers, and a bounded Reader of answers that fails (sticky) on the first
// read past the end and refuses element counts that cannot fit in the bytes left.
//
// Internal to the codecs (wire.cpp, share_wire.cpp, wire_streams.cpp): everything is inline in a
// detail namespace.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "kafka/wire.h"

namespace lagsight::kafka::wire::detail {

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
  // BYTES of the non-flexible versions: int32 length.
  void ByteString(std::string_view data) {
    Int32(static_cast<std::int32_t>(data.size()));
    bytes_.insert(bytes_.end(), data.begin(), data.end());
  }
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
inline Writer Header(std::int16_t api_key, std::int16_t version, std::int32_t correlation_id,
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

  // STRING or NULLABLE_STRING of the non-flexible versions: int16 length (-1: null, read as
  // empty).
  std::string_view String() {
    const std::int16_t length = Int16();
    if (length < -1) ok_ = false;
    return length <= 0 ? std::string_view() : Take(static_cast<std::size_t>(length));
  }
  // BYTES of the non-flexible versions: int32 length.
  std::string_view ByteString() {
    const std::int32_t length = Int32();
    if (length < 0) ok_ = false;
    return length <= 0 ? std::string_view() : Take(static_cast<std::size_t>(length));
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
inline std::optional<Error> ReadHeader(Reader& reader, std::int32_t correlation_id, bool flexible,
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

inline Error Truncated(const char* api) {
  return Error{std::string(api) + " response: truncated or malformed"};
}

// What a describe decoder (ConsumerGroupDescribe, ShareGroupDescribe, StreamsGroupDescribe) may
// keep of one answer, in bytes, and its first failure beyond the reader's own (sticky): an answer
// that would decode to more than the budget, or that names a topic Kafka would not allow, fails.
class DecodeBudget {
 public:
  DecodeBudget(const char* api, std::size_t bytes) : api_(api), left_(bytes), limit_(bytes) {}

  const std::optional<Error>& failure() const { return failure_; }

  void Charge(std::size_t bytes) {
    if (bytes > left_) {
      Fail(std::string(api_) + " response: decoded, it would take more than " +
           std::to_string(limit_) + " bytes");
    }
    left_ = bytes > left_ ? 0 : left_ - bytes;
  }
  std::string Charged(std::string_view text) {
    Charge(text.size());
    return std::string(text);
  }
  // A topic name as Kafka allows them (1 to kMaxTopicNameLength characters), or the answer fails.
  void CheckTopicName(std::string_view name) {
    if (name.empty() || name.size() > kMaxTopicNameLength) {
      Fail(std::string(api_) + " response: a topic name of " + std::to_string(name.size()) +
           " characters (Kafka allows 1 to " + std::to_string(kMaxTopicNameLength) + ")");
    }
  }

 private:
  void Fail(std::string message) {
    if (!failure_) failure_ = Error{std::move(message)};
  }

  const char* api_;
  std::size_t left_;
  std::size_t limit_;
  std::optional<Error> failure_;
};

// An Assignment of ConsumerGroupDescribe and ShareGroupDescribe (topics by id and name, each with
// its partitions): its partitions into `out`, charged to `budget`, or skipped when `out` is null.
inline void ReadAssignment(Reader& reader, DecodeBudget& budget, std::vector<TopicPartition>* out) {
  constexpr std::size_t kAssignedTopicBytes = 19;  // id, an empty name, no partitions, no tags
  constexpr std::size_t kUuidBytes = 16;
  const std::int64_t topics = reader.CompactArrayLength(kAssignedTopicBytes);
  for (std::int64_t t = 0; reader.ok() && !budget.failure() && t < topics; ++t) {
    reader.Skip(kUuidBytes);  // topic_id: lagsight names topics
    const std::string_view name = reader.CompactString();
    if (reader.ok()) budget.CheckTopicName(name);
    const std::int64_t partitions = reader.CompactArrayLength(4);
    for (std::int64_t p = 0; reader.ok() && !budget.failure() && p < partitions; ++p) {
      const std::int32_t partition = reader.Int32();
      if (out == nullptr) continue;
      budget.Charge(sizeof(TopicPartition) + name.size());
      if (reader.ok() && !budget.failure())
        out->push_back(TopicPartition{std::string(name), partition});
    }
    reader.SkipTaggedFields();
  }
  reader.SkipTaggedFields();
}

// Decodes the groups of a ConsumerGroupDescribe or ShareGroupDescribe answer, whose layouts match
// but for a member: `read_member(reader, budget)` reads one. What it keeps is charged to a budget
// of bytes; the first failure sticks.
template <typename ReadMember>
class GroupDescribeDecoder {
 public:
  GroupDescribeDecoder(std::span<const std::uint8_t> payload, const char* api, std::size_t budget,
                       std::size_t min_member_bytes, ReadMember read_member)
      : reader_(payload),
        budget_(api, budget),
        min_member_bytes_(min_member_bytes),
        read_member_(std::move(read_member)) {}

  Reader& reader() { return reader_; }
  const std::optional<Error>& failure() const { return budget_.failure(); }

  DescribedConsumerGroup Group() {
    DescribedConsumerGroup group;
    group.error_code = reader_.Int16();
    group.error_message = budget_.Charged(reader_.CompactString());
    group.group = budget_.Charged(reader_.CompactString());
    group.state = budget_.Charged(reader_.CompactString());
    reader_.Int32();          // group_epoch
    reader_.Int32();          // assignment_epoch
    reader_.CompactString();  // assignor_name
    const std::int64_t count = reader_.CompactArrayLength(min_member_bytes_);
    const auto members = static_cast<std::size_t>(std::max<std::int64_t>(count, 0));
    budget_.Charge(members * sizeof(GroupMember));  // before reserving
    if (Fine()) group.members.reserve(members);
    for (std::int64_t m = 0; Fine() && m < count; ++m) {
      group.members.push_back(read_member_(reader_, budget_));
    }
    reader_.Int32();  // authorized_operations
    reader_.SkipTaggedFields();
    return group;
  }

 private:
  bool Fine() const { return reader_.ok() && !budget_.failure(); }

  Reader reader_;
  DecodeBudget budget_;
  std::size_t min_member_bytes_;
  ReadMember read_member_;
};

// A describe request of ConsumerGroupDescribe, ShareGroupDescribe or StreamsGroupDescribe: the
// three share one body, the groups and no authorized operations.
inline Bytes DescribeGroupsRequest(std::int16_t api_key, std::int16_t version,
                                   std::int32_t correlation_id, std::string_view client_id,
                                   const std::vector<std::string_view>& groups) {
  Writer writer = Header(api_key, version, correlation_id, client_id, true);
  writer.CompactArrayLength(groups.size());
  for (std::string_view group : groups) writer.CompactString(group);
  writer.Bool(false);  // include_authorized_operations
  writer.NoTaggedFields();
  return std::move(writer).Frame();
}

// The frame around a describe answer's groups, the same for the three APIs: the header, the
// throttle time, the groups (each read by `decoder.Group()`, whose failure sticks), tags. An
// answer naming more groups than `max_groups` (those asked for) fails before any is read.
template <typename Decoder>
auto ParseDescribedGroups(Decoder& decoder, const char* api, std::int32_t correlation_id,
                          std::size_t min_group_bytes, std::size_t max_groups)
    -> Result<std::vector<decltype(decoder.Group())>> {
  Reader& reader = decoder.reader();
  if (auto error = ReadHeader(reader, correlation_id, true, api)) return *error;
  reader.Int32();  // throttle_time_ms
  const std::int64_t count = reader.CompactArrayLength(min_group_bytes);
  if (count > static_cast<std::int64_t>(max_groups)) {
    return Error{std::string(api) + " response: " + std::to_string(count) + " groups, asked for " +
                 std::to_string(max_groups)};
  }
  std::vector<decltype(decoder.Group())> groups;
  groups.reserve(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)));
  for (std::int64_t g = 0; reader.ok() && !decoder.failure() && g < count; ++g) {
    groups.push_back(decoder.Group());
  }
  reader.SkipTaggedFields();
  if (decoder.failure()) return *decoder.failure();
  if (!reader.ok()) return Truncated(api);
  return groups;
}

}  // namespace lagsight::kafka::wire::detail
