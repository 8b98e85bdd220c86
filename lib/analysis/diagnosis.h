// The diagnosis: which causes explain what a job<->group pair (or a Kafka-only group) shows.
//
// Pure, and in three steps that never mix:
//   1. facts    (PairFacts / GroupFacts): numbers and flags the analyzer measured over the
//               window from its history: lags, the input rate, checkpoint ages, counter
//               increases, regressions, the job's state. No judgement in them.
//   2. evidence (PairEvidenceFrom / GroupEvidenceFrom): every cause whose rule holds on the
//               facts, with the thresholds of DiagnosisConfig. All of them are exported
//               (lagsight_diagnosis_evidence), not only the winner.
//   3. verdict  (Winner + Verdict): the first cause of the evidence in precedence order, held
//               back by hysteresis until it was the raw winner `confirm_polls` times in a row,
//               the very first verdict included.
// The README's "Diagnosis rules" tables state the same rules and order; a test checks them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace lagsight::analysis {

enum class Cause {
  kHealthy,
  kClusterMismatch,
  kJobGone,
  kRestartLoop,
  kRestarting,
  kReallyBehind,
  kPartitionStuck,
  kSteadyBacklog,
  kCheckpointsFailing,
  kCommitsFailing,
  kOffsetsMissing,
  kRestoredFromOldPosition,
  kReplaying,
  kSharedGroupId,
  kPartitionsUncommitted,
  kOffsetsExpiring,
  kLongCheckpointInterval,
  kStalled,    // Kafka-only
  kRewinding,  // Kafka-only
};
inline constexpr int kCauseCount = static_cast<int>(Cause::kRewinding) + 1;
const char* CauseName(Cause cause);

// The causes whose rules hold at one evaluation (healthy is never part of it).
class Evidence {
 public:
  void Add(Cause cause) { bits_ |= 1u << static_cast<unsigned>(cause); }
  bool Has(Cause cause) const { return (bits_ >> static_cast<unsigned>(cause)) & 1u; }
  bool empty() const { return bits_ == 0; }
  std::vector<Cause> Causes() const;  // in enum order

 private:
  std::uint32_t bits_ = 0;
};

// Precedence, highest first: what makes every other reading wrong (mixed clusters), then the
// job not running at all, then data that is late (the one thing that means users wait), then
// what stops commits, then what only makes Kafka's view of the group misleading.
const std::vector<Cause>& PairPrecedence();
const std::vector<Cause>& GroupPrecedence();
// The first cause of `evidence` in `precedence`; healthy when none holds.
Cause Winner(const Evidence& evidence, const std::vector<Cause>& precedence);

// A lag that matters: at least `lag_threshold_records` records and, where the input rate is
// known, at least `lag_threshold` of input (1,000 records is noise at 100k records/s and a
// quarter of an hour at 1 record/s).
bool LagMatters(double lag_records, std::optional<double> input_records_per_second,
                const config::DiagnosisConfig& config);

// How a lag moved over the window (see TrendOverWindow in history.h for how it is measured).
enum class Trend { kUnknown, kGrowing, kFalling, kLevel };

// How a job came to be behind the offsets its group had committed.
enum class MovedBack { kNo, kRestore, kReplay };

// The state of a job's lifecycle, as far as the diagnosis cares.
enum class JobLifecycle { kRunning, kNotRunning, kGone };

// What is known about one Flink job and the group its source commits to, over the window.
struct PairFacts {
  bool cluster_mismatch = false;  // the group's Kafka cluster mixes two clusters
  // "topic/partition" where the job's position is beyond the log end: it reads another cluster.
  std::vector<std::string> positions_beyond_log_end;

  // Lifecycle.
  JobLifecycle lifecycle = JobLifecycle::kRunning;
  double not_running_seconds = 0;  // since the job left RUNNING (or vanished)
  double restarts_in_window = 0;   // numRestarts increase, reset-safe
  double job_age_seconds = 0;      // since the job (re)started
  double grace_seconds = 0;        // a young job's offsets are not expected yet
  bool group_lag_growing = false;  // while gone: the group's lag grows

