// stores::Collector against a fake HashStore (which keys a poll reads, how fields become
// positions, what is a partial error and what fails the poll) and the join of stored positions
// with the job and the log (analysis::JoinStoredPositions).
#include <catch2/catch.hpp>

#include "analysis/stored_positions.h"
#include "stores/collector.h"

using namespace lagsight;

namespace {

class FakeHashStore final : public stores::HashStore {
 public:
  std::map<std::string, std::map<std::string, std::string>> hashes;
  std::optional<std::string> down;  // every call fails with this
  std::vector<std::string> asked;

  std::optional<Error> Ping() override {
    if (down) return Error{*down};
    return std::nullopt;
  }
  Result<std::map<std::string, std::string>> ReadHash(const std::string& key) override {
    asked.push_back(key);
    if (down) return Error{*down};
    const auto hash = hashes.find(key);
    return hash == hashes.end() ? std::map<std::string, std::string>{} : hash->second;
  }
};

config::PositionStoreConfig StoreConfig(std::string key, std::string field) {
  config::PositionStoreConfig config;
  config.name = "redis";
  config.job = *config::Pattern::Compile("orders-.*");
  config.key = std::move(key);
  config.field = std::move(field);
  config.updated_at_field = "updated_at";
  return config;
}

}  // namespace

TEST_CASE("a hash per topic: field = partition, value = next offset, updated_at read", "[stores]") {
  auto owned = std::make_unique<FakeHashStore>();
  FakeHashStore& store = *owned;
  store.hashes["flink:offsets:orders.v2"] = {
      {"0", "120"}, {"1", "75"}, {"updated_at", "1700000000500"}, {"writer", "tm-1"}};
  store.hashes["flink:offsets:audit"] = {{"0", "-3"}, {"1", "x1"}, {"2", "9"}};
  stores::Collector collector(StoreConfig("flink:offsets:{topic}", "{partition}"),
                              std::move(owned));
  const auto polled =
      collector.Poll({{"jobs", "a1", "orders-enrich", {"orders.v2", "audit", "absent"}}});
  REQUIRE(polled.ok());
  CHECK(store.asked == std::vector<std::string>{"flink:offsets:orders.v2", "flink:offsets:audit",
                                                "flink:offsets:absent"});
  REQUIRE(polled->jobs.size() == 1);
  const stores::StoredJob& job = polled->jobs[0];
  CHECK(job.offsets == std::map<kafka::TopicPartition, std::int64_t>{
                           {{"orders.v2", 0}, 120}, {{"orders.v2", 1}, 75}, {{"audit", 2}, 9}});
  CHECK(job.updated_at_unix_seconds == 1700000000.5);
  CHECK(polled->partial_errors ==
        std::vector<std::string>{"key flink:offsets:audit field 0: \"-3\" is not an offset",
                                 "key flink:offsets:audit field 1: \"x1\" is not an offset",
                                 "job \"orders-enrich\": key flink:offsets:absent does not exist"});
}

