// kafka::Collector: one poll of one Kafka cluster, turned into a KafkaSnapshot.
//
// A poll lists every consumer group (simple and empty ones included), keeps those the group
// filter accepts, describes them, reads the committed offsets of all their partitions (bounded
// concurrency), and reads log-start and log-end offsets of every partition of every topic they
// committed on (after the topic filter), and their last stable offsets where a read_committed
// reader reads them (read_committed_groups, ExtraReads). Every call is bounded by request_timeout
// and the whole poll by poll_timeout. Poll() blocks: run it on a worker thread, one at a time.
//
// With several bootstrap addresses a poll first asks each address on its own which cluster
// answers there; when two cluster ids answer, nothing else is read (one client must not talk to
// two clusters) and the snapshot holds just those answers and a partial error saying so.
//
// A poll also reads what the derived signals need: the cluster id seen through each bootstrap
// address, the broker's offsets.retention.minutes (re-read every few minutes), and the timestamp
// of each lagging group's oldest unconsumed record and of the next record of each lagging Flink
// reader. Those timestamps are cached by position and fetched within a per-poll budget, largest
// lag first; none of this can fail the poll.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include "config/config.h"
#include "kafka/admin.h"
#include "kafka/snapshot.h"

namespace lagsight::kafka {

// A topic's name with its metric-colliding characters unified, as Kafka's own
// Topic.unifyCollisionChars does ('.' as '_'): "orders.v2" and "orders_v2" collide in metric
// names, which is how readers that report through metrics name the topics they read.
std::string UnifyCollisionChars(std::string_view topic);

// Topics and positions another reader needs beside the groups' (the Flink jobs, which commit
// nothing or late), by collision-unified topic name. The log offsets of every real topic with
// such a name are read, so that reader's lag is known even when it commits nothing; and the
// timestamp of the record at each lagging position, for its lag in seconds.
struct ExtraReads {
  std::set<std::string> unified_topics;
  // Of those, the ones some read_committed reader reads: their last stable offsets are read too.
  std::set<std::string> read_committed_topics;
  // (unified topic, partition, the reader's next offset, whether it reads read_committed)
  std::set<std::tuple<std::string, std::int32_t, std::int64_t, bool>> positions;
};

class Collector {
 public:
  // What the collector reads the time from where a refresh is due (the seam tests move);
  // deadlines of calls always use the real steady clock.
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  Collector(
      config::KafkaClusterConfig cluster, std::unique_ptr<KafkaAdmin> admin,
      Clock clock = [] { return std::chrono::steady_clock::now(); });

  // Fails as a whole when the cluster cannot be listed or its metadata read; failures of single
  // groups or partitions are recorded in KafkaSnapshot::partial_errors instead.
  Result<KafkaSnapshot> Poll(const ExtraReads& extra_reads = {});

  // How long a successfully read offsets.retention.minutes is trusted before it is read again.
  static constexpr std::chrono::minutes kRetentionRefresh{5};

 private:
  // With several bootstrap addresses, asks each which cluster answers there, into `snapshot`.
  // False when they name different clusters: then nothing else is read, and `snapshot` is the
  // poll's answer.
  bool IdentifyBootstraps(std::chrono::milliseconds timeout, KafkaSnapshot& snapshot);
  // With one bootstrap address, what it answered: the main client's cluster id and topics.
  BootstrapIdentity OnlyBootstrap(const std::optional<std::string>& cluster_id,
                                  const std::map<std::string, std::int32_t>& counts) const;
  // The topics of `counts` that the topic filter accepts.
  std::map<std::string, std::int32_t> AcceptedTopics(
      const std::map<std::string, std::int32_t>& counts) const;
  void ReadRetention(std::chrono::milliseconds timeout, KafkaSnapshot& snapshot);
  void ReadRecordTimestamps(const std::map<RecordKey, std::int64_t>& wanted,
                            std::chrono::milliseconds request_timeout,
                            std::chrono::milliseconds total_timeout, KafkaSnapshot& snapshot);

  config::KafkaClusterConfig cluster_;
  std::unique_ptr<KafkaAdmin> admin_;
  Clock clock_;

  std::optional<double> retention_seconds_;
  std::optional<std::chrono::steady_clock::time_point> retention_read_at_;
  // Timestamp of the first record at or after a position; such a record never changes, so an
  // entry stays valid for as long as some group still waits at that position.
  std::map<RecordKey, RecordTimestamp> timestamp_cache_;
  // The records earlier reads passed on their way: positions among them need no read. 2^20
  // records at most (24 MiB): a thousand partitions' worth of a thousand records each.
  RecordRuns record_runs_{1u << 20};
  std::uint64_t timestamp_fetches_total_ = 0;
};

}  // namespace lagsight::kafka
