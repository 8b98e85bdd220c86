// The analysis's inputs and outputs as plain data: SourcesView (the latest state of every source
// the daemon hands over) and Findings (what the analysis derived, for the renderer and the
// status page), with their parts.
//
// A header of its own so that every stage of the analysis (analyzer.h lists them) can speak of
// what it reads and what it fills without depending on the Analyzer that runs them: data flows
// one way, from the sources through the stages into Findings. Immutable once published.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/bottleneck.h"
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
#include "stores/snapshot.h"

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
  // By job id: the vertex that holds the job back, for the jobs whose load was read (behind).
  std::map<std::string, Bottleneck> bottlenecks;
};

// One point of a pair's lag over time, for the status page's chart.
struct LagPoint {
  double time = 0;
  std::int64_t kafka_lag = 0;
  std::optional<std::int64_t> flink_lag;  // none for Kafka-only groups
};

// The member of a classic group that holds a partition a finding names, for the status page.
struct PartitionHolder {
  kafka::TopicPartition partition;
  std::string member_id;
  std::string client_id;
  std::string host;
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
  // The group's partition with the largest lag in records, while it has one: where to look
  // first.
  std::optional<kafka::TopicPartition> largest_lag_partition;
  std::int64_t largest_lag = 0;
  // Who holds the partitions named above, where the group has members that do (classic groups).
  std::vector<PartitionHolder> holders;
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
  // A pair that is behind (really_behind or steady_backlog) whose job's load was read: what holds
  // it back, and what would catch it up within diagnosis.catch_up_target.
  std::optional<Bottleneck> bottleneck;
  std::optional<CatchUpPlan> catch_up_plan;
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
  // Each position store's latest reading (null while it is down). The analysis does not read
  // them; a trace records them, and the render joins them with the log (stored_positions.h).
  std::map<std::string, std::shared_ptr<const stores::StoreSnapshot>> stores;
};

}  // namespace lagsight::analysis
