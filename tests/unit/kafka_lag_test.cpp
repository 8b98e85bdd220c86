// The lag arithmetic, including the cases that make Kafka-side lag look wrong.
#include "analysis/kafka_lag.h"

#include <catch2/catch.hpp>

using lagsight::analysis::CommitPosition;
using lagsight::analysis::ComputeGroupLags;
using lagsight::analysis::ComputePartitionLag;
using lagsight::kafka::ConsumerGroup;
using lagsight::kafka::KafkaSnapshot;
using lagsight::kafka::PartitionOffsets;

TEST_CASE("lag is log end minus committed", "[analysis]") {
  const auto lag = ComputePartitionLag(3, 40, PartitionOffsets{10, 100});
  CHECK(lag.partition == 3);
  CHECK(*lag.committed == 40);
  CHECK(*lag.lag == 60);
  CHECK(lag.position == CommitPosition::kInRange);
}

TEST_CASE("a caught-up group has zero lag", "[analysis]") {
  CHECK(*ComputePartitionLag(0, 100, PartitionOffsets{0, 100}).lag == 0);
}

TEST_CASE("no committed offset gives no lag, never -1 or NaN", "[analysis]") {
  const auto lag = ComputePartitionLag(0, std::nullopt, PartitionOffsets{0, 100});
  CHECK_FALSE(lag.lag.has_value());
  CHECK_FALSE(lag.committed.has_value());
  CHECK(lag.position == CommitPosition::kNoCommit);
}

TEST_CASE("a commit beyond the log end is zero lag, flagged", "[analysis]") {
  const auto lag = ComputePartitionLag(0, 500, PartitionOffsets{0, 100});
  CHECK(*lag.lag == 0);
  CHECK(lag.position == CommitPosition::kBeyondLogEnd);
}

TEST_CASE("a log truncated past the commit keeps the tool's lag, flagged", "[analysis]") {
  const auto lag = ComputePartitionLag(0, 5, PartitionOffsets{50, 100});
  CHECK(*lag.lag == 95);
  CHECK(lag.position == CommitPosition::kBeforeLogStart);
}

TEST_CASE("an unknown log end gives no lag", "[analysis]") {
  const auto lag = ComputePartitionLag(0, 5, PartitionOffsets{0, std::nullopt});
  CHECK_FALSE(lag.lag.has_value());
  CHECK(lag.position == CommitPosition::kLogEndUnknown);
}

TEST_CASE("group lags cover every partition of each consumed topic, with sums and max",
          "[analysis]") {
  KafkaSnapshot snapshot;
  ConsumerGroup partial;
  partial.id = "partial";
  partial.committed = {{{"orders", 0}, 10}, {{"orders", 2}, 30}, {{"audit", 0}, 7}};
  ConsumerGroup unreadable;
  unreadable.id = "unreadable";
  unreadable.offsets_known = false;
  snapshot.groups = {partial, unreadable};
  snapshot.topic_partitions = {{"orders", 3}, {"audit", 1}};
  snapshot.partitions = {{{"orders", 0}, {0, 15}},
                         {{"orders", 1}, {0, 20}},
                         {{"orders", 2}, {0, 100}},
                         {{"audit", 0}, {0, 7}}};

  const auto lags = ComputeGroupLags(snapshot);
  REQUIRE(lags.size() == 1);  // the unreadable group has no lag to report
  const auto& group = lags[0];
  CHECK(group.group == "partial");
  CHECK(*group.max_lag == 70);
  REQUIRE(group.topics.size() == 2);
  CHECK(group.topics[0].topic == "audit");
  CHECK(group.topics[0].lag_sum == 0);
  const auto& orders = group.topics[1];
  CHECK(orders.topic == "orders");
  CHECK(orders.lag_sum == 75);
  CHECK(orders.uncommitted_partitions == 1);
  REQUIRE(orders.partitions.size() == 3);
  CHECK(orders.partitions[1].position == CommitPosition::kNoCommit);
  CHECK_FALSE(orders.partitions[1].lag.has_value());
}

TEST_CASE("a topic that no longer exists contributes no lag", "[analysis]") {
  KafkaSnapshot snapshot;
  ConsumerGroup group;
  group.id = "g";
  group.committed = {{{"deleted", 0}, 10}};
  snapshot.groups = {group};
  const auto lags = ComputeGroupLags(snapshot);
  REQUIRE(lags.size() == 1);
  CHECK(lags[0].topics.empty());
  CHECK_FALSE(lags[0].max_lag.has_value());
}

