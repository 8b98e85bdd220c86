#include "status/severity.h"

namespace lagsight::status {

using analysis::Cause;

Severity SeverityOf(Cause cause) {
  switch (cause) {
    case Cause::kHealthy:
      return Severity::kHealthy;
    case Cause::kLongCheckpointInterval:
    case Cause::kReplaying:
      // Kafka tooling looks alarming, the job is fine: the very case lagsight exists for.
      return Severity::kNeutral;
    case Cause::kReallyBehind:
    case Cause::kCheckpointsFailing:
    case Cause::kClusterMismatch:
    case Cause::kJobGone:
    case Cause::kRestartLoop:
    case Cause::kPartitionStuck:
      return Severity::kCritical;
    case Cause::kRestarting:
    case Cause::kSteadyBacklog:
    case Cause::kCommitsFailing:
    case Cause::kRestoredFromOldPosition:
    case Cause::kOffsetsMissing:
    case Cause::kSharedGroupId:
    case Cause::kOffsetsExpiring:
    case Cause::kPartitionsUncommitted:
    case Cause::kStalled:
    case Cause::kRewinding:
      return Severity::kWarning;
  }
  return Severity::kWarning;
}

const char* SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kCritical:
      return "critical";
    case Severity::kWarning:
      return "warning";
    case Severity::kNeutral:
      return "neutral";
    case Severity::kHealthy:
      return "healthy";
  }
  return "neutral";
}

const char* Explanation(Cause cause) {
  switch (cause) {
    case Cause::kHealthy:
      return "Nothing wrong: lag is small or shrinking.";
    case Cause::kReallyBehind:
      return "Lag is above the threshold and growing: the consumer cannot keep up.";
    case Cause::kCheckpointsFailing:
      return "Checkpoints fail or stall, so the job commits nothing and a restart would rewind.";
    case Cause::kCommitsFailing:
      return "Checkpoints complete but the offset commits to Kafka fail.";
    case Cause::kLongCheckpointInterval:
      return "Kafka-side lag sawtooths with the checkpoint interval while the job is not behind.";
    case Cause::kRestoredFromOldPosition:
      return "The job restored to an older position and has not caught up yet.";
    case Cause::kOffsetsMissing:
      return "The job commits no offsets lagsight can find for this group.";
    case Cause::kSharedGroupId:
      return "Another committer moves this group's offsets as well.";
    case Cause::kOffsetsExpiring:
      return "The group has no members and its offsets expire soon under the broker's retention.";
    case Cause::kClusterMismatch:
      return "Two Kafka clusters are mixed up: the bootstrap addresses answer with different "
             "cluster ids, or the job's position lies beyond the log end lagsight sees (the job "
             "reads another cluster).";
    case Cause::kPartitionsUncommitted:
      return "Some partitions of a consumed topic have records but no committed offset.";
    case Cause::kStalled:
      return "Commits stopped while records keep arriving.";
    case Cause::kRewinding:
      return "The group's committed offsets went backwards.";
    case Cause::kJobGone:
      return "The job vanished from Flink while its group falls behind.";
    case Cause::kRestartLoop:
      return "The job restarts again and again.";
    case Cause::kRestarting:
      return "The job is restarting (failover): its sources read nothing meanwhile.";
    case Cause::kPartitionStuck:
      return "One partition's position stands still with records waiting, while the others move.";
    case Cause::kSteadyBacklog:
      return "The backlog matters and keeps pace with the input but never shrinks.";
    case Cause::kReplaying:
      return "The job went back on purpose (fresh start, offset reset) and is catching up.";
  }
  return "";
}

}  // namespace lagsight::status
