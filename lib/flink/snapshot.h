// FlinkSnapshot: what one poll of one Flink cluster's REST API saw, as plain data.
//
// Produced by flink::Collector from the parsers in rest_parsers.h; consumed by the pure join
// with the Kafka half and by the metrics renderer. Values Flink did not report (a missing field,
// "NaN") or reported out of range (beyond int64, a negative counter or offset) are empty
// optionals, never invented. Immutable once published.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace lagsight::flink {

struct JobOverview {
  std::string id;
  std::string name;
  std::string state;  // RUNNING, RESTARTING, FAILING, ... as Flink names it
  std::optional<std::int64_t> start_time_ms;
  std::optional<std::int64_t> num_restarts{};          // the job metric numRestarts
  std::optional<std::int64_t> last_modification_ms{};  // the overview's "last-modification"
};

// How hard one vertex's subtasks work, from Flink's per-subtask task metrics aggregated by the
// REST API (GET /jobs/:jid/vertices/:vid/subtasks/metrics?agg=max,avg,sum), each per second of
// wall time as Flink averages them over its last minute or so. Read only for the jobs the
// analysis asks about (see Collector::InspectJobs).
struct VertexLoad {
  std::optional<double> busy_ms_max;  // busyTimeMsPerSecond of the busiest subtask
  std::optional<double> busy_ms_avg;
  std::optional<double> backpressured_ms_max;  // backPressuredTimeMsPerSecond
  std::optional<double> backpressured_ms_avg;
  std::optional<double> idle_ms_avg;                 // idleTimeMsPerSecond
  std::optional<double> records_in_per_second_sum;   // numRecordsInPerSecond, all subtasks
  std::optional<double> records_out_per_second_sum;  // numRecordsOutPerSecond
  // The index of the busiest subtask, read only for a load that LooksSkewed (one more request,
  // GET .../backpressure, whose per-subtask busyRatio names it).
  std::optional<int> busiest_subtask;
};

struct Vertex {
  std::string id;
  std::string name;
  int parallelism = 0;
  std::optional<int> max_parallelism{};  // the most it can be rescaled to (key groups)
  // The vertices it reads from, by id (the job plan's edges); empty for a source.
  std::vector<std::string> inputs{};
  // Those of them it reads through a FORWARD edge: subtask i reads subtask i alone, so it gets
  // work only where that input has some.
  std::vector<std::string> forward_inputs{};
  std::optional<VertexLoad> load{};
};

// The busiest subtask of a vertex of several works at least this many times their average.
inline constexpr double kSkewRatio = 2;

// Its work does not spread over its subtasks (a hot key or partition): more subtasks would not
// take it. The collector then asks which subtask it is; the analysis says skew.
inline bool LooksSkewed(const Vertex& vertex) {
  if (vertex.parallelism <= 1 || !vertex.load) return false;
  const VertexLoad& load = *vertex.load;
  return load.busy_ms_max && load.busy_ms_avg && *load.busy_ms_avg > 0 &&
         *load.busy_ms_max >= kSkewRatio * *load.busy_ms_avg;
}

struct CheckpointCounts {
  std::int64_t completed = 0;
  std::int64_t failed = 0;
  std::int64_t restored = 0;
  std::int64_t in_progress = 0;
};

struct CheckpointStats {
  bool enabled = true;  // false: Flink answered "Checkpointing has not been enabled."
  CheckpointCounts counts;
  // Of the latest completed checkpoint (or savepoint, whichever is newer).
  std::optional<std::int64_t> latest_completed_id;
  std::optional<std::int64_t> latest_completed_timestamp_ms;  // latest acknowledgement
  std::optional<double> latest_duration_ms;
  std::optional<double> latest_size_bytes;
  std::optional<std::int64_t> latest_failed_timestamp_ms;
  std::optional<std::int64_t> restored_timestamp_ms;
  std::optional<bool> restored_from_savepoint;
};

struct CheckpointConfig {
  bool enabled = true;
  std::optional<double> interval_ms;
  std::optional<double> timeout_ms;
  std::optional<double> min_pause_ms;
  std::optional<double> tolerable_failures;
};

