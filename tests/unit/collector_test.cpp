// kafka::Collector on a scripted admin: what it asks for, and how it shapes partial failures.
// (Its real counterpart is tested against a real broker in tests/integration.)
#include "kafka/collector.h"

#include <catch2/catch.hpp>

#include "fake_kafka_admin.h"
#include "flink/snapshot.h"

namespace {

using lagsight::config::KafkaClusterConfig;
using lagsight::config::NameFilter;
using lagsight::kafka::BootstrapIdentity;
using lagsight::kafka::ClusterMismatch;
using lagsight::kafka::Collector;
using lagsight::kafka::CommittedOffsets;
using lagsight::kafka::GroupKind;
using lagsight::kafka::RecordKey;
using lagsight::testing::FakeKafkaAdmin;

std::map<RecordKey, std::int64_t> Millis(
    const std::map<RecordKey, lagsight::kafka::RecordTimestamp>& timestamps) {
  std::map<RecordKey, std::int64_t> out;
  for (const auto& [key, timestamp] : timestamps) out[key] = timestamp.ms;
  return out;
}

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
    return Collector(config, std::move(owned), [this] { return now; });
  }
  std::chrono::steady_clock::time_point now{std::chrono::hours(1)};  // what the collector reads

  void Script() {
    admin->listings = {{"flink-job", "empty", true},
                       {"app", "stable", false},
                       {"console-consumer-1", "stable", false},
                       {"kip848", "stable", false}};
    admin->descriptions["flink-job"] = {"flink-job", "empty", true, 0, false, std::nullopt, {}, {}};
    admin->descriptions["app"] = {"app", "stable", false, 2, false, std::nullopt, {}, {}};
    admin->descriptions["console-consumer-1"] = {"console-consumer-1", "stable", false, 1, false,
                                                 std::nullopt,         {},       {}};
    // What Kafka 4.1's classic DescribeGroups says of a KIP-848 group, as librdkafka 2.0.2 reads
    // it.
    admin->descriptions["kip848"] = {"kip848", "dead", true, 0, false, std::nullopt, {}, {}};
    admin->committed["flink-job"] = lagsight::kafka::CommittedOffsets{{{"orders", 0}, 5}};
    admin->committed["app"] =
        lagsight::kafka::CommittedOffsets{{{"orders", 1}, 7}, {{"__internal", 0}, 1}};
    admin->committed["kip848"] = lagsight::kafka::CommittedOffsets{{{"audit", 0}, 3}};
    admin->topics = {{"orders", 2}, {"audit", 1}, {"__internal", 1}, {"unrelated", 8}};
    admin->log_end = {
        {{"orders", 0}, 10}, {{"orders", 1}, 20}, {{"audit", 0}, 3}, {{"__internal", 0}, 1}};
    admin->log_start = {
        {{"orders", 0}, 0}, {{"orders", 1}, 0}, {{"audit", 0}, 0}, {{"__internal", 0}, 0}};
    admin->broker_configs["offsets.retention.minutes"] = "10080";
    admin->record_timestamps = {{{{"orders", 0}, 5}, 1'700'000'000'000},
                                {{{"orders", 1}, 7}, 1'700'000'001'000}};
  }
};

// Groups on one topic "t" whose lagging positions are, by lag: t/0@10 (90, two groups there),
// t/2@30 (log start above the commit at 0: lag 40), t/1@50 (10); t/3 is caught up.
void ScriptLaggingGroups(FakeKafkaAdmin& admin) {
  admin.listings = {{"g1", "empty", true},
                    {"g2", "empty", true},
                    {"g3", "empty", true},
                    {"g4", "empty", true},
                    {"g5", "empty", true}};
  admin.committed["g1"] = CommittedOffsets{{{"t", 0}, 10}};
  admin.committed["g2"] = CommittedOffsets{{{"t", 0}, 10}, {{"t", 3}, 7}};
  admin.committed["g3"] = CommittedOffsets{{{"t", 1}, 50}};
  admin.committed["g4"] = CommittedOffsets{{{"t", 2}, 0}};
  admin.committed["g5"] = CommittedOffsets{{{"t", 3}, 7}};
  admin.topics = {{"t", 4}};
  admin.log_end = {{{"t", 0}, 100}, {{"t", 1}, 60}, {{"t", 2}, 40}, {{"t", 3}, 7}};
  admin.log_start = {{{"t", 0}, 0}, {{"t", 1}, 0}, {{"t", 2}, 30}, {{"t", 3}, 0}};
  admin.broker_configs["offsets.retention.minutes"] = "10080";
  admin.record_timestamps = {{{{"t", 0}, 10}, 1000},
                             {{{"t", 0}, 20}, 2000},
                             {{{"t", 1}, 50}, 5000},
                             {{{"t", 2}, 30}, 3000}};
}

}  // namespace

