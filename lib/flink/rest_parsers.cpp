#include "flink/rest_parsers.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "flink/json_fields.h"

namespace lagsight::flink {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;
using namespace json_fields;

bool IsCheckpointingDisabled(unsigned status, std::string_view body) {
  return status == 404 && body.find("Checkpointing has not been enabled") != std::string_view::npos;
}

}  // namespace

Result<std::vector<JobOverview>> ParseJobsOverview(std::string_view body, Anomalies* anomalies) {
  simdjson::dom::parser parser;
  auto root = Parse(parser, body, "jobs overview");
  if (!root) return root.error();
  auto top = ObjectOf(*root, "jobs overview");
  if (!top) return top.error();
  array jobs;
  if ((*top)["jobs"].get(jobs)) return Error{"jobs overview: no \"jobs\" list"};
  std::vector<JobOverview> out;
  for (element job : jobs) {
    object o;
    if (job.get(o)) continue;
    const auto id = String(o, "jid");
    if (!id) continue;
    JobOverview overview;
    overview.id = std::string(*id);
    overview.name = std::string(String(o, "name").value_or(""));
    overview.state = std::string(String(o, "state").value_or("UNKNOWN"));
    overview.start_time_ms =
        Count(o, "start-time", "jobs overview", anomalies, Minus1::kMeansUnset);
    overview.last_modification_ms =
        Count(o, "last-modification", "jobs overview", anomalies, Minus1::kMeansUnset);
    out.push_back(std::move(overview));
  }
  return out;
}

Result<CheckpointStats> ParseCheckpoints(unsigned http_status, std::string_view body,
                                         Anomalies* anomalies) {
  CheckpointStats stats;
  if (IsCheckpointingDisabled(http_status, body)) {
    stats.enabled = false;
    return stats;
  }
  if (http_status != 200) return Error{"checkpoints: HTTP " + std::to_string(http_status)};
  simdjson::dom::parser parser;
  auto root = Parse(parser, body, "checkpoints");
  if (!root) return root.error();
  auto top = ObjectOf(*root, "checkpoints");
  if (!top) return top.error();
  object counts;
  if ((*top)["counts"].get(counts)) return Error{"checkpoints: no \"counts\" object"};
  stats.counts.completed = Count(counts, "completed", "checkpoints.counts", anomalies).value_or(0);
  stats.counts.failed = Count(counts, "failed", "checkpoints.counts", anomalies).value_or(0);
  stats.counts.restored = Count(counts, "restored", "checkpoints.counts", anomalies).value_or(0);
  stats.counts.in_progress =
      Count(counts, "in_progress", "checkpoints.counts", anomalies).value_or(0);

  object latest;
  if ((*top)["latest"].get(latest)) return stats;
  // A savepoint completes like a checkpoint and commits offsets too: the newer of the two counts.
  for (const char* key : {"completed", "savepoint"}) {
    object checkpoint;
    if (latest[key].get(checkpoint)) continue;  // null before the first one
    const auto acknowledged =
        Count(checkpoint, "latest_ack_timestamp", "checkpoints.latest", anomalies);
    if (!acknowledged) continue;
    if (stats.latest_completed_timestamp_ms &&
        *stats.latest_completed_timestamp_ms >= *acknowledged) {
      continue;
    }
    stats.latest_completed_timestamp_ms = acknowledged;
    stats.latest_completed_id = Count(checkpoint, "id", "checkpoints.latest", anomalies);
    stats.latest_duration_ms = Number(checkpoint, "end_to_end_duration");
    stats.latest_size_bytes = Number(checkpoint, "state_size");
    if (const auto checkpointed = Number(checkpoint, "checkpointed_size")) {
      stats.latest_size_bytes = checkpointed;
    }
  }
  object failed;
  if (!latest["failed"].get(failed))
    stats.latest_failed_timestamp_ms = Count(
        failed, "failure_timestamp", "checkpoints.latest.failed", anomalies, Minus1::kMeansUnset);
  object restored;
  if (!latest["restored"].get(restored)) {
    stats.restored_timestamp_ms =
        Count(restored, "restore_timestamp", "checkpoints.latest.restored", anomalies,
              Minus1::kMeansUnset);
    bool savepoint = false;
    if (!restored["is_savepoint"].get(savepoint)) stats.restored_from_savepoint = savepoint;
  }
  return stats;
}

