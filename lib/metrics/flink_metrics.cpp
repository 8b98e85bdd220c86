#include "metrics/flink_metrics.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <tuple>

namespace lagsight::metrics {
namespace {

using prometheus::MetricType;

constexpr PollStatusMetrics kHealth{
    {"lagsight_flink_up", "1 if the latest poll of the Flink REST API succeeded.",
     MetricType::Gauge},
    {"lagsight_flink_poll_duration_seconds", "How long the latest poll of the Flink cluster took.",
     MetricType::Gauge},
    {"lagsight_flink_last_poll_timestamp_seconds",
     "Unix time at which the latest successful poll of the Flink cluster completed.",
     MetricType::Gauge},
    {"lagsight_flink_polls_total", "Polls of the Flink cluster.", MetricType::Counter},
    {"lagsight_flink_poll_failures_total", "Polls of the Flink cluster that failed.",
     MetricType::Counter}};

constexpr MetricDef kPartialErrors{"lagsight_flink_poll_partial_errors",
                                   "Jobs the latest poll could not read (the rest succeeded).",
                                   MetricType::Gauge};
constexpr MetricDef kJobInfo{"lagsight_flink_job_info",
                             "A live Flink job (always 1) with its state.", MetricType::Gauge};
constexpr MetricDef kCheckpointingEnabled{"lagsight_flink_checkpointing_enabled",
                                          "1 if the job has checkpointing enabled.",
                                          MetricType::Gauge};
constexpr MetricDef kCompleted{"lagsight_flink_checkpoints_completed_total",
                               "Completed checkpoints of the job.", MetricType::Counter};
constexpr MetricDef kFailed{"lagsight_flink_checkpoints_failed_total",
                            "Failed checkpoints of the job.", MetricType::Counter};
constexpr MetricDef kRestored{"lagsight_flink_checkpoints_restored_total",
                              "Restores of the job from a checkpoint or savepoint.",
                              MetricType::Counter};
constexpr MetricDef kInProgress{"lagsight_flink_checkpoints_in_progress", "Checkpoints under way.",
                                MetricType::Gauge};
constexpr MetricDef kLastCompletedTime{
    "lagsight_flink_checkpoint_last_completed_timestamp_seconds",
    "Unix time the latest completed checkpoint was acknowledged.", MetricType::Gauge};
constexpr MetricDef kAge{
    "lagsight_flink_checkpoint_age_seconds",
    "Age of the latest completed checkpoint (or savepoint) when lagsight's latest "
    "Flink poll began.",
    MetricType::Gauge};
constexpr MetricDef kAgeRatio{
    "lagsight_flink_checkpoint_age_ratio",
    "Checkpoint age divided by the configured checkpoint interval: around 1 "
    "when healthy, growing while checkpoints fail.",
    MetricType::Gauge};
constexpr MetricDef kDuration{"lagsight_flink_checkpoint_last_duration_seconds",
                              "End-to-end duration of the latest completed checkpoint.",
                              MetricType::Gauge};
constexpr MetricDef kSize{"lagsight_flink_checkpoint_last_size_bytes",
                          "Size of the latest completed checkpoint.", MetricType::Gauge};
constexpr MetricDef kInterval{"lagsight_flink_checkpoint_interval_seconds",
                              "Configured checkpoint interval.", MetricType::Gauge};
constexpr MetricDef kMinPause{"lagsight_flink_checkpoint_min_pause_seconds",
                              "Configured minimum pause between checkpoints.", MetricType::Gauge};
constexpr MetricDef kTimeout{"lagsight_flink_checkpoint_timeout_seconds",
                             "Configured checkpoint timeout.", MetricType::Gauge};
constexpr MetricDef kTolerable{"lagsight_flink_checkpoint_tolerable_failures",
                               "Configured tolerable failed checkpoints.", MetricType::Gauge};
constexpr MetricDef kCurrent{"lagsight_flink_source_current_offset",
                             "Offset of the last record the job's source read (currentOffset).",
                             MetricType::Gauge};
constexpr MetricDef kCommitted{
    "lagsight_flink_source_committed_offset",
    "Offset the job's source committed on its latest checkpoint (committedOffset).",
    MetricType::Gauge};
constexpr MetricDef kCommitsSucceeded{"lagsight_flink_source_commits_succeeded_total",
                                      "Offset commits of the source that succeeded.",
                                      MetricType::Counter};
constexpr MetricDef kCommitsFailed{"lagsight_flink_source_commits_failed_total",
                                   "Offset commits of the source that failed.",
                                   MetricType::Counter};
constexpr MetricDef kPending{"lagsight_flink_source_pending_records",
                             "Records the source has not fetched yet (pendingRecords).",
                             MetricType::Gauge};
constexpr MetricDef kRecordsLagMax{"lagsight_flink_source_records_lag_max",
                                   "The source's Kafka consumer's records-lag-max.",
                                   MetricType::Gauge};
constexpr MetricDef kEmitLag{"lagsight_flink_source_emit_event_time_lag_seconds",
                             "currentEmitEventTimeLag of the source (max over subtasks).",
                             MetricType::Gauge};
constexpr MetricDef kWatermarkLag{"lagsight_flink_source_watermark_lag_seconds",
                                  "watermarkLag of the source (max over subtasks).",
                                  MetricType::Gauge};
constexpr MetricDef kSubtaskWatermarkLag{
    "lagsight_flink_source_subtask_watermark_lag_seconds",
    "watermarkLag of each subtask of the source: the largest holds the job's watermark back.",
    MetricType::Gauge};
constexpr MetricDef kBusy{"lagsight_flink_source_busy_ratio",
                          "busyTimeMsPerSecond / 1000 of the source's busiest subtask.",
                          MetricType::Gauge};
constexpr MetricDef kBackPressured{"lagsight_flink_source_backpressured_ratio",
                                   "backPressuredTimeMsPerSecond / 1000, max over subtasks.",
                                   MetricType::Gauge};
constexpr MetricDef kIdle{"lagsight_flink_source_idle_ratio",
                          "idleTimeMsPerSecond / 1000, max over subtasks.", MetricType::Gauge};
constexpr MetricDef kFlinkLag{"lagsight_flink_lag_records",
                              "Flink-side lag: log end - (currentOffset + 1).", MetricType::Gauge};
constexpr MetricDef kFlinkLagSeconds{
    "lagsight_flink_lag_seconds",
    "Flink-side lag in seconds: age of the job's next record (at currentOffset + 1) as of when "
    "Flink took the position; method says how it was measured.",
    MetricType::Gauge};
constexpr MetricDef kTopicFlinkLagSeconds{
    "lagsight_flink_topic_max_lag_seconds",
    "The largest Flink-side lag in seconds over the topic's partitions.", MetricType::Gauge};
constexpr MetricDef kBeyondLogEnd{
    "lagsight_flink_position_beyond_log_end_records",
    "By how much the job's position (currentOffset + 1), or its committedOffset, lies beyond the "
    "partition's log end on the Kafka cluster lagsight polls: impossible there, so the job reads "
    "another cluster (or the topic was recreated). Only while it does.",
    MetricType::Gauge};
constexpr MetricDef kGap{
    "lagsight_flink_checkpoint_gap_records",
    "Records read but not yet committed: (currentOffset + 1) - committedOffset.",
    MetricType::Gauge};
constexpr MetricDef kTopicFlinkLag{"lagsight_flink_topic_lag_records",
                                   "Flink-side lag summed over the topic's partitions.",
                                   MetricType::Gauge};
constexpr MetricDef kTopicGap{"lagsight_flink_topic_checkpoint_gap_records",
                              "Checkpoint gap summed over the topic's partitions.",
                              MetricType::Gauge};
constexpr MetricDef kTopicUnread{
    "lagsight_flink_topic_unread_partitions",
    "Partitions of the topic that no subtask of the source reads (no split assigned), of a topic "
    "it reads other partitions of.",
    MetricType::Gauge};
constexpr MetricDef kUnreadBacklog{
    "lagsight_flink_unread_partition_records",
    "Records in a partition no subtask of the source reads: log end - log start, what a start "
    "from the earliest offset would read there.",
    MetricType::Gauge};
constexpr MetricDef kParallelism{"lagsight_flink_source_parallelism",
                                 "Parallelism of the source vertex (its subtasks).",
                                 MetricType::Gauge};
constexpr MetricDef kIdleSubtasks{
    "lagsight_flink_source_idle_subtasks",
    "Subtasks of the source that hold no partition (parallelism above the partition count): "
    "idle readers hold the watermark back unless the job declares idleness.",
    MetricType::Gauge};
constexpr MetricDef kSourceInfo{
    "lagsight_flink_source_info",
    "A Kafka source of the job (always 1); connector is KafkaSource or FlinkKafkaConsumer (the "
    "legacy consumer of the Flink 1.x connector line).",
    MetricType::Gauge};
constexpr MetricDef kRestarts{"lagsight_flink_job_restarts_total",
                              "Restarts of the job since it was submitted (Flink's numRestarts).",
                              MetricType::Counter};
constexpr MetricDef kJobGroup{
    "lagsight_flink_job_group_info",
    "The consumer group a job's source commits to (always 1); association is "
    "configured or matched.",
    MetricType::Gauge};
constexpr MetricDef kUnresolved{
    "lagsight_flink_source_topic_unresolved",
    "1 for a topic name in the source's metrics that maps to no (unknown) or "
    "several (ambiguous) real topics.",
    MetricType::Gauge};

std::string_view ConnectorName(flink::SourceConnector connector) {
  switch (connector) {
    case flink::SourceConnector::kKafkaSource:
      return "KafkaSource";
    case flink::SourceConnector::kFlinkKafkaConsumer:
      return "FlinkKafkaConsumer";
    case flink::SourceConnector::kUnknown:
      break;
  }
  return {};
}

void AddIf(FamilyBuilder& out, const MetricDef& def, const Labels& labels,
           const std::optional<double>& value, double scale = 1) {
  if (value) out.Add(def, labels, *value * scale);
}

// The checkpoint series of a job whose checkpoint statistics Flink reported: the counts, the
// latest completed checkpoint and its age, and the checkpoint configuration.
void AppendCheckpointSeries(const flink::FlinkJob& job, const Labels& job_labels,
                            const analysis::FlinkFindings& findings, FamilyBuilder& out) {
  const flink::CheckpointStats& stats = job.checkpoints;
  out.Add(kCheckpointingEnabled, job_labels, stats.enabled ? 1 : 0);
  if (!stats.enabled) return;
  out.Add(kCompleted, job_labels, static_cast<double>(stats.counts.completed));
  out.Add(kFailed, job_labels, static_cast<double>(stats.counts.failed));
  out.Add(kRestored, job_labels, static_cast<double>(stats.counts.restored));
  out.Add(kInProgress, job_labels, static_cast<double>(stats.counts.in_progress));
  if (stats.latest_completed_timestamp_ms) {
    const double completed = static_cast<double>(*stats.latest_completed_timestamp_ms) / 1000;
    out.Add(kLastCompletedTime, job_labels, completed);
  }
  if (const auto age = findings.checkpoint_ages.find(job.overview.id);
      age != findings.checkpoint_ages.end()) {
    out.Add(kAge, job_labels, age->second.age_seconds);
    if (age->second.ratio) out.Add(kAgeRatio, job_labels, *age->second.ratio);
  }
  AddIf(out, kDuration, job_labels, stats.latest_duration_ms, 0.001);
  AddIf(out, kSize, job_labels, stats.latest_size_bytes);
  const flink::CheckpointConfig& config = job.checkpoint_config;
  AddIf(out, kInterval, job_labels, config.interval_ms, 0.001);
  AddIf(out, kMinPause, job_labels, config.min_pause_ms, 0.001);
  AddIf(out, kTimeout, job_labels, config.timeout_ms, 0.001);
  AddIf(out, kTolerable, job_labels, config.tolerable_failures);
}

// What each Kafka source of the job reports about itself: its connector, commits, backlog,
// event-time lags and how busy its subtasks are.
void AppendSourceReaderSeries(const flink::FlinkJob& job, const Labels& job_labels,
                              FamilyBuilder& out) {
  const std::vector<std::string> source_labels = analysis::SourceLabels(job);
  for (std::size_t i = 0; i < job.sources.size(); ++i) {
    const flink::SourceReader& source = job.sources[i];
    Labels labels = job_labels;
    labels.emplace_back("source", source_labels[i]);
    if (const std::string_view connector = ConnectorName(source.connector); !connector.empty()) {
      Labels info_labels = labels;
      info_labels.emplace_back("connector", std::string(connector));
      out.Add(kSourceInfo, info_labels, 1);
    }
    AddIf(out, kCommitsSucceeded, labels, source.commits_succeeded);
    AddIf(out, kCommitsFailed, labels, source.commits_failed);
    AddIf(out, kPending, labels, source.pending_records);
    AddIf(out, kRecordsLagMax, labels, source.records_lag_max);
    AddIf(out, kEmitLag, labels, source.emit_event_time_lag_ms, 0.001);
    AddIf(out, kWatermarkLag, labels, source.watermark_lag_ms, 0.001);
    AddIf(out, kBusy, labels, source.busy_ms_per_second, 0.001);
    AddIf(out, kBackPressured, labels, source.backpressured_ms_per_second, 0.001);
    AddIf(out, kIdle, labels, source.idle_ms_per_second, 0.001);
    for (const auto& [subtask, lag_ms] : source.subtask_watermark_lag_ms) {
      Labels subtask_labels = labels;
      subtask_labels.emplace_back("subtask", std::to_string(subtask));
      out.Add(kSubtaskWatermarkLag, subtask_labels, lag_ms * 0.001);
    }
  }
}

// One job as Flink describes it: its state and restarts, its checkpoints, its sources' readers.
void AppendJobSeries(const std::string& cluster, const flink::FlinkJob& job,
                     const analysis::FlinkFindings& findings, FamilyBuilder& out) {
  const Labels job_labels = {
      {"flink_cluster", cluster}, {"job_id", job.overview.id}, {"job_name", job.overview.name}};
  Labels info = job_labels;
  info.emplace_back("state", job.overview.state);
  out.Add(kJobInfo, info, 1);
  if (job.overview.num_restarts) {
    out.Add(kRestarts, job_labels, static_cast<double>(*job.overview.num_restarts));
  }
  // A job that is not running may not have answered for its checkpoints: export nothing
  // rather than zeros a rate() would read as a counter reset.
  if (!job.checkpoint_stats_reported) return;
  AppendCheckpointSeries(job, job_labels, findings, out);
  AppendSourceReaderSeries(job, job_labels, out);
}

// The jobs and groups already given a job_group_info line: (job id, Kafka cluster, group,
// association).
using JobGroups = std::set<std::tuple<std::string, std::string, std::string, std::string>>;

// One line per job and group, however many of the job's sources commit to it (the series
// has no source label: two would be duplicates, which the exposition format forbids).
void AppendJobGroup(const std::string& cluster, const analysis::FlinkSourceJoin& join,
                    JobGroups& job_groups, FamilyBuilder& out) {
  if (join.group &&
      job_groups.insert({join.job_id, join.kafka_cluster, *join.group, join.association}).second) {
    out.Add(kJobGroup,
            {{"flink_cluster", cluster},
             {"job_id", join.job_id},
             {"job_name", join.job_name},
             {"kafka_cluster", join.kafka_cluster},
             {"group", *join.group},
             {"association", join.association}},
            1);
  }
}

// Per partition the source reads: its position and commit against the partition's log end.
void AppendPartitionJoinSeries(const Labels& source_labels,
                               const std::vector<analysis::FlinkPartitionJoin>& partitions,
                               FamilyBuilder& out) {
  for (const analysis::FlinkPartitionJoin& partition : partitions) {
    Labels labels = source_labels;
    labels.emplace_back("topic", partition.topic);
    labels.emplace_back("partition", std::to_string(partition.partition));
    if (partition.current) out.Add(kCurrent, labels, static_cast<double>(*partition.current));
    if (partition.committed) out.Add(kCommitted, labels, static_cast<double>(*partition.committed));
    if (partition.flink_lag) out.Add(kFlinkLag, labels, static_cast<double>(*partition.flink_lag));
    if (partition.checkpoint_gap)
      out.Add(kGap, labels, static_cast<double>(*partition.checkpoint_gap));
    if (partition.beyond_log_end)
      out.Add(kBeyondLogEnd, labels, static_cast<double>(*partition.beyond_log_end));
    if (partition.lag_seconds) {
      labels.emplace_back("method", analysis::LagSecondsMethodName(partition.lag_seconds->method));
      out.Add(kFlinkLagSeconds, labels, partition.lag_seconds->seconds);
    }
  }
}

// Per topic the source reads: the partitions' lags and gaps summed, and the unread partitions.
void AppendTopicJoinSeries(const Labels& source_labels,
                           const std::vector<analysis::FlinkTopicJoin>& topics,
                           FamilyBuilder& out) {
  for (const analysis::FlinkTopicJoin& topic : topics) {
    Labels labels = source_labels;
    labels.emplace_back("topic", topic.topic);
    out.Add(kTopicFlinkLag, labels, static_cast<double>(topic.flink_lag_sum));
    out.Add(kTopicGap, labels, static_cast<double>(topic.checkpoint_gap_sum));
    if (topic.max_lag_seconds) out.Add(kTopicFlinkLagSeconds, labels, *topic.max_lag_seconds);
    if (topic.unread_partitions) {
      out.Add(kTopicUnread, labels, static_cast<double>(*topic.unread_partitions));
    }
  }
}

// Per partition no subtask of the source reads, of a topic it reads: what a start from the
// earliest offset would read there.
void AppendUnreadPartitionSeries(
    const Labels& source_labels,
    const std::vector<analysis::FlinkUnreadPartition>& unread_partitions, FamilyBuilder& out) {
  for (const analysis::FlinkUnreadPartition& unread : unread_partitions) {
    if (!unread.backlog) continue;
    Labels labels = source_labels;
    labels.emplace_back("topic", unread.topic);
    labels.emplace_back("partition", std::to_string(unread.partition));
    out.Add(kUnreadBacklog, labels, static_cast<double>(*unread.backlog));
  }
}

// Per topic name in the source's metrics that maps to no real topic, or to several.
void AppendUnresolvedTopicSeries(const Labels& source_labels,
                                 const std::vector<analysis::UnresolvedTopic>& unresolved_topics,
                                 FamilyBuilder& out) {
  for (const analysis::UnresolvedTopic& unresolved : unresolved_topics) {
    Labels labels = source_labels;
    labels.emplace_back("escaped_topic", unresolved.escaped_topic);
    labels.emplace_back("reason", unresolved.reason);
    out.Add(kUnresolved, labels, 1);
  }
}

// One source joined with the Kafka half: its group, its subtasks, and its partitions' lags.
void AppendSourceJoinSeries(const std::string& cluster, const analysis::FlinkSourceJoin& join,
                            JobGroups& job_groups, FamilyBuilder& out) {
  const Labels source_labels = {{"flink_cluster", cluster},
                                {"job_id", join.job_id},
                                {"job_name", join.job_name},
                                {"source", join.source}};
  AppendJobGroup(cluster, join, job_groups, out);
  if (join.parallelism) out.Add(kParallelism, source_labels, *join.parallelism);
  if (join.idle_subtasks) out.Add(kIdleSubtasks, source_labels, *join.idle_subtasks);
  AppendPartitionJoinSeries(source_labels, join.partitions, out);
  AppendTopicJoinSeries(source_labels, join.topics, out);
  AppendUnreadPartitionSeries(source_labels, join.unread, out);
  AppendUnresolvedTopicSeries(source_labels, join.unresolved, out);
}

}  // namespace

void AppendFlinkMetrics(const std::string& cluster, const PollStatus& status,
                        const flink::FlinkSnapshot* snapshot,
                        const analysis::FlinkFindings& findings, FamilyBuilder& out) {
  const Labels cluster_labels = {{"flink_cluster", cluster}};
  AppendPollStatus(kHealth, cluster_labels, status, out);
  if (snapshot == nullptr) return;
  out.Add(kPartialErrors, cluster_labels, static_cast<double>(snapshot->partial_errors.size()));
  for (const flink::FlinkJob& job : snapshot->jobs) AppendJobSeries(cluster, job, findings, out);
  JobGroups job_groups;
  for (const analysis::FlinkSourceJoin& join : findings.joins) {
    AppendSourceJoinSeries(cluster, join, job_groups, out);
  }
}

}  // namespace lagsight::metrics
