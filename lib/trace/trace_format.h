// The line format of traces: TraceEvent <-> one JSON object on one line.
//
// Every line is {"v":1,"event":"<name>",...} (trace_event.h names the events); a reader of
// another version refuses the line rather than guessing. Format* return the line with its '\n';
// writing what ParseTraceEvent read gives the same bytes. Pure and thread-safe.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "common/result.h"
#include "trace/trace_event.h"

namespace lagsight::trace {

inline constexpr int kTraceFormatVersion = 1;

std::string FormatConfigEvent(const config::DiagnosisConfig& diagnosis);
std::string FormatRetainEvent(const std::set<std::string>& kafka_clusters,
                              const std::set<std::string>& flink_clusters);
// `snapshot` null: the poll failed.
std::string FormatKafkaEvent(std::string_view cluster, double now, bool observe,
                             const kafka::KafkaSnapshot* snapshot);
std::string FormatFlinkEvent(std::string_view cluster, double now, bool observe,
                             const config::FlinkClusterConfig& config,
                             const flink::FlinkSnapshot* snapshot);
std::string FormatStoreEvent(std::string_view store, double now,
                             const stores::StoreSnapshot* snapshot);
std::string FormatTraceEvent(const TraceEvent& event);

// One line (without its '\n'). The error says what is wrong, e.g. "not JSON: ..." or
// "missing key \"cluster\"".
Result<TraceEvent> ParseTraceEvent(std::string_view line);

}  // namespace lagsight::trace