TEST_CASE("filters apply before anything is fetched", "[kafka]") {
  Fixture f;
  f.config.groups = *NameFilter::Create({}, {"console-consumer-.*"});
  f.config.topics = *NameFilter::Create({}, {"__.*"});
  f.config.max_concurrent_requests = 3;
  Collector collector = f.Make();
  f.Script();
  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());

  // flink-job is listed simple: nothing to describe (no members, no assignment).
  CHECK(f.admin->described_ids == std::vector<std::string>{"app", "kip848"});
  CHECK(f.admin->offset_ids == std::vector<std::string>{"app", "flink-job", "kip848"});
  CHECK(f.admin->max_in_flight_seen == 3);
  // Only partitions of consumed, accepted topics: not __internal, not unrelated.
  CHECK(f.admin->offsets_asked ==
        std::set<lagsight::kafka::TopicPartition>{{"audit", 0}, {"orders", 0}, {"orders", 1}});
  REQUIRE(snapshot->groups.size() == 3);
  CHECK(snapshot->groups[0].committed.size() == 1);  // app's __internal commit dropped
}

TEST_CASE("a shard reads only its own groups, and only the topics they need", "[kafka]") {
  // FNV-1a 64 modulo 2: "app" hashes to shard 0; "console-consumer-1", "flink-job" and "kip848"
  // to shard 1.
  std::map<int, std::vector<std::string>> read_by;
  std::map<int, std::set<lagsight::kafka::TopicPartition>> offsets_by;
  for (int index = 0; index < 2; ++index) {
    Fixture f;
    f.config.shard = {index, 2};
    Collector collector = f.Make();
    f.Script();
    const auto snapshot = collector.Poll();
    REQUIRE(snapshot.ok());
    read_by[index] = f.admin->offset_ids;
    offsets_by[index] = f.admin->offsets_asked;
    for (const auto& group : snapshot->groups) CHECK(f.config.shard.Owns(group.id));
  }
  CHECK(read_by[0] == std::vector<std::string>{"app"});
  CHECK(read_by[1] == std::vector<std::string>{"console-consumer-1", "flink-job", "kip848"});
  // Every partition of a topic a shard's groups committed on: "orders" on both, "audit" (only
  // kip848's) on shard 1 alone.
  CHECK(offsets_by[0] ==
        std::set<lagsight::kafka::TopicPartition>{{"__internal", 0}, {"orders", 0}, {"orders", 1}});
  CHECK(offsets_by[1] ==
        std::set<lagsight::kafka::TopicPartition>{{"audit", 0}, {"orders", 0}, {"orders", 1}});
}

TEST_CASE("group kinds: simple, classic, and KIP-848 groups the classic API cannot describe",
          "[kafka]") {
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

TEST_CASE("a simple group is described only when the listing could not name its state", "[kafka]") {
  Fixture f;
  Collector collector = f.Make();
  f.Script();
  // A broker before Kafka 2.6 lists no states (ListGroups v3): librdkafka says "unknown".
  f.admin->listings.push_back({"old-broker-job", "unknown", true});
  f.admin->descriptions["old-broker-job"] = {"old-broker-job", "empty", true, 0, false,
                                             std::nullopt,     {},      {}};
  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());
  CHECK(f.admin->described_ids ==
        std::vector<std::string>{"app", "console-consumer-1", "kip848", "old-broker-job"});
  for (const auto& group : snapshot->groups) {
    if (group.id == "old-broker-job") CHECK(group.state == "empty");
    if (group.id == "flink-job") CHECK(group.state == "empty");  // the listing's
  }
}

