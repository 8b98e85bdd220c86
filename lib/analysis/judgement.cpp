#include "analysis/judgement.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "analysis/analysis_time.h"
#include "analysis/catch_up.h"
#include "analysis/checkpoint_age.h"

namespace lagsight::analysis {
namespace {

// A Kafka-only group's lag over time, for the status page's chart.
std::vector<LagPoint> LagPoints(const GroupHistory& history) {
  std::vector<LagPoint> points;
  points.reserve(history.samples.size());
  for (const GroupSample& sample : history.samples.samples()) {
    points.push_back({sample.time, sample.lag_sum, std::nullopt});
  }
  return points;
}

std::vector<LagPoint> LagPoints(const PairHistory& pair) {
  std::vector<LagPoint> points;
  for (const PairSample& sample : pair.samples.samples()) {
    points.push_back({sample.time, sample.kafka_lag, sample.flink_lag});
  }
  return points;
}

// What the status page shows of the pair's group next to its cause: its largest lag in seconds,
// and the members holding the partitions the finding names.
void AddGroupDetails(const GroupIndex& index, DiagnosisFinding& finding) {
  if (const GroupFindings* group = GroupIndex::Find(index.findings, finding.group)) {
    finding.max_lag_seconds = group->max_lag_seconds;
  }
  if (const GroupLag* lag = GroupIndex::Find(index.lags, finding.group)) {
    for (const TopicLag& topic : lag->topics) {
      for (const PartitionLag& partition : topic.partitions) {
        if (!partition.lag || *partition.lag <= finding.largest_lag) continue;
        finding.largest_lag = *partition.lag;
        finding.largest_lag_partition = kafka::TopicPartition{topic.topic, partition.partition};
      }
    }
  }
  const kafka::ConsumerGroup* described = GroupIndex::Find(index.described, finding.group);
  if (described == nullptr) return;
  std::vector<kafka::TopicPartition> largest;
  if (finding.largest_lag_partition) largest.push_back(*finding.largest_lag_partition);
  for (const auto* named :
       {&finding.stuck_partitions, &finding.beyond_log_end_partitions, &largest}) {
    for (const kafka::TopicPartition& tp : *named) {
      for (const kafka::GroupMember& member : described->member_list) {
        if (!std::binary_search(member.assignment.begin(), member.assignment.end(), tp)) continue;
        const bool known = std::any_of(finding.holders.begin(), finding.holders.end(),
                                       [&](const PartitionHolder& h) { return h.partition == tp; });
        if (!known)
          finding.holders.push_back({tp, member.member_id, member.client_id, member.host});
      }
    }
  }
}

// What the status page shows of a running pair's joins next to its cause.
void AddJoinDetails(const PairInputs& inputs, DiagnosisFinding& finding) {
  for (const FlinkSourceJoin* join : inputs.joins) {
    for (const FlinkTopicJoin& topic : join->topics) {
      if (!topic.max_lag_seconds) continue;
      finding.flink_max_lag_seconds =
          std::max(finding.flink_max_lag_seconds.value_or(0), *topic.max_lag_seconds);
    }
    for (const FlinkUnreadPartition& unread : join->unread) {
      finding.unread_partitions.push_back({unread.topic, unread.partition});
    }
    for (const FlinkPartitionJoin& partition : join->partitions) {
      if (partition.beyond_log_end) {
        finding.beyond_log_end_partitions.push_back({partition.topic, partition.partition});
      }
    }
    if (join->idle_subtasks && join->parallelism) {
      finding.idle_subtasks += *join->idle_subtasks;
      finding.source_subtasks += *join->parallelism;
    }
  }
}

}  // namespace

// One judgement of one Kafka cluster: what it gathered of the pairs, and what it found.
class Judgement::Round {
 public:
  Round(std::map<PairKey, PairState>& pairs, const std::string& cluster_name,
        const ClusterEvidence& cluster, const FlinkClusters& flink, const JobHistories& jobs,
        bool settled, double now)
      : pairs_(pairs),
        cluster_name_(cluster_name),
        cluster_(cluster),
        config_(cluster.config),
        flink_(flink),
        jobs_(jobs),
        settled_(settled),
        now_(now) {}