Result<CheckpointConfig> ParseCheckpointConfig(unsigned http_status, std::string_view body) {
  CheckpointConfig config;
  if (IsCheckpointingDisabled(http_status, body)) {
    config.enabled = false;
    return config;
  }
  if (http_status != 200) return Error{"checkpoint config: HTTP " + std::to_string(http_status)};
  simdjson::dom::parser parser;
  auto root = Parse(parser, body, "checkpoint config");
  if (!root) return root.error();
  auto top = ObjectOf(*root, "checkpoint config");
  if (!top) return top.error();
  config.interval_ms = Number(*top, "interval");
  // Flink 1.20 and 2.2 answer 200 for a job without checkpointing, with the interval set to
  // Long.MAX_VALUE (not the 404 older versions sent); an interval of ~292 million years is "off".
  if (config.interval_ms && *config.interval_ms >= 9.2e18) {
    config.enabled = false;
    config.interval_ms.reset();
  }
  config.timeout_ms = Number(*top, "timeout");
  config.min_pause_ms = Number(*top, "min_pause");
  config.tolerable_failures = Number(*top, "tolerable_failed_checkpoints");
  return config;
}

Result<std::vector<std::string>> ParseMetricIds(std::string_view body) {
  simdjson::dom::parser parser;
  auto root = Parse(parser, body, "metric list");
  if (!root) return root.error();
  array items;
  if (root->get(items)) return Error{"metric list: expected a JSON array"};
  std::vector<std::string> ids;
  for (element item : items) {
    object o;
    if (item.get(o)) continue;
    if (const auto id = String(o, "id")) ids.emplace_back(*id);
  }
  return ids;
}

Result<std::map<std::string, std::optional<double>>> ParseMetricValues(std::string_view body) {
  simdjson::dom::parser parser;
  auto root = Parse(parser, body, "metric values");
  if (!root) return root.error();
  array items;
  if (root->get(items)) return Error{"metric values: expected a JSON array"};
  std::map<std::string, std::optional<double>> values;
  for (element item : items) {
    object o;
    if (item.get(o)) continue;
    const auto id = String(o, "id");
    if (!id) continue;
    values[std::string(*id)] = Number(o, "value");
  }
  return values;
}