TEST_CASE("a cluster that cannot list its groups fails the poll", "[kafka]") {
  Fixture f;
  Collector collector = f.Make();
  f.Script();
  f.admin->list_groups_error = "listing consumer groups: Local: Broker transport failure";
  const auto snapshot = collector.Poll();
  REQUIRE_FALSE(snapshot.ok());
  CHECK(snapshot.error().message == "listing consumer groups: Local: Broker transport failure");
}

TEST_CASE("no log-end offsets fails the poll: there is no lag to report", "[kafka]") {
  Fixture f;
  Collector collector = f.Make();
  f.Script();
  f.admin->log_end_error = "listing offsets: Local: Timed out";
  CHECK_FALSE(collector.Poll().ok());
}

TEST_CASE("one group's or partition's failure is partial, the rest is reported", "[kafka]") {
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

TEST_CASE("a topic that members are assigned but metadata hides is a partial error", "[kafka]") {
  Fixture f;
  f.config.topics = *NameFilter::Create({}, {"__.*"});
  Collector collector = f.Make();
  f.Script();
  // What Kafka shows a principal without Describe on "payments": absent from metadata and from
  // the group's committed offsets, named only in its members' assignment. "__hidden" is
  // excluded by the topic filter, so its absence is the user's choice, not a hole.
  f.admin->descriptions["app"].assigned_topics = {"orders", "payments", "__hidden"};
  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());
  CHECK(snapshot->partial_errors ==
        std::vector<std::string>{
            "group \"app\" is assigned topic \"payments\", which the cluster's metadata does "
            "not show to lagsight (no Describe permission on it, or being created or deleted): the "
            "group's "
            "lag on it is not reported"});
  CHECK(snapshot->groups[0].committed.size() == 1);  // what is visible is still reported
}

TEST_CASE("a classic group's members keep their assignments on the topics the filter accepts",
          "[kafka]") {
  Fixture f;
  f.config.topics = *NameFilter::Create({}, {"__.*"});
  Collector collector = f.Make();
  f.Script();
  f.admin->descriptions["app"].member_list = {
      {"m-1", "client-a", "/10.0.0.1", "", {{"__internal", 0}, {"orders", 1}}},
      {"m-2", "client-b", "/10.0.0.2", "static-2", {{"orders", 0}}}};
  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());
  const auto app = std::find_if(snapshot->groups.begin(), snapshot->groups.end(),
                                [](const auto& group) { return group.id == "app"; });
  REQUIRE(app != snapshot->groups.end());
  REQUIRE(app->member_list.size() == 2);
  CHECK(app->member_list[0].assignment ==
        std::vector<lagsight::kafka::TopicPartition>{{"orders", 1}});
  CHECK(app->member_list[1].group_instance_id == "static-2");
  CHECK(app->member_list[1].host == "/10.0.0.2");
  // A KIP-848 group that the classic describe answers as dead keeps no members.
  const auto kip848 = std::find_if(snapshot->groups.begin(), snapshot->groups.end(),
                                   [](const auto& group) { return group.id == "kip848"; });
  REQUIRE(kip848 != snapshot->groups.end());
  CHECK(kip848->member_list.empty());
}

TEST_CASE("partitions of a consumed topic without commits are still read", "[kafka]") {
  Fixture f;
  Collector collector = f.Make();
  f.Script();
  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());
  CHECK(snapshot->topic_partitions.at("orders") == 2);
  CHECK(snapshot->partitions.contains({"orders", 1}));
}

TEST_CASE("record timestamps: lagging positions, deduplicated, largest lag first, within budget",
          "[kafka]") {
  Fixture f;
  f.config.lag_seconds_fetch_budget = 2;
  Collector collector = f.Make();
  ScriptLaggingGroups(*f.admin);
  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());
  // g1 and g2 wait at the same position: one fetch. Caught-up t/3 is not fetched at all.
  REQUIRE(f.admin->timestamp_requests.size() == 1);
  CHECK(f.admin->timestamp_requests[0] == std::vector<RecordKey>{{{"t", 0}, 10}, {{"t", 2}, 30}});
  // Beyond the budget (t/1@50) is simply absent.
  CHECK(Millis(snapshot->record_timestamps) ==
        std::map<RecordKey, std::int64_t>{{{{"t", 0}, 10}, 1000}, {{{"t", 2}, 30}, 3000}});
  CHECK(snapshot->record_timestamp_fetches_total == 2);
  CHECK(snapshot->record_timestamp_cache_entries == 2);
  CHECK(snapshot->partial_errors.empty());
}

