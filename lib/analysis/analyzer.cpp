#include "analysis/analyzer.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

namespace lagsight::analysis {
namespace {

constexpr std::size_t kCommitEventsKept = 16;
// Checkpointing "disabled" is reported as an interval of Long.MAX_VALUE ms; anything above a
// year is treated as no interval.
constexpr double kNoIntervalMs = 365.0 * 24 * 3600 * 1000;

double Seconds(std::chrono::milliseconds duration) {
  return std::chrono::duration<double>(duration).count();
}

struct GroupSample {
  double time = 0;
  std::int64_t lag_sum = 0;
  std::int64_t log_end_sum = 0;
};

struct GroupHistory {
  ThinningSeries<GroupSample> samples;
  std::vector<CommitEvent> commits;
  std::vector<double> regression_times;  // within the window
  std::map<kafka::TopicPartition, std::int64_t> committed;
  double first_seen = 0;
  double last_commit = 0;             // last time lagsight saw the offsets change (or first_seen)
  std::optional<double> last_active;  // last time the group had members
  std::optional<double> uncommitted_since;
};

struct KafkaClusterState {
  bool up = false;
  std::map<kafka::TopicPartition, LogEndHistory> log_ends;
  std::map<std::string, GroupHistory> groups;
  KafkaFindings findings;
  std::vector<DiagnosisFinding> diagnosis;
};

struct JobSample {
  double time = 0;
  std::int64_t completed = 0;
  std::int64_t failed = 0;
};

struct SourceSample {
  double time = 0;
  double succeeded = 0;
  double failed = 0;
};

struct Association {
  std::string kafka_cluster;
  std::string group;
};

struct JobHistory {
  std::string flink_cluster;
  std::string name;
  ThinningSeries<JobSample> samples;
  std::map<std::string, ThinningSeries<SourceSample>> sources;  // by source name
  std::map<std::string, Association> associations;              // sticky, by source name
  const flink::FlinkJob* latest = nullptr;  // valid while its Flink snapshot is the current one
};

struct FlinkClusterState {
  bool up = false;
  FlinkFindings findings;
};

using PairKey = std::tuple<std::string, std::string, std::string>;  // cluster, group, job id

struct PairSample {
  double time = 0;
  std::int64_t flink_lag = 0;
  std::int64_t kafka_lag = 0;
};

struct PairState {
  ThinningSeries<PairSample> samples;
  std::optional<Verdict> verdict;
  std::optional<double> uncommitted_since;
  // After a restore: has the Flink lag been above the threshold since, without coming down?
  // Pending until the reader reports offsets (right after a restore it reports none, so a lag
  // of 0 then says nothing) or the grace period ends.
  enum class RestoreLag { kPending, kHigh, kCleared } restore_lag = RestoreLag::kCleared;
  std::optional<double> restore_seen;  // the restore time restore_lag belongs to
};

// The sample to measure a change over the window from: the last one at or before the window's
// start, else the oldest there is.
template <typename Sample>
const Sample* WindowBaseline(const ThinningSeries<Sample>& series, double now, double window) {
  const auto& samples = series.samples();
  if (samples.empty()) return nullptr;
  const Sample* baseline = &samples.front();
  for (const Sample& sample : samples) {
    if (sample.time > now - window) break;
    baseline = &sample;
  }
  return baseline;
}

// A value that grew over the window: enough of the window covered, a real rise, and most steps
// not down (a single burst followed by a fall is not growth).
template <typename Sample, typename Value>
bool GrowingOverWindow(const ThinningSeries<Sample>& series, Value value, double now, double window,
                       double minimum_rise) {
  const Sample* baseline = WindowBaseline(series, now, window);
  if (baseline == nullptr) return false;
  const Sample& latest = series.back();
  if (latest.time - baseline->time < window / 2) return false;
  if (static_cast<double>(value(latest)) - static_cast<double>(value(*baseline)) < minimum_rise) {
    return false;
  }
  std::size_t steps = 0;
  std::size_t not_down = 0;
  const Sample* previous = nullptr;
  for (const Sample& sample : series.samples()) {
    if (sample.time < baseline->time) continue;
    if (previous != nullptr) {
      ++steps;
      if (value(sample) >= value(*previous)) ++not_down;
    }
    previous = &sample;
  }
  return steps > 0 && 5 * not_down >= 3 * steps;
}

bool HasRecords(const kafka::KafkaSnapshot& snapshot, const kafka::TopicPartition& tp) {
  const auto found = snapshot.partitions.find(tp);
  if (found == snapshot.partitions.end() || !found->second.log_end) return false;
  return *found->second.log_end > found->second.log_start.value_or(0);
}

}  // namespace

struct Analyzer::State {
  config::DiagnosisConfig config;
  std::map<std::string, KafkaClusterState> kafka;
  std::map<std::string, FlinkClusterState> flink;
  std::map<std::string, JobHistory> jobs;  // by job id
  std::map<PairKey, PairState> pairs;
  // The last association of each (flink cluster, job name, source), kept for a window after
  // the job was last seen so a restart under the same name keeps its group.
  using NamedSource = std::tuple<std::string, std::string, std::string>;
  std::map<NamedSource, std::pair<Association, double>> associations_by_name;