  std::vector<DiagnosisFinding> Run() {
    CollectInputs();
    // At most one per pair and one per group without a job; grown by doubling it held 1.5
    // copies (heaptrack, 20,000 groups: 12.6 MB).
    out_.reserve(pair_inputs_.size() + cluster_.findings.groups.size() +
                 cluster_.snapshot.share_groups.size());
    JudgeJoinedPairs();
    JudgeJobsWithoutJoins();
    JudgeKafkaOnlyGroups();
    JudgeShareGroups();
    std::erase_if(pairs_, [&](const auto& entry) {
      return std::get<0>(entry.first) == cluster_name_ && !kept_.contains(entry.first);
    });
    std::sort(out_.begin(), out_.end(), [](const DiagnosisFinding& a, const DiagnosisFinding& b) {
      return std::tie(a.group, a.job_id) < std::tie(b.group, b.job_id);
    });
    return std::move(out_);
  }

 private:
  // Pairs of this cluster from the joins of every Flink cluster that is up, who reads which
  // partitions of each group, and the groups some job commits to.
  void CollectInputs() {
    for (const auto& [flink_name, state] : flink_) {
      if (!state.up) continue;
      for (const FlinkSourceJoin& join : state.findings.joins) {
        if (join.kafka_cluster != cluster_name_) continue;
        const auto job = jobs_.find(join.job_id);
        if (job == jobs_.end() || job->second.latest == nullptr) continue;
        PairInputs& inputs = pair_inputs_[{cluster_name_, join.group.value_or(""), join.job_id}];
        inputs.job_name = join.job_name;
        inputs.joins.push_back(&join);
        jobs_with_inputs_.insert(join.job_id);
        if (join.group) {
          auto& read = readers_[*join.group][join.job_id];
          for (const FlinkPartitionJoin& p : join.partitions) read.insert({p.topic, p.partition});
        }
      }
    }
    // Groups some job commits to, including jobs that are missing or whose Flink cluster is
    // down right now: those groups are not judged as Kafka-only while their job cannot be seen.
    for (const auto& [job_id, history] : jobs_) {
      for (const auto& [source, association] : history.associations) {
        if (association.kafka_cluster == cluster_name_) {
          jobs_of_group_[association.group].insert(job_id);
        }
      }
    }
  }

  void JudgeJoinedPairs() {
    for (const auto& [key, inputs] : pair_inputs_) {
      const JobHistory& job = jobs_.at(std::get<2>(key));
      PairState& pair = Pair(key);
      InheritVerdict(key, inputs.job_name, pair);
      std::vector<kafka::TopicPartition> stuck;
      const PairFacts facts =
          RunningPairFacts(cluster_, key, inputs, job, FlinkOf(job.flink_cluster).timing, readers_,
                           pair.history, now_, stuck);
      std::optional<DiagnosisFinding> finding =
          Decide(key, pair, inputs.job_name, PairEvidenceFrom(facts, config_), PairPrecedence(),
                 LagPoints(pair.history), facts, job, std::move(stuck));
      if (finding) {
        AddJoinDetails(inputs, *finding);
        AddCatchUpPlan(inputs, facts, job, *finding);
        pair.last = finding;
      }
      Emit(key, std::move(finding));
    }
  }

