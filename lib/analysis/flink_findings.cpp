#include "analysis/flink_findings.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "analysis/analysis_time.h"
#include "analysis/bottleneck.h"
#include "analysis/catch_up.h"
#include "analysis/checkpoint_age.h"
#include "analysis/flink_alignment.h"
#include "analysis/history.h"

namespace lagsight::analysis {
namespace {

// When the source's Flink-side backlog reaches 0; none while a partition's lag is unknown
// (the sum would jump when it becomes known).
std::optional<double> CatchUpTime(ThinningSeries<BacklogSample>& backlog,
                                  const FlinkSourceJoin& join, const KafkaHistories& kafka,
                                  const config::DiagnosisConfig& config, double now) {
  std::int64_t records = 0;
  std::set<kafka::TopicPartition> partitions;
  for (const FlinkPartitionJoin& partition : join.partitions) {
    if (!partition.flink_lag) return std::nullopt;
    records += *partition.flink_lag;
    partitions.insert({partition.topic, partition.partition});
  }
  const auto cluster = kafka.find(join.kafka_cluster);
  if (partitions.empty() || cluster == kafka.end()) return std::nullopt;
  backlog.Add({now, records});
  return CatchUp(
      backlog, [](const BacklogSample& s) { return s.records; },
      cluster->second.InputRateOf(partitions, Seconds(config.window), now), now, config);
}

// What the renderer shows of one joined source.
SourceFindings SourceFindingsOf(const FlinkSourceJoin& join, JobHistory& job,
                                const std::string& mode, const KafkaHistories& kafka,
                                const config::DiagnosisConfig& config, double now) {
  SourceFindings source;
  source.job_id = join.job_id;
  source.job_name = join.job_name;
  source.source = join.source;
  source.commit_mode = mode;
  source.catch_up_seconds = CatchUpTime(job.backlogs[join.source], join, kafka, config, now);
  source.lateness_target_seconds =
      LatenessTargetOf(config, config::LatenessTarget::Of::kJobs, join.job_name);
  const auto series = job.sources.find(join.source);
  if (series != job.sources.end() && !series->second.empty()) {
    const double window = Seconds(config.window);
    const double failed = IncreaseOverWindow(
        series->second, [](const SourceSample& s) { return s.failed; }, now, window);
    const double succeeded = IncreaseOverWindow(
        series->second, [](const SourceSample& s) { return s.succeeded; }, now, window);
    if (failed + succeeded > 0) source.commit_failure_ratio = failed / (failed + succeeded);
  }
  return source;
}

// Makes the joins' associations sticky and aligns their lag, one source at a time, and adds the
// findings of each source to `findings`.
void ResolveJoins(const std::string& flink_cluster, const SourcesView& sources, FlinkCluster& state,
                  FlinkFindings& findings, JobHistories& jobs, const KafkaHistories& kafka,
                  Associations& associations, const config::DiagnosisConfig& config, double now) {
  const std::map<std::string, std::set<std::string>> committing_sources =
      Associations::CommittingSources(findings.joins, jobs);
  for (FlinkSourceJoin& join : findings.joins) {
    auto history = jobs.find(join.job_id);
    if (history == jobs.end()) continue;
    JobHistory& job = history->second;
    const auto series = job.sources.find(join.source);
    const std::string mode = series != job.sources.end() ? CommitMode(series->second, job.samples)
                                                         : std::string("unknown");
    const auto committing = committing_sources.find(join.job_id);
    associations.Apply(flink_cluster, join, job, mode,
                       committing != committing_sources.end() && !committing->second.empty(), now);
    const auto cluster = kafka.find(join.kafka_cluster);
    const auto view = sources.kafka.find(join.kafka_cluster);
    if (cluster != kafka.end() && view != sources.kafka.end()) {
      AlignFlinkLag(join, job, state.timing, cluster->second, view->second.snapshot.get());
    }
    findings.sources.push_back(SourceFindingsOf(join, job, mode, kafka, config, now));
  }
}

}  // namespace

double SlowestMetricsRefresh(const FlinkClusters& flink) {
  double refresh = kDefaultMetricsFetchIntervalSeconds;
  for (const auto& [name, cluster] : flink) {
    refresh = std::max(refresh, cluster.timing.metrics_fetch_interval);
  }
  return refresh;
}

void FindFlink(const std::string& flink_cluster, const SourcesView& sources, FlinkClusters& flink,
               JobHistories& jobs, const KafkaHistories& kafka, Associations& associations,
               const config::DiagnosisConfig& config, double now) {
  const auto view = sources.flink.find(flink_cluster);
  FlinkCluster& state = flink[flink_cluster];
  for (auto& [job_id, history] : jobs) {
    if (history.flink_cluster == flink_cluster) history.latest = nullptr;
  }
  if (view == sources.flink.end() || view->second.snapshot == nullptr) {
    if (!state.down_since) state.down_since = now;
    state.up = false;
    return;
  }
  state.up = true;
  state.down_since.reset();
  std::map<std::string, const kafka::KafkaSnapshot*> kafka_up;
  for (const auto& [name, kafka_view] : sources.kafka) {
    if (kafka_view.snapshot != nullptr) kafka_up[name] = kafka_view.snapshot.get();
  }
  // Pointers into the snapshot the app holds for as long as this call runs.
  for (const flink::FlinkJob& job : view->second.snapshot->jobs) {
    if (auto history = jobs.find(job.overview.id); history != jobs.end()) {
      history->second.latest = &job;
    }
  }
  FlinkFindings findings;
  findings.checkpoint_ages =
      CheckpointAges(*view->second.snapshot, KnownAt(view->second.snapshot->requested_at, now));
  for (const flink::FlinkJob& job : view->second.snapshot->jobs) {
    if (auto bottleneck = FindBottleneck(job)) {
      findings.bottlenecks.emplace(job.overview.id, std::move(*bottleneck));
    }
  }
  const double kept_for = EarlierCommitsKeptFor(SlowestMetricsRefresh(flink));
  findings.joins = JoinFlinkWithKafka(
      *view->second.config, *view->second.snapshot, kafka_up,
      [&kafka, kept_for, now](const std::string& cluster, const std::string& group,
                              const kafka::TopicPartition& tp, std::int64_t offset) {
        const auto history = kafka.find(cluster);
        if (history == kafka.end()) return EarlierCommit::kNo;
        return history->second.CommittedEarlier(group, tp, offset, kept_for, now);
      });
  associations.NoteTopicsRead(flink_cluster, findings.joins);
  ResolveJoins(flink_cluster, sources, state, findings, jobs, kafka, associations, config, now);
  state.findings = std::move(findings);
}

}  // namespace lagsight::analysis