  double window() const { return Seconds(config.window); }

  // --- Kafka history -------------------------------------------------------------------------

  void RecordKafka(KafkaClusterState& cluster, const kafka::KafkaSnapshot& snapshot,
                   const std::vector<GroupLag>& lags,
                   const std::vector<OffsetRegression>& regressions, double now) {
    // Log-end history per partition; a log end that went back means the topic was recreated.
    std::map<kafka::TopicPartition, LogEndHistory> log_ends;
    for (const auto& [tp, offsets] : snapshot.partitions) {
      if (!offsets.log_end) continue;
      auto existing = cluster.log_ends.find(tp);
      LogEndHistory history =
          existing != cluster.log_ends.end() ? std::move(existing->second) : LogEndHistory();
      if (!history.empty() && history.back().log_end > *offsets.log_end) history.Clear();
      history.Add({now, *offsets.log_end});
      log_ends.emplace(tp, std::move(history));
    }
    cluster.log_ends = std::move(log_ends);

    std::map<std::string, const GroupLag*> lag_of;
    for (const GroupLag& lag : lags) lag_of[lag.group] = &lag;
    std::map<std::string, GroupHistory> groups;
    for (const kafka::ConsumerGroup& group : snapshot.groups) {
      if (!group.offsets_known) {
        // Keep what we had; this poll says nothing about the group's offsets.
        if (auto existing = cluster.groups.find(group.id); existing != cluster.groups.end()) {
          groups.emplace(group.id, std::move(existing->second));
        }
        continue;
      }
      auto existing = cluster.groups.find(group.id);
      const bool known = existing != cluster.groups.end();
      GroupHistory history = known ? std::move(existing->second) : GroupHistory();
      if (!known) {
        history.first_seen = now;
        history.last_commit = now;
      }
      GroupSample sample{now, 0, 0};
      if (const auto lag = lag_of.find(group.id); lag != lag_of.end()) {
        for (const TopicLag& topic : lag->second->topics) {
          sample.lag_sum += topic.lag_sum;
          for (const PartitionLag& partition : topic.partitions) {
            const auto log = snapshot.partitions.find({topic.topic, partition.partition});
            if (log != snapshot.partitions.end() && log->second.log_end) {
              sample.log_end_sum += *log->second.log_end;
            }
          }
        }
      }
      bool advanced = false;
      bool regressed = false;
      for (const auto& [tp, offset] : group.committed) {
        const auto before = history.committed.find(tp);
        if (before == history.committed.end()) {
          advanced = advanced || known;
        } else if (offset > before->second) {
          advanced = true;
        } else if (offset < before->second) {
          regressed = true;
        }
      }
      if (known && (advanced || regressed)) history.last_commit = now;
      if (known && advanced && !regressed && !history.samples.empty()) {
        history.commits.push_back({now, history.samples.back().lag_sum, sample.lag_sum});
        if (history.commits.size() > kCommitEventsKept)
          history.commits.erase(history.commits.begin());
      }
      history.committed = group.committed;
      if (group.members.value_or(0) > 0) history.last_active = now;
      history.samples.Add(sample);
      std::erase_if(history.regression_times, [&](double time) { return time < now - window(); });
      groups.emplace(group.id, std::move(history));
    }
    for (const OffsetRegression& regression : regressions) {
      if (auto group = groups.find(regression.group); group != groups.end()) {
        auto& times = group->second.regression_times;
        if (times.empty() || times.back() != now) times.push_back(now);
      }
    }
    cluster.groups = std::move(groups);
  }

