// Parsers of Flink REST API responses: bytes in, plain structs or an Error out. No I/O, so
// every parser is unit-tested on recorded responses of real Flink versions and on garbage.
//
// Tolerant by design: fields missing in one Flink version or added in another are ignored or left
// empty; only a response that is not JSON or not the expected shape is an error. A number that
// cannot be what it claims (beyond int64, a negative count, offset or time) is left out as if
// not reported and described in `anomalies` (when given), which the collector counts as partial
// errors; no input leads to an undefined conversion. A body larger than the caller's limit never
// reaches these functions (the HTTP client refuses it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "flink/snapshot.h"

namespace lagsight::flink {

// Descriptions of values left out because they are impossible.
using Anomalies = std::vector<std::string>;

Result<std::vector<JobOverview>> ParseJobsOverview(std::string_view body,
                                                   Anomalies* anomalies = nullptr);

// GET /jobs/:jid/checkpoints; a 404 "Checkpointing has not been enabled." is a state, not an error.
Result<CheckpointStats> ParseCheckpoints(unsigned http_status, std::string_view body,
                                         Anomalies* anomalies = nullptr);
Result<CheckpointConfig> ParseCheckpointConfig(unsigned http_status, std::string_view body);

// GET .../metrics without `get`: the metric ids.
Result<std::vector<std::string>> ParseMetricIds(std::string_view body);

// GET .../metrics?get=...: id -> value; a value that is not a finite number ("NaN",
// "-Infinity", garbage) is an empty optional.
Result<std::map<std::string, std::optional<double>>> ParseMetricValues(std::string_view body);

// A vertex metric id taken apart: "<subtask>.<scope...>.<name>".
struct SourceMetricId {
  int subtask = 0;
  enum class Kind {
    kCurrentOffset,
    kCommittedOffset,
    kCommitsSucceeded,
    kCommitsFailed,
    kPendingRecords,
    kRecordsLagMax,
    kEmitEventTimeLag,
    kWatermarkLag,
    kBusyTime,
    kBackPressuredTime,
    kIdleTime,
  } kind = Kind::kCurrentOffset;
  std::optional<MetricTopicPartition> partition;  // for the two offset kinds
  // Reported by the legacy FlinkKafkaConsumer (its "KafkaConsumer.topic..." offsets and operator
  // level commit counters), not by the KafkaSource reader.
  bool legacy = false;
};

// Recognises the ids lagsight reads from a source vertex; std::nullopt for all others.
std::optional<SourceMetricId> ClassifySourceMetricId(std::string_view id);

// Folds the values of one source vertex's metrics (ids as classified above) into a reader:
// counters summed over subtasks, lags and time ratios maxed, offsets per partition ("-1" = unset).
SourceReader CombineSourceMetrics(std::string vertex_id, std::string name,
                                  const std::map<std::string, std::optional<double>>& values,
                                  Anomalies* anomalies = nullptr);

// GET /jobs/:jid/metrics?get=numRestarts: the job's restart count, empty when not reported.
Result<std::optional<std::int64_t>> ParseNumRestarts(std::string_view body,
                                                     Anomalies* anomalies = nullptr);

// A Flink duration setting in milliseconds: "10000", "10 s", "1min", "500ms"...; empty if it is
// none.
std::optional<double> ParseFlinkDurationMs(std::string_view text);

// Flink's default for metrics.fetcher.update-interval.
inline constexpr double kDefaultMetricsFetchIntervalMs = 10'000;

// GET /jobmanager/config ([{"key": ..., "value": ...}]): metrics.fetcher.update-interval in ms,
// kDefaultMetricsFetchIntervalMs when the key is absent; an Error when its value is no duration.
Result<double> ParseMetricsFetchIntervalMs(std::string_view body);

}  // namespace lagsight::flink