namespace {

// Per partition, from the KafkaSource (FLIP-27) reader:
//   "<operator>.KafkaSourceReader.topic.<topic>.partition.<p>.<currentOffset|committedOffset>"
// and from the legacy FlinkKafkaConsumer (Flink 1.x connector line), whose gauges mean the same
// (the last emitted record's offset; the offset + 1 it last sent Kafka to commit):
//   "<operator>.KafkaConsumer.topic.<topic>.partition.<p>.<currentOffsets|committedOffsets>"
struct OffsetFamily {
  std::string_view marker, current, committed;
  bool legacy;
};
constexpr OffsetFamily kOffsetFamilies[] = {
    {".KafkaSourceReader.topic.", "currentOffset", "committedOffset", false},
    {".KafkaConsumer.topic.", "currentOffsets", "committedOffsets", true},
};

// `tail` is what follows the family's marker: "<topic>.partition.<p>.<metric>". False when it
// names no partition or no offset gauge of the family.
bool ClassifyPartitionOffset(const OffsetFamily& family, std::string_view tail,
                             SourceMetricId& result) {
  using Kind = SourceMetricId::Kind;
  const std::size_t partition_at = tail.rfind(".partition.");
  if (partition_at == std::string_view::npos) return false;
  const std::string_view after = tail.substr(partition_at + std::string_view(".partition.").size());
  const std::size_t dot = after.find('.');
  if (dot == std::string_view::npos) return false;
  const std::string_view metric = after.substr(dot + 1);
  if (metric == family.current) {
    result.kind = Kind::kCurrentOffset;
  } else if (metric == family.committed) {
    result.kind = Kind::kCommittedOffset;
  } else {
    return false;
  }
  MetricTopicPartition tp;
  tp.escaped_topic = std::string(tail.substr(0, partition_at));
  const auto [pend, pec] = std::from_chars(after.data(), after.data() + dot, tp.partition);
  if (pec != std::errc() || pend != after.data() + dot || tp.escaped_topic.empty()) return false;
  result.partition = std::move(tp);
  result.legacy = family.legacy;
  return true;
}

// The source's own metrics, by the end of `rest` (the id after "<subtask>."): commit counters,
// the Kafka client's records-lag-max, the backlog and the event-time lags.
bool ClassifyOperatorMetric(std::string_view rest, SourceMetricId& result) {
  using Kind = SourceMetricId::Kind;
  const auto ends_with = [&](std::string_view suffix) {
    return rest.size() >= suffix.size() && rest.substr(rest.size() - suffix.size()) == suffix &&
           (rest.size() == suffix.size() || rest[rest.size() - suffix.size() - 1] == '.');
  };
  struct Suffix {
    std::string_view suffix;
    Kind kind;
    bool legacy;
  };
  // First match wins: the KafkaSource's commit counters live in its reader's group, the
  // FlinkKafkaConsumer's directly in the operator's ("<operator>.commitsSucceeded"). Both
  // forward the Kafka client's metrics under "KafkaConsumer".
  static constexpr Suffix kSuffixes[] = {
      {"KafkaSourceReader.commitsSucceeded", Kind::kCommitsSucceeded, false},
      {"KafkaSourceReader.commitsFailed", Kind::kCommitsFailed, false},
      {"commitsSucceeded", Kind::kCommitsSucceeded, true},
      {"commitsFailed", Kind::kCommitsFailed, true},
      {"KafkaConsumer.records-lag-max", Kind::kRecordsLagMax, false},
      {"pendingRecords", Kind::kPendingRecords, false},
      {"currentEmitEventTimeLag", Kind::kEmitEventTimeLag, false},
      {"watermarkLag", Kind::kWatermarkLag, false},
  };
  for (const Suffix& entry : kSuffixes) {
    // The legacy counters need an operator scope before them ("<subtask>.commitsSucceeded"
    // alone is no source's).
    if (ends_with(entry.suffix) && (!entry.legacy || rest.size() > entry.suffix.size())) {
      result.kind = entry.kind;
      result.legacy = entry.legacy;
      return true;
    }
  }
  return false;
}

// Task-level metrics carry no operator scope: "<subtask>.busyTimeMsPerSecond".
bool ClassifyTaskMetric(std::string_view rest, SourceMetricId& result) {
  using Kind = SourceMetricId::Kind;
  if (rest == "busyTimeMsPerSecond")
    result.kind = Kind::kBusyTime;
  else if (rest == "backPressuredTimeMsPerSecond")
    result.kind = Kind::kBackPressuredTime;
  else if (rest == "idleTimeMsPerSecond")
    result.kind = Kind::kIdleTime;
  else
    return false;
  return true;
}

}  // namespace

std::optional<SourceMetricId> ClassifySourceMetricId(std::string_view id) {
  const std::size_t first_dot = id.find('.');
  if (first_dot == std::string_view::npos) return std::nullopt;
  SourceMetricId result;
  const auto [end, ec] = std::from_chars(id.data(), id.data() + first_dot, result.subtask);
  if (ec != std::errc() || end != id.data() + first_dot) return std::nullopt;
  const std::string_view rest = id.substr(first_dot + 1);
  // An id with an offset family's marker is that family's or none: no other rule applies to it.
  for (const OffsetFamily& family : kOffsetFamilies) {
    const std::size_t topic_at = rest.find(family.marker);
    if (topic_at == std::string_view::npos) continue;
    if (!ClassifyPartitionOffset(family, rest.substr(topic_at + family.marker.size()), result)) {
      return std::nullopt;
    }
    return result;
  }
  if (ClassifyOperatorMetric(rest, result) || ClassifyTaskMetric(rest, result)) return result;
  return std::nullopt;
}