  KafkaFindings FindKafka(const KafkaClusterState& cluster, const kafka::KafkaSnapshot& snapshot,
                          const std::vector<GroupLag>& lags, double now) const {
    KafkaFindings findings;
    findings.cluster_mismatch = kafka::ClusterMismatch(snapshot);
    std::map<std::string, const kafka::ConsumerGroup*> group_of;
    for (const kafka::ConsumerGroup& group : snapshot.groups) group_of[group.id] = &group;
    static const LogEndHistory kNoHistory;
    for (const GroupLag& lag : lags) {
      const auto history = cluster.groups.find(lag.group);
      if (history == cluster.groups.end()) continue;
      GroupFindings group;
      group.group = lag.group;
      for (const TopicLag& topic : lag.topics) {
        for (const PartitionLag& partition : topic.partitions) {
          if (!partition.committed || !partition.lag) continue;
          const kafka::TopicPartition tp{topic.topic, partition.partition};
          std::int64_t position = *partition.committed;
          const auto log = snapshot.partitions.find(tp);
          if (log != snapshot.partitions.end() && log->second.log_start &&
              position < *log->second.log_start) {
            position = *log->second.log_start;
          }
          std::optional<std::int64_t> timestamp;
          if (const auto fetched = snapshot.record_timestamps_ms.find({tp, position});
              fetched != snapshot.record_timestamps_ms.end()) {
            timestamp = fetched->second;
          }
          const auto log_history = cluster.log_ends.find(tp);
          const auto seconds = ComputeLagSeconds(
              position, *partition.lag, timestamp,
              log_history != cluster.log_ends.end() ? log_history->second : kNoHistory, now);
          if (!seconds) continue;
          group.lag_seconds.push_back({topic.topic, partition.partition, *seconds});
          group.max_lag_seconds = std::max(group.max_lag_seconds.value_or(0), seconds->seconds);
        }
      }
      const GroupHistory& h = history->second;
      group.last_commit_time = std::max(h.last_commit, h.last_active.value_or(0));
      const auto described = group_of.find(lag.group);
      const bool without_members = described != group_of.end() &&
                                   described->second->members.has_value() &&
                                   *described->second->members == 0;
      if (without_members && snapshot.offsets_retention_seconds) {
        group.offsets_expiry_seconds =
            *snapshot.offsets_retention_seconds - (now - group.last_commit_time);
      }
      group.sawtooth = DetectSawtooth(h.commits, now);
      findings.groups.push_back(std::move(group));
    }
    return findings;
  }

  // --- Flink history -------------------------------------------------------------------------

  void RecordFlink(const std::string& flink_cluster, const flink::FlinkSnapshot& snapshot,
                   double now) {
    std::set<std::string> present;
    for (const flink::FlinkJob& job : snapshot.jobs) {
      present.insert(job.overview.id);
      JobHistory& history = jobs[job.overview.id];
      history.flink_cluster = flink_cluster;
      history.name = job.overview.name;
      history.latest = &job;
      history.samples.Add({now, job.checkpoints.counts.completed, job.checkpoints.counts.failed});
      for (const flink::SourceReader& reader : job.sources) {
        auto& series = history.sources[FlinkSourceName(reader.name)];
        const double succeeded = reader.commits_succeeded.value_or(0);
        if (!series.empty() && succeeded > series.back().succeeded) {
          // A successful commit refreshes the group's offsets at the broker even when they did
          // not move: count it for the expiry clock of the group it is associated with.
          const auto association = history.associations.find(FlinkSourceName(reader.name));
          if (association != history.associations.end()) {
            auto cluster = kafka.find(association->second.kafka_cluster);
            if (cluster != kafka.end()) {
              auto group = cluster->second.groups.find(association->second.group);
              if (group != cluster->second.groups.end()) group->second.last_commit = now;
            }
          }
        }
        series.Add({now, succeeded, reader.commits_failed.value_or(0)});
      }
    }
    std::erase_if(jobs, [&](const auto& entry) {
      return entry.second.flink_cluster == flink_cluster && !present.contains(entry.first);
    });
    std::erase_if(associations_by_name, [&](const auto& entry) {
      return std::get<0>(entry.first) == flink_cluster &&
             entry.second.second < now - std::max(window(), 600.0);
    });
  }

