// Share groups (KIP-932): the codecs of DescribeCluster v0, ListGroups v5 and
// DescribeShareGroupOffsets v0-v1 against frames assembled by hand from Kafka 4.3.2's message
// schemas; truncated, lying and hostile frames; the collector's share group reading and the
// series rendered from it. That a real broker agrees is tests/integration/test_share_groups.py.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "fake_kafka_admin.h"
#include "kafka/collector.h"
#include "kafka/share_wire.h"
#include "metrics/share_group_metrics.h"
#include "wire_bytes.h"

namespace {

namespace wire = lagsight::kafka::wire;
using lagsight::kafka::SharePartition;
using lagsight::kafka::TopicPartition;
using lagsight::test::wire_bytes::Bytes;
using lagsight::test::wire_bytes::Compact;
using lagsight::test::wire_bytes::Concat;
using lagsight::test::wire_bytes::Int16;
using lagsight::test::wire_bytes::Int32;
using lagsight::test::wire_bytes::Int64;
using lagsight::test::wire_bytes::kNoTags;
using lagsight::test::wire_bytes::kNull;
using lagsight::test::wire_bytes::kUuid;
using lagsight::test::wire_bytes::Text;

Bytes Framed(const Bytes& payload) {
  return Concat({Int32(static_cast<std::uint32_t>(payload.size())), payload});
}

Bytes Partition(std::uint32_t index, std::uint64_t start, std::uint64_t lag, std::uint16_t error,
                std::int16_t version) {
  return Concat({Int32(index), Int64(start), Int32(0) /*epoch*/,
                 version >= 1 ? Int64(lag) : Bytes{}, Int16(error), kNull, kNoTags});
}

// Group "sg" on orders 1 (start 15, lag 15) and 0 (start 0, lag 0), partition 2 answered
// UNKNOWN_TOPIC_OR_PARTITION; group "gone" answering GROUP_ID_NOT_FOUND.
Bytes OffsetsAnswer(std::uint32_t correlation_id, std::int16_t version) {
  return Concat({Int32(correlation_id),
                 kNoTags,
                 Int32(0) /*throttle*/,
                 {0x03},
                 // group sg
                 Compact("sg"),
                 {0x02},
                 Compact("orders"),
                 kUuid,
                 {0x04},
                 Partition(1, 15, 15, 0, version),
                 Partition(0, 0, 0, 0, version),
                 Partition(2, ~0ull, ~0ull, 3, version),
                 kNoTags,
                 Int16(0),
                 kNull,
                 kNoTags,
                 // group gone
                 Compact("gone"),
                 {0x01},
                 Int16(69),
                 Compact("no such group"),
                 kNoTags,
                 kNoTags});
}

}  // namespace

TEST_CASE("share wire: requests are laid out as the schemas say", "[kafka][share]") {
  // Header v2 (key, version, correlation id, client id with an int16 length, no tags), then the
  // body. DescribeCluster v0: include_cluster_authorized_operations false.
  CHECK(wire::DescribeClusterRequest(3, "cli") == Framed(Concat({{0x00, 0x3C, 0x00, 0x00},
                                                                 Int32(3),
                                                                 {0x00, 0x03},
                                                                 Text("cli"),
                                                                 kNoTags,
                                                                 {0x00},
                                                                 kNoTags})));
  // ListGroups v5: no states filter, the types filter, no tags.
  CHECK(wire::ListGroupsRequest(4, "cli", {"share"}) == Framed(Concat({{0x00, 0x10, 0x00, 0x05},
                                                                       Int32(4),
                                                                       {0x00, 0x03},
                                                                       Text("cli"),
                                                                       kNoTags,
                                                                       {0x01},
                                                                       {0x02},
                                                                       Compact("share"),
                                                                       kNoTags})));
  // DescribeShareGroupOffsets: each group with topics null (every partition).
  CHECK(wire::DescribeShareGroupOffsetsRequest(5, "cli", 1, {"a", "bc"}) ==
        Framed(Concat({{0x00, 0x5A, 0x00, 0x01},
                       Int32(5),
                       {0x00, 0x03},
                       Text("cli"),
                       kNoTags,
                       {0x03},
                       Compact("a"),
                       kNull,
                       kNoTags,
                       Compact("bc"),
                       kNull,
                       kNoTags,
                       kNoTags})));
  Bytes v0 = wire::DescribeShareGroupOffsetsRequest(5, "cli", 0, {"a"});
  CHECK(v0[7] == 0x00);
  v0[7] = 0x01;
  CHECK(v0 == wire::DescribeShareGroupOffsetsRequest(5, "cli", 1, {"a"}));
}