namespace {

// KafkaTopicPartitionStateSentinel of the Flink 1.x Kafka connector: OFFSET_NOT_SET,
// EARLIEST_OFFSET, LATEST_OFFSET, GROUP_OFFSET (-915623761776 .. -915623761773).
constexpr double kLegacySentinelLowest = -915623761776.0;
constexpr double kLegacySentinelHighest = -915623761773.0;

void NoteConnector(SourceReader& reader, bool legacy) {
  const SourceConnector seen =
      legacy ? SourceConnector::kFlinkKafkaConsumer : SourceConnector::kKafkaSource;
  // Both in one vertex (a chained vertex of two sources) reads as the KafkaSource: its offsets
  // are the ones the join understands best, and the connector is only a label.
  if (reader.connector == SourceConnector::kUnknown || !legacy) reader.connector = seen;
}

}  // namespace

SourceReader CombineSourceMetrics(std::string vertex_id, std::string name,
                                  const std::map<std::string, std::optional<double>>& values,
                                  Anomalies* anomalies) {
  using Kind = SourceMetricId::Kind;
  SourceReader reader;
  reader.vertex_id = std::move(vertex_id);
  reader.name = std::move(name);
  const auto sum = [](std::optional<double>& into, double value) {
    into = into.value_or(0) + value;
  };
  const auto max = [](std::optional<double>& into, double value) {
    into = std::max(into.value_or(value), value);
  };
  for (const auto& [id, value] : values) {
    if (!value) continue;
    const auto classified = ClassifySourceMetricId(id);
    if (!classified) continue;
    switch (classified->kind) {
      case Kind::kCurrentOffset:
      case Kind::kCommittedOffset: {
        reader.subtasks_with_splits.insert(classified->subtask);
        NoteConnector(reader, classified->legacy);
        if (*value == -1) break;  // the reader has no position for it (yet)
        // The FlinkKafkaConsumer's placeholders until it has a position (start from the group,
        // earliest, latest; not set): no position yet, as -1 is for the KafkaSource.
        if (classified->legacy && *value >= kLegacySentinelLowest &&
            *value <= kLegacySentinelHighest)
          break;
        if (*value < 0 || *value >= kTwoTo63) {
          Note(anomalies, "metric " + id + " = " + std::to_string(*value) +
                              " is not a possible offset; left out");
          break;
        }
        auto& offsets = reader.partitions[*classified->partition];
        auto& slot = classified->kind == Kind::kCurrentOffset ? offsets.current : offsets.committed;
        // After a rescale two subtasks may briefly both report a partition: the furthest wins.
        slot = std::max(slot.value_or(0), static_cast<std::int64_t>(*value));
        break;
      }
      case Kind::kCommitsSucceeded:
      case Kind::kCommitsFailed:
        NoteConnector(reader, classified->legacy);
        if (*value < 0) {
          Note(anomalies,
               "counter " + id + " = " + std::to_string(*value) + " cannot be negative; left out");
          break;
        }
        sum(classified->kind == Kind::kCommitsSucceeded ? reader.commits_succeeded
                                                        : reader.commits_failed,
            *value);
        break;
      case Kind::kPendingRecords:
        sum(reader.pending_records, *value);
        break;
      case Kind::kRecordsLagMax:
        max(reader.records_lag_max, *value);
        break;
      case Kind::kEmitEventTimeLag:
        // -1 until the subtask emitted its first record: unset, not "1 ms ahead".
        if (*value >= 0) max(reader.emit_event_time_lag_ms, *value);
        break;
      case Kind::kWatermarkLag:
        if (*value >= 0) {
          max(reader.watermark_lag_ms, *value);
          reader.subtask_watermark_lag_ms[classified->subtask] = *value;
        }
        break;
      case Kind::kBusyTime:
        max(reader.busy_ms_per_second, *value);
        break;
      case Kind::kBackPressuredTime:
        max(reader.backpressured_ms_per_second, *value);
        break;
      case Kind::kIdleTime:
        max(reader.idle_ms_per_second, *value);
        break;
    }
  }
  return reader;
}