TEST_CASE("record timestamps: cached positions are reused, and dropped once no group waits there",
          "[kafka]") {
  Fixture f;
  f.config.lag_seconds_fetch_budget = 2;
  Collector collector = f.Make();
  ScriptLaggingGroups(*f.admin);
  REQUIRE(collector.Poll().ok());

  // Second poll: the two cached positions cost nothing, the budget reaches the third.
  auto second = collector.Poll();
  REQUIRE(second.ok());
  REQUIRE(f.admin->timestamp_requests.size() == 2);
  CHECK(f.admin->timestamp_requests[1] == std::vector<RecordKey>{{{"t", 1}, 50}});
  CHECK(Millis(second->record_timestamps).size() == 3);
  CHECK(second->record_timestamp_fetches_total == 3);

  // Nothing new: no fetch at all.
  REQUIRE(collector.Poll().ok());
  CHECK(f.admin->timestamp_requests.size() == 2);

  // Both groups on t/0 move on: the new position is fetched, the old one leaves the cache.
  f.admin->committed["g1"] = CommittedOffsets{{{"t", 0}, 20}};
  f.admin->committed["g2"] = CommittedOffsets{{{"t", 0}, 20}};
  auto moved = collector.Poll();
  REQUIRE(moved.ok());
  REQUIRE(f.admin->timestamp_requests.size() == 3);
  CHECK(f.admin->timestamp_requests[2] == std::vector<RecordKey>{{{"t", 0}, 20}});
  CHECK(Millis(moved->record_timestamps) ==
        std::map<RecordKey, std::int64_t>{
            {{{"t", 0}, 20}, 2000}, {{{"t", 1}, 50}, 5000}, {{{"t", 2}, 30}, 3000}});
  CHECK(moved->record_timestamp_cache_entries == 3);
  CHECK(moved->record_timestamp_fetches_total == 4);
}

TEST_CASE("record timestamps: positions a read passed on its way need no read of their own",
          "[kafka]") {
  Fixture f;
  f.config.lag_seconds_fetch_budget = 1;
  Collector collector = f.Make();
  ScriptLaggingGroups(*f.admin);
  // The budget allows one read, the largest lag (t/0@10); the reader's pass over t/1, as the
  // fake answers it, covers records 50, 52 and 55 (51 a transaction marker or compacted away).
  f.admin->runs = {
      {{"t", 1}, false, 50, {{50, {5000, false}}, {52, {5200, false}}, {55, {5500, true}}}}};
  auto first = collector.Poll();
  REQUIRE(first.ok());
  REQUIRE(f.admin->timestamp_requests.size() == 1);
  CHECK(f.admin->timestamp_requests[0] == std::vector<RecordKey>{{{"t", 0}, 10}});
  // t/1@50, past the budget, is answered by the pass in the same poll.
  CHECK(Millis(first->record_timestamps).at({{"t", 1}, 50}) == 5000);
  CHECK(first->record_timestamp_fetches_total == 1);
  f.admin->runs.clear();

  // g3 moves to 51 and g4's group joins it at 55: both among the records read, no read; the first
  // record at or after 51 is the one at 52.
  f.admin->committed["g3"] = CommittedOffsets{{{"t", 1}, 51}};
  f.admin->committed["g4"] = CommittedOffsets{{{"t", 1}, 55}};
  auto moved = collector.Poll();
  REQUIRE(moved.ok());
  const auto timestamps = Millis(moved->record_timestamps);
  CHECK(timestamps.at({{"t", 1}, 51}) == 5200);
  CHECK(timestamps.at({{"t", 1}, 55}) == 5500);
  CHECK(moved->record_timestamps.at({{"t", 1}, 55}).log_append_time);
  for (const auto& request : f.admin->timestamp_requests) {
    for (const RecordKey& key : request) {
      CHECK(key.partition != lagsight::kafka::TopicPartition{"t", 1});
    }
  }

  // Beyond the last record read (56): unknown, read.
  f.admin->committed["g4"] = CommittedOffsets{{{"t", 1}, 56}};
  f.admin->record_timestamps[{{"t", 1}, 56}] = 5600;
  const std::size_t before = f.admin->timestamp_requests.size();
  REQUIRE(collector.Poll().ok());
  REQUIRE(f.admin->timestamp_requests.size() == before + 1);
  const std::vector<RecordKey>& last = f.admin->timestamp_requests.back();
  CHECK(std::find(last.begin(), last.end(), RecordKey{{"t", 1}, 56}) != last.end());
}

