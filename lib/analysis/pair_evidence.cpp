#include "analysis/pair_evidence.h"

#include <algorithm>
#include <utility>

#include "analysis/analysis_time.h"
#include "analysis/checkpoint_age.h"
#include "analysis/history.h"
#include "analysis/sawtooth.h"

namespace lagsight::analysis {
namespace {

// A partition's position stands still for at least this many metric refreshes before it can be
// called stuck: Flink serves the same value until its fetcher refreshes.
constexpr double kStuckFetchIntervals = 3;
// Added to a checkpoint and two metric refreshes before a young job's offsets are expected.
constexpr double kFirstCommitSlackSeconds = 5;
// Slack for reading a restore time against the job's start (clocks, report delays).
constexpr double kRestoreSlackSeconds = 5;

bool HasRecords(const kafka::KafkaSnapshot& snapshot, const kafka::TopicPartition& tp) {
  const auto found = snapshot.partitions.find(tp);
  if (found == snapshot.partitions.end() || !found->second.log_end) return false;
  return *found->second.log_end > found->second.log_start.value_or(0);
}

// The median gap between the commits lagsight saw; none with fewer than two.
std::optional<double> CommitPeriod(const std::vector<CommitEvent>& commits) {
  if (commits.size() < 2) return std::nullopt;
  std::vector<double> gaps;
  for (std::size_t i = 1; i < commits.size(); ++i) {
    gaps.push_back(commits[i].time - commits[i - 1].time);
  }
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<long>(gaps.size() / 2), gaps.end());
  return gaps[gaps.size() / 2];
}

std::string PartitionName(const kafka::TopicPartition& tp) {
  return tp.topic + "/" + std::to_string(tp.partition);
}

double MinimumChange(const config::DiagnosisConfig& config) {
  return std::max(1.0, static_cast<double>(config.lag_threshold_records) / 10);
}

// The one offsets_expiring test, for pairs and Kafka-only groups alike.
bool ExpiringSoon(const GroupFindings* findings, const kafka::KafkaSnapshot& snapshot,
                  const config::DiagnosisConfig& config) {
  return findings != nullptr && snapshot.offsets_retention_seconds &&
         findings->offsets_expiry_seconds &&
         *findings->offsets_expiry_seconds <
             config.expiry_warning_ratio * *snapshot.offsets_retention_seconds;
}

// Tracks since when `condition` has held; true once it held for `duration`.
bool HeldFor(std::optional<double>& since, bool condition, double now, double duration) {
  if (!condition) {
    since.reset();
    return false;
  }
  if (!since) since = now;
  return now - *since >= duration;
}

// The partitions that stood for `after` seconds while records waited on them (`waiting`) and
// some other partition moved meanwhile.
template <typename Waiting>
std::vector<kafka::TopicPartition> StuckPartitions(const StandingOffsets& standing,
                                                   const Waiting& waiting, double now,
                                                   double after) {
  std::vector<kafka::TopicPartition> stuck;
  const bool another_moved = std::ranges::any_of(
      standing, [&](const auto& entry) { return now - entry.second.since < after; });
  if (!another_moved) return stuck;  // nothing moves: the whole job or group is the problem
  for (const auto& [tp, stand] : standing) {
    if (now - stand.since >= after && waiting(tp)) stuck.push_back(tp);
  }
  return stuck;
}

// The pair's partitions, the Flink-side lag over them and what its positions are.
struct PairPartitions {
  std::set<std::string> topics;
  std::set<kafka::TopicPartition> partitions;
  std::set<kafka::TopicPartition> waiting;
  std::map<kafka::TopicPartition, std::int64_t> positions;
  std::int64_t flink_lag = 0;
};

PairPartitions PartitionsOf(const PairInputs& inputs, PairFacts& f) {
  PairPartitions pp;
  for (const FlinkSourceJoin* join : inputs.joins) {
    for (const FlinkTopicJoin& topic : join->topics) {
      pp.flink_lag += topic.flink_lag_sum;
      pp.topics.insert(topic.topic);
    }
    for (const FlinkPartitionJoin& p : join->partitions) {
      pp.partitions.insert({p.topic, p.partition});
      if (p.current) pp.positions[{p.topic, p.partition}] = *p.current + 1;
      if (p.flink_lag.value_or(0) > 0) pp.waiting.insert({p.topic, p.partition});
      if (p.beyond_log_end) {
        f.positions_beyond_log_end.push_back(PartitionName({p.topic, p.partition}));
      }
    }
  }
  return pp;
}

// What the job's configuration and lifecycle say: its stated commit mode, restarts, checkpoint
// rhythm, age and the grace before its offsets are expected.
void JobFacts(PairFacts& f, const JobHistory& job, const FlinkPollTiming& timing,
              const config::DiagnosisConfig& config, double now) {
  const flink::FlinkJob& flink_job = *job.latest;
  const double window_seconds = Seconds(config.window);
  for (const config::CommitModeRule& rule : config.commit_modes) {
    if (!rule.job.FullMatch(job.name)) continue;
    f.stated_commit_mode = rule.mode;
    break;
  }
  f.restarts_in_window = IncreaseOverWindow(
      job.samples, [](const JobSample& s) { return s.restarts; }, now, window_seconds);

  const flink::CheckpointConfig& checkpoint_config = flink_job.checkpoint_config;
  const std::optional<double> periodic = PeriodicIntervalSeconds(flink_job);
  f.checkpointing = periodic.has_value();
  const double interval = periodic.value_or(0);
  // With min-pause the next checkpoint starts that long after the last one ended.
  f.expected_checkpoint_gap_seconds =
      std::max(interval, checkpoint_config.min_pause_ms.value_or(0) / 1000.0 +
                             flink_job.checkpoints.latest_duration_ms.value_or(0) / 1000.0);
  f.job_age_seconds = now - job.running_since;
  // Before a young job's offsets can be expected: its first checkpoint commits, Flink's
  // metric fetcher shows the committedOffset up to a refresh later, and a job that moves
  // meanwhile is matched to its group on the refresh after (CI: a job restarted after an offset
  // reset, window 30 s, was matched 18 s after its start, 3 s after a grace of window/2).
  f.grace_seconds = std::max({2 * f.expected_checkpoint_gap_seconds, window_seconds / 2,
                              f.expected_checkpoint_gap_seconds +
                                  2 * timing.metrics_fetch_interval + kFirstCommitSlackSeconds});
}

// The job's and its group's lag over the pair's partitions, their trend, and the partitions
// whose positions stand while records wait. `flink_known_at`: when the job's snapshot was taken.
void LagFacts(PairFacts& f, const ClusterEvidence& cluster, const std::string& group_id,
              const PairPartitions& pp, const FlinkPollTiming& timing, PairHistory& pair,
              double flink_known_at, double now, std::vector<kafka::TopicPartition>& stuck) {
  const double window_seconds = Seconds(cluster.config.window);
  std::int64_t kafka_lag = 0;
  if (const GroupLag* lag = GroupIndex::Find(cluster.index.lags, group_id)) {
    for (const TopicLag& topic : lag->topics) {
      if (pp.topics.contains(topic.topic)) kafka_lag += topic.lag_sum;
    }
  }
  // Right after a (re)start the reader reports no positions yet: its lag is unknown, not 0
  // (a 0 followed by the real backlog would read as a lag that grows).
  if (!pp.positions.empty()) pair.samples.Add({now, pp.flink_lag, kafka_lag});
  f.flink_lag = static_cast<double>(pp.flink_lag);
  f.kafka_lag = static_cast<double>(kafka_lag);
  f.input_rate = cluster.history.InputRateOf(pp.partitions, window_seconds, now);
  f.flink_lag_trend = TrendOverWindow(
      pair.samples, [](const PairSample& s) { return s.flink_lag; }, now, window_seconds,
      MinimumChange(cluster.config));
  const double stuck_after =
      std::max(window_seconds / 2, kStuckFetchIntervals * timing.metrics_fetch_interval);
  UpdateStanding(pair.positions, pp.positions, flink_known_at);
  stuck = StuckPartitions(
      pair.positions, [&](const kafka::TopicPartition& tp) { return pp.waiting.contains(tp); },
      flink_known_at, stuck_after);
  for (const kafka::TopicPartition& tp : stuck) {
    f.stuck_partitions.push_back(PartitionName(tp));
  }
}

// Checkpoint failures over the window (reset-safe, as IncreaseOverWindow) that say something
// about the job's checkpoints. Flink 2.x counts a trigger it refuses while a (re)started job's
// tasks are still deploying ("Checkpoint triggering task ... is not being executed") as a
// failed checkpoint; seen as failing, that made a healthy job's slow first checkpoint (a replay
// from earliest under backpressure took 16 s) read as checkpoints_failing. A failure is such a
// refusal when lagsight saw it before any checkpoint of the run under way or completed, within
// the grace after the start; any later failure counts.
double CheckpointFailuresInWindow(const ThinningSeries<JobSample>& samples, double running_since,
                                  double grace, double now, double window) {
  const JobSample* baseline = WindowBaseline(samples, now, window);
  if (baseline == nullptr) return 0;
  double failures = 0;
  bool attempt_seen = false;
  const JobSample* previous = nullptr;
  for (const JobSample& sample : samples.samples()) {
    const bool in_run = sample.time >= running_since;
    if (previous != nullptr && sample.time > baseline->time) {
      const double increase =
          sample.failed >= previous->failed ? sample.failed - previous->failed : sample.failed;
      const bool refused_at_start = in_run && !attempt_seen && sample.time - running_since <= grace;
      if (!refused_at_start) failures += increase;
    }
    if (in_run) {
      attempt_seen = attempt_seen || sample.in_progress ||
                     (previous != nullptr && previous->time >= running_since &&
                      sample.completed > previous->completed);
    }
    previous = &sample;
  }
  return failures;
}

void CheckpointFacts(PairFacts& f, const JobHistory& job, double flink_known_at, double window,
                     double now) {
  const flink::FlinkJob& flink_job = *job.latest;
  if (f.checkpointing) {
    // Since the latest completed checkpoint, but never before the job last (re)started: a
    // failover that recovers slowly has had no chance to checkpoint yet.
    const double since_start = std::max(0.0, flink_known_at - job.running_since);
    const std::optional<CheckpointAge> age = CheckpointAgeOf(flink_job, flink_known_at);
    f.checkpoint_age_seconds = age ? std::min(age->age_seconds, since_start) : since_start;
    f.checkpoint_failures_in_window = CheckpointFailuresInWindow(job.samples, job.running_since,
                                                                 f.grace_seconds, now, window) > 0;
    f.checkpoint_in_progress = flink_job.checkpoints.counts.in_progress > 0;
  }
  f.checkpoints_completed_in_window =
      IncreaseOverWindow(
          job.samples, [](const JobSample& s) { return s.completed; }, now, window) > 0;
}

// What the job's sources and the broker say of its commits.
void CommitFacts(PairFacts& f, const PairInputs& inputs, const JobHistory& job,
                 const GroupHistory* history, bool positions_known,
                 const config::DiagnosisConfig& config, double now) {
  const double window_seconds = Seconds(config.window);
  // The counters trail under backpressure (the commit callback runs on the blocked fetcher
  // thread), so commits the broker shows since the job started count as attempts too.
  const bool broker_saw_commit = history != nullptr && history->last_commit > job.running_since &&
                                 history->last_commit > history->first_seen;
  bool all_commit_nothing = !inputs.joins.empty();
  for (const FlinkSourceJoin* join : inputs.joins) {
    const auto series = job.sources.find(join->source);
    if (series == job.sources.end() || series->second.empty()) {
      all_commit_nothing = false;
      continue;
    }
    f.commits_failed_in_window += IncreaseOverWindow(
        series->second, [](const SourceSample& s) { return s.failed; }, now, window_seconds);
    f.commits_succeeded_in_window += IncreaseOverWindow(
        series->second, [](const SourceSample& s) { return s.succeeded; }, now, window_seconds);
    const std::string mode = CommitMode(series->second, job.samples);
    all_commit_nothing &= mode == "none";
    f.kafka_client_commits |= mode == "auto";
    f.group_expected |= join->association == "configured";
    f.group_candidates |= !join->candidate_groups.empty();
  }
  // A job behind may simply not have got its commit out yet (under backpressure the commit
  // waits on the blocked fetcher thread): only a job that is caught up, in records, and
  // still never commits commits nothing. Not "a lag that matters": after a burst the
  // window's input rate is high and a restored job's backlog looks small in seconds.
  f.commits_nothing = f.checkpointing && all_commit_nothing && !broker_saw_commit &&
                      positions_known &&
                      f.flink_lag < static_cast<double>(config.lag_threshold_records);
}

// Did the job go back behind what its group had committed? Its position below the group's
// committed offsets by more than the age of the position explains, or the group's offsets
// going back since the job (re)started (its first commit from the older position).
void MovedBackFacts(PairFacts& f, const PairPartitions& pp, const JobHistory& job,
                    const GroupHistory* history, const FlinkPollTiming& timing,
                    const config::DiagnosisConfig& config, PairHistory& pair, double now) {
  const double window_seconds = Seconds(config.window);
  const bool lag_matters = LagMatters(f.flink_lag, f.input_rate, config);
  if (pp.positions.empty()) {
    // Nothing to compare yet.
  } else if (!lag_matters) {
    pair.moved_back = MovedBack::kNo;  // caught up
  } else if (pair.moved_back == MovedBack::kNo && history != nullptr) {
    double deficit = 0;
    for (const auto& [tp, position] : pp.positions) {
      const auto committed = history->committed_standing.find(tp);
      if (committed != history->committed_standing.end() && committed->second.offset > position) {
        deficit += static_cast<double>(committed->second.offset - position);
      }
    }
    const double position_age = now - timing.polled_at + timing.metrics_fetch_interval;
    const double explained = f.input_rate.value_or(0) * position_age;
    bool regressed_since_start = false;
    for (double time : history->regression_times) {
      // Before the start too, for a young job: an offset reset while it was stopped.
      regressed_since_start |= time >= job.running_since || f.job_age_seconds < window_seconds;
    }
    if (LagMatters(deficit - explained, f.input_rate, config) || regressed_since_start) {
      const auto& restored_ms = job.latest->checkpoints.restored_timestamp_ms;
      const bool restored = restored_ms && static_cast<double>(*restored_ms) / 1000.0 >=
                                               job.running_since - kRestoreSlackSeconds;
      pair.moved_back = restored ? MovedBack::kRestore : MovedBack::kReplay;
    }
  }
  f.moved_back = pair.moved_back;
  f.regressions_in_window =
      history != nullptr ? static_cast<int>(history->regression_times.size()) : 0;
}

// What the group holds: offsets on the pair's topics, partitions with records and no offset,
// another job on the same partitions, offsets about to expire, a sawtooth that matters.
void GroupOffsetFacts(PairFacts& f, const ClusterEvidence& cluster, const PairKey& key,
                      const PairPartitions& pp, const Readers& readers, PairHistory& pair,
                      double now) {
  const std::string& group_id = std::get<1>(key);
  const kafka::ConsumerGroup* group = GroupIndex::Find(cluster.index.described, group_id);
  f.group_known = !group_id.empty();
  if (group != nullptr) {
    for (const auto& [tp, offset] : group->committed)
      f.group_has_offsets |= pp.topics.contains(tp.topic);
  }
  // With the group there but no partitions reported by the reader yet (right after a start or
  // restore), nothing says its offsets are missing.
  if (f.group_known && group != nullptr && pp.topics.empty()) f.group_has_offsets = true;
  if (const auto others = readers.find(group_id); others != readers.end()) {
    const auto& mine = others->second.find(std::get<2>(key));
    for (const auto& [other_job, read] : others->second) {
      if (other_job == std::get<2>(key) || mine == others->second.end()) continue;
      for (const kafka::TopicPartition& tp : read) {
        f.other_job_on_same_partitions |= mine->second.contains(tp);
      }
    }
  }
  bool uncommitted = false;
  if (group != nullptr && f.group_has_offsets) {
    for (const std::string& topic : pp.topics) {
      const auto count = cluster.snapshot.topic_partitions.find(topic);
      if (count == cluster.snapshot.topic_partitions.end()) continue;
      for (std::int32_t p = 0; p < count->second; ++p) {
        const kafka::TopicPartition tp{topic, p};
        uncommitted |= !group->committed.contains(tp) && HasRecords(cluster.snapshot, tp);
      }
    }
  }
  f.partitions_uncommitted = HeldFor(pair.uncommitted_since, uncommitted, now, f.grace_seconds);
  const GroupFindings* findings = GroupIndex::Find(cluster.index.findings, group_id);
  f.offsets_expiring = group != nullptr && ExpiringSoon(findings, cluster.snapshot, cluster.config);
}

// In records: what Kafka's tools show, and what would alarm anyone reading them. Measured
// where lagsight's polls can see the period; a checkpoint gap shorter than two Kafka polls is
// known from Flink instead, and its sawtooth is what arrives over one gap.
void SawtoothFacts(PairFacts& f, const ClusterEvidence& cluster, const std::string& group_id,
                   const GroupHistory* history, const PairHistory& pair, double now) {
  const double window_seconds = Seconds(cluster.config.window);
  const GroupFindings* findings = GroupIndex::Find(cluster.index.findings, group_id);
  const double threshold = static_cast<double>(cluster.config.lag_threshold_records);
  const double poll_gap = history != nullptr ? UsualPollGap(history->samples) : 0;
  if (f.checkpointing && poll_gap > 0 &&
      f.expected_checkpoint_gap_seconds < kSawtoothMinPollsPerPeriod * poll_gap) {
    // ... and only where Kafka's side reached the threshold at a poll in the window: a
    // sawtooth nobody's tools can see alarms nobody.
    std::int64_t kafka_lag_seen = 0;
    for (const PairSample& sample : pair.samples.samples()) {
      if (sample.time >= now - window_seconds) {
        kafka_lag_seen = std::max(kafka_lag_seen, sample.kafka_lag);
      }
    }
    f.sawtooth_large = f.input_rate.value_or(0) * f.expected_checkpoint_gap_seconds >= threshold &&
                       static_cast<double>(kafka_lag_seen) >= threshold;
  } else {
    f.sawtooth_large = findings != nullptr && findings->sawtooth.detected &&
                       findings->sawtooth.amplitude_records.value_or(0) >= threshold;
  }
}

}  // namespace

