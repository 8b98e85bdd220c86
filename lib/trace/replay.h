// trace::Replayer and `lagsight replay`: a trace run through a fresh analysis::Analyzer exactly
// as the daemon ran it.
//
// As in the daemon, each Kafka event's KafkaPoll is derived from its snapshot and the cluster's
// previous poll (analysis::DeriveKafkaPoll), the latest state of every source is kept in a
// SourcesView, and an observation hands that view to ObserveKafka or ObserveFlink with the
// recorded `now`; config and retain events call SetConfig and Retain. The analysis reads no
// clock, so the same trace gives the same findings every time. Not thread-safe.
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/stored_positions.h"
#include "common/result.h"
#include "trace/trace_event.h"
#include "trace/trace_reader.h"

namespace lagsight::trace {

class Replayer {
 public:
  Replayer() = default;
  Replayer(const Replayer&) = delete;
  Replayer& operator=(const Replayer&) = delete;

  // Applies one event: the analyzer's findings for an observation, else null.
  std::shared_ptr<const analysis::Findings> Apply(const TraceEvent& event);

  // Each recorded store's entries joined with the log as a render would join them now (with
  // every source's latest state), by store name.
  std::map<std::string, std::vector<analysis::StoredJobPositions>> StoredPositions() const;

 private:
  analysis::Analyzer analyzer_{config::DiagnosisConfig{}};
  analysis::SourcesView sources_;
  std::map<std::string, analysis::StoreReadings> stores_;
};

// Called after each event with the findings (null unless it was an observation) and the
// replayer that applied it.
using ReplayStep = std::function<void(const TraceEvent& event, const analysis::Findings* findings,
                                      const Replayer& replayer)>;

// Replays the trace at `path`; the error names the file and the line (nothing is replayed past
// it). Returns the number of events replayed.
Result<std::size_t> ReplayTrace(const std::string& path, const ReplayStep& step,
                                std::size_t max_line_bytes = kDefaultMaxTraceLineBytes);

// One line per diagnosed pair and Kafka-only group, in the findings' order:
// "kafka_cluster/group/job_name: cause (evidence: a, b)", "-" for no group or job, "none" for no
// evidence.
std::vector<std::string> DiagnosisLines(const analysis::Findings& findings);

// One line per store, job and topic, in their order, as lagsight_store_partitions_beyond_log_end
// counts: "store:NAME/job_name/topic: beyond_log_end (partitions: N)" when N of its entries lie
// beyond the log end, else "...: within (partitions: 0)" (an entry not judged yet is not beyond).
std::vector<std::string> StoreLines(
    const std::map<std::string, std::vector<analysis::StoredJobPositions>>& stores);

// "2026-12-06T07:30:00.250Z" for unix seconds.
std::string FormatUnixTime(double unix_seconds);

// `lagsight replay TRACE`: prints each observation (time, event, cluster) and its diagnosis
// lines to `out`; on a bad trace, says why on `err` and returns 1.
int RunReplayCommand(const std::string& path, std::FILE* out, std::FILE* err);

}  // namespace lagsight::trace