TEST_CASE("record timestamps: a failed fetch is partial, not cached, and tried again", "[kafka]") {
  Fixture f;
  Collector collector = f.Make();
  ScriptLaggingGroups(*f.admin);
  f.admin->record_timestamps.erase({{"t", 1}, 50});
  const auto first = collector.Poll();
  REQUIRE(first.ok());
  CHECK(first->partial_errors ==
        std::vector<std::string>{"record timestamp at t/1@50: Broker: Not leader"});
  CHECK_FALSE(Millis(first->record_timestamps).contains({{"t", 1}, 50}));
  CHECK(Millis(first->record_timestamps).size() == 2);

  f.admin->record_timestamps[{{"t", 1}, 50}] = 5000;
  const auto second = collector.Poll();
  REQUIRE(second.ok());
  CHECK(f.admin->timestamp_requests.back() == std::vector<RecordKey>{{{"t", 1}, 50}});
  CHECK(Millis(second->record_timestamps).at({{"t", 1}, 50}) == 5000);
  CHECK(second->partial_errors.empty());
}

TEST_CASE("record timestamps: a budget of 0 reads none", "[kafka]") {
  Fixture f;
  f.config.lag_seconds_fetch_budget = 0;
  Collector collector = f.Make();
  ScriptLaggingGroups(*f.admin);
  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());
  CHECK(f.admin->timestamp_requests.empty());
  CHECK(Millis(snapshot->record_timestamps).empty());
  CHECK(snapshot->record_timestamp_fetches_total == 0);
}

TEST_CASE("offsets retention: minutes read from the broker, carried across polls", "[kafka]") {
  Fixture f;
  Collector collector = f.Make();
  f.Script();
  f.admin->broker_configs["offsets.retention.minutes"] = "3";
  const auto first = collector.Poll();
  REQUIRE(first.ok());
  CHECK(first->offsets_retention_seconds == 180.0);
  const auto second = collector.Poll();
  REQUIRE(second.ok());
  CHECK(second->offsets_retention_seconds == 180.0);
  // Read once: the next read is due after Collector::kRetentionRefresh.
  CHECK(f.admin->broker_configs_asked == std::vector<std::string>{"offsets.retention.minutes"});
}

TEST_CASE("offsets retention: re-read once kRetentionRefresh has passed, not before", "[kafka]") {
  Fixture f;
  Collector collector = f.Make();
  f.Script();
  f.admin->broker_configs["offsets.retention.minutes"] = "3";
  REQUIRE(collector.Poll().ok());
  f.admin->broker_configs["offsets.retention.minutes"] = "60";  // an operator changed it
  f.now += Collector::kRetentionRefresh - std::chrono::seconds(1);
  const auto before = collector.Poll();
  REQUIRE(before.ok());
  CHECK(before->offsets_retention_seconds == 180.0);
  f.now += std::chrono::seconds(1);
  const auto after = collector.Poll();
  REQUIRE(after.ok());
  CHECK(after->offsets_retention_seconds == 3600.0);
  CHECK(f.admin->broker_configs_asked.size() == 2);
}

