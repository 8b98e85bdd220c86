#include "metrics/kafka_metrics.h"

namespace lagsight::metrics {
namespace {

using prometheus::MetricType;

constexpr PollStatusMetrics kHealth{
    {"lagsight_kafka_up", "1 if the latest poll of the Kafka cluster succeeded, else 0.",
     MetricType::Gauge},
    {"lagsight_kafka_poll_duration_seconds", "How long the latest poll of the Kafka cluster took.",
     MetricType::Gauge},
    {"lagsight_kafka_last_poll_timestamp_seconds",
     "Unix time at which the latest successful poll of the Kafka cluster completed.",
     MetricType::Gauge},
    {"lagsight_kafka_polls_total", "Polls of the Kafka cluster.", MetricType::Counter},
    {"lagsight_kafka_poll_failures_total", "Polls of the Kafka cluster that failed.",
     MetricType::Counter}};

constexpr MetricDef kPartialErrors{
    "lagsight_kafka_poll_partial_errors",
    "Groups or partitions the latest poll could not read (the rest of the poll succeeded).",
    MetricType::Gauge};
constexpr MetricDef kLatestOffset{"lagsight_kafka_partition_latest_offset",
                                  "Log-end offset (high watermark) of the partition.",
                                  MetricType::Gauge};
constexpr MetricDef kLastStableOffset{
    "lagsight_kafka_partition_last_stable_offset",
    "Last stable offset of the partition (first offset of its oldest open transaction, else the "
    "high watermark): where read_committed readers' lag ends. Read only for partitions such a "
    "reader reads.",
    MetricType::Gauge};
constexpr MetricDef kEarliestOffset{"lagsight_kafka_partition_earliest_offset",
                                    "Log-start offset of the partition.", MetricType::Gauge};
constexpr MetricDef kGroupInfo{
    "lagsight_kafka_group_info",
    "A consumer group (always 1) with its state and kind (classic, simple, consumer).",
    MetricType::Gauge};
constexpr MetricDef kGroupMembers{"lagsight_kafka_group_members",
                                  "Members of the consumer group (0 for simple and empty groups).",
                                  MetricType::Gauge};
constexpr MetricDef kCommitted{"lagsight_kafka_group_committed_offset",
                               "Committed offset of the group: the next offset it would read.",
                               MetricType::Gauge};
constexpr MetricDef kLag{"lagsight_kafka_group_lag_records",
                         "Kafka-side lag: max(0, log-end offset - committed offset).",
                         MetricType::Gauge};
constexpr MetricDef kTopicLag{"lagsight_kafka_group_topic_lag_records",
                              "Kafka-side lag of the group summed over the topic's partitions.",
                              MetricType::Gauge};
constexpr MetricDef kMaxLag{"lagsight_kafka_group_max_lag_records",
                            "Largest Kafka-side lag of any partition the group committed on.",
                            MetricType::Gauge};
constexpr MetricDef kUncommitted{
    "lagsight_kafka_group_partition_uncommitted",
    "1 for a partition of a topic the group consumes that has no committed offset of the group.",
    MetricType::Gauge};
constexpr MetricDef kTopicUncommitted{
    "lagsight_kafka_group_topic_uncommitted_partitions",
    "Partitions of a topic the group consumes that have no committed offset of the group.",
    MetricType::Gauge};
constexpr MetricDef kOutOfRange{
    "lagsight_kafka_group_offset_out_of_range",
    "1 when the committed offset lies beyond the log end or before the log start.",
    MetricType::Gauge};

constexpr MetricDef kRegressions{
    "lagsight_kafka_group_offset_regressions_total",
    "Times the group's committed offset moved backwards between two polls (restore from an old "
    "savepoint, shared group id, offset reset). Exported once it happened.",
    MetricType::Counter};

constexpr MetricDef kRetention{
    "lagsight_kafka_offsets_retention_seconds",
    "The brokers' offsets.retention.minutes in seconds: how long an empty group keeps its "
    "committed offsets after its last commit.",
    MetricType::Gauge};
constexpr MetricDef kBootstrapClusterInfo{
    "lagsight_kafka_bootstrap_cluster_info",
    "A configured bootstrap address that answered (always 1), with the cluster id it answered "
    "with.",
    MetricType::Gauge};
constexpr MetricDef kClusterMismatch{
    "lagsight_kafka_cluster_mismatch",
    "1 when the configured bootstrap addresses answer with different cluster ids (lagsight then "
    "reads no group or offset through them), else 0.",
    MetricType::Gauge};
constexpr MetricDef kTimestampFetches{
    "lagsight_kafka_record_timestamp_fetches_total",
    "Records read to learn the timestamp of a group's oldest unconsumed record (cache misses).",
    MetricType::Counter};
constexpr MetricDef kTimestampCacheEntries{
    "lagsight_kafka_record_timestamp_cache_entries",
    "Record timestamps cached by position for the lag in seconds.", MetricType::Gauge};

const char* PositionName(analysis::CommitPosition position) {
  switch (position) {
    case analysis::CommitPosition::kBeyondLogEnd:
      return "beyond_log_end";
    case analysis::CommitPosition::kBeforeLogStart:
      return "before_log_start";
    default:
      return nullptr;
  }
}

}  // namespace

void AppendKafkaMetrics(const std::string& cluster, const PollStatus& status,
                        const analysis::KafkaPoll& poll, FamilyBuilder& out) {
  const Labels cluster_labels = {{"kafka_cluster", cluster}};
  AppendPollStatus(kHealth, cluster_labels, status, out);
  if (poll.snapshot == nullptr || poll.lags == nullptr) return;
  const kafka::KafkaSnapshot* snapshot = poll.snapshot.get();
  const std::vector<analysis::GroupLag>* lags = poll.lags.get();
  const analysis::OffsetRegressionCounts* regressions = poll.regression_counts.get();

  out.Add(kPartialErrors, cluster_labels, static_cast<double>(snapshot->partial_errors.size()));
  if (snapshot->offsets_retention_seconds) {
    out.Add(kRetention, cluster_labels, *snapshot->offsets_retention_seconds);
  }
  for (const kafka::BootstrapIdentity& bootstrap : snapshot->bootstraps) {
    if (!bootstrap.cluster_id) continue;
    out.Add(kBootstrapClusterInfo,
            {{"kafka_cluster", cluster},
             {"bootstrap", bootstrap.address},
             {"cluster_id", *bootstrap.cluster_id}},
            1);
  }
  out.Add(kClusterMismatch, cluster_labels, kafka::ClusterMismatch(*snapshot) ? 1 : 0);
  out.Add(kTimestampFetches, cluster_labels,
          static_cast<double>(snapshot->record_timestamp_fetches_total));
  out.Add(kTimestampCacheEntries, cluster_labels,
          static_cast<double>(snapshot->record_timestamp_cache_entries));
  for (const auto& [tp, offsets] : snapshot->partitions) {
    const Labels labels = {{"kafka_cluster", cluster},
                           {"topic", tp.topic},
                           {"partition", std::to_string(tp.partition)}};
    if (offsets.log_end) out.Add(kLatestOffset, labels, static_cast<double>(*offsets.log_end));
    if (offsets.log_start)
      out.Add(kEarliestOffset, labels, static_cast<double>(*offsets.log_start));
    if (offsets.last_stable) {
      out.Add(kLastStableOffset, labels, static_cast<double>(*offsets.last_stable));
    }
  }
  for (const kafka::ConsumerGroup& group : snapshot->groups) {
    out.Add(kGroupInfo,
            {{"kafka_cluster", cluster},
             {"group", group.id},
             {"state", group.state},
             {"kind", kafka::GroupKindName(group.kind)}},
            1);
    if (group.members) {
      out.Add(kGroupMembers, {{"kafka_cluster", cluster}, {"group", group.id}}, *group.members);
    }
  }
  for (const analysis::GroupLag& group : *lags) {
    const Labels group_labels = {{"kafka_cluster", cluster}, {"group", group.group}};
    if (group.max_lag) out.Add(kMaxLag, group_labels, static_cast<double>(*group.max_lag));
    for (const analysis::TopicLag& topic : group.topics) {
      Labels topic_labels = group_labels;
      topic_labels.emplace_back("topic", topic.topic);
      out.Add(kTopicLag, topic_labels, static_cast<double>(topic.lag_sum));
      out.Add(kTopicUncommitted, topic_labels, topic.uncommitted_partitions);
      for (const analysis::PartitionLag& partition : topic.partitions) {
        Labels labels = topic_labels;
        labels.emplace_back("partition", std::to_string(partition.partition));
        if (partition.position == analysis::CommitPosition::kNoCommit) {
          out.Add(kUncommitted, labels, 1);
          continue;
        }
        out.Add(kCommitted, labels, static_cast<double>(*partition.committed));
        if (partition.lag) out.Add(kLag, labels, static_cast<double>(*partition.lag));
        if (const char* position = PositionName(partition.position)) {
          Labels flagged = labels;
          flagged.emplace_back("position", position);
          out.Add(kOutOfRange, flagged, 1);
        }
      }
    }
  }
  if (regressions == nullptr) return;
  for (const auto& [key, count] : *regressions) {
    out.Add(kRegressions,
            {{"kafka_cluster", cluster},
             {"group", key.first},
             {"topic", key.second.topic},
             {"partition", std::to_string(key.second.partition)}},
            static_cast<double>(count));
  }
}

}  // namespace lagsight::metrics
