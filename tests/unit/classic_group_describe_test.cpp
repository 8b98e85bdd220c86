// The classic DescribeGroups v5 (API key 15): its codec against frames assembled by hand from
// Kafka's message schemas (DescribeGroupsRequest.json / DescribeGroupsResponse.json v5,
// ConsumerProtocolAssignment.json v0-v3), truncated, lying and oversized frames. That a real
// broker agrees is tests/integration (test_group_owners.py checks every classic member and
// assignment against Kafka's own consumer-groups tool; test_kafka_lag.py the groups' states).
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "kafka/wire_classic.h"
#include "wire_bytes.h"

namespace {

namespace wire = lagsight::kafka::wire;
using lagsight::kafka::GroupMember;
using lagsight::kafka::TopicPartition;
using lagsight::test::wire_bytes::Bytes;
using lagsight::test::wire_bytes::Compact;
using lagsight::test::wire_bytes::Concat;
using lagsight::test::wire_bytes::Int16;
using lagsight::test::wire_bytes::Int32;
using lagsight::test::wire_bytes::kNoTags;
using lagsight::test::wire_bytes::kNull;
using lagsight::test::wire_bytes::Text;

// A ConsumerProtocolAssignment (non-flexible): version, topics (int32 count; int16-length name,
// int32 count of int32 partitions), user data (int32 length, -1 null).
Bytes ProtocolAssignment(
    std::uint16_t version,
    const std::vector<std::pair<std::string, std::vector<std::uint32_t>>>& topics,
    const Bytes& user_data = Int32(0xFFFFFFFF)) {
  Bytes out = Concat({Int16(version), Int32(static_cast<std::uint32_t>(topics.size()))});
  for (const auto& [topic, partitions] : topics) {
    out = Concat({out, Int16(static_cast<std::uint16_t>(topic.size())), Text(topic),
                  Int32(static_cast<std::uint32_t>(partitions.size()))});
    for (std::uint32_t p : partitions) out = Concat({out, Int32(p)});
  }
  return Concat({out, user_data});
}

// COMPACT_BYTES of up to 126 bytes.
Bytes CompactBytes(const Bytes& bytes) {
  return Concat({{static_cast<std::uint8_t>(bytes.size() + 1)}, bytes});
}

Bytes Member(const std::string& id, const Bytes& instance, const std::string& client,
             const std::string& host, const Bytes& assignment) {
  return Concat({Compact(id), instance, Compact(client), Compact(host),
                 CompactBytes({0x00, 0x01}) /*metadata*/, CompactBytes(assignment), kNoTags});
}

Bytes Group(std::uint16_t error, const std::string& id, const std::string& state,
            const std::string& protocol_type, const std::vector<Bytes>& members) {
  Bytes out = Concat({Int16(error),
                      Compact(id),
                      Compact(state),
                      Compact(protocol_type),
                      Compact(protocol_type.empty() ? "" : "range"),
                      {static_cast<std::uint8_t>(members.size() + 1)}});
  for (const Bytes& member : members) out = Concat({out, member});
  return Concat({out, Int32(0x80000000) /*authorized operations*/, kNoTags});
}

Bytes Answer(std::uint32_t correlation_id, const std::vector<Bytes>& groups) {
  Bytes out = Concat({Int32(correlation_id),
                      kNoTags,
                      Int32(0) /*throttle*/,
                      {static_cast<std::uint8_t>(groups.size() + 1)}});
  for (const Bytes& group : groups) out = Concat({out, group});
  return Concat({out, kNoTags});
}

// "orders-app": a consumer group of two members (m-2 listed first; m-1 static, holding orders 2
// and 0 and payments 1, with user data as Kafka Streams writes it); "flink-job": a simple group
// (no protocol type); "connect-cluster": Connect's workers, whose assignments are not partitions;
// "gone": what a coordinator answers for a group it does not know.
Bytes FourGroups(std::uint32_t correlation_id) {
  return Answer(
      correlation_id,
      {Group(0, "orders-app", "Stable", "consumer",
             {Member("m-2", kNull, "c-2", "/10.0.0.2", ProtocolAssignment(0, {{"orders", {1}}})),
              Member("m-1", Compact("static-1"), "c-1", "/10.0.0.1",
                     ProtocolAssignment(3, {{"orders", {2, 0}}, {"payments", {1}}},
                                        Concat({Int32(2), {0xCA, 0xFE}})))}),
       Group(0, "flink-job", "Empty", "", {}),
       Group(0, "connect-cluster", "Stable", "connect",
             {Member("w-1", kNull, "worker", "/10.0.0.9", {0x00, 0x01, 0x00, 0x00, 0x00, 0x07})}),
       Group(0, "gone", "Dead", "", {})});
}

}  // namespace

TEST_CASE("DescribeGroups v5: the request is laid out as the schema says", "[kafka]") {
  CHECK(wire::DescribeGroupsRequest(3, "cli", 5, {"a", "bc"}) ==
        lagsight::test::wire_bytes::DescribeRequestFrame(15, 5));
}