TEST_CASE("share wire: DescribeCluster and ListGroups answers decode", "[kafka][share]") {
  const Bytes cluster =
      Concat({Int32(7),      kNoTags,      Int32(0), Int16(0),          kNull,
              Compact("id"), Int32(1),     {0x03},   Int32(1),          Compact("b1"),
              Int32(9092),   kNull,        kNoTags,  Int32(2),          Compact("b2"),
              Int32(9093),   Compact("r"), kNoTags,  Int32(0x80000000), kNoTags});
  auto brokers = wire::ParseDescribeClusterResponse(cluster, 7);
  REQUIRE(brokers.ok());
  REQUIRE(brokers->size() == 2);
  CHECK((*brokers)[1].node_id == 2);
  CHECK((*brokers)[1].host == "b2");
  CHECK((*brokers)[1].port == 9093);
  for (std::size_t size = 0; size < cluster.size(); ++size) {
    CHECK_FALSE(wire::ParseDescribeClusterResponse(
                    Bytes(cluster.begin(), cluster.begin() + static_cast<std::ptrdiff_t>(size)), 7)
                    .ok());
  }
  CHECK_FALSE(wire::ParseDescribeClusterResponse(cluster, 7, 1).ok());  // more than allowed
  const Bytes refused = Concat({Int32(7),
                                kNoTags,
                                Int32(0),
                                Int16(31),
                                Compact("no"),
                                kNull,
                                Int32(1),
                                {0x01},
                                Int32(0),
                                kNoTags});
  const auto refusal = wire::ParseDescribeClusterResponse(refused, 7);
  REQUIRE_FALSE(refusal.ok());
  CHECK_THAT(refusal.error().message, Catch::Contains("error code 31: no"));

  const Bytes listed = Concat({Int32(8),
                               kNoTags,
                               Int32(0),
                               Int16(0),
                               {0x02},
                               Compact("sg"),
                               Compact("share"),
                               Compact("Stable"),
                               Compact("Share"),
                               kNoTags,
                               kNoTags});
  auto groups = wire::ParseListGroupsResponse(listed, 8);
  REQUIRE(groups.ok());
  CHECK(groups->error_code == 0);
  REQUIRE(groups->groups.size() == 1);
  CHECK(groups->groups[0].group == "sg");
  CHECK(groups->groups[0].state == "Stable");
  CHECK(groups->groups[0].type == "Share");
  for (std::size_t size = 0; size < listed.size(); ++size) {
    CHECK_FALSE(wire::ParseListGroupsResponse(
                    Bytes(listed.begin(), listed.begin() + static_cast<std::ptrdiff_t>(size)), 8)
                    .ok());
  }
  CHECK_FALSE(wire::ParseListGroupsResponse(listed, 9).ok());  // another request's answer
  const auto too_many = wire::ParseListGroupsResponse(listed, 8, 0);
  REQUIRE_FALSE(too_many.ok());
  CHECK_THAT(too_many.error().message, Catch::Contains("1 groups, more than 0"));
  // 2^28 groups claimed in a few bytes: refused before any allocation.
  CHECK_FALSE(
      wire::ParseListGroupsResponse(
          Concat({Int32(8), kNoTags, Int32(0), Int16(0), {0x81, 0x80, 0x80, 0x80, 0x01}}), 8)
          .ok());
}

TEST_CASE("share wire: DescribeShareGroupOffsets v0 and v1 answers decode", "[kafka][share]") {
  for (std::int16_t version : {std::int16_t{0}, std::int16_t{1}}) {
    const Bytes answer = OffsetsAnswer(9, version);
    auto groups = wire::ParseDescribeShareGroupOffsetsResponse(answer, 9, version, 2);
    REQUIRE(groups.ok());
    REQUIRE(groups->size() == 2);
    const wire::ShareGroupOffsets& sg = (*groups)[0];
    CHECK(sg.group == "sg");
    REQUIRE(sg.topics.size() == 1);
    CHECK(sg.topics[0].name == "orders");
    REQUIRE(sg.topics[0].partitions.size() == 3);
    CHECK(sg.topics[0].partitions[0].partition == 1);
    CHECK(sg.topics[0].partitions[0].start_offset == 15);
    CHECK(sg.topics[0].partitions[0].lag == (version >= 1 ? 15 : -1));
    CHECK(sg.topics[0].partitions[2].error_code == 3);
    CHECK((*groups)[1].group == "gone");
    CHECK((*groups)[1].error_code == 69);
    CHECK((*groups)[1].error_message == "no such group");
    // Decoded as the other version, the lag's 8 bytes are missing or extra: no silent misread.
    CHECK_FALSE(wire::ParseDescribeShareGroupOffsetsResponse(answer, 9, 1 - version, 2).ok());
  }
}