  // Joins of one Flink cluster with the Kafka clusters that are up, associations made sticky.
  void Join(const std::string& flink_cluster, const SourcesView& sources, double now) {
    const auto view = sources.flink.find(flink_cluster);
    FlinkClusterState& state = flink[flink_cluster];
    for (auto& [job_id, history] : jobs) {
      if (history.flink_cluster == flink_cluster) history.latest = nullptr;
    }
    if (view == sources.flink.end() || view->second.snapshot == nullptr) {
      state.up = false;
      state.findings = {};
      return;
    }
    std::map<std::string, const kafka::KafkaSnapshot*> kafka_up;
    for (const auto& [name, kafka_view] : sources.kafka) {
      if (kafka_view.snapshot != nullptr) kafka_up[name] = kafka_view.snapshot;
    }
    // Pointers into the snapshot the app holds for as long as this call runs.
    for (const flink::FlinkJob& job : view->second.snapshot->jobs) {
      if (auto history = jobs.find(job.overview.id); history != jobs.end()) {
        history->second.latest = &job;
      }
    }
    FlinkFindings findings;
    findings.joins = JoinFlinkWithKafka(*view->second.config, *view->second.snapshot, kafka_up);
    for (FlinkSourceJoin& join : findings.joins) {
      auto history = jobs.find(join.job_id);
      if (history == jobs.end()) continue;
      auto& remembered = history->second.associations;
      const NamedSource named{flink_cluster, join.job_name, join.source};
      if (!join.group && !remembered.contains(join.source)) {
        // A job restarted under the same name (e.g. from a savepoint) commits to the same group;
        // its committedOffset is unset until its first commit, so matching cannot find it yet.
        if (const auto by_name = associations_by_name.find(named);
            by_name != associations_by_name.end()) {
          remembered[join.source] = by_name->second.first;
        }
      }
      if (join.group) {
        remembered[join.source] = {join.kafka_cluster, *join.group};
        associations_by_name[named] = {remembered[join.source], now};
      } else if (const auto known = remembered.find(join.source); known != remembered.end()) {
        associations_by_name[named] = {known->second, now};
        // The job's committed offsets matched this group before; a poll that straddles a
        // commit, or commits that fail, must not make the job lose its group.
        join.group = known->second.group;
        join.kafka_cluster = known->second.kafka_cluster;
        join.association = "matched";
      }
      SourceFindings source{join.job_id, join.job_name, join.source, {}};
      if (const auto series = history->second.sources.find(join.source);
          series != history->second.sources.end() && !series->second.empty()) {
        const SourceSample* baseline = WindowBaseline(series->second, now, window());
        const SourceSample& latest = series->second.back();
        const double failed = latest.failed - baseline->failed;
        const double succeeded = latest.succeeded - baseline->succeeded;
        if (failed + succeeded > 0) source.commit_failure_ratio = failed / (failed + succeeded);
      }
      findings.sources.push_back(std::move(source));
    }
    state.up = true;
    state.findings = std::move(findings);
  }

  // --- Diagnosis -----------------------------------------------------------------------------

  struct PairInputs {
    std::string job_name;
    std::vector<const FlinkSourceJoin*> joins;
  };

  // One cluster's groups by id, built once per judgement so each pair finds its own group in
  // O(log n) instead of scanning every group (which made a poll quadratic in the groups).
  struct GroupIndex {
    std::map<std::string, const kafka::ConsumerGroup*> described;
    std::map<std::string, const GroupLag*> lags;
    std::map<std::string, const GroupFindings*> findings;

    GroupIndex(const kafka::KafkaSnapshot& snapshot, const std::vector<GroupLag>& group_lags,
               const KafkaFindings& kafka_findings) {
      for (const kafka::ConsumerGroup& group : snapshot.groups) described[group.id] = &group;
      for (const GroupLag& lag : group_lags) lags[lag.group] = &lag;
      for (const GroupFindings& group : kafka_findings.groups) findings[group.group] = &group;
    }

    template <typename Map>
    static typename Map::mapped_type Find(const Map& map, const std::string& key) {
      const auto found = map.find(key);
      return found == map.end() ? nullptr : found->second;
    }
  };

