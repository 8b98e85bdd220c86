// Bytes of Kafka's wire format, assembled by hand for the codec tests: big-endian integers, short
// compact strings, null and empty markers. The tests build answers from these as Kafka's message
// schemas lay them out, so a decoder is checked against the schema, not against its own encoder.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace lagsight::test::wire_bytes {

using Bytes = std::vector<std::uint8_t>;

inline Bytes Concat(std::initializer_list<Bytes> parts) {
  Bytes all;
  for (const Bytes& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}
inline Bytes Text(const std::string& text) { return Bytes(text.begin(), text.end()); }
inline Bytes Compact(const std::string& text) {  // short COMPACT_STRING
  return Concat({{static_cast<std::uint8_t>(text.size() + 1)}, Text(text)});
}
inline Bytes Int16(std::uint16_t value) {
  return {static_cast<std::uint8_t>(value >> 8), static_cast<std::uint8_t>(value)};
}
inline Bytes Int32(std::uint32_t value) {
  return {static_cast<std::uint8_t>(value >> 24), static_cast<std::uint8_t>(value >> 16),
          static_cast<std::uint8_t>(value >> 8), static_cast<std::uint8_t>(value)};
}
inline Bytes Int64(std::uint64_t value) {
  return Concat(
      {Int32(static_cast<std::uint32_t>(value >> 32)), Int32(static_cast<std::uint32_t>(value))});
}
inline const Bytes kNull = {0x00};    // null COMPACT_NULLABLE_STRING or array
inline const Bytes kNoTags = {0x00};  // empty tag buffer
inline const Bytes kUuid(16, 0xAB);   // a topic id

// The frame of a describe request as the schemas of ConsumerGroupDescribe, StreamsGroupDescribe
// and the classic DescribeGroups v5 lay it out: header v2 (the API key, the version, correlation
// id 3, client id "cli" with an int16 length, no tags), then the groups "a" and "bc" as a compact
// array, include_authorized_operations false, no tags.
inline Bytes DescribeRequestFrame(std::uint16_t api_key, std::uint16_t version) {
  const Bytes payload = Concat({Int16(api_key),
                                Int16(version),
                                Int32(3),
                                Int16(3),
                                Text("cli"),
                                kNoTags,
                                {0x03},
                                Compact("a"),
                                Compact("bc"),
                                {0x00},
                                kNoTags});
  return Concat({Int32(static_cast<std::uint32_t>(payload.size())), payload});
}

}  // namespace lagsight::test::wire_bytes