  // A pair that is behind: the bottleneck of its job (when its load was read) and the
  // parallelism that drains the pair's backlog (the job's own) within the catch-up target.
  void AddCatchUpPlan(const PairInputs& inputs, const PairFacts& facts, const JobHistory& job,
                      DiagnosisFinding& finding) const {
    if (finding.cause != Cause::kReallyBehind && finding.cause != Cause::kSteadyBacklog) return;
    const auto& bottlenecks = FlinkOf(job.flink_cluster).findings.bottlenecks;
    const auto found = bottlenecks.find(finding.job_id);
    if (found == bottlenecks.end()) return;
    int partitions = 0;
    std::vector<PartitionBacklog> backlogs;
    for (const FlinkSourceJoin* join : inputs.joins) {
      partitions += static_cast<int>(join->partitions.size() + join->unread.size());
      for (const FlinkPartitionJoin& partition : join->partitions) {
        if (partition.flink_lag) {
          backlogs.push_back({partition.topic, partition.partition, *partition.flink_lag});
        }
      }
    }
    finding.bottleneck = found->second;
    finding.catch_up_plan = PlanCatchUp(
        found->second, facts.input_rate.value_or(0),
        static_cast<double>(finding.flink_lag.value_or(0)), Seconds(config_.catch_up_target),
        partitions > 0 ? std::optional<int>(partitions) : std::nullopt, FindHotPartition(backlogs));
  }

  // Jobs without joins here: not running, missing, stopping, deploying, or their Flink cluster
  // is down.
  void JudgeJobsWithoutJoins() {
    for (const auto& [job_id, job] : jobs_) {
      if (jobs_with_inputs_.contains(job_id)) continue;
      std::set<PairKey> keys;
      for (const auto& [source, association] : job.associations) {
        if (association.kafka_cluster == cluster_name_) {
          keys.insert({cluster_name_, association.group, job_id});
        }
      }
      for (const auto& [key, state] : pairs_) {
        if (std::get<0>(key) == cluster_name_ && std::get<2>(key) == job_id) keys.insert(key);
      }
      if (keys.empty()) keys = HandOverToSuccessor(job_id, job);
      const FlinkCluster& flink_state = FlinkOf(job.flink_cluster);
      for (const PairKey& key : keys) JudgeWithoutJoins(key, job, flink_state);
    }
  }

  // A job redeployed or upgraded under the same name whose reader reports no partitions yet
  // (deploying, restoring) has no joins: nothing tied it to its group, which was judged
  // Kafka-only meanwhile, so the job's diagnosis series was gone for as long (8-10 s in every
  // redeploy, upgrade and rescale of the suite at 1 s polls). Its predecessor's pairs with an
  // active verdict become its own (the cause, its start, the evidence last seen) and are held
  // until it reports, for at most job_gone_after, as a missing job's are: after that the group
  // is judged on its own again. The same assumption as Associations' by-name memory: a job
  // restarted under the same name commits to the same group.
  std::set<PairKey> HandOverToSuccessor(const std::string& job_id, const JobHistory& job) {
    std::set<PairKey> keys;
    if (job.latest == nullptr || job.missing_since || Stopping(job.state)) return keys;
    std::vector<std::pair<std::string, const PairState*>> predecessors;
    for (const auto& [key, before] : pairs_) {
      const auto& [cluster, group, other_job] = key;
      if (cluster != cluster_name_ || other_job.empty() || other_job == job_id) continue;
      if (IsPredecessor(other_job, before, job.name)) predecessors.emplace_back(group, &before);
    }
    for (const auto& [group, before] : predecessors) {
      const PairKey key{cluster_name_, group, job_id};
      const Verdict verdict = before->verdict;
      DiagnosisFinding finding = *before->last;
      finding.job_id = job_id;
      PairState& pair = Pair(key);
      pair.verdict = verdict;
      pair.last = std::move(finding);
      pair.handed_over_until = now_ + Seconds(config_.job_gone_after);
      keys.insert(key);
    }
    return keys;
  }

  // Whether the pair `before` of job `other_job` is what a job named `job_name` takes over: its
  // verdict is active, it was of that name, and its job is gone or handing over (two running
  // jobs of one name each keep their own verdict).
  bool IsPredecessor(const std::string& other_job, const PairState& before,
                     const std::string& job_name) const {
    if (!before.verdict.active() || !before.last || before.last->job_name != job_name) {
      return false;
    }
    const auto known = jobs_.find(other_job);
    return known == jobs_.end() || known->second.missing_since || Stopping(known->second.state);
  }

