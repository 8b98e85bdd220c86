#include "trace/trace_format.h"

#include <simdjson.h>

#include <cmath>
#include <utility>

#include "trace/config_json.h"
#include "trace/flink_snapshot_json.h"
#include "trace/json_text.h"
#include "trace/kafka_snapshot_json.h"
#include "trace/store_snapshot_json.h"

namespace lagsight::trace {

namespace {

using json::Field;

std::string Opening(const char* event) {
  return "{\"v\":" + std::to_string(kTraceFormatVersion) + ",\"event\":\"" + event + "\"";
}

void AppendNames(std::string& out, const std::set<std::string>& names) {
  out += '[';
  bool first = true;
  for (const std::string& name : names) {
    if (!first) out += ',';
    first = false;
    json::AppendString(out, name);
  }
  out += ']';
}

std::set<std::string> ReadNames(json::element e, std::string_view what) {
  std::set<std::string> names;
  for (const json::element item : json::ReadArray(e, what)) {
    names.insert(json::ReadString(item, what));
  }
  return names;
}

void AppendObservation(std::string& out, std::string_view cluster, double now, bool observe) {
  out += ",\"cluster\":";
  json::AppendString(out, cluster);
  out += ",\"now\":";
  json::AppendDouble(out, now);
  out += ",\"observe\":";
  json::AppendBool(out, observe);
}

template <typename Event>
Event ReadObservation(json::object o) {
  Event event;
  event.cluster = json::ReadString(Field(o, "cluster"), "cluster");
  event.now = json::ReadDouble(Field(o, "now"), "now");
  if (!std::isfinite(event.now)) throw json::FormatError("now: not a finite number");
  event.observe = json::ReadBool(Field(o, "observe"), "observe");
  return event;
}

TraceEvent ReadEvent(json::object o) {
  const std::int64_t version = json::ReadInt(Field(o, "v"), "v");
  if (version != kTraceFormatVersion) {
    throw json::FormatError("trace format version " + std::to_string(version) +
                            ", this lagsight reads version " + std::to_string(kTraceFormatVersion));
  }
  const std::string name = json::ReadString(Field(o, "event"), "event");
  if (name == "config") return ConfigEvent{ReadDiagnosisConfig(Field(o, "diagnosis"))};
  if (name == "retain") {
    return RetainEvent{ReadNames(Field(o, "kafka"), "kafka"),
                       ReadNames(Field(o, "flink"), "flink")};
  }
  if (name == "kafka") {
    auto event = ReadObservation<KafkaEvent>(o);
    const json::element snapshot = Field(o, "snapshot");
    if (!snapshot.is_null()) event.snapshot = ReadKafkaSnapshot(snapshot);
    return event;
  }
  if (name == "flink") {
    auto event = ReadObservation<FlinkEvent>(o);
    event.config = ReadFlinkClusterConfig(Field(o, "config"));
    const json::element snapshot = Field(o, "snapshot");
    if (!snapshot.is_null()) event.snapshot = ReadFlinkSnapshot(snapshot);
    return event;
  }
  if (name == "store") {
    auto event = ReadObservation<StoreEvent>(o);
    const json::element snapshot = Field(o, "snapshot");
    if (!snapshot.is_null()) event.snapshot = ReadStoreSnapshot(snapshot);
    return event;
  }
  throw json::FormatError("unknown event \"" + name + "\"");
}

}  // namespace

const char* EventName(const TraceEvent& event) {
  constexpr const char* kNames[] = {"config", "retain", "kafka", "flink", "store"};
  return kNames[event.index()];
}

std::string FormatConfigEvent(const config::DiagnosisConfig& diagnosis) {
  std::string out = Opening("config");
  out += ",\"diagnosis\":";
  AppendDiagnosisConfig(out, diagnosis);
  out += "}\n";
  return out;
}

std::string FormatRetainEvent(const std::set<std::string>& kafka_clusters,
                              const std::set<std::string>& flink_clusters) {
  std::string out = Opening("retain");
  out += ",\"kafka\":";
  AppendNames(out, kafka_clusters);
  out += ",\"flink\":";
  AppendNames(out, flink_clusters);
  out += "}\n";
  return out;
}

std::string FormatKafkaEvent(std::string_view cluster, double now, bool observe,
                             const kafka::KafkaSnapshot* snapshot) {
  std::string out = Opening("kafka");
  AppendObservation(out, cluster, now, observe);
  out += ",\"snapshot\":";
  if (snapshot == nullptr) {
    out += "null";
  } else {
    AppendKafkaSnapshot(out, *snapshot);
  }
  out += "}\n";
  return out;
}

std::string FormatFlinkEvent(std::string_view cluster, double now, bool observe,
                             const config::FlinkClusterConfig& config,
                             const flink::FlinkSnapshot* snapshot) {
  std::string out = Opening("flink");
  AppendObservation(out, cluster, now, observe);
  out += ",\"config\":";
  AppendFlinkClusterConfig(out, config);
  out += ",\"snapshot\":";
  if (snapshot == nullptr) {
    out += "null";
  } else {
    AppendFlinkSnapshot(out, *snapshot);
  }
  out += "}\n";
  return out;
}

std::string FormatStoreEvent(std::string_view store, double now,
                             const stores::StoreSnapshot* snapshot) {
  std::string out = Opening("store");
  AppendObservation(out, store, now, true);
  out += ",\"snapshot\":";
  if (snapshot == nullptr) {
    out += "null";
  } else {
    AppendStoreSnapshot(out, *snapshot);
  }
  out += "}\n";
  return out;
}

std::string FormatTraceEvent(const TraceEvent& event) {
  struct Formatter {
    std::string operator()(const ConfigEvent& e) const { return FormatConfigEvent(e.diagnosis); }
    std::string operator()(const RetainEvent& e) const {
      return FormatRetainEvent(e.kafka_clusters, e.flink_clusters);
    }
    std::string operator()(const KafkaEvent& e) const {
      return FormatKafkaEvent(e.cluster, e.now, e.observe, e.snapshot ? &*e.snapshot : nullptr);
    }
    std::string operator()(const FlinkEvent& e) const {
      return FormatFlinkEvent(e.cluster, e.now, e.observe, e.config,
                              e.snapshot ? &*e.snapshot : nullptr);
    }
    std::string operator()(const StoreEvent& e) const {
      return FormatStoreEvent(e.cluster, e.now, e.snapshot ? &*e.snapshot : nullptr);
    }
  };
  return std::visit(Formatter{}, event);
}

Result<TraceEvent> ParseTraceEvent(std::string_view line) {
  // A parser per line: a trace is replayed once, and a fresh parser sizes itself to the line.
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (const auto error = parser.parse(line.data(), line.size()).get(root)) {
    return Error{std::string("not JSON: ") + simdjson::error_message(error)};
  }
  try {
    return ReadEvent(json::ReadObject(root, "the line"));
  } catch (const json::FormatError& error) {
    return Error{error.what()};
  }
}

}  // namespace lagsight::trace
