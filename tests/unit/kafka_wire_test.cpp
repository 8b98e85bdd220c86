// The Kafka wire codecs of the batched OffsetFetch, against frames assembled by hand from the
// protocol's published message layouts (kafka.apache.org/protocol: FindCoordinator v4,
// OffsetFetch v8, ApiVersions v0), and against truncated and lying frames. That the broker agrees
// is tests/integration (test_kafka_lag.py and the other group shapes run through the batched
// path on a real broker, checked against Kafka's own consumer-groups tool).
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "kafka/wire.h"

namespace {

namespace wire = lagsight::kafka::wire;
using Bytes = std::vector<std::uint8_t>;

Bytes Concat(std::initializer_list<Bytes> parts) {
  Bytes all;
  for (const Bytes& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}
Bytes Text(const std::string& text) { return Bytes(text.begin(), text.end()); }
// A frame's size prefix and payload, from the payload.
Bytes Framed(const Bytes& payload) {
  const auto size = static_cast<std::uint32_t>(payload.size());
  return Concat({{static_cast<std::uint8_t>(size >> 24), static_cast<std::uint8_t>(size >> 16),
                  static_cast<std::uint8_t>(size >> 8), static_cast<std::uint8_t>(size)},
                 payload});
}

}  // namespace

TEST_CASE("kafka wire: requests are laid out as the protocol says", "[kafka]") {
  // Request header v2: api key, version, correlation id, client id (int16 length), no tags.
  const Bytes header_offset_fetch =
      Concat({{0x00, 0x09, 0x00, 0x08, 0x00, 0x00, 0x00, 0x07}, {0x00, 0x03}, Text("cli"), {0x00}});
  SECTION("OffsetFetch v8: groups with null topics (all), require_stable false") {
    const std::string long_group(200, 'g');  // its compact length 201 takes two varint bytes
    const Bytes expected = Framed(Concat({header_offset_fetch,
                                          {0x03},  // two groups
                                          {0x02},
                                          Text("a"),
                                          {0x00, 0x00},  // topics null, no tags
                                          {0xC9, 0x01},
                                          Text(long_group),
                                          {0x00, 0x00},
                                          {0x00, 0x00}}));  // require_stable, no tags
    CHECK(wire::OffsetFetchRequest(7, "cli", {"a", long_group}) == expected);
  }
  SECTION("FindCoordinator v4: key type group, the keys as a compact array") {
    const Bytes expected = Framed(Concat({{0x00, 0x0A, 0x00, 0x04, 0x00, 0x00, 0x01, 0x00},
                                          {0x00, 0x03},
                                          Text("cli"),
                                          {0x00},
                                          {0x00},  // key type: group
                                          {0x03, 0x02},
                                          Text("a"),
                                          {0x03},
                                          Text("bc"),
                                          {0x00}}));
    CHECK(wire::FindCoordinatorRequest(256, "cli", {"a", "bc"}) == expected);
  }
  SECTION("ApiVersions v0: header v1, empty body") {
    CHECK(wire::ApiVersionsRequest(1, "x") ==
          Framed({0x00, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 'x'}));
  }
}

namespace {

// An OffsetFetch v8 answer: group "a" with orders/0 at 42 and orders/1 uncommitted (-1), a
// tagged field on a partition to be skipped; group "b" answering NOT_COORDINATOR (16); group "c"
// with a partition-level error.
Bytes OffsetFetchAnswer(std::int32_t correlation_id) {
  const auto id = static_cast<std::uint32_t>(correlation_id);
  return Concat({
      {static_cast<std::uint8_t>(id >> 24), static_cast<std::uint8_t>(id >> 16),
       static_cast<std::uint8_t>(id >> 8), static_cast<std::uint8_t>(id), 0x00},  // header v1
      {0x00, 0x00, 0x00, 0x00},                                                   // throttle
      {0x04},                                                                     // three groups
      // group a
      {0x02},
      Text("a"),
      {0x02},  // one topic
      {0x07},
      Text("orders"),
      {0x03},                                            // two partitions
      {0x00, 0x00, 0x00, 0x00},                          // partition 0
      {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2A},  // offset 42
      {0xFF, 0xFF, 0xFF, 0xFF},                          // leader epoch -1
      {0x01},                                            // metadata ""
      {0x00, 0x00},                                      // no error
      {0x01, 0x05, 0x02, 0xAB, 0xCD},                    // one tagged field (tag 5, 2 bytes)
      {0x00, 0x00, 0x00, 0x01},                          // partition 1
      {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF},  // offset -1
      {0xFF, 0xFF, 0xFF, 0xFF},                          // leader epoch -1
      {0x00},                                            // metadata null
      {0x00, 0x00},                                      // no error
      {0x00},                                            // partition tags
      {0x00},                                            // topic tags
      {0x00, 0x00},                                      // group error
      {0x00},                                            // group tags
      // group b
      {0x02},
      Text("b"),
      {0x01},        // no topics
      {0x00, 0x10},  // NOT_COORDINATOR
      {0x00},        // group tags
      // group c
      {0x02},
      Text("c"),
      {0x02},  // one topic
      {0x02},
      Text("t"),
      {0x02},                                            // one partition
      {0x00, 0x00, 0x00, 0x03},                          // partition 3
      {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05},  // offset 5
      {0x00, 0x00, 0x00, 0x00},                          // leader epoch
      {0x00},                                            // metadata null
      {0x00, 0x03},                                      // UNKNOWN_TOPIC_OR_PARTITION
      {0x00},                                            // partition tags
      {0x00},                                            // topic tags
      {0x00, 0x00},                                      // group error
      {0x00},                                            // group tags
      {0x00},                                            // response tags
  });
}

}  // namespace

TEST_CASE("kafka wire: an OffsetFetch v8 answer decodes group by group", "[kafka]") {
  const Bytes payload = OffsetFetchAnswer(9);
  const auto groups = wire::ParseOffsetFetchResponse(payload, 9, 3);
  REQUIRE(groups.ok());
  REQUIRE(groups->size() == 3);
  const wire::FetchedGroup& a = (*groups)[0];
  CHECK(a.group == "a");
  CHECK(a.error_code == 0);
  CHECK(a.partition_error_code == 0);
  REQUIRE(a.topics.size() == 1);
  CHECK(a.topics[0].name == "orders");
  using Partitions = std::vector<std::pair<std::int32_t, std::int64_t>>;
  CHECK(a.topics[0].partitions == Partitions{{0, 42}, {1, -1}});
  CHECK((*groups)[1].group == "b");
  CHECK((*groups)[1].error_code == 16);
  CHECK((*groups)[1].topics.empty());
  CHECK((*groups)[2].group == "c");
  CHECK((*groups)[2].error_code == 0);
  CHECK((*groups)[2].partition_error_code == 3);

  SECTION("an answer naming more groups than were asked for is refused") {
    const auto more = wire::ParseOffsetFetchResponse(payload, 9, 2);
    REQUIRE_FALSE(more.ok());
    CHECK(more.error().message == "OffsetFetch response: 3 groups, asked for 2");
  }
  SECTION("an answer to another request is refused") {
    const auto other = wire::ParseOffsetFetchResponse(payload, 10, 3);
    REQUIRE_FALSE(other.ok());
    CHECK(other.error().message == "OffsetFetch response answers request 9, not 10");
  }
  SECTION("every truncation fails cleanly, none reads past the end") {
    for (std::size_t length = 0; length < payload.size(); ++length) {
      const auto cut = wire::ParseOffsetFetchResponse(
          std::span<const std::uint8_t>(payload.data(), length), 9, 3);
      INFO("length " << length);
      CHECK_FALSE(cut.ok());
    }
  }
}

TEST_CASE("kafka wire: counts and lengths larger than the frame fail before any allocation",
          "[kafka]") {
  // A group count of 2^32 - 2 in five varint bytes, then nothing.
  const Bytes huge_count = {0, 0, 0, 1, 0x00, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F};
  CHECK_FALSE(wire::ParseOffsetFetchResponse(huge_count, 1, 1u << 31).ok());
  // A varint that never ends.
  const Bytes endless = {0, 0, 0, 1, 0x00, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01};
  CHECK_FALSE(wire::ParseOffsetFetchResponse(endless, 1, 1u << 31).ok());
  // A count of 2^28 in five bytes whose last one carries more than 32 bits.
  const Bytes wide = {0, 0, 0, 1, 0x00, 0, 0, 0, 0, 0x81, 0x80, 0x80, 0x80, 0x71};
  CHECK_FALSE(wire::ParseOffsetFetchResponse(wide, 1, 1u << 31).ok());
  // 3 partitions declared where 40 bytes leave room for 2 of their 20 bytes at least.
  const Bytes partitions = Concat(
      {{0, 0, 0, 1, 0x00, 0, 0, 0, 0, 0x02, 0x02, 'g', 0x02, 0x02, 't', 0x04}, Bytes(40, 0)});
  CHECK_FALSE(wire::ParseOffsetFetchResponse(partitions, 1, 1).ok());
  // One group whose name claims 1,000 bytes of the 3 there are.
  const Bytes long_name = {0, 0, 0, 1, 0x00, 0, 0, 0, 0, 0x02, 0xE9, 0x07, 'a', 'b', 'c'};
  CHECK_FALSE(wire::ParseFindCoordinatorResponse(long_name, 1).ok());
  // ApiVersions claiming 2^31 - 1 entries.
  const Bytes many_apis = {0, 0, 0, 1, 0x00, 0x00, 0x7F, 0xFF, 0xFF, 0xFF};
  CHECK_FALSE(wire::ParseApiVersionsResponse(many_apis, 1).ok());
}

TEST_CASE("kafka wire: a topic without partitions or with a name Kafka refuses fails the answer",
          "[kafka]") {
  const Bytes group_g = {0, 0, 0, 1, 0x00, 0, 0, 0, 0, 0x02, 0x02, 'g', 0x02};  // one topic
  const Bytes no_partitions = Concat({group_g, {0x02, 't', 0x01}, Bytes(40, 0)});
  CHECK_FALSE(wire::ParseOffsetFetchResponse(no_partitions, 1, 1).ok());
  const Bytes partition(20, 0);
  const Bytes long_name = Concat(
      {group_g, {0xFB, 0x01}, Bytes(250, 'x'), {0x02}, partition, {0x00, 0x00, 0x00, 0x00, 0x00}});
  const auto refused = wire::ParseOffsetFetchResponse(long_name, 1, 1);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message ==
        "OffsetFetch response: a topic name of 250 characters (Kafka allows 1 to 249)");
  // The same answer with a 249-character name decodes.
  const Bytes longest = Concat(
      {group_g, {0xFA, 0x01}, Bytes(249, 'x'), {0x02}, partition, {0x00, 0x00, 0x00, 0x00, 0x00}});
  const auto accepted = wire::ParseOffsetFetchResponse(longest, 1, 1);
  REQUIRE(accepted.ok());
  CHECK(accepted->at(0).topics.at(0).name == std::string(249, 'x'));
}