PairFacts RunningPairFacts(const ClusterEvidence& cluster, const PairKey& key,
                           const PairInputs& inputs, const JobHistory& job,
                           const FlinkPollTiming& timing, const Readers& readers, PairHistory& pair,
                           double now, std::vector<kafka::TopicPartition>& stuck) {
  const std::string& group_id = std::get<1>(key);
  const double window_seconds = Seconds(cluster.config.window);
  // What the job's snapshot says (checkpoint age, how long a position stands) holds as of
  // the Flink poll that took it, not as of this Kafka poll, and as of when that poll began:
  // against `now` the snapshot would age by however late it is. A REST API that answers in
  // seconds, or a host that stalls (CI saw 12 s, after which Kafka polls ran before the next
  // Flink poll), would make a healthy job's checkpoints look overdue.
  const double flink_known_at = KnownAt(timing.requested_at, now);
  PairFacts f;
  f.cluster_mismatch = cluster.findings.cluster_mismatch;
  JobFacts(f, job, timing, cluster.config, now);
  const PairPartitions pp = PartitionsOf(inputs, f);
  LagFacts(f, cluster, group_id, pp, timing, pair, flink_known_at, now, stuck);
  CheckpointFacts(f, job, flink_known_at, window_seconds, now);
  const GroupHistory* history = cluster.history.Group(group_id);
  CommitFacts(f, inputs, job, history, !pp.positions.empty(), cluster.config, now);
  MovedBackFacts(f, pp, job, history, timing, cluster.config, pair, now);
  GroupOffsetFacts(f, cluster, key, pp, readers, pair, now);
  SawtoothFacts(f, cluster, group_id, history, pair, now);
  return f;
}

