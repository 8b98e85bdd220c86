// The join of a Flink job's own view (its KafkaSourceReader offsets) with the Kafka half.
//
// Pure: snapshots in, joined data out; no I/O, no clock. Per job source it
//  - maps the escaped topic names of Flink's metric ids back to real topics (an escaped name
//    that fits two real topics, e.g. "a.b" and "a_b", is reported as ambiguous, never guessed);
//  - associates the job with its consumer group: from the configured mapping, else by finding
//    the group whose committed offsets equal the job's committedOffset values (now, or, through
//    `CommittedEarlier`, a moment ago: Flink serves its metrics up to a refresh late);
//  - computes per partition the Flink-side lag = log end - (currentOffset + 1) and the
//    checkpoint gap = (currentOffset + 1) - committedOffset, and their per-topic sums;
//  - names the partitions of each topic it reads that no subtask of the source reads, and counts
//    the subtasks that read no partition at all.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/lag_seconds.h"
#include "config/config.h"
#include "flink/snapshot.h"
#include "kafka/snapshot.h"

namespace lagsight::analysis {

struct FlinkPartitionJoin {
  std::string topic;
  std::int32_t partition = 0;
  std::optional<std::int64_t> current;
  std::optional<std::int64_t> committed;
  std::optional<std::int64_t> log_end;
  std::optional<std::int64_t> flink_lag;
  std::optional<std::int64_t> checkpoint_gap;
  // Age of the job's next record (at currentOffset + 1) as of when Flink took the position; set
  // by AlignFlinkLag (flink_alignment.h), against the log-end history of that moment.
  std::optional<LagSeconds> lag_seconds;
  // By how much the job's position (currentOffset + 1), or its committedOffset, lies beyond the
  // log end of the cluster lagsight polls: impossible there, so the job reads (or commits to)
  // another cluster, or the topic was recreated. Set by the analyzer, present only when > 0.
  std::optional<std::int64_t> beyond_log_end;
};

struct FlinkTopicJoin {
  std::string topic;
  std::int64_t flink_lag_sum = 0;
  std::int64_t checkpoint_gap_sum = 0;
  std::optional<double> max_lag_seconds;  // over the partitions that have lag_seconds
  // Partitions of the topic that no subtask of the source reads (see FlinkUnreadPartition);
  // empty while the topic's partition count is not known.
  std::optional<std::int32_t> unread_partitions;
};

// A partition of a topic the source reads that none of its subtasks reports: no split of it is
// assigned (partitions added while partition discovery is off, or not yet discovered; a
// bootstrap list that reached another cluster). Only topics the source reads at least one
// partition of are checked: a topic it reads nothing of is not known to be its.
struct FlinkUnreadPartition {
  std::string topic;
  std::int32_t partition = 0;
  // What a start from the earliest offset would read there: log end - log start.
  std::optional<std::int64_t> backlog;
};

struct UnresolvedTopic {
  std::string escaped_topic;
  std::string reason;  // "ambiguous" or "unknown"
};

struct FlinkSourceJoin {
  std::string job_id;
  std::string job_name;
  std::string source;         // the source operator's name, e.g. "orders-source"
  std::string kafka_cluster;  // empty when no Kafka cluster could be chosen
  std::optional<std::string> group;
  std::string association;      // "configured" or "matched", with group
  bool read_committed = false;  // the job reads read_committed (FlinkJob::read_committed)
  // Matched only through the group's recent past (CommittedEarlier), not its current offsets:
  // weaker evidence, which must not move a job off a group it was matched with before.
  bool matched_by_history = false;
  // Without a unique match: the groups whose offsets fit the job's equally (a quiet topic where
  // two caught-up jobs' groups hold the same offsets). The job's offsets are committed; which
  // group holds them is not known yet.
  std::vector<std::string> candidate_groups;
  std::vector<FlinkPartitionJoin> partitions;
  std::vector<FlinkTopicJoin> topics;
  std::vector<FlinkUnreadPartition> unread;
  std::vector<UnresolvedTopic> unresolved;
  // The source vertex's parallelism, and how many of its subtasks hold no split (a parallelism
  // above the partition count): idle readers, which hold the job's watermark back unless its
  // WatermarkStrategy declares idleness. Idle subtasks stay empty until some subtask reports a
  // partition (before that nothing tells a reader without splits from one not yet measured).
  std::optional<int> parallelism;
  std::optional<int> idle_subtasks;
};

// "Source: orders-source -> Map" -> "orders-source": the label a source goes by.
std::string FlinkSourceName(const std::string& vertex_name);

// The `source` label of each of the job's sources, in job.sources' order: FlinkSourceName, made
// unique with the vertex id where two sources of the job share a name (two vertices both called
// "Kafka Source" would otherwise give duplicate series, and Prometheus rejects the scrape).
std::vector<std::string> SourceLabels(const flink::FlinkJob& job);

// What a group's committed offsets on `tp` did a moment ago (before the offsets it holds now),
// relative to `offset`. The JobManager serves a reader's committedOffset up to one metric refresh
// (10 s by default) late; a job checkpointing more often than that has committed again by the
// time lagsight reads the value, so the group's current offsets are ahead of what Flink reports
// and only the group's recent past can show they are the job's.
enum class EarlierCommit {
  kNo,
  kPassedThrough,  // held an offset below it, and now holds one at or above it
  kHeldExactly,    // held exactly it
};
using CommittedEarlier =
    std::function<EarlierCommit(const std::string& kafka_cluster, const std::string& group,
                                const kafka::TopicPartition& tp, std::int64_t offset)>;

// `kafka` holds the latest snapshot of every Kafka cluster that is up, by cluster name.
// `committed_earlier` may be empty (then only the groups' current offsets are compared). The
// strongest evidence decides: a group whose current offsets fit, else one that held the job's
// committedOffset exactly, else one whose offsets passed through it; two at the same strength
// are candidates, never guessed between.
std::vector<FlinkSourceJoin> JoinFlinkWithKafka(
    const config::FlinkClusterConfig& flink_config, const flink::FlinkSnapshot& flink,
    const std::map<std::string, const kafka::KafkaSnapshot*>& kafka,
    const CommittedEarlier& committed_earlier = {});

}  // namespace lagsight::analysis