  // The job's own lag (Flink side) and the stream it reads.
  double flink_lag = 0;              // records, summed over the pair's partitions
  std::optional<double> input_rate;  // records/s arriving on the pair's partitions
  Trend flink_lag_trend = Trend::kUnknown;
  // Partitions whose position has not moved for `stuck_seconds` while records waited on them
  // and the job moved on others: "topic/partition".
  std::vector<std::string> stuck_partitions;

  // Checkpoints (all only with checkpointing on).
  bool checkpointing = false;
  double checkpoint_age_seconds = 0;  // since the latest completed one (or the job's start)
  // The gap checkpoints can have when all is well: max(interval, min pause + last duration).
  double expected_checkpoint_gap_seconds = 0;
  bool checkpoint_failures_in_window = false;
  bool checkpoint_in_progress = false;
  bool checkpoints_completed_in_window = false;

  // Commits.
  double commits_failed_in_window = 0;  // reset-safe increases
  double commits_succeeded_in_window = 0;
  // The source commits nothing: checkpoints complete, it never attempted a commit and the
  // broker shows none since the job started. By design without group.id (or with commits
  // switched off): offsets_missing only when the operator said it commits to a group.
  bool commits_nothing = false;
  bool group_expected = false;  // a configured mapping names the group
  // A source commits through the Kafka client's own timer (commit mode "auto"): Flink's
  // counters never see those commits, and only a group's offsets can tell.
  bool kafka_client_commits = false;
  // What diagnosis.commit_modes (or a positions: store) states for the job, if anything.
  std::optional<config::CommitModeRule::Mode> stated_commit_mode;
  bool group_known = false;        // a group is associated (configured, matched or remembered)
  bool group_candidates = false;   // no unique match, but groups hold exactly the job's offsets
  bool group_has_offsets = false;  // on the pair's topics

  // Positions against what the group held: did the job move back behind what the group had
  // already committed (its offsets went back, or the job started behind them), and is it still
  // catching up from there?
  MovedBack moved_back = MovedBack::kNo;
  int regressions_in_window = 0;  // distinct polls at which the group's offsets went back
  bool other_job_on_same_partitions = false;

  bool partitions_uncommitted = false;  // held for the grace period already
  bool offsets_expiring = false;
  bool sawtooth_large = false;  // Kafka lag sawtooths with an amplitude that matters
  double kafka_lag = 0;
};

// What is known about a group no Flink job is associated with.
struct GroupFacts {
  double lag = 0;
  std::optional<double> input_rate;
  Trend lag_trend = Trend::kUnknown;
  bool covered = false;  // the history spans most of the window
  bool committed_in_window = false;
  bool input_arrived = false;  // the log end moved over the window
  double seconds_since_commit = 0;
  std::optional<double> commit_period_seconds;  // median gap of the commits lagsight saw
  int regressions_in_window = 0;
  bool offsets_expiring = false;
  bool partitions_uncommitted = false;
  std::vector<std::string> stuck_partitions;
};

Evidence PairEvidenceFrom(const PairFacts& facts, const config::DiagnosisConfig& config);
Evidence GroupEvidenceFrom(const GroupFacts& facts, const config::DiagnosisConfig& config);

// How long a Kafka-only group may go without a commit, while records arrive, before it is
// stalled: `stalled_commit_periods` of its own commit period, never less than the window; with
// no period known yet, three windows (lagsight has not seen it commit twice).
double StalledAfterSeconds(std::optional<double> commit_period_seconds,
                           const config::DiagnosisConfig& config);

// The active cause of one pair, with hysteresis. There is none until a raw verdict held for
// `confirm_polls` evaluations: a first poll never pages on its own.
class Verdict {
 public:
  // One evaluation's raw verdict; returns true when the active cause changed.
  bool Update(Cause raw, double now, int confirm_polls);

  std::optional<Cause> active() const { return active_; }
  double since() const { return since_; }

 private:
  std::optional<Cause> active_;
  double since_ = 0;
  std::optional<Cause> candidate_;
  int candidate_polls_ = 0;
};

}  // namespace lagsight::analysis