  std::vector<DiagnosisFinding> Judge(const std::string& cluster_name,
                                      const kafka::KafkaSnapshot& snapshot,
                                      const std::vector<GroupLag>& lags, double now) {
    KafkaClusterState& cluster = kafka[cluster_name];
    const GroupIndex index(snapshot, lags, cluster.findings);
    // Pairs of this cluster from every Flink cluster that is up.
    std::map<PairKey, PairInputs> pair_inputs;
    for (const auto& [flink_name, state] : flink) {
      if (!state.up) continue;
      for (const FlinkSourceJoin& join : state.findings.joins) {
        if (join.kafka_cluster != cluster_name) continue;
        PairInputs& inputs = pair_inputs[{cluster_name, join.group.value_or(""), join.job_id}];
        inputs.job_name = join.job_name;
        inputs.joins.push_back(&join);
      }
    }
    // Groups some job commits to, including jobs of Flink clusters that are down right now:
    // those groups are not judged as Kafka-only while their job cannot be seen.
    std::map<std::string, std::set<std::string>> jobs_of_group;
    for (const auto& [job_id, history] : jobs) {
      for (const auto& [source, association] : history.associations) {
        if (association.kafka_cluster == cluster_name) {
          jobs_of_group[association.group].insert(job_id);
        }
      }
    }

    std::vector<DiagnosisFinding> out;
    std::set<PairKey> judged;
    for (const auto& [key, inputs] : pair_inputs) {
      const auto job = jobs.find(std::get<2>(key));
      if (job == jobs.end() || job->second.latest == nullptr) continue;
      const PairEvidence evidence =
          PairEvidenceOf(cluster, snapshot, index, key, inputs, job->second, jobs_of_group, now);
      DiagnosisFinding finding = Decide(key, inputs.job_name, JudgePair(evidence), now);
      const PairState& pair = pairs[key];
      for (const PairSample& sample : pair.samples.samples()) {
        finding.history.push_back({sample.time, sample.kafka_lag, sample.flink_lag});
      }
      if (!pair.samples.empty()) {
        finding.flink_lag = pair.samples.back().flink_lag;
        if (!std::get<1>(key).empty()) finding.kafka_lag = pair.samples.back().kafka_lag;
      }
      const flink::FlinkJob& flink_job = *job->second.latest;
      const auto& interval_ms = flink_job.checkpoint_config.interval_ms;
      if (flink_job.checkpoints.enabled && interval_ms && *interval_ms < kNoIntervalMs) {
        finding.checkpoint_interval_seconds = *interval_ms / 1000;
        if (const auto& latest = flink_job.checkpoints.latest_completed_timestamp_ms) {
          finding.checkpoint_age_seconds = now - static_cast<double>(*latest) / 1000;
        }
      }
      AddMaxLagSeconds(index, finding);
      out.push_back(std::move(finding));
      judged.insert(key);
    }
    for (const GroupFindings& group : cluster.findings.groups) {
      if (jobs_of_group.contains(group.group)) continue;
      const PairKey key{cluster_name, group.group, ""};
      const GroupLag* lag = GroupIndex::Find(index.lags, group.group);
      const auto history = cluster.groups.find(group.group);
      if (lag == nullptr || history == cluster.groups.end()) continue;
      const GroupEvidence evidence =
          GroupEvidenceOf(snapshot, *lag, group, history->second, pairs[key], now);
      DiagnosisFinding finding = Decide(key, "", JudgeGroup(evidence), now);
      for (const GroupSample& sample : history->second.samples.samples()) {
        finding.history.push_back({sample.time, sample.lag_sum, std::nullopt});
      }
      finding.kafka_lag = history->second.samples.back().lag_sum;
      AddMaxLagSeconds(index, finding);
      out.push_back(std::move(finding));
      judged.insert(key);
    }
    std::erase_if(pairs, [&](const auto& entry) {
      return std::get<0>(entry.first) == cluster_name && !judged.contains(entry.first);
    });
    std::sort(out.begin(), out.end(), [](const DiagnosisFinding& a, const DiagnosisFinding& b) {
      return std::tie(a.group, a.job_id) < std::tie(b.group, b.job_id);
    });
    return out;
  }

  static void AddMaxLagSeconds(const GroupIndex& index, DiagnosisFinding& finding) {
    if (const GroupFindings* group = GroupIndex::Find(index.findings, finding.group)) {
      finding.max_lag_seconds = group->max_lag_seconds;
    }
  }

  DiagnosisFinding Decide(const PairKey& key, const std::string& job_name, Cause raw, double now) {
    PairState& pair = pairs[key];
    if (!pair.verdict) {
      pair.verdict.emplace(raw, now);
    } else {
      pair.verdict->Update(raw, now, config.confirm_polls);
    }
    DiagnosisFinding finding;
    finding.kafka_cluster = std::get<0>(key);
    finding.group = std::get<1>(key);
    finding.job_id = std::get<2>(key);
    finding.job_name = job_name;
    finding.cause = pair.verdict->active();
    finding.since = pair.verdict->since();
    return finding;
  }

  // The one offsets_expiring test, for pairs and Kafka-only groups alike.
  bool ExpiringSoon(const GroupFindings* findings, const kafka::KafkaSnapshot& snapshot) const {
    return findings != nullptr && snapshot.offsets_retention_seconds &&
           findings->offsets_expiry_seconds &&
           *findings->offsets_expiry_seconds <
               config.expiry_warning_ratio * *snapshot.offsets_retention_seconds;
  }