  void JudgeWithoutJoins(const PairKey& key, const JobHistory& job,
                         const FlinkCluster& flink_state) {
    PairState& pair = Pair(key);
    const double hold_for = Seconds(config_.job_gone_after);
    if (!flink_state.up) {
      // No news of the job: hold what was known through the blip, then say nothing.
      const bool blip = flink_state.down_since && now_ - *flink_state.down_since < hold_for;
      Emit(key, blip ? pair.last : std::nullopt);
      return;
    }
    if (Stopping(job.state) || (job.missing_since && now_ - *job.missing_since < hold_for)) {
      Emit(key, pair.last);
      return;
    }
    const std::optional<PairFacts> facts = NotRunningPairFacts(cluster_, key, job, now_);
    if (!facts) {  // starting for the first time: nothing to judge yet
      if (pair.handed_over_until > 0) {
        if (now_ >= pair.handed_over_until) return;  // not kept: the group is judged alone
        jobs_of_group_[std::get<1>(key)].insert(std::get<2>(key));
      }
      Emit(key, pair.last);
      return;
    }
    Emit(key, Decide(key, pair, job.name, PairEvidenceFrom(*facts, config_), PairPrecedence(),
                     LagPoints(pair.history), *facts, job));
  }

  void JudgeKafkaOnlyGroups() {
    for (const GroupFindings& group : cluster_.findings.groups) {
      if (jobs_of_group_.contains(group.group)) continue;
      const PairKey key{cluster_name_, group.group, ""};
      const GroupLag* lag = GroupIndex::Find(cluster_.index.lags, group.group);
      const GroupHistory* history = cluster_.history.Group(group.group);
      if (lag == nullptr || history == nullptr) continue;
      PairState& pair = Pair(key);
      const GroupFactsWithStuck facts =
          GroupFactsOf(cluster_, *lag, group, *history, pair.history, now_);
      std::optional<DiagnosisFinding> finding =
          Conclude(key, pair, "", GroupEvidenceFrom(facts, config_), GroupPrecedence(),
                   LagPoints(*history), facts.stuck);
      if (finding) {
        finding->kafka_lag = history->samples.back().lag_sum;
        finding->catch_up_seconds = group.catch_up_seconds;
        AddGroupDetails(cluster_.index, *finding);
        pair.last = finding;
      }
      Emit(key, std::move(finding));
    }
  }

  // Share groups (KIP-932) by the Kafka-only rules, their start offsets moving standing for
  // commits: a group whose start offsets stand while records arrive is stalled. No Flink job
  // reads through one.
  void JudgeShareGroups() {
    for (const kafka::ShareGroup& group : cluster_.snapshot.share_groups) {
      const GroupHistory* history = cluster_.history.ShareGroup(group.id);
      if (history == nullptr || history->samples.empty()) continue;
      const PairKey key{cluster_name_, group.id, ""};
      PairState& pair = Pair(key);
      if (!group.offsets_known) {
        // This poll could not read its progress. Judged on the history alone it would show no
        // trend and turn healthy while nothing is known of it: its last verdict stands until
        // its start offsets are read again, as a source blip's does.
        Emit(key, pair.last);
        continue;
      }
      const GroupFactsWithStuck facts = ShareGroupFactsOf(cluster_, group, *history, now_);
      std::optional<DiagnosisFinding> finding =
          Conclude(key, pair, "", GroupEvidenceFrom(facts, config_), GroupPrecedence(),
                   LagPoints(*history), facts.stuck);
      if (finding) {
        finding->kafka_lag = history->samples.back().lag_sum;
        finding->catch_up_seconds = CatchUp(
            history->samples, [](const GroupSample& s) { return s.lag_sum; }, facts.input_rate,
            now_, config_);
        AddShareGroupDetails(group, *finding);
        pair.last = finding;
      }
      Emit(key, std::move(finding));
    }
  }