TEST_CASE("DescribeGroups v5: members and the partitions a consumer group's leader assigned",
          "[kafka]") {
  auto groups = wire::ParseDescribeGroupsResponse(FourGroups(9), 9, 5, 4);
  REQUIRE(groups.ok());
  REQUIRE(groups->size() == 4);
  const wire::DescribedConsumerGroup& app = (*groups)[0];
  CHECK(app.group == "orders-app");
  CHECK(app.state == "Stable");
  CHECK_FALSE(app.simple);
  REQUIRE(app.members.size() == 2);
  CHECK(app.members[0] == GroupMember{"m-2", "c-2", "/10.0.0.2", "", {{"orders", 1}}});
  // As the assignment lists them: the collector sorts members and partitions for everyone.
  CHECK(
      app.members[1] ==
      GroupMember{
          "m-1", "c-1", "/10.0.0.1", "static-1", {{"orders", 2}, {"orders", 0}, {"payments", 1}}});
  CHECK((*groups)[1].group == "flink-job");
  CHECK((*groups)[1].state == "Empty");
  CHECK((*groups)[1].simple);
  CHECK((*groups)[1].members.empty());
  // A Connect worker is a member, but its assignment names connectors, not partitions.
  REQUIRE((*groups)[2].members.size() == 1);
  CHECK((*groups)[2].members[0] == GroupMember{"w-1", "worker", "/10.0.0.9", "", {}});
  CHECK((*groups)[3].state == "Dead");
  // Another correlation id, or another version, is no answer to this request.
  CHECK_FALSE(wire::ParseDescribeGroupsResponse(FourGroups(9), 8, 5, 4).ok());
  CHECK_FALSE(wire::ParseDescribeGroupsResponse(FourGroups(9), 9, 4, 4).ok());
}

TEST_CASE("DescribeGroups v5: truncated, lying and oversized answers fail, never misread",
          "[kafka]") {
  const Bytes answer = FourGroups(9);
  // Every truncation fails.
  for (std::size_t size = 0; size < answer.size(); ++size) {
    const Bytes cut(answer.begin(), answer.begin() + static_cast<std::ptrdiff_t>(size));
    CHECK_FALSE(wire::ParseDescribeGroupsResponse(cut, 9, 5, 4).ok());
  }
  // More groups than were asked for.
  CHECK_FALSE(wire::ParseDescribeGroupsResponse(answer, 9, 5, 3).ok());
  // A member count no frame could hold: refused before anything is reserved.
  const Bytes lying = Answer(9, {Concat({Int16(0),
                                         Compact("g"),
                                         Compact("Stable"),
                                         Compact("consumer"),
                                         Compact("range"),
                                         {0xFF, 0xFF, 0xFF, 0x7F} /*268 million members*/})});
  CHECK_FALSE(wire::ParseDescribeGroupsResponse(lying, 9, 5, 1).ok());
  // Decoded within a budget of bytes: the answer whose members would take more fails.
  auto small = wire::ParseDescribeGroupsResponse(answer, 9, 5, 4, 64);
  REQUIRE_FALSE(small.ok());
  CHECK(small.error().message.find("more than 64 bytes") != std::string::npos);
}

TEST_CASE("ConsumerProtocolAssignment: versions 0-3 decode; what is not one fails", "[kafka]") {
  auto as_text = [](const Bytes& bytes) { return std::string(bytes.begin(), bytes.end()); };
  for (int version = 0; version <= 3; ++version) {
    auto partitions = wire::ParseConsumerProtocolAssignment(
        as_text(ProtocolAssignment(static_cast<std::uint16_t>(version), {{"t", {4, 5}}})));
    REQUIRE(partitions.ok());
    CHECK(*partitions == std::vector<TopicPartition>{{"t", 4}, {"t", 5}});
  }
  // A member the leader has not assigned yet.
  CHECK(wire::ParseConsumerProtocolAssignment("")->empty());
  // Truncated, a negative version, a name Kafka refuses, a partition count past the end.
  const Bytes good = ProtocolAssignment(1, {{"orders", {0, 1}}});
  for (std::size_t size = 1; size < good.size() - 4 /*user data*/; ++size) {
    CHECK_FALSE(
        wire::ParseConsumerProtocolAssignment(as_text(Bytes(good.begin(), good.begin() + size)))
            .ok());
  }
  CHECK_FALSE(wire::ParseConsumerProtocolAssignment(as_text(ProtocolAssignment(0xFFFF, {}))).ok());
  CHECK_FALSE(
      wire::ParseConsumerProtocolAssignment(as_text(ProtocolAssignment(0, {{"", {0}}}))).ok());
  CHECK_FALSE(wire::ParseConsumerProtocolAssignment(
                  as_text(Concat({Int16(0), Int32(1), Int16(1), Text("t"), Int32(1000)})))
                  .ok());
  // More than the budget once decoded: a 249-character name repeated for every partition.
  const std::string long_name(249, 'x');
  auto big = wire::ParseConsumerProtocolAssignment(
      as_text(ProtocolAssignment(0, {{long_name, std::vector<std::uint32_t>(100, 1)}})), 4096);
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().message.find("more than 4096 bytes") != std::string::npos);
}

TEST_CASE("DescribeGroups v5: a member whose assignment does not decode only loses it", "[kafka]") {
  // The group's leader wrote the bytes: one odd member must not cost the answer its groups.
  const Bytes answer =
      Answer(1, {Group(0, "g", "Stable", "consumer",
                       {Member("odd", kNull, "c", "/h", {0x00, 0x00, 0x00}),
                        Member("fine", kNull, "c", "/h", ProtocolAssignment(0, {{"t", {0}}}))})});
  auto groups = wire::ParseDescribeGroupsResponse(answer, 1, 5, 1);
  REQUIRE(groups.ok());
  REQUIRE((*groups)[0].members.size() == 2);
  CHECK((*groups)[0].members[0].assignment.empty());
  CHECK((*groups)[0].members[1].assignment == std::vector<TopicPartition>{{"t", 0}});
}