TEST_CASE("share wire: truncated, lying and hostile DescribeShareGroupOffsets answers fail",
          "[kafka][share]") {
  const Bytes answer = OffsetsAnswer(9, 1);
  for (std::size_t size = 0; size < answer.size(); ++size) {
    const Bytes cut(answer.begin(), answer.begin() + static_cast<std::ptrdiff_t>(size));
    CHECK_FALSE(wire::ParseDescribeShareGroupOffsetsResponse(cut, 9, 1, 2).ok());
  }
  CHECK_FALSE(wire::ParseDescribeShareGroupOffsetsResponse(answer, 8, 1, 2).ok());
  CHECK_FALSE(wire::ParseDescribeShareGroupOffsetsResponse(answer, 9, 1, 1).ok());  // too many
  const Bytes header = Concat({Int32(9), kNoTags, Int32(0)});
  // 2^32 - 2 groups; one group claiming 2^28 topics; one topic claiming 2^28 partitions.
  CHECK_FALSE(wire::ParseDescribeShareGroupOffsetsResponse(
                  Concat({header, {0xFF, 0xFF, 0xFF, 0xFF, 0x0F}}), 9, 1, 1u << 31)
                  .ok());
  CHECK_FALSE(
      wire::ParseDescribeShareGroupOffsetsResponse(
          Concat({header, {0x02}, Compact("g"), {0x81, 0x80, 0x80, 0x80, 0x01}, Bytes(40, 0)}), 9,
          1, 1)
          .ok());
  CHECK_FALSE(wire::ParseDescribeShareGroupOffsetsResponse(Concat({header,
                                                                   {0x02},
                                                                   Compact("g"),
                                                                   {0x02},
                                                                   Compact("t"),
                                                                   kUuid,
                                                                   {0x81, 0x80, 0x80, 0x80, 0x01},
                                                                   Bytes(40, 0)}),
                                                           9, 1, 1)
                  .ok());
  CHECK_FALSE(wire::ParseDescribeShareGroupOffsetsResponse(Bytes(4096, 0xFF), 9, 1, 1).ok());
  // A topic name Kafka refuses (empty, or 250 characters).
  for (const Bytes& name : {Compact(""), Concat({{0xFB, 0x01}, Text(std::string(250, 't'))})}) {
    const auto refused = wire::ParseDescribeShareGroupOffsetsResponse(Concat({header,
                                                                              {0x02},
                                                                              Compact("g"),
                                                                              {0x02},
                                                                              name,
                                                                              kUuid,
                                                                              {0x01},
                                                                              kNoTags,
                                                                              Int16(0),
                                                                              kNull,
                                                                              kNoTags,
                                                                              kNoTags}),
                                                                      9, 1, 1);
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.error().message, Catch::Contains("topic name"));
  }
}

namespace {

// The fake admin with share groups.
class ShareFakeAdmin : public lagsight::testing::FakeKafkaAdmin {
 public:
  lagsight::kafka::ShareGroupListings share_listings;
  lagsight::kafka::ShareGroupProgress share_progress;
  std::vector<std::string> share_described_ids;

  lagsight::kafka::ShareGroupListings ListShareGroups(std::chrono::milliseconds,
                                                      std::chrono::milliseconds) override {
    return share_listings;
  }
  lagsight::kafka::ShareGroupProgress DescribeShareGroupOffsets(
      const std::vector<std::string>& ids, std::chrono::milliseconds,
      std::chrono::milliseconds) override {
    share_described_ids = ids;
    return share_progress;
  }
};

}  // namespace