std::optional<PairFacts> NotRunningPairFacts(const ClusterEvidence& cluster, const PairKey& key,
                                             const JobHistory& job, double now) {
  const double window_seconds = Seconds(cluster.config.window);
  PairFacts facts;
  facts.cluster_mismatch = cluster.findings.cluster_mismatch;
  facts.restarts_in_window = IncreaseOverWindow(
      job.samples, [](const JobSample& s) { return s.restarts; }, now, window_seconds);
  if (job.missing_since) {
    facts.lifecycle = JobLifecycle::kGone;
    facts.not_running_seconds = now - *job.missing_since;
    if (const GroupHistory* history = cluster.history.Group(std::get<1>(key))) {
      facts.kafka_lag = static_cast<double>(history->samples.back().lag_sum);
      facts.group_lag_growing =
          TrendOverWindow(
              history->samples, [](const GroupSample& s) { return s.lag_sum; }, now, window_seconds,
              MinimumChange(cluster.config)) == Trend::kGrowing;
    }
  } else if (Restarting(job)) {
    facts.lifecycle = JobLifecycle::kNotRunning;
    facts.not_running_seconds = now - job.not_running_since.value_or(now);
  } else {
    return std::nullopt;  // starting for the first time: nothing to judge yet
  }
  return facts;
}

