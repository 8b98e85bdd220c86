#include "analysis/diagnosis.h"

namespace lagsight::analysis {

const char* CauseName(Cause cause) {
  switch (cause) {
    case Cause::kReallyBehind:
      return "really_behind";
    case Cause::kCheckpointsFailing:
      return "checkpoints_failing";
    case Cause::kCommitsFailing:
      return "commits_failing";
    case Cause::kLongCheckpointInterval:
      return "long_checkpoint_interval";
    case Cause::kRestoredFromOldPosition:
      return "restored_from_old_position";
    case Cause::kOffsetsMissing:
      return "offsets_missing";
    case Cause::kSharedGroupId:
      return "shared_group_id";
    case Cause::kOffsetsExpiring:
      return "offsets_expiring";
    case Cause::kClusterMismatch:
      return "cluster_mismatch";
    case Cause::kPartitionsUncommitted:
      return "partitions_uncommitted";
    case Cause::kStalled:
      return "stalled";
    case Cause::kRewinding:
      return "rewinding";
    case Cause::kHealthy:
      break;
  }
  return "healthy";
}

Cause JudgePair(const PairEvidence& e) {
  // Causes that make every other reading wrong come first: mixed clusters, then no offsets.
  if (e.cluster_mismatch) return Cause::kClusterMismatch;
  if (e.offsets_missing) return Cause::kOffsetsMissing;
  // Then what stops commits: failing checkpoints explain failing commits, not the reverse.
  if (e.checkpoints_failing) return Cause::kCheckpointsFailing;
  if (e.commits_failing) return Cause::kCommitsFailing;
  // A restore explains the regressions a shared group would otherwise be blamed for.
  if (e.restored_behind) return Cause::kRestoredFromOldPosition;
  if (e.shared_group) return Cause::kSharedGroupId;
  if (e.partitions_uncommitted) return Cause::kPartitionsUncommitted;
  if (e.really_behind) return Cause::kReallyBehind;
  if (e.offsets_expiring) return Cause::kOffsetsExpiring;
  if (e.sawtooth_above_threshold) return Cause::kLongCheckpointInterval;
  return Cause::kHealthy;
}

Cause JudgeGroup(const GroupEvidence& e) {
  if (e.rewinding) return Cause::kRewinding;
  // Expiry loses the position for good; it outranks what is only slow.
  if (e.offsets_expiring) return Cause::kOffsetsExpiring;
  if (e.partitions_uncommitted) return Cause::kPartitionsUncommitted;
  if (e.stalled) return Cause::kStalled;
  if (e.really_behind) return Cause::kReallyBehind;
  return Cause::kHealthy;
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
