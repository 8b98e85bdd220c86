// Pair evidence: the facts the diagnosis rules (diagnosis.h) judge, measured for each
// job<->group pair and each Kafka-only group of one Kafka cluster (the fourth stage).
//
// It reads the earlier stages (the Kafka and job histories, the aligned joins, the group
// findings) and keeps, per pair, only what measuring needs between polls (PairHistory): the
// Flink/Kafka lag samples, since when each position stands, since when partitions are
// uncommitted and whether the job moved back behind its group. It holds no judgement: the rules
// turn its facts into evidence, and the judgement into a verdict. Pure: `now` is a parameter.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/findings.h"
#include "analysis/flink_join.h"
#include "analysis/job_history.h"
#include "analysis/kafka_history.h"
#include "analysis/series.h"
#include "analysis/standing.h"
#include "config/config.h"
#include "kafka/snapshot.h"

namespace lagsight::analysis {

using PairKey = std::tuple<std::string, std::string, std::string>;  // cluster, group, job id

struct PairSample {
  double time = 0;
  std::int64_t flink_lag = 0;
  std::int64_t kafka_lag = 0;
};

// What the evidence of one pair (or Kafka-only group) remembers between polls.
struct PairHistory {
  ThinningSeries<PairSample> samples;
  std::optional<double> uncommitted_since;
  StandingOffsets positions;
  // The job went back behind what its group had committed and has not caught up since.
  MovedBack moved_back = MovedBack::kNo;
};

// The joins of one pair: a job's sources on one group of the cluster.
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

// Partitions each job reads, per group: who else writes the same partitions of a group.
using Readers = std::map<std::string, std::map<std::string, std::set<kafka::TopicPartition>>>;

// What every pair of one Kafka cluster is measured against at one of its polls.
struct ClusterEvidence {
  const KafkaHistory& history;  // holding this poll
  const KafkaFindings& findings;
  const kafka::KafkaSnapshot& snapshot;
  const GroupIndex& index;
  const config::DiagnosisConfig& config;
};

// The facts of a pair whose job runs and has joins on the cluster (`job.latest` set); `timing`
// is the job's Flink cluster's. Names the stuck partitions in `stuck`.
PairFacts RunningPairFacts(const ClusterEvidence& cluster, const PairKey& key,
                           const PairInputs& inputs, const JobHistory& job,
                           const FlinkPollTiming& timing, const Readers& readers, PairHistory& pair,
                           double now, std::vector<kafka::TopicPartition>& stuck);

// The facts of a pair whose job is gone (missing for longer than a redeploy takes) or
// restarting; none for a job that is starting for the first time (nothing to judge yet).
std::optional<PairFacts> NotRunningPairFacts(const ClusterEvidence& cluster, const PairKey& key,
                                             const JobHistory& job, double now);

struct GroupFactsWithStuck : GroupFacts {
  std::vector<kafka::TopicPartition> stuck;
};

// The facts of a group no Flink job is associated with.
GroupFactsWithStuck GroupFactsOf(const ClusterEvidence& cluster, const GroupLag& lag,
                                 const GroupFindings& findings, const GroupHistory& history,
                                 PairHistory& pair, double now);

// The facts of a share group (KIP-932), from its history (KafkaHistory::ShareGroup): judged as a
// Kafka-only group is, its start offsets moving standing for commits. Its offsets never expire
// and it has no uncommitted partitions: a share-partition without state has no lag.
GroupFactsWithStuck ShareGroupFactsOf(const ClusterEvidence& cluster,
                                      const kafka::ShareGroup& group, const GroupHistory& history,
                                      double now);

}  // namespace lagsight::analysis
