#include "analysis/association.h"

#include <algorithm>

namespace lagsight::analysis {
namespace {

// An association by name is kept at least this long after its job was last seen.
constexpr double kNamesKeptAtLeastSeconds = 600;

}  // namespace

void Associations::NoteTopicsRead(const std::string& flink_cluster,
                                  const std::vector<FlinkSourceJoin>& joins) {
  std::set<std::string>& topics_read = topics_read_by_flink_[flink_cluster];
  topics_read.clear();
  for (const FlinkSourceJoin& join : joins) {
    for (const FlinkPartitionJoin& partition : join.partitions) topics_read.insert(partition.topic);
  }
}

bool Associations::ReadByFlink(const std::string& topic) const {
  for (const auto& [cluster, topics] : topics_read_by_flink_) {
    if (topics.contains(topic)) return true;
  }
  return false;
}

std::map<std::string, std::set<std::string>> Associations::CommittingSources(
    const std::vector<FlinkSourceJoin>& joins, const JobHistories& jobs) {
  std::map<std::string, std::set<std::string>> committing_sources;  // job id -> labels
  for (const FlinkSourceJoin& join : joins) {
    const auto history = jobs.find(join.job_id);
    if (history == jobs.end()) continue;
    const auto series = history->second.sources.find(join.source);
    if (series != history->second.sources.end() &&
        CommitMode(series->second, history->second.samples) == "checkpoint") {
      committing_sources[join.job_id].insert(join.source);
    }
  }
  return committing_sources;
}

void Associations::Apply(const std::string& flink_cluster, FlinkSourceJoin& join, JobHistory& job,
                         const std::string& mode, bool job_commits_elsewhere, double now) {
  auto& remembered = job.associations;
  if (join.group && join.matched_by_history) {
    // Evidence from the group's past alone does not move a job off the group it matched
    // before (a plain consumer of a quiet topic can pass through the same offsets).
    if (const auto known = remembered.find(join.source);
        known != remembered.end() && known->second.group != *join.group) {
      join.group.reset();
      join.association.clear();
      join.matched_by_history = false;
    }
  }
  const NamedSource named{flink_cluster, join.job_name, join.source};
  if (join.association == "configured" && mode == "none" && job_commits_elsewhere) {
    // The mapping names the group of the job's committing sources; this one commits to none
    // (no group.id), so pairing it would report the group's partitions as its own.
    join.group.reset();
    join.association.clear();
    remembered.erase(join.source);
  }
  if (!join.group) {
    if (const auto known = remembered.find(join.source);
        known != remembered.end() && known->second.configured) {
      remembered.erase(known);  // its mapping is gone from the config
    }
  }
  if (!join.group && !remembered.contains(join.source) && join.candidate_groups.empty()) {
    // A job restarted under the same name (e.g. from a savepoint) commits to the same group;
    // its committedOffset is unset until its first commit, so matching cannot find it yet.
    if (const auto by_name = by_name_.find(named);
        by_name != by_name_.end() && !by_name->second.first.configured) {
      remembered[join.source] = by_name->second.first;
    }
  }
  if (join.group) {
    remembered[join.source] = {join.kafka_cluster, *join.group, join.association == "configured"};
    by_name_[named] = {remembered[join.source], now};
  } else if (const auto known = remembered.find(join.source); known != remembered.end()) {
    by_name_[named] = {known->second, now};
    // The job's committed offsets matched this group before; a poll that straddles a
    // commit, commits that fail, or a quiet topic where another group holds the same offsets
    // must not make the job lose its group: it sticks until another group matches alone.
    join.group = known->second.group;
    join.kafka_cluster = known->second.kafka_cluster;
    join.association = "matched";
    join.candidate_groups.clear();
  }
}

void Associations::Forget(const std::string& flink_cluster, double forget_after, double now) {
  std::erase_if(by_name_, [&](const auto& entry) {
    return std::get<0>(entry.first) == flink_cluster &&
           entry.second.second < now - std::max(forget_after, kNamesKeptAtLeastSeconds);
  });
}

}  // namespace lagsight::analysis
