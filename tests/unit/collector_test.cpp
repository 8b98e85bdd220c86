// kafka::Collector on a scripted admin: what it asks for, and how it shapes partial failures.
// (Its real counterpart is tested against a real broker in tests/integration.)
#include "kafka/collector.h"

#include <catch.hpp>

#include "fake_kafka_admin.h"

namespace {

using lagsight::config::KafkaClusterConfig;
using lagsight::config::NameFilter;
using lagsight::kafka::Collector;
using lagsight::kafka::GroupKind;
using lagsight::testing::FakeKafkaAdmin;

struct Fixture {
  KafkaClusterConfig config;
  FakeKafkaAdmin* admin = nullptr;  // owned by the collector

  Fixture() {
    config.name = "test";
    config.bootstrap_servers = {"b:9092"};
  }

  Collector Make() {
    auto owned = std::make_unique<FakeKafkaAdmin>();
    admin = owned.get();
    return Collector(config, std::move(owned));
  }

  void Script() {
    admin->listings = {{"flink-job", "empty", true},
                       {"app", "stable", false},
                       {"console-consumer-1", "stable", false},
                       {"kip848", "stable", false}};
    admin->descriptions["flink-job"] = {"flink-job", "empty", true, 0, false, std::nullopt};
    admin->descriptions["app"] = {"app", "stable", false, 2, false, std::nullopt};
    admin->descriptions["console-consumer-1"] = {"console-consumer-1", "stable", false, 1, false,
                                                 std::nullopt};
    // What Kafka 4.1's classic DescribeGroups says of a KIP-848 group, as librdkafka 2.0.2 reads
    // it.
    admin->descriptions["kip848"] = {"kip848", "dead", true, 0, false, std::nullopt};
    admin->committed["flink-job"] = lagsight::kafka::CommittedOffsets{{{"orders", 0}, 5}};
    admin->committed["app"] =
        lagsight::kafka::CommittedOffsets{{{"orders", 1}, 7}, {{"__internal", 0}, 1}};
    admin->committed["kip848"] = lagsight::kafka::CommittedOffsets{{{"audit", 0}, 3}};
    admin->topics = {{"orders", 2}, {"audit", 1}, {"__internal", 1}, {"unrelated", 8}};
    admin->log_end = {
        {{"orders", 0}, 10}, {{"orders", 1}, 20}, {{"audit", 0}, 3}, {{"__internal", 0}, 1}};
    admin->log_start = {
        {{"orders", 0}, 0}, {{"orders", 1}, 0}, {{"audit", 0}, 0}, {{"__internal", 0}, 0}};
  }
};

}  // namespace

TEST_CASE("filters apply before anything is fetched") {
  Fixture f;
  f.config.groups = *NameFilter::Create({}, {"console-consumer-.*"});
  f.config.topics = *NameFilter::Create({}, {"__.*"});
  f.config.max_concurrent_requests = 3;
  Collector collector = f.Make();
  f.Script();
  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());

  CHECK(f.admin->described_ids == std::vector<std::string>{"app", "flink-job", "kip848"});
  CHECK(f.admin->offset_ids == std::vector<std::string>{"app", "flink-job", "kip848"});
  CHECK(f.admin->max_in_flight_seen == 3);
  // Only partitions of consumed, accepted topics: not __internal, not unrelated.
  CHECK(f.admin->offsets_asked ==
        std::set<lagsight::kafka::TopicPartition>{{"audit", 0}, {"orders", 0}, {"orders", 1}});
  REQUIRE(snapshot->groups.size() == 3);
  CHECK(snapshot->groups[0].committed.size() == 1);  // app's __internal commit dropped
}

TEST_CASE("group kinds: simple, classic, and KIP-848 groups the classic API cannot describe") {
  Fixture f;
  Collector collector = f.Make();
  f.Script();
  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());
  std::map<std::string, const lagsight::kafka::ConsumerGroup*> by_id;
  for (const auto& group : snapshot->groups) by_id[group.id] = &group;
  CHECK(by_id.at("flink-job")->kind == GroupKind::kSimple);
  CHECK(*by_id.at("flink-job")->members == 0);
  CHECK(by_id.at("app")->kind == GroupKind::kClassic);
  CHECK(*by_id.at("app")->members == 2);
  CHECK(by_id.at("kip848")->kind == GroupKind::kConsumer);
  CHECK(by_id.at("kip848")->state == "stable");  // from the listing
  CHECK_FALSE(by_id.at("kip848")->members.has_value());
  CHECK(snapshot->partial_errors.empty());  // not-found is a kind, not an error
}

TEST_CASE("a cluster that cannot list its groups fails the poll") {
  Fixture f;
  Collector collector = f.Make();
  f.Script();
  f.admin->list_groups_error = "listing consumer groups: Local: Broker transport failure";
  const auto snapshot = collector.Poll();
  REQUIRE_FALSE(snapshot.ok());
  CHECK(snapshot.error().message == "listing consumer groups: Local: Broker transport failure");
}

TEST_CASE("no log-end offsets fails the poll: there is no lag to report") {
  Fixture f;
  Collector collector = f.Make();
  f.Script();
  f.admin->log_end_error = "listing offsets: Local: Timed out";
  CHECK_FALSE(collector.Poll().ok());
}

TEST_CASE("one group's or partition's failure is partial, the rest is reported") {
  Fixture f;
  Collector collector = f.Make();
  f.Script();
  f.admin->committed_errors["app"] = "Broker: Coordinator not available";
  f.admin->log_end.erase({"orders", 1});
  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());
  CHECK(snapshot->partial_errors ==
        std::vector<std::string>{
            "reading committed offsets of group \"app\": Broker: Coordinator not available",
            "log-end offset of orders/1: leader not available"});
  const auto& app = snapshot->groups[0];
  CHECK(app.id == "app");
  CHECK_FALSE(app.offsets_known);
  CHECK_FALSE(snapshot->partitions.at({"orders", 1}).log_end.has_value());
  CHECK(*snapshot->partitions.at({"orders", 0}).log_end == 10);
}

TEST_CASE("partitions of a consumed topic without commits are still read") {
  Fixture f;
  Collector collector = f.Make();
  f.Script();
  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());
  CHECK(snapshot->topic_partitions.at("orders") == 2);
  CHECK(snapshot->partitions.contains({"orders", 1}));
}
