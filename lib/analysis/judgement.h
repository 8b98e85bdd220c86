// Judgement: the diagnosis of every job<->group pair, Kafka-only group and share group of one
// Kafka cluster, at each of its polls (the last stage).
//
// It gathers each pair's joins from the Flink clusters that are up, has the pair evidence
// measure its facts, the rules (diagnosis.h) turn them into evidence, and holds each pair's
// Verdict (hysteresis over `confirm_polls` Kafka polls) and last finding. A source blip forgets
// nothing: while a job's Flink cluster is down (up to `job_gone_after`), or a job is missing or
// stopping, its pairs' last findings stand. Pairs of the cluster that nothing keeps are dropped.
// It reads every earlier stage and none reads it.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/findings.h"
#include "analysis/flink_findings.h"
#include "analysis/job_history.h"
#include "analysis/kafka_history.h"
#include "analysis/pair_evidence.h"
#include "config/config.h"

namespace lagsight::analysis {

// What is held of one pair (or Kafka-only group) between judgements.
struct PairState {
  PairHistory history;  // what its evidence remembers
  Verdict verdict;
  std::optional<DiagnosisFinding> last;  // held through source blips
  // Until when `last`, handed over from a predecessor of the same name, is held while the job
  // does not report its reader yet (0: nothing handed over).
  double handed_over_until = 0;
};

class Judgement {
 public:
  // The findings of Kafka cluster `cluster_name` at its poll at `now`, sorted by group and job:
  // `history` and `findings` already hold that poll. With `settled` false (see StallGuard) no
  // new cause is confirmed; active ones stay.
  std::vector<DiagnosisFinding> Judge(const std::string& cluster_name, const KafkaHistory& history,
                                      const KafkaFindings& findings,
                                      const kafka::KafkaSnapshot& snapshot,
                                      const std::vector<GroupLag>& lags, const FlinkClusters& flink,
                                      const JobHistories& jobs,
                                      const config::DiagnosisConfig& config, bool settled,
                                      double now);

  // Drops the pairs of Kafka clusters that are no longer configured.
  void Retain(const std::set<std::string>& kafka_clusters);

 private:
  class Round;
  std::map<PairKey, PairState> pairs_;
};

}  // namespace lagsight::analysis
