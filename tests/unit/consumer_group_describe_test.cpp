// ConsumerGroupDescribe (KIP-848, API key 69): its codec against frames assembled by hand from
// Kafka 4.1.1's message schemas (ConsumerGroupDescribeRequest.json / ...Response.json, v0-v1),
// truncated, lying and oversized frames; and the collector filling a KIP-848 group's members from
// it. That a real broker agrees is tests/integration/test_kip848_members.py.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "fake_kafka_admin.h"
#include "kafka/collector.h"
#include "kafka/wire.h"
#include "wire_bytes.h"

namespace {

namespace wire = lagsight::kafka::wire;
using lagsight::kafka::GroupKind;
using lagsight::kafka::GroupMember;
using lagsight::kafka::TopicPartition;
using lagsight::test::wire_bytes::Bytes;
using lagsight::test::wire_bytes::Compact;
using lagsight::test::wire_bytes::Concat;
using lagsight::test::wire_bytes::Int32;
using lagsight::test::wire_bytes::kNoTags;
using lagsight::test::wire_bytes::kNull;
using lagsight::test::wire_bytes::kUuid;
using lagsight::test::wire_bytes::Text;

// An Assignment: one topic with the given partitions.
Bytes Assignment(const std::string& topic, const std::vector<std::uint32_t>& partitions) {
  Bytes out =
      Concat({{0x02}, kUuid, Compact(topic), {static_cast<std::uint8_t>(partitions.size() + 1)}});
  for (std::uint32_t p : partitions) out = Concat({out, Int32(p)});
  return Concat({out, kNoTags, kNoTags});
}
const Bytes kEmptyAssignment = {0x01, 0x00};

Bytes Member(const std::string& id, const Bytes& instance, const std::string& client,
             const std::string& host, const Bytes& assignment, const Bytes& target,
             std::int16_t version) {
  return Concat({Compact(id),
                 instance,
                 kNull /*rack*/,
                 Int32(5) /*epoch*/,
                 Compact(client),
                 Compact(host),
                 {0x02},
                 Compact("orders") /*subscribed*/,
                 kNull /*regex*/,
                 assignment,
                 target,
                 version >= 1 ? Bytes{0x01} : Bytes{},
                 kNoTags});
}

// Group "g" Stable with two members (m-2 listed first; m-1 static, holding orders 2 and 0 while
// its target says 1), and group "gone" answering GROUP_ID_NOT_FOUND.
Bytes Answer(std::uint32_t correlation_id, std::int16_t version) {
  return Concat({Int32(correlation_id),
                 kNoTags,
                 Int32(0) /*throttle*/,
                 {0x03},
                 // group g
                 {0x00, 0x00},
                 kNull,
                 Compact("g"),
                 Compact("Stable"),
                 Int32(7),
                 Int32(7),
                 Compact("uniform"),
                 {0x03},
                 Member("m-2", kNull, "c-2", "/10.0.0.2", Assignment("orders", {1}),
                        Assignment("orders", {1}), version),
                 Member("m-1", Compact("static-1"), "c-1", "/10.0.0.1",
                        Assignment("orders", {2, 0}), Assignment("orders", {1}), version),
                 Int32(0x80000000),
                 kNoTags,
                 // group gone
                 {0x00, 0x45},
                 Compact("no such group"),
                 Compact("gone"),
                 Compact(""),
                 Int32(0),
                 Int32(0),
                 Compact(""),
                 {0x01},
                 Int32(0x80000000),
                 kNoTags,
                 kNoTags});
}

}  // namespace

TEST_CASE("ConsumerGroupDescribe: the request is laid out as the schema says", "[kafka]") {
  CHECK(wire::ConsumerGroupDescribeRequest(3, "cli", 1, {"a", "bc"}) ==
        lagsight::test::wire_bytes::DescribeRequestFrame(69, 1));
  // v0 differs only in the version.
  Bytes v0 = wire::ConsumerGroupDescribeRequest(3, "cli", 0, {"a", "bc"});
  CHECK(v0[7] == 0x00);
  v0[7] = 0x01;
  CHECK(v0 == wire::ConsumerGroupDescribeRequest(3, "cli", 1, {"a", "bc"}));
}