TEST_CASE("kafka wire: FindCoordinator v4 and ApiVersions v0 answers decode", "[kafka]") {
  const Bytes coordinators = Concat({
      {0x00, 0x00, 0x00, 0x02, 0x00},  // correlation 2, no tags
      {0x00, 0x00, 0x00, 0x00},        // throttle
      {0x03},
      {0x02},
      Text("a"),
      {0x00, 0x00, 0x00, 0x01},
      {0x0B},
      Text("broker-one"),
      {0x00, 0x00, 0x23, 0x84},
      {0x00, 0x00},
      {0x00},
      {0x00},  // port 9092, no error, null msg
      {0x02},
      Text("b"),
      {0xFF, 0xFF, 0xFF, 0xFF},
      {0x01},
      {0x00, 0x00, 0x00, 0x00},
      {0x00, 0x0F},
      {0x05},
      Text("busy"),
      {0x00},  // COORDINATOR_NOT_AVAILABLE
      {0x00},
  });
  const auto parsed = wire::ParseFindCoordinatorResponse(coordinators, 2);
  REQUIRE(parsed.ok());
  REQUIRE(parsed->size() == 2);
  CHECK((*parsed)[0].group == "a");
  CHECK((*parsed)[0].node_id == 1);
  CHECK((*parsed)[0].host == "broker-one");
  CHECK((*parsed)[0].port == 9092);
  CHECK((*parsed)[0].error_code == 0);
  CHECK((*parsed)[1].group == "b");
  CHECK((*parsed)[1].error_code == 15);

  const Bytes versions = {0x00, 0x00, 0x00, 0x03,              // correlation 3 (header v0, no tags)
                          0x00, 0x00,                          // no error
                          0x00, 0x00, 0x00, 0x02,              // two APIs
                          0x00, 0x09, 0x00, 0x01, 0x00, 0x09,  // OffsetFetch 1..9
                          0x00, 0x0A, 0x00, 0x00, 0x00, 0x06};  // FindCoordinator 0..6
  const auto apis = wire::ParseApiVersionsResponse(versions, 3);
  REQUIRE(apis.ok());
  CHECK(apis->at(wire::kOffsetFetch).min == 1);
  CHECK(apis->at(wire::kOffsetFetch).max == 9);
  CHECK(apis->at(wire::kFindCoordinator).max == 6);
}
