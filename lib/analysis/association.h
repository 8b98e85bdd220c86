// Associations: which consumer group each Flink job's source commits to, made sticky across
// polls, restarts and redeploys (the third stage, after the job and Kafka histories).
//
// JoinFlinkWithKafka matches a source with its group poll by poll; evidence comes and goes (a
// poll that straddles a commit, failing commits, a quiet topic where two groups hold the same
// offsets). Associations keeps what was matched: per job source (JobHistory::associations) until
// another group matches alone, and per (Flink cluster, job name, source) for a while after the
// job was last seen, so a job restarted under the same name keeps its group before its first
// commit. It also remembers which topics the Flink jobs read, where the Kafka history keeps a
// group's earlier offsets. It reads the job histories and the joins; nothing earlier reads it
// except through KafkaHistory's EarlierCommitsPolicy.
#pragma once

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/flink_join.h"
#include "analysis/job_history.h"

namespace lagsight::analysis {

class Associations {
 public:
  // The real topics the sources of `flink_cluster` read, as of its latest joins.
  void NoteTopicsRead(const std::string& flink_cluster, const std::vector<FlinkSourceJoin>& joins);
  // A topic some Flink job read at its cluster's last poll.
  bool ReadByFlink(const std::string& topic) const;

  // The job ids whose sources commit on checkpoints (commit mode "checkpoint"), each with those
  // sources' labels: a configured mapping pairs only those (when any does).
  static std::map<std::string, std::set<std::string>> CommittingSources(
      const std::vector<FlinkSourceJoin>& joins, const JobHistories& jobs);

  // Makes `join`'s association sticky: applies what `job` remembers for the source, and
  // remembers what the join found. `mode` is the source's CommitMode; `job_commits_elsewhere`:
  // another of the job's sources commits on checkpoints.
  void Apply(const std::string& flink_cluster, FlinkSourceJoin& join, JobHistory& job,
             const std::string& mode, bool job_commits_elsewhere, double now);

  // Forgets the associations by name of `flink_cluster` last seen before
  // now - max(forget_after, 10 min).
  void Forget(const std::string& flink_cluster, double forget_after, double now);

 private:
  // The last association of each (flink cluster, job name, source), kept for a window after
  // the job was last seen so a restart under the same name keeps its group.
  using NamedSource = std::tuple<std::string, std::string, std::string>;
  std::map<NamedSource, std::pair<Association, double>> by_name_;
  // Real topics the Flink jobs' sources read at their last polls: where a group's earlier
  // committed offsets are worth keeping.
  std::map<std::string, std::set<std::string>> topics_read_by_flink_;  // by Flink cluster
};

}  // namespace lagsight::analysis