TEST_CASE("ConsumerGroupDescribe: v0 and v1 answers decode, current assignments by topic name",
          "[kafka]") {
  for (std::int16_t version : {std::int16_t{0}, std::int16_t{1}}) {
    const Bytes answer = Answer(9, version);
    auto groups = wire::ParseConsumerGroupDescribeResponse(answer, 9, version, 2);
    REQUIRE(groups.ok());
    REQUIRE(groups->size() == 2);
    const wire::DescribedConsumerGroup& g = (*groups)[0];
    CHECK(g.group == "g");
    CHECK(g.error_code == 0);
    CHECK(g.state == "Stable");
    REQUIRE(g.members.size() == 2);
    CHECK(g.members[0] == GroupMember{"m-2", "c-2", "/10.0.0.2", "", {{"orders", 1}}});
    // As the answer lists them: the collector sorts members and partitions for everyone.
    CHECK(g.members[1] ==
          GroupMember{"m-1", "c-1", "/10.0.0.1", "static-1", {{"orders", 2}, {"orders", 0}}});
    CHECK((*groups)[1].group == "gone");
    CHECK((*groups)[1].error_code == 69);
    CHECK((*groups)[1].error_message == "no such group");
    // Decoded as the other version, the member type byte is missing or extra: no silent misread.
    CHECK_FALSE(wire::ParseConsumerGroupDescribeResponse(answer, 9, 1 - version, 2).ok());
  }
}

TEST_CASE("ConsumerGroupDescribe: truncated, lying and oversized answers fail cleanly", "[kafka]") {
  const Bytes answer = Answer(9, 1);
  SECTION("every truncation fails, none reads past the end") {
    for (std::size_t size = 0; size < answer.size(); ++size) {
      const Bytes cut(answer.begin(), answer.begin() + static_cast<std::ptrdiff_t>(size));
      CHECK_FALSE(wire::ParseConsumerGroupDescribeResponse(cut, 9, 1, 2).ok());
    }
  }
  SECTION("another request's answer, or more groups than asked") {
    CHECK_FALSE(wire::ParseConsumerGroupDescribeResponse(answer, 8, 1, 2).ok());
    CHECK_FALSE(wire::ParseConsumerGroupDescribeResponse(answer, 9, 1, 1).ok());
  }
  SECTION("counts larger than the frame fail before any allocation") {
    const Bytes header = Concat({Int32(9), kNoTags, Int32(0)});
    // 2^32 - 2 groups.
    CHECK_FALSE(wire::ParseConsumerGroupDescribeResponse(
                    Concat({header, {0xFF, 0xFF, 0xFF, 0xFF, 0x0F}}), 9, 1, 1u << 31)
                    .ok());
    // One group claiming 2^28 members in 40 bytes.
    const Bytes group = Concat({header,
                                {0x02, 0x00, 0x00},
                                kNull,
                                Compact("g"),
                                Compact("Stable"),
                                Int32(1),
                                Int32(1),
                                Compact("u")});
    CHECK_FALSE(wire::ParseConsumerGroupDescribeResponse(
                    Concat({group, {0x81, 0x80, 0x80, 0x80, 0x01}, Bytes(40, 0)}), 9, 1, 1)
                    .ok());
    // Garbage: a frame of 0xFF bytes.
    CHECK_FALSE(wire::ParseConsumerGroupDescribeResponse(Bytes(4096, 0xFF), 9, 1, 1).ok());
  }
  SECTION("a topic name Kafka refuses, and an answer that would decode too large, fail") {
    const std::string long_name(250, 't');
    Bytes assignment =
        Concat({{0x02}, kUuid, {0xFB, 0x01}, Text(long_name), {0x02}, Int32(0), kNoTags, kNoTags});
    const auto one_member = [&](const Bytes& member_assignment) {
      return Concat({Int32(9),
                     kNoTags,
                     Int32(0),
                     {0x02, 0x00, 0x00},
                     kNull,
                     Compact("g"),
                     Compact("Stable"),
                     Int32(1),
                     Int32(1),
                     Compact("u"),
                     {0x02},
                     Member("m", kNull, "c", "/h", member_assignment, kEmptyAssignment, 1),
                     Int32(0),
                     kNoTags,
                     kNoTags});
    };
    CHECK_FALSE(wire::ParseConsumerGroupDescribeResponse(one_member(assignment), 9, 1, 1).ok());
    // A 249-character topic name with 2,000 partitions: 8 KB in the frame, ~0.5 MB decoded,
    // against a limit of 256 KB (64 MiB in use: ~1 MB frames of this would pass it).
    const std::string longest(249, 't');
    Bytes many = Concat({{0x02}, kUuid, {0xFA, 0x01}, Text(longest), {0xD1, 0x0F}});
    for (std::uint32_t p = 0; p < 2000; ++p) many = Concat({many, Int32(p)});
    many = Concat({many, kNoTags, kNoTags});
    CHECK(wire::ParseConsumerGroupDescribeResponse(one_member(many), 9, 1, 1).ok());
    const auto decoded =
        wire::ParseConsumerGroupDescribeResponse(one_member(many), 9, 1, 1, 256u << 10);
    REQUIRE_FALSE(decoded.ok());
    CHECK_THAT(decoded.error().message, Catch::Contains("decoded"));
  }
}

