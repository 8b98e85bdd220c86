// KafkaSnapshot: what one poll of one Kafka cluster saw, as plain data.
//
// Produced by kafka::Collector, consumed by the pure analysis and the metrics renderer. It holds
// only what Kafka said (no derived numbers; the one exception is the collector's record-timestamp
// bookkeeping), already narrowed by the cluster's group and topic filters. Immutable once
// published; share it as shared_ptr<const KafkaSnapshot>.
#pragma once

#include <algorithm>
#include <boost/container/flat_map.hpp>
#include <cctype>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lagsight::kafka {

struct TopicPartition {
  std::string topic;
  std::int32_t partition = 0;

  friend auto operator<=>(const TopicPartition&, const TopicPartition&) = default;
};

// One group's committed offsets (the next offset the group would read), by partition: a sorted
// vector, since a poll reads every group's whole map at once and changes none of it afterwards.
// 48 bytes an entry, against 96 for a std::map node (its 80 bytes and malloc's header); a group
// holds one entry per partition it committed on, a million at issue 14's largest scale. Build
// it unsorted in a sequence_type and adopt_sequence it (one sort), not entry by entry (a shift
// each).
using CommittedOffsets = boost::container::flat_map<TopicPartition, std::int64_t>;

// How the group is coordinated: "classic" (JoinGroup protocol with members), "simple" (only
// offset commits, no membership: Flink's KafkaSource, manual assign()), "consumer" (KIP-848),
// "streams" (KIP-1071: Kafka Streams with group.protocol=streams).
enum class GroupKind { kClassic, kSimple, kConsumer, kStreams };
inline const char* GroupKindName(GroupKind kind) {
  switch (kind) {
    case GroupKind::kSimple:
      return "simple";
    case GroupKind::kConsumer:
      return "consumer";
    case GroupKind::kStreams:
      return "streams";
    case GroupKind::kClassic:
      break;
  }
  return "classic";
}

// A member of a group with membership, as the group's description names it: who it is, and the
// partitions the coordinator assigned it (its current assignment, on the topics the filter
// accepts). The holder of a partition is what the on-call engineer asks for next after its lag.
struct GroupMember {
  std::string member_id;          // the coordinator's id for it
  std::string client_id;          // the consumer's client.id
  std::string host;               // where it connects from, as Kafka writes it ("/10.0.0.5")
  std::string group_instance_id;  // static membership's group.instance.id; empty when unset
  std::vector<TopicPartition> assignment;  // sorted

  friend bool operator==(const GroupMember&, const GroupMember&) = default;
};

