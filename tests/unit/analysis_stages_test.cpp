// The analysis's stages on their own, without the Analyzer around them: the stall guard, and
// the Kafka history's memory of a group's earlier commits (what matches a Flink job whose
// committedOffset is a refresh late).
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "analysis/kafka_history.h"
#include "analysis/stall_guard.h"

using lagsight::analysis::EarlierCommit;
using lagsight::analysis::EarlierCommitsPolicy;
using lagsight::analysis::KafkaHistory;
using lagsight::analysis::StallGuard;

namespace {

lagsight::kafka::KafkaSnapshot SnapshotWithOffset(std::int64_t committed, int members) {
  lagsight::kafka::KafkaSnapshot snapshot;
  snapshot.topic_partitions["orders"] = 1;
  snapshot.partitions[{"orders", 0}] = {0, 1000};
  lagsight::kafka::ConsumerGroup group;
  group.id = "orders-group";
  group.members = members;
  group.committed[{"orders", 0}] = committed;
  snapshot.groups.push_back(std::move(group));
  return snapshot;
}

// One group's committed offsets on several partitions, with `members` members.
lagsight::kafka::KafkaSnapshot SnapshotWithOffsets(
    const std::map<lagsight::kafka::TopicPartition, std::int64_t>& committed, int members) {
  lagsight::kafka::KafkaSnapshot snapshot;
  lagsight::kafka::ConsumerGroup group;
  group.id = "orders-group";
  group.members = members;
  for (const auto& [tp, offset] : committed) {
    snapshot.partitions[tp] = {0, 1000};
    group.committed[tp] = offset;
  }
  snapshot.groups.push_back(std::move(group));
  return snapshot;
}

}  // namespace

TEST_CASE("stall guard: a gap of many usual gaps holds new causes back for a while", "[analysis]") {
  StallGuard guard;
  for (double now = 1000; now <= 1100; now += 10) guard.NoteObservation('k', "prod", now, 10);
  CHECK(guard.Settled(1100));
  // 60 s after the last observation, with a usual gap of 10 s: lagsight stood still.
  guard.NoteObservation('k', "prod", 1160, 10);
  CHECK_FALSE(guard.Settled(1160));
  // Until two usual gaps (or a metric refresh, if longer) and the slack have passed.
  CHECK_FALSE(guard.Settled(1160 + 20 + 5 - 1));
  CHECK(guard.Settled(1160 + 20 + 5));
}

TEST_CASE("kafka history: a group's superseded offsets are kept for a while, then forgotten",
          "[analysis]") {
  KafkaHistory history;
  const EarlierCommitsPolicy policy{30, [](const std::string&) { return false; }};
  const std::vector<lagsight::analysis::GroupLag> no_lags;
  history.Record(SnapshotWithOffset(100, 0), no_lags, {}, policy, 300, 1000);
  history.Record(SnapshotWithOffset(200, 0), no_lags, {}, policy, 300, 1010);
  const lagsight::kafka::TopicPartition tp{"orders", 0};
  CHECK(history.CommittedEarlier("orders-group", tp, 100, 30, 1010) == EarlierCommit::kHeldExactly);
  CHECK(history.CommittedEarlier("orders-group", tp, 150, 30, 1010) ==
        EarlierCommit::kPassedThrough);
  CHECK(history.CommittedEarlier("orders-group", tp, 50, 30, 1010) == EarlierCommit::kNo);
  CHECK(history.CommittedEarlier("orders-group", tp, 100, 30, 1041) == EarlierCommit::kNo);
  // A group with members on a topic no Flink job reads is a plain consumer: nothing is kept.
  KafkaHistory consumer;
  consumer.Record(SnapshotWithOffset(100, 1), no_lags, {}, policy, 300, 1000);
  consumer.Record(SnapshotWithOffset(200, 1), no_lags, {}, policy, 300, 1010);
  CHECK(consumer.CommittedEarlier("orders-group", tp, 100, 30, 1010) == EarlierCommit::kNo);
}

TEST_CASE("kafka history: superseded offsets are kept per partition, by topic, while committed",
          "[analysis]") {
  using lagsight::kafka::TopicPartition;
  const TopicPartition a0{"a", 0}, a1{"a", 1}, b0{"b", 0};
  const std::vector<lagsight::analysis::GroupLag> no_lags;
  const EarlierCommitsPolicy nothing_read{30, [](const std::string&) { return false; }};
  KafkaHistory history;
  history.Record(SnapshotWithOffsets({{a0, 100}, {a1, 10}, {b0, 5}}, 0), no_lags, {}, nothing_read,
                 300, 1000);
  history.Record(SnapshotWithOffsets({{a0, 200}, {a1, 20}, {b0, 5}}, 0), no_lags, {}, nothing_read,
                 300, 1010);
  CHECK(history.CommittedEarlier("orders-group", a1, 10, 30, 1010) == EarlierCommit::kHeldExactly);
  // a1 is no longer committed: what it held is forgotten; b0 moves for the first time.
  history.Record(SnapshotWithOffsets({{a0, 300}, {b0, 6}}, 0), no_lags, {}, nothing_read, 300,
                 1020);
  CHECK(history.CommittedEarlier("orders-group", a1, 10, 30, 1020) == EarlierCommit::kNo);
  CHECK(history.CommittedEarlier("orders-group", a0, 100, 30, 1020) == EarlierCommit::kHeldExactly);
  CHECK(history.CommittedEarlier("orders-group", a0, 200, 30, 1020) == EarlierCommit::kHeldExactly);
  CHECK(history.CommittedEarlier("orders-group", b0, 5, 30, 1020) == EarlierCommit::kHeldExactly);
  // Nothing moves; a superseded offset older than 30 s is dropped, a newer one stays.
  history.Record(SnapshotWithOffsets({{a0, 300}, {b0, 6}}, 0), no_lags, {}, nothing_read, 300,
                 1045);
  CHECK(history.CommittedEarlier("orders-group", a0, 100, 30, 1045) == EarlierCommit::kNo);
  CHECK(history.CommittedEarlier("orders-group", a0, 200, 30, 1045) == EarlierCommit::kHeldExactly);

  // A group with members keeps them only on topics a Flink job reads.
  const EarlierCommitsPolicy a_read{30, [](const std::string& topic) { return topic == "a"; }};
  KafkaHistory consumer;
  consumer.Record(SnapshotWithOffsets({{a0, 100}, {a1, 10}, {b0, 5}}, 2), no_lags, {}, a_read, 300,
                  1000);
  consumer.Record(SnapshotWithOffsets({{a0, 200}, {a1, 20}, {b0, 6}}, 2), no_lags, {}, a_read, 300,
                  1010);
  CHECK(consumer.CommittedEarlier("orders-group", a0, 100, 30, 1010) ==
        EarlierCommit::kHeldExactly);
  CHECK(consumer.CommittedEarlier("orders-group", a1, 10, 30, 1010) == EarlierCommit::kHeldExactly);
  CHECK(consumer.CommittedEarlier("orders-group", b0, 5, 30, 1010) == EarlierCommit::kNo);
}
