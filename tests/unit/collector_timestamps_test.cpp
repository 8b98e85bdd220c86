// kafka::Collector's reads of record timestamps for lag in seconds, on a scripted admin: which
// positions it asks for, within the budget, what it caches and keeps, and how failures show.
// (The real reader is tested against a real broker in tests/integration/test_kafka_signals.py.)
#include <algorithm>
#include <catch2/catch.hpp>

#include "collector_fixture.h"
#include "flink/snapshot.h"

using namespace lagsight::testing;  // NOLINT: the fixture and its names

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
