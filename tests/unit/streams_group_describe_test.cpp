// Streams groups (KIP-1071): the ListGroups v5 and StreamsGroupDescribe v0 codecs against frames
// assembled by hand from Kafka 4.3.2's message schemas (ListGroupsRequest/Response.json,
// StreamsGroupDescribeRequest/Response.json), truncated, lying and oversized frames; and the
// collector listing a streams group, with kind "streams" and its members. That a real broker
// agrees is tests/integration/test_streams_groups.py.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "fake_kafka_admin.h"
#include "kafka/collector.h"
#include "kafka/wire_streams.h"
#include "wire_bytes.h"

namespace {

namespace wire = lagsight::kafka::wire;
using lagsight::kafka::GroupKind;
using lagsight::kafka::TopicPartition;
using lagsight::test::wire_bytes::Bytes;
using lagsight::test::wire_bytes::Compact;
using lagsight::test::wire_bytes::Concat;
using lagsight::test::wire_bytes::Int16;
using lagsight::test::wire_bytes::Int32;
using lagsight::test::wire_bytes::Int64;
using lagsight::test::wire_bytes::kNoTags;
using lagsight::test::wire_bytes::kNull;
using lagsight::test::wire_bytes::Text;

Bytes Count(std::size_t count) { return {static_cast<std::uint8_t>(count + 1)}; }  // short
const Bytes kEmpty = {0x01};  // empty COMPACT_ARRAY

// A TaskIds: subtopology and partitions.
Bytes Tasks(const std::string& subtopology, const std::vector<std::uint32_t>& partitions) {
  Bytes out = Concat({Compact(subtopology), Count(partitions.size())});
  for (std::uint32_t p : partitions) out = Concat({out, Int32(p)});
  return Concat({out, kNoTags});
}
// An Assignment: active tasks, standby tasks, no warm-up tasks.
Bytes Assignment(const std::vector<Bytes>& active, const std::vector<Bytes>& standby) {
  Bytes out = Count(active.size());
  for (const Bytes& tasks : active) out = Concat({out, tasks});
  out = Concat({out, Count(standby.size())});
  for (const Bytes& tasks : standby) out = Concat({out, tasks});
  return Concat({out, kEmpty, kNoTags});
}
Bytes TopicInfo(const std::string& name) {
  return Concat({Compact(name), Int32(4), Int16(1), kEmpty, kNoTags});
}

Bytes Member(const std::string& id, const Bytes& instance, const std::string& client,
             const Bytes& endpoint, const Bytes& assignment, const Bytes& target) {
  return Concat({Compact(id),
                 Int32(3) /*epoch*/,
                 instance,
                 kNull /*rack*/,
                 Compact(client),
                 Compact("/10.0.0.1"),
                 Int32(1) /*topology epoch*/,
                 Compact("process-1"),
                 endpoint,
                 Count(1),
                 Compact("zone"),
                 Compact("a"),
                 kNoTags /*client tags*/,
                 Count(1),
                 Compact("1"),
                 Int32(0),
                 Int64(42),
                 kNoTags /*task offsets*/,
                 kEmpty /*task end offsets*/,
                 assignment,
                 target,
                 {0x00} /*is classic*/,
                 kNoTags});
}

// The topology: subtopology "0" reads "words"; "1" reads the repartition topic "app-rep"
// (and writes the changelog "app-log", which holds no group offsets).
Bytes Topology() {
  return Concat({{0x01},
                 Int32(1),
                 Count(2),
                 // subtopology 0
                 Compact("0"),
                 Count(1),
                 Compact("words"),
                 Count(1),
                 Compact("app-rep"),
                 kEmpty,
                 kEmpty,
                 kNoTags,
                 // subtopology 1
                 Compact("1"),
                 kEmpty,
                 kEmpty,
                 Count(1),
                 TopicInfo("app-log"),
                 Count(1),
                 TopicInfo("app-rep"),
                 kNoTags,
                 kNoTags});
}

// Group "app" Stable with two members: m-1 (static, with an endpoint) active on 0:[0,2] and
// 1:[0], standby on 1:[1]; m-2 active on 0:[1] targeted to 0:[1,3]. Group "gone" answers
// GROUP_ID_NOT_FOUND with a null topology.
Bytes Answer(std::uint32_t correlation_id) {
  const Bytes endpoint = Concat({{0x01}, Compact("app-1"), Int16(8080), kNoTags});
  return Concat({Int32(correlation_id),
                 kNoTags,
                 Int32(0) /*throttle*/,
                 Count(2),
                 // group app
                 Int16(0),
                 kNull,
                 Compact("app"),
                 Compact("Stable"),
                 Int32(7),
                 Int32(7),
                 Topology(),
                 Count(2),
                 Member("m-1", Compact("static-1"), "c-1", endpoint,
                        Assignment({Tasks("0", {0, 2}), Tasks("1", {0})}, {Tasks("1", {1})}),
                        Assignment({}, {})),
                 Member("m-2", kNull, "c-2", {0xFF}, Assignment({Tasks("0", {1})}, {}),
                        Assignment({Tasks("0", {1, 3})}, {})),
                 Int32(0x80000000),
                 kNoTags,
                 // group gone
                 Int16(69),
                 Compact("Group gone not found."),
                 Compact("gone"),
                 Compact(""),
                 Int32(0),
                 Int32(0),
                 {0xFF} /*topology*/,
                 kEmpty,
                 Int32(0x80000000),
                 kNoTags,
                 kNoTags});
}

Bytes Payload(const Bytes& frame) { return Bytes(frame.begin() + 4, frame.end()); }

}  // namespace

