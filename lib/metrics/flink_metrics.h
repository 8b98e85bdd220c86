// The lagsight_flink_* metrics of one Flink cluster, and of its join with the Kafka half.
//
// Pure rendering. As for Kafka, a failed poll leaves only the health series: no job, checkpoint
// or offset series are served from an older poll as if fresh.
#pragma once

#include <string>
#include <vector>

#include "analysis/findings.h"
#include "flink/snapshot.h"
#include "metrics/exposition.h"
#include "metrics/kafka_metrics.h"

namespace lagsight::metrics {

// `snapshot` is null when the latest poll failed; `findings` are the analysis of that snapshot
// (its joins and checkpoint ages), rendered as they are.
void AppendFlinkMetrics(const std::string& cluster, const PollStatus& status,
                        const flink::FlinkSnapshot* snapshot,
                        const analysis::FlinkFindings& findings, FamilyBuilder& out);

}  // namespace lagsight::metrics