  // Tracks since when `condition` has held; true once it held for `duration`.
  static bool HeldFor(std::optional<double>& since, bool condition, double now, double duration) {
    if (!condition) {
      since.reset();
      return false;
    }
    if (!since) since = now;
    return now - *since >= duration;
  }

  PairEvidence PairEvidenceOf(const KafkaClusterState& cluster,
                              const kafka::KafkaSnapshot& snapshot, const GroupIndex& index,
                              const PairKey& key, const PairInputs& inputs, const JobHistory& job,
                              const std::map<std::string, std::set<std::string>>& jobs_of_group,
                              double now) {
    const std::string& group_id = std::get<1>(key);
    PairState& pair = pairs[key];
    const flink::FlinkJob& flink_job = *job.latest;
    const double window_seconds = window();
    const auto threshold = config.lag_threshold_records;
    PairEvidence e;
    e.cluster_mismatch = cluster.findings.cluster_mismatch;

    const flink::CheckpointConfig& checkpoint_config = flink_job.checkpoint_config;
    const bool checkpointing = checkpoint_config.enabled && flink_job.checkpoints.enabled &&
                               checkpoint_config.interval_ms &&
                               *checkpoint_config.interval_ms < kNoIntervalMs;
    const double interval = checkpointing ? *checkpoint_config.interval_ms / 1000.0 : 0;
    const double started = flink_job.overview.start_time_ms
                               ? static_cast<double>(*flink_job.overview.start_time_ms) / 1000.0
                               : (job.samples.empty() ? now : job.samples.samples().front().time);
    const double job_age = now - started;
    const double grace = std::max(2 * interval, window_seconds / 2);

    // Flink-side lag of the pair, and the pair's topics.
    std::int64_t flink_lag = 0;
    std::set<std::string> topics;
    for (const FlinkSourceJoin* join : inputs.joins) {
      for (const FlinkTopicJoin& topic : join->topics) {
        flink_lag += topic.flink_lag_sum;
        topics.insert(topic.topic);
      }
    }
    std::int64_t kafka_lag = 0;
    if (const GroupLag* lag = GroupIndex::Find(index.lags, group_id)) {
      for (const TopicLag& topic : lag->topics) {
        if (topics.contains(topic.topic)) kafka_lag += topic.lag_sum;
      }
    }
    pair.samples.Add({now, flink_lag, kafka_lag});

    const kafka::ConsumerGroup* group = GroupIndex::Find(index.described, group_id);
    bool has_offsets = false;
    if (group != nullptr) {
      for (const auto& [tp, offset] : group->committed) has_offsets |= topics.contains(tp.topic);
    }
    // With the group there but no partitions reported by the reader yet (right after a start or
    // restore), nothing says its offsets are missing.
    e.offsets_missing = job_age >= grace && (group == nullptr || (!topics.empty() && !has_offsets));

    if (checkpointing) {
      const auto& latest_ms = flink_job.checkpoints.latest_completed_timestamp_ms;
      const double age = latest_ms ? now - static_cast<double>(*latest_ms) / 1000.0 : job_age;
      const JobSample* baseline = WindowBaseline(job.samples, now, window_seconds);
      const bool failures = baseline != nullptr && job.samples.back().failed > baseline->failed;
      // Slack for the Flink poll that reports a checkpoint late.
      const double slack = 5;
      // A checkpoint still under way without failures is slow, not failing: under backpressure
      // barriers queue behind buffered records, and that is the backlog's doing (really_behind).
      const bool slow_not_failing = !failures && flink_job.checkpoints.counts.in_progress > 0;
      e.checkpoints_failing = (age > 3 * interval + slack && !slow_not_failing) ||
                              (failures && age > 2 * interval + slack);
    }

    double failed = 0;
    double succeeded = 0;
    for (const FlinkSourceJoin* join : inputs.joins) {
      const auto series = job.sources.find(join->source);
      if (series == job.sources.end() || series->second.empty()) continue;
      const SourceSample* baseline = WindowBaseline(series->second, now, window_seconds);
      failed += series->second.back().failed - baseline->failed;
      succeeded += series->second.back().succeeded - baseline->succeeded;
    }
    const JobSample* job_baseline = WindowBaseline(job.samples, now, window_seconds);
    const bool checkpoints_completed =
        job_baseline != nullptr && job.samples.back().completed > job_baseline->completed;
    e.commits_failing = failed > 0 && failed / (failed + succeeded) > 0.5 && checkpoints_completed;

    const GroupHistory* history = nullptr;
    if (const auto found = cluster.groups.find(group_id); found != cluster.groups.end()) {
      history = &found->second;
    }
    // Commits switched off (commit.offsets.on.checkpoint=false): checkpoints complete, yet the
    // job has never attempted a commit. Whatever offsets the group holds are left over from
    // before and go stale, then expire.
    bool ever_attempted = false;
    for (const FlinkSourceJoin* join : inputs.joins) {
      const auto series = job.sources.find(join->source);
      if (series != job.sources.end() && !series->second.empty()) {
        ever_attempted |= series->second.back().succeeded > 0 || series->second.back().failed > 0;
      }
    }
    // The counters trail under backpressure (the commit callback runs on the blocked fetcher
    // thread), so commits the broker shows since the job started count as attempts too.
    const bool broker_saw_commit = history != nullptr && history->last_commit > started &&
                                   history->last_commit > history->first_seen;
    // A job far behind may simply not have got its commit out yet: only a job that keeps up
    // and still never commits has them switched off.
    if (checkpointing && checkpoints_completed && !ever_attempted && !broker_saw_commit &&
        job_age >= grace && flink_lag <= threshold) {
      e.offsets_missing = true;
    }

    const auto& restored_ms = flink_job.checkpoints.restored_timestamp_ms;
    const std::optional<double> restored =
        restored_ms ? std::optional<double>(static_cast<double>(*restored_ms) / 1000.0)
                    : std::nullopt;
    using RestoreLag = PairState::RestoreLag;
    if (restored != pair.restore_seen) {
      pair.restore_seen = restored;
      pair.restore_lag = restored ? RestoreLag::kPending : RestoreLag::kCleared;
    }
    if (flink_lag > threshold && pair.restore_lag == RestoreLag::kPending) {
      pair.restore_lag = RestoreLag::kHigh;
    } else if (flink_lag <= threshold && pair.restore_lag == RestoreLag::kHigh) {
      pair.restore_lag = RestoreLag::kCleared;
    } else if (pair.restore_lag == RestoreLag::kPending && restored && now - *restored > grace) {
      pair.restore_lag = RestoreLag::kCleared;
    }
    bool regressed_after_restore = false;
    const bool regressed_in_window = history != nullptr && !history->regression_times.empty();
    if (restored && history != nullptr) {
      for (double time : history->regression_times) regressed_after_restore |= time >= *restored;
    }
    e.restored_behind =
        restored && (regressed_after_restore || pair.restore_lag == RestoreLag::kHigh);

    const auto sharing = jobs_of_group.find(group_id);
    e.shared_group =
        !group_id.empty() && ((sharing != jobs_of_group.end() && sharing->second.size() > 1) ||
                              (regressed_in_window && !regressed_after_restore));

    bool uncommitted = false;
    if (group != nullptr && has_offsets) {
      for (const std::string& topic : topics) {
        const auto count = snapshot.topic_partitions.find(topic);
        if (count == snapshot.topic_partitions.end()) continue;
        for (std::int32_t p = 0; p < count->second; ++p) {
          const kafka::TopicPartition tp{topic, p};
          uncommitted |= !group->committed.contains(tp) && HasRecords(snapshot, tp);
        }
      }
    }
    e.partitions_uncommitted = HeldFor(pair.uncommitted_since, uncommitted, now, grace);

    e.really_behind = flink_lag > threshold &&
                      GrowingOverWindow(
                          pair.samples, [](const PairSample& s) { return s.flink_lag; }, now,
                          window_seconds, std::max(1.0, static_cast<double>(threshold) / 10));

    const GroupFindings* findings = GroupIndex::Find(index.findings, group_id);
    e.offsets_expiring = group != nullptr && ExpiringSoon(findings, snapshot);
    e.sawtooth_above_threshold =
        findings != nullptr && findings->sawtooth.detected &&
        findings->sawtooth.amplitude_records.value_or(0) >= static_cast<double>(threshold) &&
        flink_lag < threshold;
    return e;
  }

