// The lagsight_kafka_* metrics of one Kafka cluster.
//
// Pure rendering of what a poll saw. When the latest poll failed, only the cluster's health
// series (up, poll duration, last successful poll time, counters) are exported: lag series of a
// cluster that cannot be read would be served as if fresh, so they disappear until the next
// good poll, and lagsight_kafka_last_poll_timestamp_seconds tells how old the last good data is.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/kafka_poll.h"
#include "kafka/snapshot.h"
#include "metrics/exposition.h"
#include "metrics/poll_status.h"

namespace lagsight::metrics {

// `poll.snapshot` is null when the latest poll failed.
void AppendKafkaMetrics(const std::string& cluster, const PollStatus& status,
                        const analysis::KafkaPoll& poll, FamilyBuilder& out);

}  // namespace lagsight::metrics