TEST_CASE("collector: share groups are listed apart, filtered, and their log offsets read",
          "[kafka][share]") {
  lagsight::config::KafkaClusterConfig config;
  config.name = "test";
  config.bootstrap_servers = {"b:9092"};
  config.groups = *lagsight::config::NameFilter::Create({}, {"denied.*"});
  config.topics = *lagsight::config::NameFilter::Create({}, {"__.*"});
  auto owned = std::make_unique<ShareFakeAdmin>();
  auto& admin = *owned;
  lagsight::kafka::Collector collector(config, std::move(owned));
  admin.share_listings.groups = {
      {"sg", "stable", false}, {"denied-sg", "stable", false}, {"broken", "empty", false}};
  admin.share_listings.failure = "ListGroups to b2:9092: reading: end of file";
  lagsight::kafka::ShareGroup sg;
  sg.id = "sg";
  sg.partitions = {SharePartition{{"orders", 0}, 3, std::nullopt},
                   SharePartition{{"orders", 1}, 5, 2}, SharePartition{{"__hidden", 0}, 1, 0}};
  sg.members = 2;
  sg.member_list = {{"m-2", "c-2", "/h", "", {{"orders", 1}, {"__hidden", 0}}},
                    {"m-1", "c-1", "/h", "", {{"orders", 1}, {"orders", 0}, {"orders", 1}}},
                    {"m-2", "c-2", "/h", "", {}}};
  admin.share_progress.groups = {sg};
  admin.share_progress.errors = {"share group \"broken\": DescribeShareGroupOffsets answered x"};
  admin.topics = {{"orders", 2}, {"__hidden", 1}};
  admin.log_end = {{{"orders", 0}, 10}, {{"orders", 1}, 7}};
  admin.broker_configs["offsets.retention.minutes"] = "10080";

  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());
  CHECK(admin.share_described_ids == std::vector<std::string>{"broken", "sg"});
  CHECK(snapshot->groups.empty());  // no consumer group stands for a share group
  REQUIRE(snapshot->share_groups.size() == 2);
  const auto& broken = snapshot->share_groups[0];
  CHECK(broken.id == "broken");
  CHECK_FALSE(broken.offsets_known);
  const auto& read = snapshot->share_groups[1];
  CHECK(read.state == "stable");
  CHECK(read.offsets_known);
  REQUIRE(read.partitions.size() == 2);  // the topic filter dropped __hidden
  CHECK(snapshot->partitions.at({"orders", 0}).log_end == 10);
  const auto& errors = snapshot->partial_errors;
  CHECK(std::count(errors.begin(), errors.end(),
                   "listing share groups: ListGroups to b2:9092: reading: end of file") == 1);
  CHECK(std::count(errors.begin(), errors.end(),
                   "share group \"broken\": DescribeShareGroupOffsets answered x") == 1);
  CHECK(read.members == 2);
  REQUIRE(read.member_list.size() == 2);  // by id, each once, hidden topics and repeats dropped
  CHECK(read.member_list[0].member_id == "m-1");
  CHECK(read.member_list[0].assignment ==
        std::vector<TopicPartition>{{"orders", 0}, {"orders", 1}});
  CHECK(read.member_list[1].assignment == std::vector<TopicPartition>{{"orders", 1}});

  lagsight::metrics::FamilyBuilder builder;
  constexpr lagsight::metrics::MetricDef kInfo{"info", "i", prometheus::MetricType::Gauge};
  constexpr lagsight::metrics::MetricDef kMembers{"members", "m", prometheus::MetricType::Gauge};
  lagsight::metrics::AppendShareGroupSeries("c", *snapshot, kInfo, kMembers, builder);
  const std::string text = std::move(builder).Render();
  CHECK_THAT(text, Catch::Contains("lagsight_kafka_share_group_start_offset{kafka_cluster=\"c\","
                                   "group=\"sg\",topic=\"orders\",partition=\"0\"} 3"));
  // Partition 0: no coordinator lag, so log end 10 - start 3, an upper bound.
  CHECK_THAT(text, Catch::Contains("lagsight_kafka_share_group_lag_records{kafka_cluster=\"c\","
                                   "group=\"sg\",topic=\"orders\",partition=\"0\",source=\"upper_"
                                   "bound\"} 7"));
  CHECK_THAT(text, Catch::Contains("lagsight_kafka_share_group_lag_records{kafka_cluster=\"c\","
                                   "group=\"sg\",topic=\"orders\",partition=\"1\",source="
                                   "\"coordinator\"} 2"));
  CHECK_THAT(text, !Catch::Contains("__hidden"));
  CHECK_THAT(text, Catch::Contains(
                       "info{kafka_cluster=\"c\",group=\"sg\",state=\"stable\",kind=\"share\"} 1"));
  CHECK_THAT(text, Catch::Contains("members{kafka_cluster=\"c\",group=\"sg\"} 2"));
  CHECK_THAT(text, !Catch::Contains("members{kafka_cluster=\"c\",group=\"broken\"}"));
}