  GroupEvidence GroupEvidenceOf(const kafka::KafkaSnapshot& snapshot, const GroupLag& lag,
                                const GroupFindings& findings, const GroupHistory& history,
                                PairState& pair, double now) {
    const double window_seconds = window();
    const auto threshold = config.lag_threshold_records;
    GroupEvidence e;
    e.rewinding = !history.regression_times.empty();
    e.offsets_expiring = ExpiringSoon(&findings, snapshot);

    bool uncommitted = false;
    for (const TopicLag& topic : lag.topics) {
      for (const PartitionLag& partition : topic.partitions) {
        uncommitted |= partition.position == CommitPosition::kNoCommit &&
                       HasRecords(snapshot, {topic.topic, partition.partition});
      }
    }
    e.partitions_uncommitted =
        HeldFor(pair.uncommitted_since, uncommitted, now, window_seconds / 2);

    const GroupSample* baseline = WindowBaseline(history.samples, now, window_seconds);
    const GroupSample& latest = history.samples.back();
    const bool covered =
        baseline != nullptr && latest.time - baseline->time >= 0.8 * window_seconds;
    const bool committed_in_window =
        !history.commits.empty() && history.commits.back().time > now - window_seconds;
    // An idle topic (log end not moving) is never stalled: nothing arrived to be consumed.
    e.stalled = covered && latest.lag_sum > 0 && !committed_in_window &&
                history.last_commit <= now - window_seconds &&
                latest.log_end_sum > baseline->log_end_sum;
    e.really_behind = committed_in_window && latest.lag_sum > threshold &&
                      GrowingOverWindow(
                          history.samples, [](const GroupSample& s) { return s.lag_sum; }, now,
                          window_seconds, std::max(1.0, static_cast<double>(threshold) / 10));
    return e;
  }