// How Flink writes a Kafka topic in its metric ids: dots replaced by '_' ("orders.v2" ->
// "orders_v2"), so the mapping back to real topics can be ambiguous.
inline std::string MetricTopicName(std::string_view topic) {
  std::string escaped(topic);
  for (char& c : escaped) {
    if (c == '.') c = '_';
  }
  return escaped;
}

// The Kafka topic as it appears in a metric id (see MetricTopicName).
struct MetricTopicPartition {
  std::string escaped_topic;
  std::int32_t partition = 0;
  friend auto operator<=>(const MetricTopicPartition&, const MetricTopicPartition&) = default;
};

struct SourceOffsets {
  std::optional<std::int64_t> current;    // offset of the last record read
  std::optional<std::int64_t> committed;  // next offset, as committed on the last checkpoint
};

// One source vertex's KafkaSourceReader metrics, combined over its subtasks.
// Which Kafka source implementation reports a vertex's metrics; both mean the same by their
// offsets and commit counters, so everything downstream treats them alike.
enum class SourceConnector {
  kUnknown,
  kKafkaSource,         // FLIP-27 KafkaSource, Flink 1.14+ and 2.x
  kFlinkKafkaConsumer,  // the legacy SourceFunction, Flink 1.x connector line only
};

struct SourceReader {
  std::string vertex_id;
  std::string name;  // vertex name, e.g. "Source: orders-source"
  SourceConnector connector = SourceConnector::kUnknown;
  std::map<MetricTopicPartition, SourceOffsets> partitions;
  // Subtask indexes that report an offset metric of some partition: the KafkaSource registers
  // them when a split is assigned (-1 until the first record), so these subtasks hold a split.
  std::set<int> subtasks_with_splits;
  std::optional<double> commits_succeeded;  // summed over subtasks
  std::optional<double> commits_failed;
  std::optional<double> pending_records;
  std::optional<double> records_lag_max;         // maxed
  std::optional<double> emit_event_time_lag_ms;  // maxed
  std::optional<double> watermark_lag_ms;        // maxed
  // watermarkLag per subtask index: the one with the largest holds the job's watermark back.
  std::map<int, double> subtask_watermark_lag_ms;
  std::optional<double> busy_ms_per_second;  // maxed: the busiest subtask limits the vertex
  std::optional<double> backpressured_ms_per_second;
  std::optional<double> idle_ms_per_second;
};

struct FlinkJob {
  JobOverview overview;
  std::vector<Vertex> vertices;
  CheckpointStats checkpoints;
  CheckpointConfig checkpoint_config;
  // False only for a job that is not RUNNING whose checkpoint statistics or configuration Flink
  // did not answer: `checkpoints` and `checkpoint_config` then hold defaults, not Flink's values.
  bool checkpoint_stats_reported = true;
  std::vector<SourceReader> sources;  // RUNNING jobs only: other states expose no reader metrics
  // Its sources read with isolation.level=read_committed, as configured (read_committed_jobs;
  // Flink does not publish its sources' Kafka properties): its lag ends at the last stable offset.
  bool read_committed = false;
};

struct FlinkSnapshot {
  // Non-terminal jobs (RUNNING, RESTARTING, FAILING, CANCELLING, CREATED, INITIALIZING,
  // RECONCILING, SUSPENDED), after the job filter, by id; FINISHED, CANCELED, FAILED are left out.
  std::vector<FlinkJob> jobs;
  std::vector<std::string> partial_errors;
  // metrics.fetcher.update-interval of the JobManager: how stale the REST metrics may be (Flink's
  // default 10000 when unset); empty while /jobmanager/config could not be read.
  std::optional<double> metrics_fetch_interval_ms;
  // Unix seconds when the poll that took this snapshot began (0: unknown). Every answer in it
  // was given after that, so a checkpoint was at least `requested_at - its time` old when Flink
  // said it was the latest; a slow REST API (a poll of several seconds) adds nothing to that.
  double requested_at = 0;
};

}  // namespace lagsight::flink