// Kafka's names ("PreparingRebalance", "NotReady") in the snake case lagsight's labels use
// ("preparing_rebalance", "not_ready"): librdkafka's classic states and ConsumerGroupDescribe's
// alike.
inline std::string SnakeCase(std::string_view name) {
  std::string out;
  for (const char c : name) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (!out.empty()) out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

struct ConsumerGroup {
  std::string id;
  std::string state;  // Kafka's state in snake case: stable, empty, preparing_rebalance, ...
  GroupKind kind = GroupKind::kClassic;
  std::optional<int> members;  // unknown where the broker does not describe the group to us
  // Who they are, sorted by member id: classic groups as described, KIP-848 groups as
  // ConsumerGroupDescribe answers (empty where the broker or the connection cannot: before Kafka
  // 4.0, over SASL); empty for simple groups.
  std::vector<GroupMember> member_list;
  // Committed offsets of every partition the group committed on, assigned or not.
  CommittedOffsets committed;
  bool offsets_known = true;  // false when reading this group's offsets failed in this poll
  // Its consumers read with isolation.level=read_committed, as configured
  // (read_committed_groups): its lag ends at the last stable offset.
  bool read_committed = false;
};

// A share group's progress on one partition (KIP-932), as its coordinator describes it. A share
// group has no committed position: records are acknowledged one by one, and the share-partition
// start offset is the first offset not yet acknowledged (or archived); records past it may be
// acknowledged already, in flight, or waiting.
struct SharePartition {
  TopicPartition partition;
  std::int64_t start_offset = -1;  // -1: the share-partition has no state yet
  // The records not yet acknowledged, as the coordinator counts them (KIP-1226, Kafka 4.3);
  // nullopt where the broker does not say.
  std::optional<std::int64_t> lag;
};

// A share group (queue-style consumption, Kafka 4.2+): kept apart from ConsumerGroup, whose
// committed offsets and lag mean something else.
struct ShareGroup {
  std::string id;
  std::string state;                       // Kafka's state in snake case: stable, empty, dead
  std::vector<SharePartition> partitions;  // sorted by partition, each once
  bool offsets_known = true;               // false when reading its progress failed in this poll
  // From ShareGroupDescribe, where the broker answered it: its members, sorted by id, with their
  // assignments (several members may hold one partition: records are shared, not partitions).
  std::optional<int> members;
  std::vector<GroupMember> member_list;
};

// One configured bootstrap address asked on its own: which cluster answers there. A bootstrap
// list that mixes clusters makes librdkafka read whichever answers first and only log a warning,
// so the partitions of the other cluster go silently unread.
struct BootstrapIdentity {
  std::string address;                                   // as configured, e.g. "10.0.0.1:9092"
  std::optional<std::string> cluster_id;                 // empty when the address did not answer
  std::string error;                                     // why, when cluster_id is empty
  std::map<std::string, std::int32_t> topic_partitions;  // partition counts seen there (topic
                                                         // filter applied)
};

// A record position: the first record at or after `offset` (transaction markers and compacted
// gaps make that the next record there is, not necessarily the one at `offset`), as a reader of
// the given isolation sees it: a read_committed reader never receives an aborted transaction's
// records, nor an open one's before it commits.
struct RecordKey {
  TopicPartition partition;
  std::int64_t offset = 0;
  bool read_committed = false;

  friend auto operator<=>(const RecordKey&, const RecordKey&) = default;
};

// The timestamp of a record lagsight read, and which clock set it.
struct RecordTimestamp {
  std::int64_t ms = 0;           // since the epoch
  bool log_append_time = false;  // the broker's (LogAppendTime), else the producer's (CreateTime)

  friend bool operator==(const RecordTimestamp&, const RecordTimestamp&) = default;
};

struct PartitionOffsets {
  std::optional<std::int64_t> log_start;  // earliest offset still in the log
  std::optional<std::int64_t> log_end;    // high watermark: offset of the next record written
  // Last stable offset: the first offset of the oldest transaction still open (else the high
  // watermark), the end a read_committed reader reads to. Read only for partitions some
  // read_committed reader reads.
  std::optional<std::int64_t> last_stable = std::nullopt;
};

// Where a reader of this isolation can read to: the high watermark, or for a read_committed
// reader the last stable offset (the high watermark while that is unknown: an upper bound).
inline std::optional<std::int64_t> ReadableEnd(const PartitionOffsets& offsets,
                                               bool read_committed) {
  if (read_committed && offsets.last_stable && offsets.log_end) {
    return std::min(*offsets.last_stable, *offsets.log_end);
  }
  return offsets.log_end;
}

struct KafkaSnapshot {
  std::vector<ConsumerGroup> groups;     // sorted by id
  std::vector<ShareGroup> share_groups;  // sorted by id; empty where the brokers have none
  // Partition counts of every topic any group committed on (after the topic filter), and of the
  // topics the Flink half asked for.
  std::map<std::string, std::int32_t> topic_partitions;
  // Every topic of the cluster that passes the topic filter, for mapping Flink's escaped topic
  // names back to real ones.
  std::vector<std::string> all_topics;
  // Offsets of every partition of those topics; a partition whose offsets could not be read
  // has empty optionals.
  std::map<TopicPartition, PartitionOffsets> partitions;
  // Per-group and per-partition failures that did not fail the whole poll.
  std::vector<std::string> partial_errors;

  std::optional<std::string> cluster_id;  // of the main client (rd_kafka_clusterid)
  // Broker config offsets.retention.minutes * 60; read every few minutes, carried across polls.
  std::optional<double> offsets_retention_seconds;
  // One per configured bootstrap address, in config order; with a single address, the main
  // client's answer.
  std::vector<BootstrapIdentity> bootstraps;
  // Timestamp of the oldest unconsumed record of group partitions with lag (keyed by the
  // committed offset, or the log start when that is above the commit) and of the next record of
  // each lagging Flink reader position it was told of. Within the fetch budget only: a position
  // that was not fetched (or failed) is absent.
  std::map<RecordKey, RecordTimestamp> record_timestamps;
  // The collector's record-timestamp bookkeeping, kept across polls.
  std::uint64_t record_timestamp_fetches_total = 0;  // records fetched since the collector began
  std::size_t record_timestamp_cache_entries = 0;
  // Unix seconds when the poll that took this snapshot began (0: unknown): every offset in it
  // was read after that.
  double requested_at = 0;
  // Positions (of those whose record timestamps were wanted) with no record up to the log end:
  // position -> the offset the reader reached. A transactional producer's commit (or abort)
  // marker takes an offset no consumer ever receives, so a reader that read every record of a
  // committed transaction stands one marker short of the log end for good.
  std::map<RecordKey, std::int64_t> markers_only;
};

// The records a reader at `position` has left to read up to `end` on `tp` (its ReadableEnd):
// end - position, or 0 when the snapshot's record reader, reading as this reader does, found
// nothing it would receive in between (only transaction markers; for a read_committed reader
// also aborted records): a reader there has consumed every record. The one rule for every lag
// lagsight computes, Kafka side and Flink side.
inline std::int64_t UnreadRecords(const KafkaSnapshot& snapshot, const TopicPartition& tp,
                                  std::int64_t position, std::int64_t end,
                                  bool read_committed = false) {
  if (end <= position) return 0;
  const auto found = snapshot.markers_only.find({tp, position, read_committed});
  if (found != snapshot.markers_only.end() && found->second >= end) return 0;
  return end - position;
}

// How many records of a share-partition its group has not acknowledged, and whether that is the
// coordinator's own count (KIP-1226, Kafka 4.3+) or log end - start offset: an upper bound, since
// records past the start offset may be acknowledged already. None when neither tells (no state
// yet, or the log end unread). The one rule for the share lag lagsight exports and judges.
struct ShareLag {
  std::int64_t records = 0;
  bool upper_bound = false;
};
inline std::optional<ShareLag> ShareLagOf(const SharePartition& partition,
                                          const KafkaSnapshot& snapshot) {
  if (partition.lag) return ShareLag{*partition.lag, false};
  if (partition.start_offset < 0) return std::nullopt;
  const auto offsets = snapshot.partitions.find(partition.partition);
  if (offsets == snapshot.partitions.end() || !offsets->second.log_end) return std::nullopt;
  return ShareLag{std::max<std::int64_t>(0, *offsets->second.log_end - partition.start_offset),
                  true};
}

// True when the bootstrap addresses that answered name two or more different clusters.

inline bool ClusterMismatch(const KafkaSnapshot& snapshot) {
  const std::string* first = nullptr;
  for (const BootstrapIdentity& bootstrap : snapshot.bootstraps) {
    if (!bootstrap.cluster_id) continue;
    if (first == nullptr) {
      first = &*bootstrap.cluster_id;
    } else if (*first != *bootstrap.cluster_id) {
      return true;
    }
  }
  return false;
}

// "a:9092 → <id>, b:9092 → <id>" for the addresses that answered, in config order.
inline std::string AnsweredClusterIds(const std::vector<BootstrapIdentity>& bootstraps) {
  std::string ids;
  for (const BootstrapIdentity& bootstrap : bootstraps) {
    if (!bootstrap.cluster_id) continue;
    if (!ids.empty()) ids += ", ";
    ids += bootstrap.address + " \u2192 " + *bootstrap.cluster_id;
  }
  return ids;
}

}  // namespace lagsight::kafka