TEST_CASE("collector: a KIP-848 group's members and assignments come from ConsumerGroupDescribe",
          "[kafka]") {
  lagsight::config::KafkaClusterConfig config;
  config.name = "test";
  config.bootstrap_servers = {"b:9092"};
  config.topics = *lagsight::config::NameFilter::Create({}, {"__.*"});
  auto owned = std::make_unique<lagsight::testing::FakeKafkaAdmin>();
  auto& admin = *owned;
  lagsight::kafka::Collector collector(config, std::move(owned));
  admin.listings = {{"kip848", "unknown", false},
                    {"moving", "stable", false},
                    {"old-broker", "stable", false},
                    {"app", "stable", false}};
  // What Kafka 4.1's classic DescribeGroups says of KIP-848 groups, as librdkafka 2.0.2 reads it.
  for (const char* id : {"kip848", "moving", "old-broker"}) {
    admin.descriptions[id] = {id, "dead", true, 0, false, std::nullopt, {}, {}};
  }
  admin.descriptions["app"] = {"app", "stable", false, 1, false, std::nullopt, {}, {}};
  admin.consumer_descriptions["kip848"] = {
      "kip848",
      "reconciling",
      false,
      2,
      false,
      std::nullopt,
      {"orders", "__internal"},
      {{"m-1", "c-1", "/10.0.0.1", "", {{"__internal", 0}, {"orders", 0}}},
       {"m-2", "c-2", "/10.0.0.2", "static-2", {{"orders", 1}}}}};
  admin.consumer_descriptions["moving"] = {
      "moving", "", false, 0, false, "ConsumerGroupDescribe answered NOT_COORDINATOR", {}, {}};
  admin.topics = {{"orders", 2}, {"__internal", 1}};
  admin.log_end = {{{"orders", 0}, 1}, {{"orders", 1}, 1}};
  admin.broker_configs["offsets.retention.minutes"] = "10080";

  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());
  // Only the groups the classic describe answered as KIP-848 are asked.
  CHECK(admin.consumer_described_ids == std::vector<std::string>{"kip848", "moving", "old-broker"});
  std::map<std::string, const lagsight::kafka::ConsumerGroup*> by_id;
  for (const auto& group : snapshot->groups) by_id[group.id] = &group;
  const auto& kip848 = *by_id.at("kip848");
  CHECK(kip848.kind == GroupKind::kConsumer);
  CHECK(kip848.state == "reconciling");  // ConsumerGroupDescribe's, not the listing's
  CHECK(kip848.members == 2);
  REQUIRE(kip848.member_list.size() == 2);
  CHECK(kip848.member_list[0].assignment == std::vector<TopicPartition>{{"orders", 0}});
  CHECK(kip848.member_list[1].group_instance_id == "static-2");
  // A group answered with an error, or not at all, keeps no members, as before.
  CHECK(by_id.at("moving")->kind == GroupKind::kConsumer);
  CHECK_FALSE(by_id.at("moving")->members.has_value());
  CHECK(by_id.at("moving")->member_list.empty());
  CHECK(by_id.at("moving")->state == "stable");
  CHECK_FALSE(by_id.at("old-broker")->members.has_value());
  CHECK(snapshot->partial_errors ==
        std::vector<std::string>{
            "describing group \"moving\": ConsumerGroupDescribe answered NOT_COORDINATOR"});

  SECTION("a topic the members hold but metadata hides is reported, as for classic groups") {
    admin.consumer_descriptions["kip848"].assigned_topics.insert("secret");
    const auto hidden = collector.Poll();
    REQUIRE(hidden.ok());
    REQUIRE(hidden->partial_errors.size() == 2);
    CHECK_THAT(hidden->partial_errors[1],
               Catch::StartsWith("group \"kip848\" is assigned topic \"secret\""));
  }
  SECTION("a failed request is one partial error; the groups keep no members") {
    admin.consumer_descriptions.clear();
    admin.consumer_describe_failure = "connecting to b:9092: refused";
    const auto failed = collector.Poll();
    REQUIRE(failed.ok());
    CHECK(failed->partial_errors ==
          std::vector<std::string>{"describing KIP-848 groups: connecting to b:9092: refused"});
  }
}
