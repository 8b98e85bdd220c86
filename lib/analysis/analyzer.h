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

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/checkpoint_age.h"
#include "analysis/diagnosis.h"
#include "analysis/flink_join.h"
#include "analysis/kafka_lag.h"
#include "analysis/kafka_poll.h"
#include "analysis/lag_seconds.h"
#include "analysis/offset_regressions.h"
#include "analysis/sawtooth.h"
#include "config/config.h"
#include "flink/snapshot.h"
#include "kafka/snapshot.h"

namespace lagsight::analysis {

struct PartitionLagSeconds {
  std::int32_t partition = 0;
  LagSeconds value;
};

// The lags in seconds of one topic's partitions. The topic is named once rather than in every
// partition's entry: 24 bytes a partition instead of 56, a million of them at issue 14's S3.
struct TopicLagSeconds {
  std::string topic;
  std::vector<PartitionLagSeconds> partitions;  // those with a known lag in seconds, by number
};

struct GroupFindings {
  std::string group;
  std::vector<TopicLagSeconds> lag_seconds;  // topics with any, in the group's lag order
  std::optional<double> max_lag_seconds;
  double last_commit_time = 0;  // unix seconds; see README "How the last commit is known"
  std::optional<double> offsets_expiry_seconds;  // groups without members, retention known
  Sawtooth sawtooth;
  // Seconds until the group's lag reaches 0 at the pace it shrank over the diagnosis window
  // (+Inf: not shrinking; none: too little history). See CatchUpSeconds.
  std::optional<double> catch_up_seconds;
  std::optional<double> lateness_target_seconds;  // the first matching group target, if any
};

struct KafkaFindings {
  bool cluster_mismatch = false;
  std::vector<GroupFindings> groups;  // in the snapshot's order
};

struct SourceFindings {
  std::string job_id;
  std::string job_name;
  std::string source;
  std::optional<double> commit_failure_ratio;  // over the window; none without commits
  // How the source keeps its position in Kafka, as far as lagsight can tell: "checkpoint" (it
  // commits on checkpoints), "auto" (a FlinkKafkaConsumer without checkpointing: the Kafka client
  // commits on its own timer, unseen by Flink), "none" (checkpoints complete and it never
  // commits: no group.id, or commits switched off) or "unknown" (too early to say).
  std::string commit_mode = "unknown";
  // Seconds until the source's Flink-side lag reaches 0 at the pace it shrank over the window.
  std::optional<double> catch_up_seconds;
  std::optional<double> lateness_target_seconds;  // the first matching job target, if any
};

struct FlinkFindings {
  std::vector<FlinkSourceJoin> joins;  // with sticky associations applied
  std::vector<SourceFindings> sources;
  // By job id: the newest completed checkpoint's age as of the start of the Flink poll.
  std::map<std::string, CheckpointAge> checkpoint_ages;
};

// One point of a pair's lag over time, for the status page's chart.
struct LagPoint {
  double time = 0;
  std::int64_t kafka_lag = 0;
  std::optional<std::int64_t> flink_lag;  // none for Kafka-only groups
};

struct DiagnosisFinding {
  std::string kafka_cluster;
  std::string group;   // empty: the job commits to no group lagsight can find
  std::string job_id;  // empty: a Kafka-only group
  std::string job_name;
  Cause cause = Cause::kHealthy;
  double since = 0;             // unix seconds the cause became active
  std::vector<Cause> evidence;  // every cause whose rule holds now, the active one or not
  std::vector<kafka::TopicPartition> stuck_partitions;  // named by partition_stuck
  // Partitions where the job's position lies beyond the polled cluster's log end (evidence of
  // cluster_mismatch: the job reads another cluster).
  std::vector<kafka::TopicPartition> beyond_log_end_partitions;
  // Partitions of the pair's topics that no subtask of the job reads (FlinkUnreadPartition).
  std::vector<kafka::TopicPartition> unread_partitions;
  // Subtasks of the job's sources on the pair that hold no split, of how many (FlinkSourceJoin).
  int idle_subtasks = 0;
  int source_subtasks = 0;
  // What the status page shows next to the cause.
  std::optional<std::int64_t> kafka_lag;  // group lag on the pair's topics (records)
  std::optional<std::int64_t> flink_lag;
  std::optional<double> max_lag_seconds;        // Kafka side
  std::optional<double> flink_max_lag_seconds;  // the job's own, over the pair's topics
  // When the backlog reaches 0 at its pace over the window: the job's own (Flink side) for a
  // pair with a running job, else the group's; +Inf while it is not shrinking.
  std::optional<double> catch_up_seconds;
  std::optional<double> checkpoint_age_seconds;  // pairs with checkpointing
  std::optional<double> checkpoint_interval_seconds;
  std::vector<LagPoint> history;  // oldest first, at most the analyzer's series capacity
};

struct Findings {
  // Clusters that are up; shared with the analyzer until the cluster's next poll.
  std::map<std::string, std::shared_ptr<const KafkaFindings>> kafka;
  std::map<std::string, FlinkFindings> flink;  // clusters that are up
  std::vector<DiagnosisFinding> diagnosis;     // sorted by cluster, group, job
};

// The latest state of every source, shared and immutable; null snapshots are sources that are
// down.
struct SourcesView {
  struct Flink {
    std::shared_ptr<const config::FlinkClusterConfig> config;
    std::shared_ptr<const flink::FlinkSnapshot> snapshot;
  };
  std::map<std::string, KafkaPoll> kafka;
  std::map<std::string, Flink> flink;
};

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
