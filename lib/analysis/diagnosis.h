// The diagnosis: which cause explains what a job<->group pair (or a Kafka-only group) shows.
//
// Pure. The analyzer gathers the evidence (facts over the window, already decided from history)
// and these functions apply the rules, first match wins, in the order of the README table
// "Diagnosis rules". Hysteresis keeps a verdict from flapping: a new cause replaces the active
// one only after it was the raw verdict for `confirm_polls` consecutive evaluations.
#pragma once

#include <cstdint>
#include <optional>

namespace lagsight::analysis {

enum class Cause {
  kHealthy,
  kReallyBehind,
  kCheckpointsFailing,
  kCommitsFailing,
  kLongCheckpointInterval,
  kRestoredFromOldPosition,
  kOffsetsMissing,
  kSharedGroupId,
  kOffsetsExpiring,
  kClusterMismatch,
  kPartitionsUncommitted,
  kStalled,    // Kafka-only
  kRewinding,  // Kafka-only
};
const char* CauseName(Cause cause);

// What is known about one Flink job and the group it commits to, over the diagnosis window.
struct PairEvidence {
  bool cluster_mismatch = false;     // the group's Kafka cluster mixes two clusters
  bool offsets_missing = false;      // no group, or the group holds no offsets for the job
  bool checkpoints_failing = false;  // the latest completed checkpoint is stale
  bool commits_failing = false;      // commits fail while checkpoints complete
  bool shared_group = false;         // another committer moves the group's offsets
  bool restored_behind = false;      // restored to an older position, not yet caught up
  bool partitions_uncommitted = false;
  bool really_behind = false;  // Flink-side lag above threshold and growing
  bool offsets_expiring = false;
  bool sawtooth_above_threshold = false;  // Kafka lag sawtooths, Flink lag small
};

// What is known about a group no Flink job is associated with.
struct GroupEvidence {
  bool rewinding = false;  // committed offsets went back in the window
  bool offsets_expiring = false;
  bool partitions_uncommitted = false;
  bool stalled = false;        // commits stopped while records kept arriving
  bool really_behind = false;  // commits move, lag above threshold and growing
};

Cause JudgePair(const PairEvidence& evidence);
Cause JudgeGroup(const GroupEvidence& evidence);

// The active cause of one pair, with hysteresis.
class Verdict {
 public:
  Verdict(Cause first, double now) : active_(first), since_(now) {}

  // One evaluation's raw verdict; returns true when the active cause changed.
  bool Update(Cause raw, double now, int confirm_polls);

  Cause active() const { return active_; }
  double since() const { return since_; }

 private:
  Cause active_;
  double since_;
  std::optional<Cause> candidate_;
  int candidate_polls_ = 0;
};

}  // namespace lagsight::analysis
