// The analyzer on Kafka alone: groups no Flink job commits to, judged from their committed offsets
// and log ends (stalled, really behind, rewinding, expiring), and lag in seconds from each
// partition's log-end history.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "analyzer_world.h"

using namespace lagsight;
using namespace lagsight::analyzer_testing;

TEST_CASE("Kafka-only: an idle topic with lag is healthy, never stalled", "[analysis]") {
  World world;
  world.committed["idle"] = 900;  // 100 records behind, nothing arrives, nothing commits
  const auto seen = world.Run(120, "idle", "", [](int) {});
  CHECK(seen == std::set<Cause>{Cause::kHealthy});
}

TEST_CASE("Kafka-only: commits that stop while records arrive are stalled", "[analysis]") {
  World world;
  world.committed["g"] = 1000;
  // Never seen committing: three windows (90 s) before it is stalled.
  auto seen = world.Run(85, "g", "", [&](int) { world.log_end += 10; });
  CHECK_FALSE(seen.contains(Cause::kStalled));
  seen = world.Run(10, "g", "", [&](int) { world.log_end += 10; });
  CHECK(World::CauseOf(*world.last_, "g") == Cause::kStalled);
}

TEST_CASE("Kafka-only: stalled is judged against the group's own commit period", "[analysis]") {
  World world;
  world.committed["slow"] = 1000;  // commits every 50 s (a long flush): never stalled for it
  world.committed["fast"] = 1000;  // commits every 5 s, then stops
  bool fast_stopped = false;
  const auto slow = world.Run(300, "slow", "", [&](int second) {
    world.log_end += 10;
    if (second % 50 == 49) world.committed["slow"] = world.log_end;
    if (second == 150) fast_stopped = true;
    if (!fast_stopped && second % 5 == 4) world.committed["fast"] = world.log_end;
  });
  CHECK_FALSE(slow.contains(Cause::kStalled));
  // 150 s without a commit is 30 periods of 5 s: stalled (after max(window, 3 periods)).
  CHECK(World::CauseOf(*world.last_, "fast") == Cause::kStalled);
}

TEST_CASE("Kafka-only: commits that move but fall further behind are really behind", "[analysis]") {
  World world;
  world.committed["g"] = 1000;
  const auto seen = world.Run(60, "g", "", [&](int) {
    world.log_end += 20;
    world.committed["g"] += 5;
  });
  CHECK(World::CauseOf(*world.last_, "g") == Cause::kReallyBehind);
  CHECK_FALSE(seen.contains(Cause::kStalled));
}

TEST_CASE("Kafka-only: a committed offset that goes back is rewinding, then healthy again",
          "[analysis]") {
  World world;
  world.committed["g"] = 1000;
  world.Run(10, "g", "", [](int) {});
  world.committed["g"] = 500;
  world.Run(3, "g", "", [](int) {});
  CHECK(World::CauseOf(*world.last_, "g") == Cause::kRewinding);
  world.committed["g"] = 1000;
  world.Run(40, "g", "", [](int) {});
  CHECK(World::CauseOf(*world.last_, "g") == Cause::kHealthy);
}

TEST_CASE("Kafka-only: offsets of a group without members that near retention are expiring",
          "[analysis]") {
  World world;
  world.retention_seconds = 60;
  world.committed["g"] = 1000;
  const auto seen = world.Run(30, "g", "", [](int) {});
  CHECK(World::CauseOf(*world.last_, "g") == Cause::kHealthy);
  world.Run(20, "g", "", [](int) {});
  CHECK(World::CauseOf(*world.last_, "g") == Cause::kOffsetsExpiring);
  const auto& group = world.last_->kafka.at(kCluster)->groups.at(0);
  REQUIRE(group.offsets_expiry_seconds);
  CHECK(*group.offsets_expiry_seconds == Approx(60 - 49));
}

// Topics whose names share a prefix or sort next to each other, each partition with its own pace:
// the lag in seconds of each comes from its own log-end history (walked topic by topic), and a
// partition the poll did not read starts its history afresh when it is read again.
TEST_CASE("lag in seconds: each partition from its own history, a gap starts it afresh",
          "[analysis]") {
  analysis::Analyzer analyzer{config::DiagnosisConfig{}};
  analysis::KafkaPoll previous;
  // Records a second arriving on each partition; the group's offsets never move.
  const std::vector<std::pair<kafka::TopicPartition, std::int64_t>> paces{
      {{"a", 0}, 1}, {{"a", 1}, 2}, {{"a-b", 0}, 4}, {{"ab", 0}, 5}};
  const double start = 1'000'000;
  std::shared_ptr<const analysis::Findings> findings;
  const auto poll = [&](int second, bool read_a1) {
    kafka::KafkaSnapshot snapshot;
    snapshot.topic_partitions = {{"a", 2}, {"a-b", 1}, {"ab", 1}};
    snapshot.all_topics = {"a", "a-b", "ab"};
    kafka::ConsumerGroup group;
    group.id = "g";
    group.state = "empty";
    group.kind = kafka::GroupKind::kSimple;
    group.members = 0;
    for (const auto& [tp, pace] : paces) {
      group.committed[tp] = 100;  // the first poll's log end: every later record is unread
      if (tp == kafka::TopicPartition{"a", 1} && !read_a1) continue;
      snapshot.partitions[tp] = {0, 100 + pace * second};
    }
    snapshot.groups.push_back(group);
    previous = analysis::DeriveKafkaPoll(std::move(snapshot), previous);
    analysis::SourcesView view;
    view.kafka["prod"] = previous;
    findings = analyzer.ObserveKafka("prod", view, start + second);
  };
  const auto seconds_of = [&](const std::string& topic, std::int32_t partition) {
    for (const auto& group : findings->kafka.at("prod")->groups) {
      for (const auto& lag_seconds : group.lag_seconds) {
        if (lag_seconds.topic != topic) continue;
        for (const auto& entry : lag_seconds.partitions) {
          if (entry.partition == partition) return std::optional(entry.value);
        }
      }
    }
    return std::optional<analysis::LagSeconds>();
  };
  for (int second = 0; second <= 10; ++second) poll(second, true);
  // The record at offset 100 was written 1/pace seconds after the first poll.
  for (const auto& [tp, pace] : paces) {
    INFO(tp.topic << "/" << tp.partition);
    const auto value = seconds_of(tp.topic, tp.partition);
    REQUIRE(value);
    CHECK(value->method == analysis::LagSecondsMethod::kInterpolated);
    CHECK(value->seconds == Approx(10.0 - 1.0 / static_cast<double>(pace)));
  }
  poll(11, false);  // a/1 not read: no lag, so no lag in seconds
  CHECK_FALSE(seconds_of("a", 1));
  poll(12, true);
  // Its history begins again now: the record is at least as old as that, no older is known.
  const auto again = seconds_of("a", 1);
  REQUIRE(again);
  CHECK(again->method == analysis::LagSecondsMethod::kLowerBound);
  CHECK(again->seconds == 0);
  CHECK(seconds_of("a-b", 0)->seconds == Approx(12.0 - 1.0 / 4));
}
