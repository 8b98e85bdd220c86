// FindFlink: one Flink cluster's sources joined with the Kafka clusters that are up, their
// associations made sticky, their lag aligned with the log end of its time, and what the
// renderer shows of each source (the third stage, reading the job and Kafka histories).
//
// A cluster that is down keeps its last joins, to hold its pairs' verdicts through the blip.
// Pure apart from the state it is handed: `now` is a parameter.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "analysis/association.h"
#include "analysis/findings.h"
#include "analysis/job_history.h"
#include "analysis/kafka_history.h"
#include "config/config.h"

namespace lagsight::analysis {

struct FlinkCluster {
  bool up = false;
  std::optional<double> down_since;
  FlinkPollTiming timing;
  FlinkFindings findings;
};

using FlinkClusters = std::map<std::string, FlinkCluster>;  // by cluster name

// The slowest metric refresh of the Flink clusters, never below Flink's default.
double SlowestMetricsRefresh(const FlinkClusters& flink);

// Re-joins Flink cluster `flink_cluster` (its state in `flink`, created when new) with the Kafka
// clusters of `sources` that are up. Points the jobs' `latest` at its current snapshot, or at
// nothing while it is down.
void FindFlink(const std::string& flink_cluster, const SourcesView& sources, FlinkClusters& flink,
               JobHistories& jobs, const KafkaHistories& kafka, Associations& associations,
               const config::DiagnosisConfig& config, double now);

}  // namespace lagsight::analysis