namespace {

// ShareGroupDescribe v1: group "sg" Stable with members m-2 (orders 1) and m-1 (orders 1 and 0:
// share group members may hold one partition together); group "gone" GROUP_ID_NOT_FOUND.
Bytes ShareMember(const std::string& id, const std::string& client,
                  const std::vector<std::uint32_t>& partitions) {
  Bytes assignment = Concat(
      {{0x02}, kUuid, Compact("orders"), {static_cast<std::uint8_t>(partitions.size() + 1)}});
  for (std::uint32_t p : partitions) assignment = Concat({assignment, Int32(p)});
  return Concat({Compact(id),
                 kNull /*rack*/,
                 Int32(3) /*epoch*/,
                 Compact(client),
                 Compact("/10.0.0.1"),
                 {0x02},
                 Compact("orders") /*subscribed*/,
                 assignment,
                 kNoTags /*topic*/,
                 kNoTags /*assignment*/,
                 kNoTags});
}

Bytes DescribeAnswer(std::uint32_t correlation_id) {
  return Concat({Int32(correlation_id),
                 kNoTags,
                 Int32(0),
                 {0x03},
                 Int16(0),
                 kNull,
                 Compact("sg"),
                 Compact("Stable"),
                 Int32(4),
                 Int32(4),
                 Compact("simple"),
                 {0x03},
                 ShareMember("m-2", "c-2", {1}),
                 ShareMember("m-1", "c-1", {1, 0}),
                 Int32(0x80000000),
                 kNoTags,
                 Int16(69),
                 Compact("no such group"),
                 Compact("gone"),
                 Compact("Dead"),
                 Int32(0),
                 Int32(0),
                 Compact(""),
                 {0x01},
                 Int32(0x80000000),
                 kNoTags,
                 kNoTags});
}

}  // namespace

TEST_CASE("share wire: ShareGroupDescribe v1 request and answers", "[kafka][share]") {
  CHECK(wire::ShareGroupDescribeRequest(6, "cli", {"a"}) == Framed(Concat({{0x00, 0x4D, 0x00, 0x01},
                                                                           Int32(6),
                                                                           {0x00, 0x03},
                                                                           Text("cli"),
                                                                           kNoTags,
                                                                           {0x02},
                                                                           Compact("a"),
                                                                           {0x00},
                                                                           kNoTags})));
  const Bytes answer = DescribeAnswer(11);
  auto groups = wire::ParseShareGroupDescribeResponse(answer, 11, 2);
  REQUIRE(groups.ok());
  REQUIRE(groups->size() == 2);
  CHECK((*groups)[0].state == "Stable");
  REQUIRE((*groups)[0].members.size() == 2);
  CHECK(
      (*groups)[0].members[1] ==
      lagsight::kafka::GroupMember{"m-1", "c-1", "/10.0.0.1", "", {{"orders", 1}, {"orders", 0}}});
  CHECK((*groups)[1].error_code == 69);
  for (std::size_t size = 0; size < answer.size(); ++size) {
    const Bytes cut(answer.begin(), answer.begin() + static_cast<std::ptrdiff_t>(size));
    CHECK_FALSE(wire::ParseShareGroupDescribeResponse(cut, 11, 2).ok());
  }
  CHECK_FALSE(wire::ParseShareGroupDescribeResponse(answer, 11, 1).ok());  // more than asked
  CHECK_FALSE(wire::ParseShareGroupDescribeResponse(Bytes(4096, 0xFF), 11, 1).ok());
  // Decoding past the budget fails, naming it.
  const auto bounded = wire::ParseShareGroupDescribeResponse(answer, 11, 2, 64);
  REQUIRE_FALSE(bounded.ok());
  CHECK_THAT(bounded.error().message, Catch::Contains("decoded"));
}