TEST_CASE("offsets retention: a failed read is partial and retried at the next poll", "[kafka]") {
  Fixture f;
  Collector collector = f.Make();
  f.Script();
  f.admin->broker_config_error = "describing broker 1: Broker: Cluster authorization failed";
  const auto failed = collector.Poll();
  REQUIRE(failed.ok());
  CHECK_FALSE(failed->offsets_retention_seconds.has_value());
  CHECK(failed->partial_errors ==
        std::vector<std::string>{"reading broker config offsets.retention.minutes: describing "
                                 "broker 1: Broker: Cluster authorization failed"});

  f.admin->broker_config_error.reset();
  f.admin->broker_configs["offsets.retention.minutes"] = "soon";
  const auto garbled = collector.Poll();
  REQUIRE(garbled.ok());
  CHECK(
      garbled->partial_errors ==
      std::vector<std::string>{
          "broker config offsets.retention.minutes is \"soon\", not a positive number of minutes"});

  f.admin->broker_configs["offsets.retention.minutes"] = "10080";
  const auto good = collector.Poll();
  REQUIRE(good.ok());
  CHECK(good->offsets_retention_seconds == 604800.0);
  CHECK(f.admin->broker_configs_asked.size() == 3);
}

TEST_CASE("bootstraps: one address is answered by the main client", "[kafka]") {
  Fixture f;
  f.config.topics = *NameFilter::Create({}, {"__.*"});
  Collector collector = f.Make();
  f.Script();
  f.admin->cluster_id = "cluster-A";
  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());
  CHECK(f.admin->identify_calls == 0);
  CHECK(snapshot->cluster_id == "cluster-A");
  REQUIRE(snapshot->bootstraps.size() == 1);
  CHECK(snapshot->bootstraps[0].address == "b:9092");
  CHECK(snapshot->bootstraps[0].cluster_id == "cluster-A");
  CHECK(snapshot->bootstraps[0].topic_partitions ==
        std::map<std::string, std::int32_t>{{"audit", 1}, {"orders", 2}, {"unrelated", 8}});
  CHECK_FALSE(ClusterMismatch(*snapshot));
}

TEST_CASE("bootstraps: several addresses are each asked, filtered, and compared", "[kafka]") {
  Fixture f;
  f.config.bootstrap_servers = {"a:9092", "b:9092", "c:9092"};
  f.config.topics = *NameFilter::Create({}, {"__.*"});
  Collector collector = f.Make();
  f.Script();
  f.admin->cluster_id = "cluster-A";
  f.admin->bootstrap_identities = {
      {"a:9092", "cluster-A", "", {{"orders", 2}, {"__consumer_offsets", 50}}},
      {"b:9092", std::nullopt, "reading topic metadata: Local: Broker transport failure", {}},
      {"c:9092", "cluster-A", "", {{"orders", 2}}}};
  const auto same = collector.Poll();
  REQUIRE(same.ok());
  CHECK(f.admin->identify_calls == 1);
  REQUIRE(same->bootstraps.size() == 3);
  CHECK(same->bootstraps[0].topic_partitions == std::map<std::string, std::int32_t>{{"orders", 2}});
  CHECK(same->bootstraps[1].error == "reading topic metadata: Local: Broker transport failure");
  // An address that does not answer is no evidence of another cluster.
  CHECK_FALSE(ClusterMismatch(*same));

  REQUIRE_FALSE(same->groups.empty());

  // Two clusters answer: they are reported, and nothing is read through the mixed list.
  f.admin->bootstrap_identities[2].cluster_id = "cluster-B";
  const std::size_t described_before = f.admin->described_ids.size();
  const std::size_t offsets_before = f.admin->offset_ids.size();
  const auto mixed = collector.Poll();
  REQUIRE(mixed.ok());
  CHECK(ClusterMismatch(*mixed));
  CHECK(mixed->bootstraps.size() == 3);
  CHECK(mixed->groups.empty());
  CHECK(mixed->partitions.empty());
  CHECK(f.admin->described_ids.size() == described_before);
  CHECK(f.admin->offset_ids.size() == offsets_before);
  REQUIRE(same->record_timestamp_fetches_total > 0);
  CHECK(mixed->record_timestamp_fetches_total == same->record_timestamp_fetches_total);
  REQUIRE(mixed->partial_errors.size() == 1);
  CHECK(mixed->partial_errors[0] ==
        "no group or offset is read: the bootstrap addresses name different clusters (a:9092 "
        "\u2192 cluster-A, c:9092 \u2192 cluster-B); list the addresses of one cluster in "
        "bootstrap_servers");
}