TEST_CASE("a group that read every record of a transactional topic has no lag", "[analysis]") {
  // A committed transaction of 100 records ends with its marker at offset 100: the log end is
  // 101, the group committed 100 (after the last record), and the record reader found nothing
  // but markers from 100 to the end. On partition 1 a record came after the marker.
  KafkaSnapshot snapshot;
  snapshot.topic_partitions = {{"payments", 2}};
  snapshot.partitions = {{{"payments", 0}, {0, 101}}, {{"payments", 1}, {0, 150}}};
  snapshot.markers_only = {{{{"payments", 0}, 100}, 101}, {{{"payments", 1}, 100}, 101}};
  ConsumerGroup group;
  group.id = "ledger";
  group.committed = {{{"payments", 0}, 100}, {{"payments", 1}, 100}};
  snapshot.groups = {group};
  const auto lags = ComputeGroupLags(snapshot);
  REQUIRE(lags.size() == 1);
  const auto& payments = lags[0].topics.at(0);
  CHECK(payments.partitions[0].lag == 0);
  // Markers only up to 101, but the log end is 150 now: 50 records wait.
  CHECK(payments.partitions[1].lag == 50);
  CHECK(payments.lag_sum == 50);
}

TEST_CASE("a read_committed group's lag ends at the last stable offset", "[analysis]") {
  // Partition 0: 50 committed records, the commit marker at 50, then an open transaction of 30
  // records (51..80): high watermark 81, last stable offset 51. The read_committed group at 50
  // has nothing left it may read (the record reader, reading read_committed, found only the
  // marker up to 51); the read_uncommitted one has 31, as Kafka's tool counts it.
  // Partition 1: an aborted transaction of 20 records (0..19) and its marker: a read_committed
  // reader at 0 will never receive anything there.
  KafkaSnapshot snapshot;
  snapshot.topic_partitions = {{"payments", 2}};
  snapshot.partitions = {{{"payments", 0}, {0, 81, 51}}, {{"payments", 1}, {0, 21, 21}}};
  snapshot.markers_only = {{{{"payments", 0}, 50, true}, 51}, {{{"payments", 1}, 0, true}, 21}};
  ConsumerGroup committed_reader;
  committed_reader.id = "ledger";
  committed_reader.read_committed = true;
  committed_reader.committed = {{{"payments", 0}, 50}, {{"payments", 1}, 0}};
  ConsumerGroup uncommitted_reader = committed_reader;
  uncommitted_reader.id = "audit";
  uncommitted_reader.read_committed = false;
  snapshot.groups = {uncommitted_reader, committed_reader};

  const auto lags = ComputeGroupLags(snapshot);
  REQUIRE(lags.size() == 2);
  CHECK_FALSE(lags[0].read_committed);
  CHECK(lags[0].topics.at(0).partitions[0].lag == 31);
  CHECK(lags[0].topics.at(0).partitions[1].lag == 21);
  CHECK(lags[1].read_committed);
  CHECK(lags[1].topics.at(0).partitions[0].lag == 0);
  CHECK(lags[1].topics.at(0).partitions[1].lag == 0);
  CHECK(lags[1].max_lag == 0);

  // Without the record reader's finding, the marker at 50 counts, as Kafka counts it, and
  // the open transaction's 30 records still do not.
  snapshot.markers_only.clear();
  const auto unread = ComputeGroupLags(snapshot);
  CHECK(unread[1].topics.at(0).partitions[0].lag == 1);
}

TEST_CASE("a read_committed reader without a last stable offset falls back to the log end",
          "[analysis]") {
  CHECK(ComputePartitionLag(0, 50, PartitionOffsets{0, 81, std::nullopt}, true).lag == 31);
  CHECK(ComputePartitionLag(0, 50, PartitionOffsets{0, 81, 51}, true).lag == 1);
  CHECK(ComputePartitionLag(0, 50, PartitionOffsets{0, 81, 51}, false).lag == 31);
  // Beyond the log end is judged against the high watermark, whatever the isolation.
  CHECK(ComputePartitionLag(0, 60, PartitionOffsets{0, 81, 51}, true).position ==
        lagsight::analysis::CommitPosition::kInRange);
}