namespace {

// The facts every Kafka-only group is judged by, from its history: its lag and input over the
// window, and its progress (a consumer group's commits, a share group's start offsets moving);
// `waiting` (sorted) are its partitions with records to read.
GroupFactsWithStuck ProgressFacts(const GroupHistory& history, std::optional<double> input_rate,
                                  const std::vector<kafka::TopicPartition>& waiting,
                                  const config::DiagnosisConfig& config, double now) {
  const double window_seconds = Seconds(config.window);
  GroupFactsWithStuck f;
  f.regressions_in_window = static_cast<int>(history.regression_times.size());
  const GroupSample* baseline = WindowBaseline(history.samples, now, window_seconds);
  const GroupSample& latest = history.samples.back();
  f.lag = static_cast<double>(latest.lag_sum);
  f.input_rate = input_rate;
  f.lag_trend = TrendOverWindow(
      history.samples, [](const GroupSample& s) { return s.lag_sum; }, now, window_seconds,
      MinimumChange(config));
  f.covered =
      baseline != nullptr && latest.time - baseline->time >= kLevelCoverage * window_seconds;
  f.committed_in_window =
      !history.commits.empty() && history.commits.back().time > now - window_seconds;
  f.input_arrived = baseline != nullptr && latest.log_end_sum > baseline->log_end_sum;
  f.seconds_since_commit = now - history.last_commit;
  f.commit_period_seconds = CommitPeriod(history.commits);
  // A partition whose progress stopped while the group's others go on, with records waiting.
  const double stuck_after = StalledAfterSeconds(f.commit_period_seconds, config);
  // KafkaHistory::Record keeps committed_standing up to date with this poll's offsets.
  f.stuck = StuckPartitions(
      history.committed_standing,
      [&](const kafka::TopicPartition& tp) {
        return std::binary_search(waiting.begin(), waiting.end(), tp);
      },
      now, stuck_after);
  for (const kafka::TopicPartition& tp : f.stuck) f.stuck_partitions.push_back(PartitionName(tp));
  return f;
}

}  // namespace