  // The share group's partition with the largest lag, and the members assigned the partitions
  // the finding names (records are shared: several may hold one).
  void AddShareGroupDetails(const kafka::ShareGroup& group, DiagnosisFinding& finding) const {
    for (const kafka::SharePartition& partition : group.partitions) {
      const auto lag = kafka::ShareLagOf(partition, cluster_.snapshot);
      if (!lag || lag->records <= finding.largest_lag) continue;
      finding.largest_lag = lag->records;
      finding.largest_lag_partition = partition.partition;
    }
    std::vector<kafka::TopicPartition> named = finding.stuck_partitions;
    if (finding.largest_lag_partition) named.push_back(*finding.largest_lag_partition);
    std::sort(named.begin(), named.end());
    named.erase(std::unique(named.begin(), named.end()), named.end());
    for (const kafka::TopicPartition& tp : named) {
      for (const kafka::GroupMember& member : group.member_list) {
        if (std::binary_search(member.assignment.begin(), member.assignment.end(), tp)) {
          finding.holders.push_back({tp, member.member_id, member.client_id, member.host});
        }
      }
    }
  }

  // Hysteresis over the raw winner; the finding once a cause is active.
  std::optional<DiagnosisFinding> Conclude(const PairKey& key, PairState& pair,
                                           const std::string& job_name, const Evidence& evidence,
                                           const std::vector<Cause>& precedence,
                                           std::vector<LagPoint> history,
                                           std::vector<kafka::TopicPartition> stuck) {
    if (settled_) pair.verdict.Update(Winner(evidence, precedence), now_, config_.confirm_polls);
    if (!pair.verdict.active()) return std::nullopt;
    DiagnosisFinding finding;
    finding.kafka_cluster = std::get<0>(key);
    finding.group = std::get<1>(key);
    finding.job_id = std::get<2>(key);
    finding.job_name = job_name;
    finding.cause = *pair.verdict.active();
    finding.since = pair.verdict.since();
    finding.evidence = evidence.Causes();
    if (evidence.Has(Cause::kPartitionStuck)) finding.stuck_partitions = std::move(stuck);
    finding.history = std::move(history);
    return finding;
  }

  std::optional<DiagnosisFinding> Decide(const PairKey& key, PairState& pair,
                                         const std::string& job_name, const Evidence& evidence,
                                         const std::vector<Cause>& precedence,
                                         std::vector<LagPoint> history, const PairFacts& facts,
                                         const JobHistory& job,
                                         std::vector<kafka::TopicPartition> stuck = {}) {
    std::optional<DiagnosisFinding> finding =
        Conclude(key, pair, job_name, evidence, precedence, std::move(history), std::move(stuck));
    if (!finding) {
      pair.last.reset();
      return finding;
    }
    if (facts.lifecycle == JobLifecycle::kRunning) {
      if (!pair.history.samples.empty()) {
        const PairSample& latest = pair.history.samples.back();
        finding->flink_lag = latest.flink_lag;
        if (!std::get<1>(key).empty()) finding->kafka_lag = latest.kafka_lag;
        // The job's own backlog decides when it is caught up (its group's lag only follows it).
        finding->catch_up_seconds = CatchUp(
            pair.history.samples, [](const PairSample& s) { return s.flink_lag; }, facts.input_rate,
            now_, config_);
      }
    } else if (!std::get<1>(key).empty() && facts.lifecycle == JobLifecycle::kGone) {
      finding->kafka_lag = static_cast<std::int64_t>(facts.kafka_lag);
    }
    if (job.latest != nullptr) {
      finding->checkpoint_interval_seconds = PeriodicIntervalSeconds(*job.latest);
      const auto& ages = FlinkOf(job.flink_cluster).findings.checkpoint_ages;
      if (const auto age = ages.find(std::get<2>(key));
          age != ages.end() && finding->checkpoint_interval_seconds) {
        finding->checkpoint_age_seconds = age->second.age_seconds;
      }
    }
    AddGroupDetails(cluster_.index, *finding);
    pair.last = finding;
    return finding;
  }