TEST_CASE("record timestamps: a Flink reader's lagging positions are read beside the groups'",
          "[kafka]") {
  Fixture f;
  Collector collector = f.Make();
  f.admin->listings = {{"g", "empty", true}};
  f.admin->committed["g"] = CommittedOffsets{{{"a.b", 0}, 10}};
  // "a.b" and "a_b" both unify to "a_b" (as Flink's metric ids name them); "c" is read by the job
  // alone.
  f.admin->topics = {{"a.b", 1}, {"a_b", 1}, {"c", 2}};
  f.admin->log_end = {{{"a.b", 0}, 100}, {{"a_b", 0}, 30}, {{"c", 0}, 8}, {{"c", 1}, 50}};
  f.admin->log_start = {{{"a.b", 0}, 0}, {{"a_b", 0}, 0}, {{"c", 0}, 0}, {{"c", 1}, 20}};
  f.admin->broker_configs["offsets.retention.minutes"] = "10080";
  f.admin->record_timestamps = {
      {{{"a.b", 0}, 10}, 1000}, {{{"a.b", 0}, 40}, 4000}, {{{"a_b", 0}, 40}, 4100}};
  f.admin->log_append_time = {{{"a.b", 0}, 40}};
  lagsight::kafka::ExtraReads reads;
  reads.unified_topics = {"a_b", "c"};
  // a_b/0@40 lags on "a.b" (60) and is beyond "a_b"'s log end (30); c/0@8 is at log end, and
  // c/1@10 was deleted (log start 20): only a.b/0@40 is read for the job.
  reads.positions = {{"a_b", 0, 40, false}, {"c", 0, 8, false}, {"c", 1, 10, false}};
  const auto snapshot = collector.Poll(reads);
  REQUIRE(snapshot.ok());
  REQUIRE(f.admin->timestamp_requests.size() == 1);
  // Largest lag first: the group's position (90), then the job's (60).
  CHECK(f.admin->timestamp_requests[0] ==
        std::vector<RecordKey>{{{"a.b", 0}, 10}, {{"a.b", 0}, 40}});
  CHECK(snapshot->record_timestamps.at({{"a.b", 0}, 40}) ==
        lagsight::kafka::RecordTimestamp{4000, true});
  CHECK(snapshot->record_timestamps.at({{"a.b", 0}, 10}) ==
        lagsight::kafka::RecordTimestamp{1000, false});
  CHECK(snapshot->partitions.contains({"c", 1}));  // the job's topics' log offsets are read

  // The job moves on: its old position leaves the cache, the new one is read.
  reads.positions = {{"a_b", 0, 41, false}};
  f.admin->record_timestamps[{{"a.b", 0}, 41}] = 4001;
  const auto moved = collector.Poll(reads);
  REQUIRE(moved.ok());
  CHECK(f.admin->timestamp_requests.back() == std::vector<RecordKey>{{{"a.b", 0}, 41}});
  CHECK(Millis(moved->record_timestamps) ==
        std::map<RecordKey, std::int64_t>{{{{"a.b", 0}, 10}, 1000}, {{{"a.b", 0}, 41}, 4001}});
}

TEST_CASE("collision-unified topic names are the names Flink's metric ids use", "[kafka]") {
  // The Flink jobs' reads reach the collector under the names Flink gives topics; the two rules
  // must stay one.
  for (const std::string topic : {"orders", "orders.v2", "a.b_c..d", "", "."}) {
    CHECK(lagsight::kafka::UnifyCollisionChars(topic) == lagsight::flink::MetricTopicName(topic));
  }
  CHECK(lagsight::kafka::UnifyCollisionChars("orders.v2.eu") == "orders_v2_eu");
}

