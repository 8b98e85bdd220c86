#include "trace/flink_snapshot_json.h"

#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace lagsight::trace {

namespace {

using json::AppendInt;
using json::AppendString;
using json::At;
using json::Field;
using json::ReadArray;
using json::ReadInt;
using json::ReadString;
using json::ReadTuple;

// The optional numbers of a struct, by key: written and read by the same table, in its order.
template <typename Struct, typename Number>
struct OptionalField {
  const char* key;
  std::optional<Number> Struct::*member;
};

template <typename Struct, typename Number, std::size_t N>
void AppendFields(std::string& out, const Struct& value,
                  const OptionalField<Struct, Number> (&fields)[N]) {
  for (const auto& field : fields) {
    out += ",\"";
    out += field.key;
    out += "\":";
    if constexpr (std::is_same_v<Number, double>) {
      json::AppendOptional(out, value.*field.member, json::AppendDouble);
    } else {
      json::AppendOptional(out, value.*field.member,
                           [](std::string& o, Number n) { AppendInt(o, n); });
    }
  }
}

template <typename Struct, typename Number, std::size_t N>
void ReadFields(json::object o, Struct& value, const OptionalField<Struct, Number> (&fields)[N]) {
  for (const auto& field : fields) {
    if constexpr (std::is_same_v<Number, double>) {
      value.*field.member = json::ReadOptional(Field(o, field.key), field.key, json::ReadDouble);
    } else if constexpr (std::is_same_v<Number, bool>) {
      value.*field.member = json::ReadOptional(Field(o, field.key), field.key, json::ReadBool);
    } else {
      value.*field.member = json::ReadOptional(Field(o, field.key), field.key, ReadInt);
    }
  }
}

constexpr OptionalField<flink::VertexLoad, double> kLoadNumbers[] = {
    {"busy_ms_max", &flink::VertexLoad::busy_ms_max},
    {"busy_ms_avg", &flink::VertexLoad::busy_ms_avg},
    {"backpressured_ms_max", &flink::VertexLoad::backpressured_ms_max},
    {"backpressured_ms_avg", &flink::VertexLoad::backpressured_ms_avg},
    {"idle_ms_avg", &flink::VertexLoad::idle_ms_avg},
    {"records_in_per_second_sum", &flink::VertexLoad::records_in_per_second_sum},
    {"records_out_per_second_sum", &flink::VertexLoad::records_out_per_second_sum}};
// Written only when known: traces written before it was read have no such key.
constexpr OptionalField<flink::VertexLoad, int> kLoadInts[] = {
    {"busiest_subtask", &flink::VertexLoad::busiest_subtask}};

constexpr OptionalField<flink::JobOverview, std::int64_t> kOverviewNumbers[] = {
    {"start_time_ms", &flink::JobOverview::start_time_ms},
    {"num_restarts", &flink::JobOverview::num_restarts},
    {"last_modification_ms", &flink::JobOverview::last_modification_ms}};

constexpr OptionalField<flink::CheckpointStats, std::int64_t> kCheckpointInts[] = {
    {"latest_completed_id", &flink::CheckpointStats::latest_completed_id},
    {"latest_completed_timestamp_ms", &flink::CheckpointStats::latest_completed_timestamp_ms},
    {"latest_failed_timestamp_ms", &flink::CheckpointStats::latest_failed_timestamp_ms},
    {"restored_timestamp_ms", &flink::CheckpointStats::restored_timestamp_ms}};

constexpr OptionalField<flink::CheckpointStats, double> kCheckpointDoubles[] = {
    {"latest_duration_ms", &flink::CheckpointStats::latest_duration_ms},
    {"latest_size_bytes", &flink::CheckpointStats::latest_size_bytes}};

constexpr OptionalField<flink::CheckpointConfig, double> kCheckpointConfigNumbers[] = {
    {"interval_ms", &flink::CheckpointConfig::interval_ms},
    {"timeout_ms", &flink::CheckpointConfig::timeout_ms},
    {"min_pause_ms", &flink::CheckpointConfig::min_pause_ms},
    {"tolerable_failures", &flink::CheckpointConfig::tolerable_failures}};

constexpr OptionalField<flink::SourceReader, double> kReaderNumbers[] = {
    {"commits_succeeded", &flink::SourceReader::commits_succeeded},
    {"commits_failed", &flink::SourceReader::commits_failed},
    {"pending_records", &flink::SourceReader::pending_records},
    {"records_lag_max", &flink::SourceReader::records_lag_max},
    {"emit_event_time_lag_ms", &flink::SourceReader::emit_event_time_lag_ms},
    {"watermark_lag_ms", &flink::SourceReader::watermark_lag_ms},
    {"busy_ms_per_second", &flink::SourceReader::busy_ms_per_second},
    {"backpressured_ms_per_second", &flink::SourceReader::backpressured_ms_per_second},
    {"idle_ms_per_second", &flink::SourceReader::idle_ms_per_second}};

void AppendOverview(std::string& out, const flink::JobOverview& overview) {
  out += "{\"id\":";
  AppendString(out, overview.id);
  out += ",\"name\":";
  AppendString(out, overview.name);
  out += ",\"state\":";
  AppendString(out, overview.state);
  AppendFields(out, overview, kOverviewNumbers);
  out += '}';
}

flink::JobOverview ReadOverview(json::element e) {
  const json::object o = json::ReadObject(e, "overview");
  flink::JobOverview overview;
  overview.id = ReadString(Field(o, "id"), "id");
  overview.name = ReadString(Field(o, "name"), "name");
  overview.state = ReadString(Field(o, "state"), "state");
  ReadFields(o, overview, kOverviewNumbers);
  return overview;
}

void AppendCheckpoints(std::string& out, const flink::FlinkJob& job) {
  const flink::CheckpointStats& stats = job.checkpoints;
  out += ",\"checkpoints\":{\"enabled\":";
  json::AppendBool(out, stats.enabled);
  for (const auto& [key, count] :
       {std::pair{"completed", stats.counts.completed}, std::pair{"failed", stats.counts.failed},
        std::pair{"restored", stats.counts.restored},
        std::pair{"in_progress", stats.counts.in_progress}}) {
    out += ",\"";
    out += key;
    out += "\":";
    AppendInt(out, count);
  }
  AppendFields(out, stats, kCheckpointInts);
  AppendFields(out, stats, kCheckpointDoubles);
  out += ",\"restored_from_savepoint\":";
  json::AppendOptional(out, stats.restored_from_savepoint, json::AppendBool);
  out += "},\"checkpoint_config\":{\"enabled\":";
  json::AppendBool(out, job.checkpoint_config.enabled);
  AppendFields(out, job.checkpoint_config, kCheckpointConfigNumbers);
  out += "},\"checkpoint_stats_reported\":";
  json::AppendBool(out, job.checkpoint_stats_reported);
}

void ReadCheckpoints(json::object job_object, flink::FlinkJob& job) {
  const json::object o = json::ReadObject(Field(job_object, "checkpoints"), "checkpoints");
  flink::CheckpointStats& stats = job.checkpoints;
  stats.enabled = json::ReadBool(Field(o, "enabled"), "enabled");
  stats.counts.completed = ReadInt(Field(o, "completed"), "completed");
  stats.counts.failed = ReadInt(Field(o, "failed"), "failed");
  stats.counts.restored = ReadInt(Field(o, "restored"), "restored");
  stats.counts.in_progress = ReadInt(Field(o, "in_progress"), "in_progress");
  ReadFields(o, stats, kCheckpointInts);
  ReadFields(o, stats, kCheckpointDoubles);
  stats.restored_from_savepoint = json::ReadOptional(Field(o, "restored_from_savepoint"),
                                                     "restored_from_savepoint", json::ReadBool);
  const json::object config =
      json::ReadObject(Field(job_object, "checkpoint_config"), "checkpoint_config");
  job.checkpoint_config.enabled = json::ReadBool(Field(config, "enabled"), "enabled");
  ReadFields(config, job.checkpoint_config, kCheckpointConfigNumbers);
  job.checkpoint_stats_reported =
      json::ReadBool(Field(job_object, "checkpoint_stats_reported"), "checkpoint_stats_reported");
}

const char* ConnectorName(flink::SourceConnector connector) {
  switch (connector) {
    case flink::SourceConnector::kKafkaSource:
      return "kafka_source";
    case flink::SourceConnector::kFlinkKafkaConsumer:
      return "flink_kafka_consumer";
    case flink::SourceConnector::kUnknown:
      break;
  }
  return "unknown";
}

flink::SourceConnector ReadConnector(json::element e) {
  const std::string name = ReadString(e, "connector");
  if (name == "kafka_source") return flink::SourceConnector::kKafkaSource;
  if (name == "flink_kafka_consumer") return flink::SourceConnector::kFlinkKafkaConsumer;
  if (name == "unknown") return flink::SourceConnector::kUnknown;
  throw json::FormatError("connector: unknown \"" + name + "\"");
}

void AppendSourcePartitions(std::string& out, const flink::SourceReader& source) {
  out += ",\"partitions\":[";
  bool first = true;
  for (const auto& [tp, offsets] : source.partitions) {
    out += first ? "[" : ",[";
    first = false;
    AppendString(out, tp.escaped_topic);
    out += ',';
    AppendInt(out, tp.partition);
    out += ',';
    json::AppendOptional(out, offsets.current,
                         [](std::string& o, std::int64_t n) { AppendInt(o, n); });
    out += ',';
    json::AppendOptional(out, offsets.committed,
                         [](std::string& o, std::int64_t n) { AppendInt(o, n); });
    out += ']';
  }
  out += "],\"subtasks_with_splits\":[";
  first = true;
  for (const int subtask : source.subtasks_with_splits) {
    if (!first) out += ',';
    first = false;
    AppendInt(out, subtask);
  }
  out += "],\"subtask_watermark_lag_ms\":[";
  first = true;
  for (const auto& [subtask, lag] : source.subtask_watermark_lag_ms) {
    out += first ? "[" : ",[";
    first = false;
    AppendInt(out, subtask);
    out += ',';
    json::AppendDouble(out, lag);
    out += ']';
  }
  out += ']';
}

void ReadSourcePartitions(json::object o, flink::SourceReader& source) {
  for (const json::element row : ReadArray(Field(o, "partitions"), "partitions")) {
    const json::array entry = ReadTuple(row, 4, "partitions[]");
    const auto offset = [&entry](std::size_t index) {
      return json::ReadOptional(At(entry, index), "partitions[]", ReadInt);
    };
    source.partitions[{ReadString(At(entry, 0), "partitions[]"),
                       json::ReadInt32(At(entry, 1), "partitions[]")}] = {offset(2), offset(3)};
  }
  for (const json::element item : ReadArray(Field(o, "subtasks_with_splits"), "subtasks")) {
    source.subtasks_with_splits.insert(json::ReadInt32(item, "subtasks_with_splits[]"));
  }
  for (const json::element row :
       ReadArray(Field(o, "subtask_watermark_lag_ms"), "subtask_watermark_lag_ms")) {
    const json::array entry = ReadTuple(row, 2, "subtask_watermark_lag_ms[]");
    source.subtask_watermark_lag_ms[json::ReadInt32(At(entry, 0), "subtask_watermark_lag_ms[]")] =
        json::ReadDouble(At(entry, 1), "subtask_watermark_lag_ms[]");
  }
}

void AppendSource(std::string& out, const flink::SourceReader& source) {
  out += "{\"vertex_id\":";
  AppendString(out, source.vertex_id);
  out += ",\"name\":";
  AppendString(out, source.name);
  out += ",\"connector\":\"";
  out += ConnectorName(source.connector);
  out += '"';
  AppendSourcePartitions(out, source);
  AppendFields(out, source, kReaderNumbers);
  out += '}';
}

flink::SourceReader ReadSource(json::element e) {
  const json::object o = json::ReadObject(e, "sources[]");
  flink::SourceReader source;
  source.vertex_id = ReadString(Field(o, "vertex_id"), "vertex_id");
  source.name = ReadString(Field(o, "name"), "name");
  source.connector = ReadConnector(Field(o, "connector"));
  ReadSourcePartitions(o, source);
  ReadFields(o, source, kReaderNumbers);
  return source;
}

// [id, name, parallelism, max parallelism, inputs, forward inputs, load]; traces written before
// the job graph was read hold the first three alone.
void AppendVertex(std::string& out, const flink::Vertex& vertex, bool comma) {
  out += comma ? ",[" : "[";
  AppendString(out, vertex.id);
  out += ',';
  AppendString(out, vertex.name);
  out += ',';
  AppendInt(out, vertex.parallelism);
  out += ',';
  json::AppendOptional(out, vertex.max_parallelism, [](std::string& o, int n) { AppendInt(o, n); });
  out += ',';
  json::AppendStrings(out, vertex.inputs);
  out += ',';
  json::AppendStrings(out, vertex.forward_inputs);
  out += ',';
  if (vertex.load) {
    std::string fields;
    AppendFields(fields, *vertex.load, kLoadNumbers);
    if (vertex.load->busiest_subtask) AppendFields(fields, *vertex.load, kLoadInts);
    out += '{';
    out += std::string_view(fields).substr(1);  // each field begins with its comma
    out += '}';
  } else {
    out += "null";
  }
  out += ']';
}

flink::Vertex ReadVertex(json::element row) {
  const json::array entry = ReadArray(row, "vertices[]");
  if (entry.size() != 3 && entry.size() != 7) ReadTuple(row, 7, "vertices[]");  // says why
  flink::Vertex vertex;
  vertex.id = ReadString(At(entry, 0), "vertices[]");
  vertex.name = ReadString(At(entry, 1), "vertices[]");
  vertex.parallelism = json::ReadInt32(At(entry, 2), "vertices[]");
  if (entry.size() == 3) return vertex;
  vertex.max_parallelism =
      json::ReadOptional(At(entry, 3), "vertices[].max_parallelism", json::ReadInt32);
  vertex.inputs = json::ReadStrings(At(entry, 4), "vertices[].inputs");
  vertex.forward_inputs = json::ReadStrings(At(entry, 5), "vertices[].forward_inputs");
  if (!At(entry, 6).is_null()) {
    flink::VertexLoad load;
    const json::object fields = json::ReadObject(At(entry, 6), "vertices[].load");
    ReadFields(fields, load, kLoadNumbers);
    if (json::element busiest; !fields["busiest_subtask"].get(busiest)) {
      load.busiest_subtask = json::ReadInt32(busiest, "vertices[].load.busiest_subtask");
    }
    vertex.load = load;
  }
  return vertex;
}

void AppendJob(std::string& out, const flink::FlinkJob& job) {
  out += "{\"overview\":";
  AppendOverview(out, job.overview);
  out += ",\"vertices\":[";
  for (std::size_t i = 0; i < job.vertices.size(); ++i) {
    AppendVertex(out, job.vertices[i], i > 0);
  }
  out += ']';
  AppendCheckpoints(out, job);
  out += ",\"sources\":[";
  for (std::size_t i = 0; i < job.sources.size(); ++i) {
    if (i > 0) out += ',';
    AppendSource(out, job.sources[i]);
  }
  out += "],\"read_committed\":";
  json::AppendBool(out, job.read_committed);
  out += '}';
}

flink::FlinkJob ReadJob(json::element e) {
  const json::object o = json::ReadObject(e, "jobs[]");
  flink::FlinkJob job;
  job.overview = ReadOverview(Field(o, "overview"));
  for (const json::element row : ReadArray(Field(o, "vertices"), "vertices")) {
    job.vertices.push_back(ReadVertex(row));
  }
  ReadCheckpoints(o, job);
  for (const json::element item : ReadArray(Field(o, "sources"), "sources")) {
    job.sources.push_back(ReadSource(item));
  }
  job.read_committed = json::ReadBool(Field(o, "read_committed"), "read_committed");
  return job;
}

}  // namespace

