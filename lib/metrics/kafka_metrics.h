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

#include "analysis/findings.h"
#include "analysis/kafka_poll.h"
#include "config/config.h"
#include "kafka/snapshot.h"
#include "metrics/exposition.h"
#include "metrics/poll_status.h"

namespace lagsight::metrics {

// What the per-topic and per-partition group series of one render cost (series.budget).
struct KafkaSeriesUse {
  std::size_t detail_series = 0;   // exported
  std::size_t wanted_series = 0;   // at the configured granularity, before the budget
  std::size_t pairs_to_topic = 0;  // group-topic pairs the budget moved to topic level
  std::size_t pairs_to_group = 0;  // ... and on to group level
};

// `poll.snapshot` is null when the latest poll failed. `findings` (null: none yet) gives the
// lag in seconds per partition. `series` says at which level each group-topic pair is exported:
// partition (every series), topic (lag sum and uncommitted count), or group (only the group's
// own series); out-of-range flags and regression counters are exported at every level.
// `threads`: how many threads render the group series (0: one per 250,000 series, at most 4
// and at most the CPUs lagsight may run on); the exposition is the same whatever it is.
KafkaSeriesUse AppendKafkaMetrics(const std::string& cluster, const PollStatus& status,
                                  const analysis::KafkaPoll& poll,
                                  const analysis::KafkaFindings* findings,
                                  const config::KafkaSeriesConfig& series, FamilyBuilder& out,
                                  int threads = 0);

}  // namespace lagsight::metrics