TEST_CASE(
    "read_committed readers: last stable offsets read for their topics only, and their "
    "positions read as they read",
    "[kafka]") {
  Fixture f;
  f.config.read_committed_groups = {*lagsight::config::Pattern::Compile("ledger-.*")};
  Collector collector = f.Make();
  f.admin->listings = {{"ledger-eu", "empty", true}, {"audit", "empty", true}};
  f.admin->committed["ledger-eu"] = CommittedOffsets{{{"payments", 0}, 50}};
  f.admin->committed["audit"] = CommittedOffsets{{{"payments", 0}, 50}, {{"orders", 0}, 5}};
  f.admin->topics = {{"payments", 1}, {"orders", 1}, {"refunds.v1", 1}};
  f.admin->log_end = {{{"payments", 0}, 81}, {{"orders", 0}, 10}, {{"refunds.v1", 0}, 30}};
  f.admin->log_start = {{{"payments", 0}, 0}, {{"orders", 0}, 0}, {{"refunds.v1", 0}, 0}};
  f.admin->last_stable = {{{"payments", 0}, 51}, {{"refunds.v1", 0}, 12}};
  f.admin->broker_configs["offsets.retention.minutes"] = "10080";
  // The read_committed group at 50 finds only the commit marker up to 51; the other group, at
  // the same offset, reads the open transaction's first record.
  f.admin->markers_only = {{{{"payments", 0}, 50, true}, 51}};
  f.admin->record_timestamps = {{{{"payments", 0}, 50, false}, 5000},
                                {{{"orders", 0}, 5, false}, 500},
                                {{{"refunds.v1", 0}, 4, true}, 400}};
  // A read_committed Flink job reads refunds.v1 at 4 (its metric ids say "refunds_v1").
  lagsight::kafka::ExtraReads reads;
  reads.unified_topics = {"refunds_v1"};
  reads.read_committed_topics = {"refunds_v1"};
  reads.positions = {{"refunds_v1", 0, 4, true}, {"refunds_v1", 0, 20, true}};

  const auto snapshot = collector.Poll(reads);
  REQUIRE(snapshot.ok());
  CHECK(f.admin->last_stable_asked ==
        std::set<lagsight::kafka::TopicPartition>{{"payments", 0}, {"refunds.v1", 0}});
  CHECK(snapshot->partitions.at({"payments", 0}).last_stable == 51);
  CHECK(snapshot->partitions.at({"refunds.v1", 0}).last_stable == 12);
  CHECK_FALSE(snapshot->partitions.at({"orders", 0}).last_stable.has_value());
  CHECK(snapshot->groups[1].id == "ledger-eu");
  CHECK(snapshot->groups[1].read_committed);
  CHECK_FALSE(snapshot->groups[0].read_committed);
  // Each position as its reader reads it; the job's position at 20 is past the last stable
  // offset (12): nothing it may read yet, so nothing to date.
  REQUIRE(f.admin->timestamp_requests.size() == 1);
  const auto& asked = f.admin->timestamp_requests[0];
  CHECK(std::set<RecordKey>(asked.begin(), asked.end()) ==
        std::set<RecordKey>{{{"payments", 0}, 50, false},
                            {{"payments", 0}, 50, true},
                            {{"orders", 0}, 5, false},
                            {{"refunds.v1", 0}, 4, true}});
  CHECK(snapshot->markers_only ==
        std::map<RecordKey, std::int64_t>{{{{"payments", 0}, 50, true}, 51}});
  CHECK(Millis(snapshot->record_timestamps) ==
        std::map<RecordKey, std::int64_t>{{{{"payments", 0}, 50, false}, 5000},
                                          {{{"orders", 0}, 5, false}, 500},
                                          {{{"refunds.v1", 0}, 4, true}, 400}});
}

TEST_CASE("read_committed readers: none configured, no last stable offset is read", "[kafka]") {
  Fixture f;
  Collector collector = f.Make();
  f.Script();
  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());
  CHECK(f.admin->last_stable_asked.empty());
  for (const auto& [tp, offsets] : snapshot->partitions) CHECK_FALSE(offsets.last_stable);
}

TEST_CASE("read_committed readers: a failed last-stable read is partial, and the lag falls back",
          "[kafka]") {
  Fixture f;
  f.config.read_committed_groups = {*lagsight::config::Pattern::Compile("flink-job")};
  Collector collector = f.Make();
  f.Script();  // no last stable offsets scripted: every partition fails
  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());
  CHECK(f.admin->last_stable_asked ==
        std::set<lagsight::kafka::TopicPartition>{{"orders", 0}, {"orders", 1}});
  CHECK(std::count_if(snapshot->partial_errors.begin(), snapshot->partial_errors.end(),
                      [](const std::string& e) {
                        return e.rfind("last stable offset of orders/", 0) == 0;
                      }) == 2);
  CHECK(lagsight::kafka::ReadableEnd(snapshot->partitions.at({"orders", 0}), true) == 10);
}
