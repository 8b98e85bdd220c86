#include "metrics/findings_metrics.h"

#include <limits>
#include <map>
#include <set>
#include <string>

namespace lagsight::metrics {
namespace {

using prometheus::MetricType;

constexpr MetricDef kMaxLagSeconds{"lagsight_kafka_group_max_lag_seconds",
                                   "The largest lag in seconds over the group's partitions.",
                                   MetricType::Gauge};
constexpr MetricDef kGroupCatchUp{
    "lagsight_kafka_group_catch_up_seconds",
    "Seconds until the group's lag reaches 0 at the pace it shrank over the diagnosis window; "
    "+Inf while it is not shrinking, 0 when there is none.",
    MetricType::Gauge};
constexpr MetricDef kSourceCatchUp{
    "lagsight_flink_source_catch_up_seconds",
    "Seconds until the source's Flink-side lag reaches 0 at the pace it shrank over the "
    "diagnosis window; +Inf while it is not shrinking, 0 when there is none.",
    MetricType::Gauge};
constexpr MetricDef kGroupTarget{
    "lagsight_kafka_group_lateness_target_seconds",
    "The configured lateness target of the group (diagnosis.lateness_targets): how old its "
    "oldest unconsumed record may get.",
    MetricType::Gauge};
constexpr MetricDef kJobTarget{
    "lagsight_flink_job_lateness_target_seconds",
    "The configured lateness target of the Flink job (diagnosis.lateness_targets): how old its "
    "next record may get.",
    MetricType::Gauge};
constexpr MetricDef kLastCommit{
    "lagsight_kafka_group_last_commit_timestamp_seconds",
    "Unix time lagsight last saw the group commit (its offsets changed, its Flink job committed "
    "or it had members); lagsight's first sight of the group when it has seen none.",
    MetricType::Gauge};
constexpr MetricDef kExpiry{
    "lagsight_kafka_group_offsets_expiry_seconds",
    "Seconds until the broker expires the offsets of this group without members "
    "(offsets.retention.minutes after the last commit lagsight saw).",
    MetricType::Gauge};
constexpr MetricDef kSawtooth{
    "lagsight_kafka_group_sawtooth",
    "1 if the group's lag climbs between regular commits and drops at each (the checkpoint "
    "sawtooth).",
    MetricType::Gauge};
constexpr MetricDef kSawtoothPeriod{"lagsight_kafka_group_sawtooth_period_seconds",
                                    "Mean time between the group's regular commits.",
                                    MetricType::Gauge};
constexpr MetricDef kSawtoothAmplitude{"lagsight_kafka_group_sawtooth_amplitude_records",
                                       "Median drop of the group's lag at a commit.",
                                       MetricType::Gauge};
constexpr MetricDef kCommitFailureRatio{
    "lagsight_flink_source_commit_failure_ratio",
    "Failed / attempted offset commits of the source over the diagnosis window.",
    MetricType::Gauge};
constexpr MetricDef kDiagnosis{
    "lagsight_diagnosis",
    "The active cause (always 1) of a job<->group pair; job_id is empty for a group no Flink "
    "job commits to, group is empty for a job lagsight finds no group for.",
    MetricType::Gauge};
constexpr MetricDef kEvidence{
    "lagsight_diagnosis_evidence",
    "1 for every cause whose rule holds for the pair now, the active cause or not (the active "
    "one is lagsight_diagnosis: the first of these in precedence order, confirmed).",
    MetricType::Gauge};
constexpr MetricDef kStuckPartition{
    "lagsight_diagnosis_stuck_partition",
    "1 for each partition whose position stands still with records waiting while the pair's "
    "other partitions move (the evidence of partition_stuck).",
    MetricType::Gauge};
constexpr MetricDef kCommitMode{
    "lagsight_flink_source_commit_mode",
    "How the source keeps its position in Kafka (always 1): checkpoint (commits on checkpoints), "
    "none (never commits: no group.id, or commits off), unknown (too early to say).",
    MetricType::Gauge};
constexpr MetricDef kDiagnosisSince{"lagsight_diagnosis_since_timestamp_seconds",
                                    "Unix time the active cause became active.", MetricType::Gauge};
constexpr MetricDef kBottleneckBusy{
    "lagsight_flink_job_bottleneck_busy_ratio",
    "busyTimeMsPerSecond / 1000 of the busiest subtask of the vertex that holds the job back "
    "(busy while the vertices it reads from are backpressured); read for jobs that are behind.",
    MetricType::Gauge};
constexpr MetricDef kBottleneckParallelism{"lagsight_flink_job_bottleneck_parallelism",
                                           "Parallelism of the job's bottleneck vertex.",
                                           MetricType::Gauge};
constexpr MetricDef kBottleneckSkewed{
    "lagsight_flink_job_bottleneck_skewed",
    "1 when the bottleneck's busiest subtask works at least twice its average (skew: more "
    "parallelism would not help), else 0.",
    MetricType::Gauge};
constexpr MetricDef kBottleneckBusiestSubtask{
    "lagsight_flink_job_bottleneck_busiest_subtask",
    "Index of the bottleneck's busiest subtask where it is skewed (Flink's per-subtask "
    "busyRatio): the subtask that does most of the work.",
    MetricType::Gauge};
constexpr MetricDef kHotPartition{
    "lagsight_diagnosis_hot_partition_backlog_share",
    "Share (0-1) of the pair's backlog held by one partition where it holds most of it (at "
    "least half, and twice an even share) while the job is behind: skew, more parallelism "
    "would not help.",
    MetricType::Gauge};
constexpr MetricDef kBottleneckCapacity{
    "lagsight_flink_job_bottleneck_capacity_records_per_second",
    "Records per second the bottleneck vertex would process at 100 % busy: what it processes "
    "over the share of each second it is busy.",
    MetricType::Gauge};
constexpr MetricDef kRecommendedParallelism{
    "lagsight_diagnosis_recommended_parallelism",
    "The parallelism of the bottleneck vertex that drains the pair's backlog within "
    "diagnosis.catch_up_target at the current input rate; absent when unknowable (skew, beyond "
    "max parallelism or the source's partitions, no busy time).",
    MetricType::Gauge};
constexpr MetricDef kCatchUpNow{
    "lagsight_diagnosis_catch_up_at_current_parallelism_seconds",
    "Seconds the pair's backlog takes to drain at the bottleneck's capacity with today's "
    "parallelism; +Inf when that capacity does not exceed the input rate.",
    MetricType::Gauge};

void AppendBottleneckSeries(const std::string& cluster, const analysis::FlinkFindings& flink,
                            const std::map<std::string, std::string>& job_names,
                            FamilyBuilder& builder) {
  for (const auto& [job_id, bottleneck] : flink.bottlenecks) {
    const auto name = job_names.find(job_id);
    const Labels labels{{"flink_cluster", cluster},
                        {"job_id", job_id},
                        {"job_name", name != job_names.end() ? name->second : ""},
                        {"vertex", bottleneck.vertex_name},
                        {"vertex_id", bottleneck.vertex_id}};
    builder.Add(kBottleneckBusy, labels, bottleneck.busy_ms_max / 1000);
    builder.Add(kBottleneckParallelism, labels, bottleneck.parallelism);
    builder.Add(kBottleneckSkewed, labels, bottleneck.skewed ? 1 : 0);
    if (bottleneck.busiest_subtask) {
      builder.Add(kBottleneckBusiestSubtask, labels, *bottleneck.busiest_subtask);
    }
    if (bottleneck.capacity_per_second) {
      builder.Add(kBottleneckCapacity, labels, *bottleneck.capacity_per_second);
    }
  }
}

void AppendCatchUpPlanSeries(const analysis::DiagnosisFinding& verdict, FamilyBuilder& builder) {
  if (!verdict.bottleneck || !verdict.catch_up_plan) return;
  const Labels labels{{"kafka_cluster", verdict.kafka_cluster},
                      {"group", verdict.group},
                      {"job_id", verdict.job_id},
                      {"job_name", verdict.job_name},
                      {"vertex", verdict.bottleneck->vertex_name}};
  const analysis::CatchUpPlan& plan = *verdict.catch_up_plan;
  if (plan.parallelism) builder.Add(kRecommendedParallelism, labels, *plan.parallelism);
  if (plan.hot_partition) {
    Labels partition_labels = labels;
    partition_labels.emplace_back("topic", plan.hot_partition->topic);
    partition_labels.emplace_back("partition", std::to_string(plan.hot_partition->partition));
    builder.Add(kHotPartition, partition_labels, plan.hot_partition->share);
  }
  if (verdict.bottleneck->capacity_per_second) {
    builder.Add(kCatchUpNow, labels,
                plan.catch_up_seconds_now.value_or(std::numeric_limits<double>::infinity()));
  }
}

}  // namespace

void AppendFindingsMetrics(const analysis::Findings& findings, FamilyBuilder& builder) {
  for (const auto& [cluster, kafka] : findings.kafka) {
    for (const analysis::GroupFindings& group : kafka->groups) {
      const Labels group_labels{{"kafka_cluster", cluster}, {"group", group.group}};
      // The per-partition lag in seconds is the Kafka cluster's (kafka_metrics.cpp): its
      // granularity and budget decide about it.
      if (group.max_lag_seconds) builder.Add(kMaxLagSeconds, group_labels, *group.max_lag_seconds);
      if (group.catch_up_seconds) builder.Add(kGroupCatchUp, group_labels, *group.catch_up_seconds);
      if (group.lateness_target_seconds) {
        builder.Add(kGroupTarget, group_labels, *group.lateness_target_seconds);
      }
      builder.Add(kLastCommit, group_labels, group.last_commit_time);
      if (group.offsets_expiry_seconds) {
        builder.Add(kExpiry, group_labels, *group.offsets_expiry_seconds);
      }
      builder.Add(kSawtooth, group_labels, group.sawtooth.detected ? 1 : 0);
      if (group.sawtooth.period_seconds) {
        builder.Add(kSawtoothPeriod, group_labels, *group.sawtooth.period_seconds);
      }
      if (group.sawtooth.amplitude_records) {
        builder.Add(kSawtoothAmplitude, group_labels, *group.sawtooth.amplitude_records);
      }
    }
  }
  for (const auto& [cluster, flink] : findings.flink) {
    std::map<std::string, std::string> job_names;
    for (const analysis::FlinkSourceJoin& join : flink.joins)
      job_names[join.job_id] = join.job_name;
    AppendBottleneckSeries(cluster, flink, job_names, builder);
    std::set<std::string> jobs_with_target;  // one series per job, however many sources
    for (const analysis::SourceFindings& source : flink.sources) {
      if (source.lateness_target_seconds && jobs_with_target.insert(source.job_id).second) {
        builder.Add(
            kJobTarget,
            {{"flink_cluster", cluster}, {"job_id", source.job_id}, {"job_name", source.job_name}},
            *source.lateness_target_seconds);
      }
      Labels labels{{"flink_cluster", cluster},
                    {"job_id", source.job_id},
                    {"job_name", source.job_name},
                    {"source", source.source}};
      if (source.commit_failure_ratio) {
        builder.Add(kCommitFailureRatio, labels, *source.commit_failure_ratio);
      }
      if (source.catch_up_seconds) builder.Add(kSourceCatchUp, labels, *source.catch_up_seconds);
      labels.emplace_back("mode", source.commit_mode);
      builder.Add(kCommitMode, labels, 1);
    }
  }
  for (const analysis::DiagnosisFinding& verdict : findings.diagnosis) {
    Labels labels{{"kafka_cluster", verdict.kafka_cluster},
                  {"group", verdict.group},
                  {"job_id", verdict.job_id},
                  {"job_name", verdict.job_name},
                  {"cause", analysis::CauseName(verdict.cause)}};
    builder.Add(kDiagnosis, labels, 1);
    builder.Add(kDiagnosisSince, labels, verdict.since);
    AppendCatchUpPlanSeries(verdict, builder);
    for (const analysis::Cause cause : verdict.evidence) {
      labels.back().second = analysis::CauseName(cause);
      builder.Add(kEvidence, labels, 1);
    }
    for (const kafka::TopicPartition& tp : verdict.stuck_partitions) {
      builder.Add(kStuckPartition,
                  {{"kafka_cluster", verdict.kafka_cluster},
                   {"group", verdict.group},
                   {"job_id", verdict.job_id},
                   {"job_name", verdict.job_name},
                   {"topic", tp.topic},
                   {"partition", std::to_string(tp.partition)}},
                  1);
    }
  }
}

}  // namespace lagsight::metrics