Result<std::optional<std::int64_t>> ParseNumRestarts(std::string_view body, Anomalies* anomalies) {
  simdjson::dom::parser parser;
  auto root = Parse(parser, body, "numRestarts");
  if (!root) return root.error();
  array items;
  if (root->get(items)) return Error{"numRestarts: expected a JSON array"};
  for (element item : items) {
    object o;
    if (item.get(o) || String(o, "id") != std::optional<std::string_view>("numRestarts")) continue;
    return Count(o, "value", "numRestarts", anomalies);
  }
  return std::optional<std::int64_t>();  // not (yet) registered for this job
}

std::optional<double> ParseFlinkDurationMs(std::string_view text) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t'; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 15) return std::nullopt;
  std::int64_t amount = 0;
  std::from_chars(text.data(), text.data() + digits, amount);
  std::string_view unit = text.substr(digits);
  while (!unit.empty() && is_space(unit.front())) unit.remove_prefix(1);
  std::string lower;
  for (char c : unit) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // Flink's TimeUtils units; a bare number is milliseconds.
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"", 1.0},
      {"ms", 1.0},
      {"milli", 1.0},
      {"millis", 1.0},
      {"millisecond", 1.0},
      {"milliseconds", 1.0},
      {"ns", 1e-6},
      {"nano", 1e-6},
      {"nanos", 1e-6},
      {"nanosecond", 1e-6},
      {"nanoseconds", 1e-6},
      {"us", 1e-3},
      {"micro", 1e-3},
      {"micros", 1e-3},
      {"microsecond", 1e-3},
      {"microseconds", 1e-3},
      {"s", 1e3},
      {"sec", 1e3},
      {"secs", 1e3},
      {"second", 1e3},
      {"seconds", 1e3},
      {"m", 60e3},
      {"min", 60e3},
      {"mins", 60e3},
      {"minute", 60e3},
      {"minutes", 60e3},
      {"h", 3600e3},
      {"hour", 3600e3},
      {"hours", 3600e3},
      {"d", 86400e3},
      {"day", 86400e3},
      {"days", 86400e3},
  };
  for (const auto& [name, scale] : kUnits) {
    if (lower == name) return static_cast<double>(amount) * scale;
  }
  return std::nullopt;
}

Result<double> ParseMetricsFetchIntervalMs(std::string_view body) {
  simdjson::dom::parser parser;
  auto root = Parse(parser, body, "jobmanager config");
  if (!root) return root.error();
  array entries;
  if (root->get(entries)) return Error{"jobmanager config: expected a JSON array"};
  constexpr std::string_view kKey = "metrics.fetcher.update-interval";
  for (element entry : entries) {
    object o;
    if (entry.get(o) || String(o, "key") != std::optional<std::string_view>(kKey)) continue;
    element value;
    if (o["value"].get(value)) break;
    std::optional<double> ms;
    if (std::string_view text; !value.get(text)) {
      ms = ParseFlinkDurationMs(text);
    } else {
      ms = Number(value);
    }
    if (!ms || *ms < 0) {
      return Error{"jobmanager config: " + std::string(kKey) + " = " + Shown(value) +
                   " is not a duration"};
    }
    return *ms;
  }
  return kDefaultMetricsFetchIntervalMs;
}

}  // namespace lagsight::flink