GroupFactsWithStuck GroupFactsOf(const ClusterEvidence& cluster, const GroupLag& lag,
                                 const GroupFindings& findings, const GroupHistory& history,
                                 PairHistory& pair, double now) {
  bool uncommitted = false;
  // Sorted as they come (topics by name, partitions by number): a set's node per partition
  // was a tenth of tests/bench/analyzer_bench.
  std::vector<kafka::TopicPartition> waiting;
  for (const TopicLag& topic : lag.topics) {
    for (const PartitionLag& partition : topic.partitions) {
      if (partition.position == CommitPosition::kNoCommit) {
        uncommitted =
            uncommitted || HasRecords(cluster.snapshot, {topic.topic, partition.partition});
      }
      if (partition.lag.value_or(0) > 0) waiting.push_back({topic.topic, partition.partition});
    }
  }
  GroupFactsWithStuck f =
      ProgressFacts(history, cluster.history.InputRateOf(lag, /*committed_only=*/true), waiting,
                    cluster.config, now);
  f.offsets_expiring = ExpiringSoon(&findings, cluster.snapshot, cluster.config);
  f.partitions_uncommitted =
      HeldFor(pair.uncommitted_since, uncommitted, now, Seconds(cluster.config.window) / 2);
  return f;
}

GroupFactsWithStuck ShareGroupFactsOf(const ClusterEvidence& cluster,
                                      const kafka::ShareGroup& group, const GroupHistory& history,
                                      double now) {
  std::set<kafka::TopicPartition> partitions;
  std::vector<kafka::TopicPartition> waiting;  // sorted, as the group's partitions
  for (const kafka::SharePartition& partition : group.partitions) {
    partitions.insert(partition.partition);
    const auto lag = kafka::ShareLagOf(partition, cluster.snapshot);
    if (lag && lag->records > 0) waiting.push_back(partition.partition);
  }
  return ProgressFacts(history,
                       cluster.history.InputRateOf(partitions, Seconds(cluster.config.window), now),
                       waiting, cluster.config, now);
}

}  // namespace lagsight::analysis
