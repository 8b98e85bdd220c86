// JobHistory: the bounded history of each Flink job, the Flink half of the analysis's first
// stage.
//
// Per Flink poll it keeps, per job, its checkpoint, restart and per-source commit counters over
// the window, its lifecycle (since when it is (not) running, since when it is missing) and the
// value and earliest time of each position Flink served (for AlignFlinkLag). It also holds the
// fields later stages keep per job (its sticky associations, the judgements of positions beyond
// the log end, its sources' backlogs), which it only reads. A job absent from a poll is missing,
// not gone: a blip rebuilds nothing. It is forgotten once a running job took its name (a
// redeploy), or `forget_after` seconds after it went missing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "analysis/kafka_history.h"
#include "analysis/series.h"
#include "config/config.h"
#include "flink/snapshot.h"

namespace lagsight::analysis {

// Flink's default metrics.fetcher.update-interval, for a JobManager that does not say.
inline constexpr double kDefaultMetricsFetchIntervalSeconds = 10;

struct JobSample {
  double time = 0;
  double completed = 0;
  double failed = 0;
  double restarts = 0;
  bool in_progress = false;  // a checkpoint was under way
};

struct SourceSample {
  double time = 0;
  double succeeded = 0;
  double failed = 0;
  bool committed_known = false;  // the reader reported a committedOffset on some partition
  // A FlinkKafkaConsumer in a job without checkpointing: the connector leaves committing to the
  // Kafka client's own timer (enable.auto.commit), which Flink's metrics never see.
  bool kafka_client_commits = false;
};

// A source's Flink-side lag summed over its partitions, for its catch-up time.
struct BacklogSample {
  double time = 0;
  std::int64_t records = 0;
};

struct Association {
  std::string kafka_cluster;
  std::string group;
  bool configured = false;  // from the config's mapping (forgotten when the mapping goes)
};

struct JobHistory {
  std::string flink_cluster;
  std::string name;
  std::string state;
  ThinningSeries<JobSample> samples;
  std::map<std::string, ThinningSeries<SourceSample>> sources;    // by source label
  std::map<std::string, Association> associations;                // sticky, by source label
  std::map<std::string, ThinningSeries<BacklogSample>> backlogs;  // by source label
  const flink::FlinkJob* latest = nullptr;  // valid while its Flink snapshot is the current one
  double running_since = 0;                 // when lagsight last saw it (re)start running
  std::optional<double> not_running_since;  // present, in a state other than RUNNING
  std::optional<double> missing_since;      // absent from its cluster's polls
  std::optional<std::int64_t> num_restarts;
  // Per (source label, escaped topic, partition): the last currentOffset Flink served and the
  // earliest time that value can have been taken (see AlignFlinkLag).
  std::map<std::tuple<std::string, std::string, std::int32_t>, std::pair<std::int64_t, double>>
      positions_taken;
  // Per (source label, topic, partition): by how much the job's position (or committedOffset)
  // was beyond the partition's log end, 0 when it was not, as last judged (see AlignFlinkLag).
  std::map<std::tuple<std::string, std::string, std::int32_t>, std::int64_t> beyond_log_end;
};

using JobHistories = std::map<std::string, JobHistory>;  // by job id

// When one Flink cluster's current snapshot was taken, and how fresh its metrics are.
struct FlinkPollTiming {
  double polled_at = 0;  // when its current snapshot was taken
  // When the poll that took it began: its answers are at least that recent (see PairFacts).
  double requested_at = 0;
  double metrics_fetch_interval = kDefaultMetricsFetchIntervalSeconds;
};

// How long after it went missing a job is forgotten (its group then judged on its own).
double ForgetJobAfter(const config::DiagnosisConfig& config);

// Folds in a successful poll of Flink cluster `flink_cluster` taken at `now`. `jobs` keeps
// pointers into `snapshot` (JobHistory::latest) while it is the cluster's current one. A source
// whose successful commits rose refreshes its associated group's last commit in `kafka`.
void RecordFlink(const std::string& flink_cluster, const flink::FlinkSnapshot& snapshot,
                 FlinkPollTiming& timing, JobHistories& jobs, KafkaHistories& kafka,
                 double forget_after, double now);

// Jobs in these states are stopping or handed over: not judged, their verdict held.
bool Stopping(const std::string& state);

// The job left RUNNING after it ran: restarting, failing, or any state after a restart.
bool Restarting(const JobHistory& job);

// "checkpoint", "auto", "none" or "unknown": see SourceFindings::commit_mode.
std::string CommitMode(const ThinningSeries<SourceSample>& series,
                       const ThinningSeries<JobSample>& job);

}  // namespace lagsight::analysis