  // A pair whose job or group is new to it is still the same job, or the same job to its group,
  // and starts from the active verdict it had under its earlier key, then changes from there as
  // any verdict does. Without it the job had no diagnosis for the two polls a new verdict takes
  // to confirm (14-46 s at the default polls):
  //  - the job's group became known (Flink reports a committedOffset that matches it up to a
  //    metrics refresh after the first commit): its pair without a group, if that has no joins
  //    any more;
  //  - a job redeployed or upgraded under the same name: its predecessor's pair (whose job is
  //    gone or handing over).
  void InheritVerdict(const PairKey& key, const std::string& job_name, PairState& pair) const {
    pair.handed_over_until = 0;  // it reports now: judged on its own evidence from here
    if (pair.verdict.active()) return;
    const auto& [cluster, group, job_id] = key;
    if (!group.empty()) {
      // One lookup, not a scan: every pair lacks a verdict for its first polls.
      const PairKey unknown_group{cluster, "", job_id};
      if (const auto before = pairs_.find(unknown_group); before != pairs_.end() &&
                                                          before->second.verdict.active() &&
                                                          !pair_inputs_.contains(unknown_group)) {
        pair.verdict = before->second.verdict;
        return;
      }
    }
    for (auto other = pairs_.lower_bound({cluster, group, ""});
         other != pairs_.end() && std::get<0>(other->first) == cluster &&
         std::get<1>(other->first) == group;
         ++other) {
      const std::string& other_job = std::get<2>(other->first);
      if (other_job.empty() || other_job == job_id) continue;
      if (!IsPredecessor(other_job, other->second, job_name)) continue;
      pair.verdict = other->second.verdict;
      return;
    }
  }

  PairState& Pair(const PairKey& key) { return pairs_.try_emplace(key).first->second; }

  // A job's Flink cluster; every job's is known (jobs are recorded with their cluster, and
  // forgotten with it), so the empty one is only a safeguard.
  const FlinkCluster& FlinkOf(const std::string& name) const {
    static const FlinkCluster kUnknown;
    const auto found = flink_.find(name);
    return found != flink_.end() ? found->second : kUnknown;
  }

  void Emit(const PairKey& key, std::optional<DiagnosisFinding> finding) {
    kept_.insert(key);
    if (finding) out_.push_back(std::move(*finding));
  }

  std::map<PairKey, PairState>& pairs_;
  const std::string& cluster_name_;
  const ClusterEvidence& cluster_;
  const config::DiagnosisConfig& config_;
  const FlinkClusters& flink_;
  const JobHistories& jobs_;
  const bool settled_;
  const double now_;

  std::map<PairKey, PairInputs> pair_inputs_;
  std::set<std::string> jobs_with_inputs_;
  Readers readers_;
  std::map<std::string, std::set<std::string>> jobs_of_group_;
  std::vector<DiagnosisFinding> out_;
  std::set<PairKey> kept_;
};

std::vector<DiagnosisFinding> Judgement::Judge(
    const std::string& cluster_name, const KafkaHistory& history, const KafkaFindings& findings,
    const kafka::KafkaSnapshot& snapshot, const std::vector<GroupLag>& lags,
    const FlinkClusters& flink, const JobHistories& jobs, const config::DiagnosisConfig& config,
    bool settled, double now) {
  const GroupIndex index(snapshot, lags, findings);
  const ClusterEvidence cluster{history, findings, snapshot, index, config};
  return Round(pairs_, cluster_name, cluster, flink, jobs, settled, now).Run();
}

void Judgement::Retain(const std::set<std::string>& kafka_clusters) {
  std::erase_if(pairs_, [&](const auto& entry) {
    return !kafka_clusters.contains(std::get<0>(entry.first));
  });
}

}  // namespace lagsight::analysis