void AppendFlinkSnapshot(std::string& out, const flink::FlinkSnapshot& snapshot) {
  out += "{\"requested_at\":";
  json::AppendDouble(out, snapshot.requested_at);
  out += ",\"metrics_fetch_interval_ms\":";
  json::AppendOptional(out, snapshot.metrics_fetch_interval_ms, json::AppendDouble);
  out += ",\"partial_errors\":[";
  for (std::size_t i = 0; i < snapshot.partial_errors.size(); ++i) {
    if (i > 0) out += ',';
    AppendString(out, snapshot.partial_errors[i]);
  }
  out += "],\"jobs\":[";
  for (std::size_t i = 0; i < snapshot.jobs.size(); ++i) {
    if (i > 0) out += ',';
    AppendJob(out, snapshot.jobs[i]);
  }
  out += "]}";
}

flink::FlinkSnapshot ReadFlinkSnapshot(json::element e) {
  const json::object o = json::ReadObject(e, "snapshot");
  flink::FlinkSnapshot snapshot;
  snapshot.requested_at = json::ReadDouble(Field(o, "requested_at"), "requested_at");
  snapshot.metrics_fetch_interval_ms = json::ReadOptional(
      Field(o, "metrics_fetch_interval_ms"), "metrics_fetch_interval_ms", json::ReadDouble);
  for (const json::element item : ReadArray(Field(o, "partial_errors"), "partial_errors")) {
    snapshot.partial_errors.push_back(ReadString(item, "partial_errors[]"));
  }
  for (const json::element item : ReadArray(Field(o, "jobs"), "jobs")) {
    snapshot.jobs.push_back(ReadJob(item));
  }
  return snapshot;
}

}  // namespace lagsight::trace