TEST_CASE("ListGroups v5: asks for the streams groups in any state", "[kafka][wire]") {
  const Bytes frame = wire::ListGroupsRequest(7, "lagsight", {"streams"});
  const Bytes expected = Concat({Int16(16), Int16(5), Int32(7), Int16(8), Text("lagsight"), kNoTags,
                                 kEmpty /*states*/, Count(1), Compact("streams"), kNoTags});
  CHECK(Payload(frame) == expected);
  CHECK(wire::FrameSize(std::span<const std::uint8_t, 4>(frame.data(), 4)) ==
        static_cast<std::int32_t>(expected.size()));
}

TEST_CASE("ListGroups v5: the answer's groups, and nothing from a truncated one", "[kafka][wire]") {
  const Bytes answer =
      Concat({Int32(3), kNoTags, Int32(0), Int16(0), Count(2), Compact("app"), Compact("streams"),
              Compact("NotReady"), Compact("streams"), kNoTags, Compact("other"),
              Compact("consumer"), Compact("Stable"), Compact("consumer"), kNoTags, kNoTags});
  const auto listed = wire::ParseListGroupsResponse(answer, 3);
  REQUIRE(listed.ok());
  CHECK(listed->error_code == 0);
  REQUIRE(listed->groups.size() == 2);
  CHECK(listed->groups[0].group == "app");
  CHECK(listed->groups[0].state == "NotReady");
  CHECK(listed->groups[0].type == "streams");
  CHECK(listed->groups[1].type == "consumer");
  for (std::size_t size = 0; size < answer.size(); ++size) {
    const Bytes cut(answer.begin(), answer.begin() + static_cast<std::ptrdiff_t>(size));
    CHECK_FALSE(wire::ParseListGroupsResponse(cut, 3).ok());
  }
  CHECK_FALSE(wire::ParseListGroupsResponse(answer, 4).ok());  // answers another request
  // A count of groups that cannot fit in what is left fails before anything is allocated.
  const Bytes lying = Concat({Int32(3), kNoTags, Int32(0), Int16(0), {0xFF, 0xFF, 0xFF, 0x0F}});
  CHECK_FALSE(wire::ParseListGroupsResponse(lying, 3).ok());
}

TEST_CASE("StreamsGroupDescribe v0: request", "[kafka][wire]") {
  const Bytes frame = wire::StreamsGroupDescribeRequest(9, "ls", 0, {"app", "b"});
  CHECK(Payload(frame) == Concat({Int16(89),
                                  Int16(0),
                                  Int32(9),
                                  Int16(2),
                                  Text("ls"),
                                  kNoTags,
                                  Count(2),
                                  Compact("app"),
                                  Compact("b"),
                                  {0x00},
                                  kNoTags}));
}

TEST_CASE("StreamsGroupDescribe v0: members hold the partitions of their active tasks",
          "[kafka][wire]") {
  const Bytes answer = Answer(9);
  const auto described = wire::ParseStreamsGroupDescribeResponse(answer, 9, 0, 2);
  REQUIRE(described.ok());
  REQUIRE(described->size() == 2);
  const auto& app = (*described)[0];
  CHECK(app.group == "app");
  CHECK(app.error_code == 0);
  CHECK(app.state == "Stable");
  REQUIRE(app.members.size() == 2);
  CHECK(app.members[0].member_id == "m-1");
  CHECK(app.members[0].client_id == "c-1");
  CHECK(app.members[0].host == "/10.0.0.1");
  CHECK(app.members[0].group_instance_id == "static-1");
  // Task 0_p reads words-p, task 1_p the repartition topic app-rep-p; standby tasks hold none.
  CHECK(app.members[0].assignment ==
        std::vector<TopicPartition>{{"words", 0}, {"words", 2}, {"app-rep", 0}});
  CHECK(app.members[1].group_instance_id.empty());
  CHECK(app.members[1].assignment == std::vector<TopicPartition>{{"words", 1}});
  const auto& gone = (*described)[1];
  CHECK(gone.group == "gone");
  CHECK(gone.error_code == 69);
  CHECK(gone.error_message == "Group gone not found.");
  CHECK(gone.members.empty());
}