  std::shared_ptr<const Findings> Build() const {
    auto findings = std::make_shared<Findings>();
    for (const auto& [name, cluster] : kafka) {
      if (!cluster.up) continue;
      findings->kafka[name] = cluster.findings;
      findings->diagnosis.insert(findings->diagnosis.end(), cluster.diagnosis.begin(),
                                 cluster.diagnosis.end());
    }
    for (const auto& [name, cluster] : flink) {
      if (cluster.up) findings->flink[name] = cluster.findings;
    }
    return findings;
  }
};

Analyzer::Analyzer(config::DiagnosisConfig config) : state_(std::make_unique<State>()) {
  state_->config = std::move(config);
}

Analyzer::~Analyzer() = default;

void Analyzer::SetConfig(const config::DiagnosisConfig& config) { state_->config = config; }

std::shared_ptr<const Findings> Analyzer::ObserveKafka(
    const std::string& cluster, const std::vector<OffsetRegression>& regressions,
    const SourcesView& sources, double now) {
  KafkaClusterState& state = state_->kafka[cluster];
  const auto view = sources.kafka.find(cluster);
  if (view == sources.kafka.end() || view->second.snapshot == nullptr ||
      view->second.lags == nullptr) {
    state.up = false;
    state.findings = {};
    state.diagnosis.clear();
  } else {
    const kafka::KafkaSnapshot& snapshot = *view->second.snapshot;
    const std::vector<GroupLag>& lags = *view->second.lags;
    state_->RecordKafka(state, snapshot, lags, regressions, now);
    state.findings = state_->FindKafka(state, snapshot, lags, now);
    state.up = true;
  }
  // Every Flink cluster's joins read this cluster's offsets.
  for (const auto& [name, flink_view] : sources.flink) state_->Join(name, sources, now);
  if (state.up) {
    const auto& view_ok = sources.kafka.at(cluster);
    state.diagnosis = state_->Judge(cluster, *view_ok.snapshot, *view_ok.lags, now);
  }
  return state_->Build();
}

std::shared_ptr<const Findings> Analyzer::ObserveFlink(const std::string& cluster,
                                                       const SourcesView& sources, double now) {
  const auto view = sources.flink.find(cluster);
  if (view != sources.flink.end() && view->second.snapshot != nullptr) {
    state_->RecordFlink(cluster, *view->second.snapshot, now);
  }
  state_->Join(cluster, sources, now);
  return state_->Build();
}

void Analyzer::Retain(const std::set<std::string>& kafka_clusters,
                      const std::set<std::string>& flink_clusters) {
  std::erase_if(state_->kafka,
                [&](const auto& entry) { return !kafka_clusters.contains(entry.first); });
  std::erase_if(state_->flink,
                [&](const auto& entry) { return !flink_clusters.contains(entry.first); });
  std::erase_if(state_->jobs, [&](const auto& entry) {
    return !flink_clusters.contains(entry.second.flink_cluster);
  });
  std::erase_if(state_->pairs, [&](const auto& entry) {
    return !kafka_clusters.contains(std::get<0>(entry.first));
  });
}

}  // namespace lagsight::analysis