TEST_CASE("a hash per job: field = topic_partition; the topic may contain the separator",
          "[stores]") {
  auto owned = std::make_unique<FakeHashStore>();
  FakeHashStore& store = *owned;
  store.hashes["offsets:orders-enrich"] = {{"orders_v2_0", "5"},
                                           {"orders_v2_11", "6"},
                                           {"notes", "hello"},
                                           {"billing_3", "7"},
                                           {std::string(40'000, 'x') + "_1", "8"}};
  stores::Collector collector(StoreConfig("offsets:{job}", "{topic}_{partition}"),
                              std::move(owned));
  const auto polled = collector.Poll({{"jobs", "a1", "orders-enrich", {"orders_v2"}}});
  REQUIRE(polled.ok());
  CHECK(store.asked == std::vector<std::string>{"offsets:orders-enrich"});
  CHECK(polled->jobs.at(0).offsets == std::map<kafka::TopicPartition, std::int64_t>{
                                          {{"orders_v2", 0}, 5}, {{"orders_v2", 11}, 6}});
  // "notes" is the layout's own business; a topic the job does not read (or no topic could be)
  // would mint labels: left out, said once per key.
  CHECK(polled->partial_errors ==
        std::vector<std::string>{"key offsets:orders-enrich: 2 field(s) name a topic the job does "
                                 "not read; left out"});
}

TEST_CASE("a store that does not answer fails the poll, also with no job to read", "[stores]") {
  auto owned = std::make_unique<FakeHashStore>();
  owned->down = "connecting to redis:6379: Connection refused";
  stores::Collector collector(StoreConfig("k:{topic}", "{partition}"), std::move(owned));
  const auto nothing_to_read = collector.Poll({});
  REQUIRE_FALSE(nothing_to_read.ok());
  CHECK(nothing_to_read.error().message == "connecting to redis:6379: Connection refused");
}

TEST_CASE("stored positions joined with the job's position and the log", "[stores]") {
  stores::StoreSnapshot store;
  store.jobs.push_back({"jobs",
                        "a1",
                        "orders-enrich",
                        {"orders.v2"},
                        {"k"},
                        {{{"orders.v2", 0}, 100}, {{"orders.v2", 1}, 300}, {{"orders.v2", 7}, 1}},
                        1700000000.0,
                        {}});
  auto kafka = std::make_shared<kafka::KafkaSnapshot>();
  kafka->topic_partitions["orders.v2"] = 3;
  kafka->partitions[{"orders.v2", 0}] = {0, 150};
  kafka->partitions[{"orders.v2", 1}] = {0, 250};
  kafka->partitions[{"orders.v2", 2}] = {0, 10};
  auto flink = std::make_shared<flink::FlinkSnapshot>();
  flink::FlinkJob job;
  job.overview.id = "a1";
  job.overview.name = "orders-enrich";
  flink::SourceReader reader;
  reader.partitions[{"orders_v2", 0}] = {129, std::nullopt};  // next offset 130
  reader.partitions[{"orders_v2", 1}] = {249, std::nullopt};  // 250: behind the store's 300
  job.sources.push_back(reader);
  flink->jobs.push_back(job);
  analysis::SourcesView view;
  view.kafka["prod"].snapshot = kafka;
  auto flink_config = std::make_shared<config::FlinkClusterConfig>();
  flink_config->kafka_cluster = "prod";
  view.flink["jobs"] = {flink_config, flink};

  store.read_until = 1000.5;
  kafka->requested_at = 1001;  // the log ends were read after the store
  const auto joined = analysis::JoinStoredPositions(store, {}, view);
  REQUIRE(joined.size() == 1);
  const auto& positions = joined[0];
  CHECK(positions.updated_at_unix_seconds == 1700000000.0);
  REQUIRE(positions.partitions.size() == 3);
  CHECK(positions.partitions[0].stored == 100);
  CHECK(positions.partitions[0].lag == 50);
  CHECK(positions.partitions[0].drift == 30);  // the job is 30 records past the store
  CHECK(positions.partitions[0].beyond_log_end == false);
  CHECK(positions.partitions[1].lag == 0);
  CHECK(positions.partitions[1].drift == -50);  // the store is ahead: a restart would skip 50
  CHECK(positions.partitions[1].beyond_log_end == true);
  CHECK_FALSE(positions.partitions[2].lag.has_value());  // partition 7 has no log
  CHECK_FALSE(positions.partitions[2].drift.has_value());
  REQUIRE(positions.topics.size() == 1);
  CHECK(positions.topics[0].missing_partitions == std::vector<std::int32_t>{2});
  CHECK(positions.topics[0].unknown_partitions == std::vector<std::int32_t>{7});
  CHECK(positions.topics[0].beyond_log_end == 1);
}

namespace {

// One job's entry for orders/0 read until `read_until`, and the log end of a Kafka poll that
// began at `kafka_began`.
struct StoreAndLog {
  stores::StoreSnapshot Reading(std::int64_t stored, double read_until) const {
    stores::StoreSnapshot store;
    store.jobs.push_back(
        {"jobs", "a1", "enrich", {"orders"}, {"k"}, {{{"orders", 0}, stored}}, {}, {}});
    store.read_until = read_until;
    return store;
  }
  analysis::SourcesView View(std::int64_t log_end, double kafka_began) const {
    auto kafka = std::make_shared<kafka::KafkaSnapshot>();
    kafka->topic_partitions["orders"] = 1;
    kafka->partitions[{"orders", 0}] = {0, log_end};
    kafka->requested_at = kafka_began;
    analysis::SourcesView view;
    view.kafka["prod"].snapshot = kafka;
    return view;
  }
};

}  // namespace

// At the default 15 s polls a busy job's store is read after the log ends lagsight holds: its
// entries exceed them by the records written meanwhile, which is no anomaly.
TEST_CASE("a store entry is beyond the log end only against a log end read after it", "[stores]") {
  const StoreAndLog world;
  // Read fresh (t=1015) against log ends of a poll that began at t=1012: stored 5807, log end
  // 5777. Unknown, not beyond.
  const auto fresh = world.Reading(5807, 1015.1);
  const auto view = world.View(5777, 1012);
  auto joined = analysis::JoinStoredPositions(fresh, {}, view);
  CHECK_FALSE(joined.at(0).partitions.at(0).beyond_log_end.has_value());
  CHECK(joined.at(0).topics.at(0).beyond_log_end == 0);

  // The reading before (t=1000, 5700) was read before that Kafka poll: within the log, and
  // that says nothing of the entry now.
  const auto before = world.Reading(5700, 1000.1);
  joined = analysis::JoinStoredPositions(fresh, {&before}, view);
  CHECK_FALSE(joined.at(0).partitions.at(0).beyond_log_end.has_value());

  // An entry written beyond the log on purpose: still there at the next poll, whose earlier
  // reading was taken before the Kafka poll began.
  const auto planted = world.Reading(99'999, 1000.1);
  joined = analysis::JoinStoredPositions(world.Reading(99'999, 1015.1), {&planted}, view);
  CHECK(joined.at(0).partitions.at(0).beyond_log_end == true);
  CHECK(joined.at(0).topics.at(0).beyond_log_end == 1);

  // A reading after the Kafka poll began is not used to judge it.
  const auto late = world.Reading(99'999, 1013);
  joined = analysis::JoinStoredPositions(world.Reading(99'999, 1015.1), {&late}, view);
  CHECK_FALSE(joined.at(0).partitions.at(0).beyond_log_end.has_value());

  // Within the log end whenever read: no.
  joined = analysis::JoinStoredPositions(world.Reading(5000, 1015.1), {}, view);
  CHECK(joined.at(0).partitions.at(0).beyond_log_end == false);
}

TEST_CASE("a hash that could not be read leaves its partitions unknown, not missing", "[stores]") {
  const StoreAndLog world;
  stores::StoreSnapshot store;
  store.jobs.push_back({"jobs", "a1", "enrich", {"orders"}, {"k"}, {}, {}, {"orders"}});
  store.read_until = 1000;
  const auto joined = analysis::JoinStoredPositions(store, {}, world.View(10, 1001));
  REQUIRE(joined.at(0).topics.size() == 1);
  CHECK(joined.at(0).topics[0].unread);
  CHECK(joined.at(0).topics[0].missing_partitions.empty());
}
