#include "analysis/diagnosis.h"

#include <algorithm>
#include <chrono>

#include "analysis/analysis_time.h"

namespace lagsight::analysis {
namespace {

// A Flink poll reports a checkpoint up to one poll late; this much age is never held against it.
constexpr double kCheckpointReportSlackSeconds = 5;
// With failures in the window, a checkpoint this many expected gaps old is failing (without
// failures it takes `checkpoint_stale_gaps`).
constexpr double kStaleGapsWithFailures = 2;
// A Kafka-only group whose commit period lagsight does not know yet (it saw fewer than two
// commits) is stalled only after this many windows without a commit.
constexpr double kStalledWindowsWithoutPeriod = 3;

// checkpoints_failing and commits_failing: what stops the job's commits.
void AddCheckpointAndCommitEvidence(Evidence& e, const PairFacts& f,
                                    const config::DiagnosisConfig& config) {
  if (f.checkpointing) {
    const double gap = f.expected_checkpoint_gap_seconds;
    const double age = f.checkpoint_age_seconds;
    // A checkpoint under way without failures is slow, not failing: under backpressure barriers
    // queue behind buffered records, and that is the backlog's doing.
    const bool slow_not_failing = !f.checkpoint_failures_in_window && f.checkpoint_in_progress;
    if ((age > config.checkpoint_stale_gaps * gap + kCheckpointReportSlackSeconds &&
         !slow_not_failing) ||
        (f.checkpoint_failures_in_window &&
         age > kStaleGapsWithFailures * gap + kCheckpointReportSlackSeconds)) {
      e.Add(Cause::kCheckpointsFailing);
    }
  }
  const double attempts = f.commits_failed_in_window + f.commits_succeeded_in_window;
  if (f.commits_failed_in_window > 0 &&
      f.commits_failed_in_window / attempts > config.commit_failure_ratio &&
      f.checkpoints_completed_in_window) {
    e.Add(Cause::kCommitsFailing);
  }
}

// The rule of offsets_missing, before the grace period is applied.
bool OffsetsMissing(const PairFacts& f) {
  using Mode = config::CommitModeRule::Mode;
  const bool stated_checkpoint = f.stated_commit_mode == Mode::kCheckpoint;
  // The Kafka client commits on its own: Flink's side holds no evidence either way (no counters,
  // no committedOffset to match a group by), so only a known group without offsets says more.
  const bool client_commits = f.stated_commit_mode == Mode::kAuto || f.kafka_client_commits;
  return
      // Kept elsewhere (a store) or nowhere, by design: nothing is missing from Kafka.
      f.stated_commit_mode != Mode::kExternal && f.stated_commit_mode != Mode::kNone &&
      ((f.group_known && !f.group_has_offsets) ||
       (!client_commits &&
        // Commits nothing: a fact by design, a problem when a group is expected of the job.
        ((f.commits_nothing && (f.group_expected || f.group_known || stated_checkpoint)) ||
         // It should commit (it is not known to commit nothing) yet no group holds its offsets.
         (!f.group_known && !f.group_candidates && !f.commits_nothing))));
}

}  // namespace

const char* CauseName(Cause cause) {
  switch (cause) {
    case Cause::kClusterMismatch:
      return "cluster_mismatch";
    case Cause::kJobGone:
      return "job_gone";
    case Cause::kRestartLoop:
      return "restart_loop";
    case Cause::kRestarting:
      return "restarting";
    case Cause::kReallyBehind:
      return "really_behind";
    case Cause::kPartitionStuck:
      return "partition_stuck";
    case Cause::kSteadyBacklog:
      return "steady_backlog";
    case Cause::kCheckpointsFailing:
      return "checkpoints_failing";
    case Cause::kCommitsFailing:
      return "commits_failing";
    case Cause::kOffsetsMissing:
      return "offsets_missing";
    case Cause::kRestoredFromOldPosition:
      return "restored_from_old_position";
    case Cause::kReplaying:
      return "replaying";
    case Cause::kSharedGroupId:
      return "shared_group_id";
    case Cause::kPartitionsUncommitted:
      return "partitions_uncommitted";
    case Cause::kOffsetsExpiring:
      return "offsets_expiring";
    case Cause::kLongCheckpointInterval:
      return "long_checkpoint_interval";
    case Cause::kStalled:
      return "stalled";
    case Cause::kRewinding:
      return "rewinding";
    case Cause::kHealthy:
      break;
  }
  return "healthy";
}

std::vector<Cause> Evidence::Causes() const {
  std::vector<Cause> causes;
  for (int i = 0; i < kCauseCount; ++i) {
    if (Has(static_cast<Cause>(i))) causes.push_back(static_cast<Cause>(i));
  }
  return causes;
}

const std::vector<Cause>& PairPrecedence() {
  static const std::vector<Cause> kOrder{
      Cause::kClusterMismatch,
      // The job is not there to read: everything else is a consequence.
      Cause::kJobGone, Cause::kRestartLoop, Cause::kRestarting,
      // Data is late.
      Cause::kReallyBehind, Cause::kPartitionStuck, Cause::kSteadyBacklog,
      // What stops commits: failing checkpoints explain failing commits, not the reverse, and
      // both explain offsets that are missing.
      Cause::kCheckpointsFailing, Cause::kCommitsFailing, Cause::kOffsetsMissing,
      // Kafka's view of the group misleads, the job itself is fine.
      Cause::kRestoredFromOldPosition, Cause::kReplaying, Cause::kSharedGroupId,
      Cause::kPartitionsUncommitted, Cause::kOffsetsExpiring, Cause::kLongCheckpointInterval};
  return kOrder;
}

const std::vector<Cause>& GroupPrecedence() {
  static const std::vector<Cause> kOrder{
      Cause::kReallyBehind,         Cause::kStalled,   Cause::kPartitionStuck,
      Cause::kSteadyBacklog,        Cause::kRewinding, Cause::kOffsetsExpiring,
      Cause::kPartitionsUncommitted};
  return kOrder;
}

Cause Winner(const Evidence& evidence, const std::vector<Cause>& precedence) {
  for (Cause cause : precedence) {
    if (evidence.Has(cause)) return cause;
  }
  return Cause::kHealthy;
}

bool LagMatters(double lag_records, std::optional<double> input_records_per_second,
                const config::DiagnosisConfig& config) {
  if (lag_records < static_cast<double>(config.lag_threshold_records)) return false;
  if (!input_records_per_second || *input_records_per_second <= 0) return true;
  return lag_records / *input_records_per_second >= Seconds(config.lag_threshold);
}

double StalledAfterSeconds(std::optional<double> commit_period_seconds,
                           const config::DiagnosisConfig& config) {
  const double window = Seconds(config.window);
  if (!commit_period_seconds) return kStalledWindowsWithoutPeriod * window;
  return std::max(window, config.stalled_commit_periods * *commit_period_seconds);
}

Evidence PairEvidenceFrom(const PairFacts& f, const config::DiagnosisConfig& config) {
  Evidence e;
  // lagsight's own bootstrap list reaches two clusters, or the job's positions prove that the
  // job reads another cluster than the one lagsight polls.
  if (f.cluster_mismatch || !f.positions_beyond_log_end.empty()) e.Add(Cause::kClusterMismatch);

  if (f.lifecycle == JobLifecycle::kGone) {
    // Only a job gone for longer than a redeploy takes, while its group falls behind.
    if (f.not_running_seconds >= Seconds(config.job_gone_after) &&
        (f.group_lag_growing || LagMatters(f.kafka_lag, f.input_rate, config))) {
      e.Add(Cause::kJobGone);
    }
    return e;  // nothing of the job's own is current
  }
  if (f.restarts_in_window >= config.restart_loop_restarts) e.Add(Cause::kRestartLoop);
  if (f.lifecycle == JobLifecycle::kNotRunning) {
    e.Add(Cause::kRestarting);
    return e;  // its sources report nothing while it is down
  }

  const bool lag_matters = LagMatters(f.flink_lag, f.input_rate, config);
  if (lag_matters && f.flink_lag_trend == Trend::kGrowing) e.Add(Cause::kReallyBehind);
  if (!f.stuck_partitions.empty()) e.Add(Cause::kPartitionStuck);
  // Keeps pace but never catches up: hours behind and "healthy" is what Kafka-only tools say.
  if (lag_matters && f.flink_lag_trend == Trend::kLevel &&
      f.job_age_seconds >= Seconds(config.window)) {
    e.Add(Cause::kSteadyBacklog);
  }

  AddCheckpointAndCommitEvidence(e, f, config);
  const bool grace_over = f.job_age_seconds >= f.grace_seconds;
  if (grace_over && OffsetsMissing(f)) e.Add(Cause::kOffsetsMissing);

  if (f.moved_back == MovedBack::kRestore && lag_matters) {
    e.Add(Cause::kRestoredFromOldPosition);
  }
  // Two writers interleave; one that moved back once (a fresh start from earliest, an offset
  // reset) is an intended replay.
  const bool interleaving = f.other_job_on_same_partitions || f.regressions_in_window >= 2;
  if (interleaving) e.Add(Cause::kSharedGroupId);
  if (f.moved_back == MovedBack::kReplay && lag_matters && !interleaving) {
    e.Add(Cause::kReplaying);
  }
  if (f.partitions_uncommitted) e.Add(Cause::kPartitionsUncommitted);
  if (f.offsets_expiring) e.Add(Cause::kOffsetsExpiring);
  // While the job catches up, the drops at each commit are its progress, not the interval's.
  if (f.sawtooth_large && !lag_matters && f.flink_lag_trend != Trend::kFalling) {
    e.Add(Cause::kLongCheckpointInterval);
  }
  return e;
}

Evidence GroupEvidenceFrom(const GroupFacts& f, const config::DiagnosisConfig& config) {
  Evidence e;
  const bool lag_matters = LagMatters(f.lag, f.input_rate, config);
  if (f.committed_in_window && lag_matters && f.lag_trend == Trend::kGrowing) {
    e.Add(Cause::kReallyBehind);
  }
  // Measured against the group's own rhythm; an idle topic (nothing arrived) is never stalled.
  if (f.covered && f.lag > 0 && f.input_arrived &&
      f.seconds_since_commit >= StalledAfterSeconds(f.commit_period_seconds, config)) {
    e.Add(Cause::kStalled);
  }
  if (!f.stuck_partitions.empty()) e.Add(Cause::kPartitionStuck);
  if (f.covered && f.committed_in_window && lag_matters && f.lag_trend == Trend::kLevel) {
    e.Add(Cause::kSteadyBacklog);
  }
  if (f.regressions_in_window > 0) e.Add(Cause::kRewinding);
  if (f.offsets_expiring) e.Add(Cause::kOffsetsExpiring);
  if (f.partitions_uncommitted) e.Add(Cause::kPartitionsUncommitted);
  return e;
}

bool Verdict::Update(Cause raw, double now, int confirm_polls) {
  if (raw == active_) {
    candidate_.reset();
    candidate_polls_ = 0;
    return false;
  }
  if (candidate_ == raw) {
    ++candidate_polls_;
  } else {
    candidate_ = raw;
    candidate_polls_ = 1;
  }
  if (candidate_polls_ < confirm_polls) return false;
  active_ = raw;
  since_ = now;
  candidate_.reset();
  candidate_polls_ = 0;
  return true;
}

}  // namespace lagsight::analysis
