// kafka::Collector on a scripted admin: what it asks for, and how it shapes partial failures.
// (Its real counterpart is tested against a real broker in tests/integration.)
#include "kafka/collector.h"

#include <catch2/catch.hpp>

#include "collector_fixture.h"
#include "flink/snapshot.h"

using namespace lagsight::testing;  // NOLINT: the fixture and its names

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
  // Out of order, and an unlucky answer naming m-2 twice and orders/0 twice in its assignment:
  // each once, or the exposition would carry duplicate series.
  f.admin->descriptions["app"].member_list = {
      {"m-2", "client-b", "/10.0.0.2", "static-2", {{"orders", 0}, {"orders", 0}}},
      {"m-1", "client-a", "/10.0.0.1", "", {{"orders", 1}, {"__internal", 0}}},
      {"m-2", "client-b", "/10.0.0.2", "static-2", {{"orders", 0}}}};
  const auto snapshot = collector.Poll();
  REQUIRE(snapshot.ok());
  const auto app = std::find_if(snapshot->groups.begin(), snapshot->groups.end(),
                                [](const auto& group) { return group.id == "app"; });
  REQUIRE(app != snapshot->groups.end());
  REQUIRE(app->member_list.size() == 2);
  CHECK(app->member_list[0].assignment ==
        std::vector<lagsight::kafka::TopicPartition>{{"orders", 1}});
  CHECK(app->member_list[0].member_id == "m-1");
  CHECK(app->member_list[1].assignment ==
        std::vector<lagsight::kafka::TopicPartition>{{"orders", 0}});
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
