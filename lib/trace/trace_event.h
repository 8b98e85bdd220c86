// trace::TraceEvent: one line of a lagsight trace, the record of one thing the daemon handed to
// the analysis (analysis::Analyzer), so that a trace replays through a fresh Analyzer exactly as
// the daemon ran it.
//
// A trace is JSON lines, one event an object with an "event" key (lib/trace/trace_format.h):
//   config  the DiagnosisConfig given with SetConfig (patterns as their source text);
//   retain  the clusters given with Retain;
//   kafka   one Kafka cluster's latest poll: the whole kafka::KafkaSnapshot (none: it failed);
//   flink   one Flink cluster's latest poll: what of its FlinkClusterConfig the analysis reads
//           (name, kafka_cluster, groups mappings; never credentials, URLs or TLS files) and the
//           whole flink::FlinkSnapshot (none: it failed).
//   store   one position store's latest reading (stores::StoreSnapshot, none: it failed), as
//           its poll ended; the analysis does not read it, a replay joins it with the log as a
//           render does (analysis::StoreReadings).
// A kafka or flink event with `observe` set is a poll the analyzer was handed (ObserveKafka or
// ObserveFlink at `now`); without it, it only updates that source's latest state, which the next
// observation of another source reads (the recorder writes such events for sources that changed
// since it last wrote them, and for all of them at the top of each file). Plain data.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <variant>

#include "config/config.h"
#include "flink/snapshot.h"
#include "kafka/snapshot.h"
#include "stores/snapshot.h"

namespace lagsight::trace {

struct ConfigEvent {
  config::DiagnosisConfig diagnosis;
};

struct RetainEvent {
  std::set<std::string> kafka_clusters;
  std::set<std::string> flink_clusters;
};

struct KafkaEvent {
  std::string cluster;
  double now = 0;  // unix seconds the daemon passed with the observation
  bool observe = true;
  std::optional<kafka::KafkaSnapshot> snapshot;  // none: the poll failed
};

struct FlinkEvent {
  std::string cluster;
  double now = 0;
  bool observe = true;
  config::FlinkClusterConfig config;  // only what the analysis reads (see above)
  std::optional<flink::FlinkSnapshot> snapshot;
};

struct StoreEvent {
  std::string cluster;  // the store's name
  double now = 0;
  bool observe = true;                            // always: each is a poll that ended
  std::optional<stores::StoreSnapshot> snapshot;  // none: the poll failed
};

using TraceEvent = std::variant<ConfigEvent, RetainEvent, KafkaEvent, FlinkEvent, StoreEvent>;

// "config", "retain", "kafka", "flink" or "store", as the trace names the event.
const char* EventName(const TraceEvent& event);

}  // namespace lagsight::trace