TEST_CASE("StreamsGroupDescribe v0: truncated, lying and oversized answers fail", "[kafka][wire]") {
  const Bytes answer = Answer(9);
  for (std::size_t size = 0; size < answer.size(); ++size) {
    const Bytes cut(answer.begin(), answer.begin() + static_cast<std::ptrdiff_t>(size));
    CHECK_FALSE(wire::ParseStreamsGroupDescribeResponse(cut, 9, 0, 2).ok());
  }
  // More groups than asked for.
  CHECK_FALSE(wire::ParseStreamsGroupDescribeResponse(answer, 9, 0, 1).ok());
  // A count of members that cannot fit fails before anything is reserved for it.
  const Bytes lying = Concat({Int32(9),
                              kNoTags,
                              Int32(0),
                              Count(1),
                              Int16(0),
                              kNull,
                              Compact("app"),
                              Compact("Stable"),
                              Int32(7),
                              Int32(7),
                              {0xFF},
                              {0xFF, 0xFF, 0xFF, 0x0F}});
  CHECK_FALSE(wire::ParseStreamsGroupDescribeResponse(lying, 9, 0, 1).ok());
  // An empty topic name in the topology.
  Bytes empty_topic = answer;
  const Bytes words = Compact("words");
  const auto at = std::search(empty_topic.begin(), empty_topic.end(), words.begin(), words.end());
  REQUIRE(at != empty_topic.end());
  *at = 0x01;  // length 0, the five letters then misread
  CHECK_FALSE(wire::ParseStreamsGroupDescribeResponse(empty_topic, 9, 0, 2).ok());
  // Decoded, it would outgrow the limit.
  const auto decoded = wire::ParseStreamsGroupDescribeResponse(answer, 9, 0, 2, 64);
  REQUIRE_FALSE(decoded.ok());
  CHECK_THAT(decoded.error().message, Catch::Contains("decoded"));
}

TEST_CASE("collector: a streams group is listed with kind streams, its members and offsets",
          "[kafka]") {
  lagsight::config::KafkaClusterConfig config;
  config.name = "test";
  config.bootstrap_servers = {"b:9092"};
  auto owned = std::make_unique<lagsight::testing::FakeKafkaAdmin>();
  auto& admin = *owned;
  lagsight::kafka::Collector collector(config, std::move(owned));
  admin.listings = {{"classic", "stable", false}};
  admin.descriptions["classic"] = {"classic", "stable", false, 0, false, std::nullopt, {}, {}};
  lagsight::kafka::GroupListing streams{"app", "stable", false};
  streams.streams = true;
  admin.streams_listings = {streams};
  admin.streams_descriptions["app"] = {
      "app",     "reconciling",
      false,     1,
      false,     std::nullopt,
      {"words"}, {{"m-1", "c-1", "/10.0.0.1", "", {{"words", 1}, {"words", 0}}}}};
  admin.committed["app"] = lagsight::kafka::CommittedOffsets{{{"words", 0}, 3}, {{"words", 1}, 1}};
  admin.topics = {{"words", 2}};
  admin.log_start = {{{"words", 0}, 0}, {{"words", 1}, 0}};
  admin.log_end = {{{"words", 0}, 3}, {{"words", 1}, 1}};  // caught up: no timestamp read
  admin.broker_configs["offsets.retention.minutes"] = "10080";

  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());
  CHECK(snapshot->partial_errors == std::vector<std::string>{});
  // Never described as a classic group (that says dead), nor as a KIP-848 one.
  CHECK(admin.described_ids == std::vector<std::string>{"classic"});
  CHECK(admin.consumer_described_ids.empty());
  CHECK(admin.streams_described_ids == std::vector<std::string>{"app"});
  REQUIRE(snapshot->groups.size() == 2);
  const auto& app = snapshot->groups[0];
  CHECK(app.id == "app");
  CHECK(app.kind == GroupKind::kStreams);
  CHECK(app.state == "reconciling");
  CHECK(app.members == 1);
  REQUIRE(app.member_list.size() == 1);
  CHECK(app.member_list[0].assignment == std::vector<TopicPartition>{{"words", 0}, {"words", 1}});
  CHECK(app.committed.size() == 2);
  CHECK(std::string(lagsight::kafka::GroupKindName(app.kind)) == "streams");

  SECTION("a streams group the main listing names too is still a streams group") {
    admin.listings.push_back({"app", "stable", false});
    admin.described_ids.clear();
    const auto both = collector.Poll();
    REQUIRE(both.ok());
    CHECK(admin.described_ids == std::vector<std::string>{"classic"});
    REQUIRE(both->groups.size() == 2);
    CHECK(both->groups[0].kind == GroupKind::kStreams);
    CHECK(both->groups[0].members == 1);
  }
  SECTION("a failed listing is a partial error, the other groups are read") {
    admin.streams_listings.clear();
    admin.streams_list_failure = "ListGroups to b:9092: refused";
    const auto failed = collector.Poll();
    REQUIRE(failed.ok());
    CHECK(failed->partial_errors ==
          std::vector<std::string>{"listing streams groups: ListGroups to b:9092: refused"});
    REQUIRE(failed->groups.size() == 1);
  }
}
