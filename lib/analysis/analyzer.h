// Analyzer: the bounded history of every source and everything derived from it.
//
// It is the only stateful part of the analysis and still does no I/O and reads no clock: the app
// hands it each finished poll with the time, and it returns immutable Findings for the renderer.
// Per poll it keeps
//   - per partition: log-end history (ThinningSeries, 64 samples x 16 B), for lag in seconds,
//     input rates and the log end at the (older) time a Flink metric value was taken;
//   - per group: lag/commit samples (64 x 40 B), the last 16 commit events (sawtooth, commit
//     period), the times of offset regressions in the window, the last commit lagsight saw and
//     since when each partition's committed offset stands;
//   - per Flink job: checkpoint, restart and commit counters (64 x 64 B), its lifecycle (since
//     when it is (not) running, since when it is missing), its sticky group association and, per
//     source, its Flink-side backlog (64 x 16 B) for the catch-up time;
//   - per job<->group pair: Flink/Kafka lag samples (64 x 24 B), since when each partition's
//     position stands, whether the job moved back behind its group, and the verdict.
// That is about 1 KiB per partition, 3 KiB per group and 8 KiB per job (1 more per source). A
// source blip forgets nothing: a Flink poll that fails, or a job missing from one poll, holds the
// pair's verdict (and all its history) as it was; a job missing for longer is `job_gone` while its
// group lags, and forgotten `job_gone_after` + 3 windows after it vanished. Groups and partitions
// that vanished are dropped at the next poll of their cluster. The diagnosis is re-judged at each
// Kafka poll of the pair's cluster (so `confirm_polls` counts Kafka polls); a Flink poll updates
// the job's history and its joins.
//
// Inside, it is a thin orchestrator of stages, each a file here, in the order data flows (each
// reads only the ones before it): kafka_history and job_history (what was seen), group_findings
// (what a group shows), association and flink_alignment, run by flink_findings (whose group a
// job's source commits to, and its lag as of when Flink took its position), pair_evidence (the
// facts of each pair), the rules of diagnosis.h, judgement (verdicts with hysteresis), beside
// stall_guard (no new causes right after lagsight itself stood still).
#pragma once

#include <memory>
#include <set>
#include <string>

#include "analysis/findings.h"
#include "config/config.h"

namespace lagsight::analysis {

class Analyzer {
 public:
  explicit Analyzer(config::DiagnosisConfig config);
  ~Analyzer();
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  void SetConfig(const config::DiagnosisConfig& config);

  // Kafka cluster `cluster` finished a poll; its entry in `sources` is the new state.
  std::shared_ptr<const Findings> ObserveKafka(const std::string& cluster,
                                               const SourcesView& sources, double now);

  // Flink cluster `cluster` finished a poll.
  std::shared_ptr<const Findings> ObserveFlink(const std::string& cluster,
                                               const SourcesView& sources, double now);

  // Drops the state of clusters that are no longer configured.
  void Retain(const std::set<std::string>& kafka_clusters,
              const std::set<std::string>& flink_clusters);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace lagsight::analysis
