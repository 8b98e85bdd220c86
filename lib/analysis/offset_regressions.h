// Committed offsets that moved backwards between two polls of the same Kafka cluster.
//
// A Flink job restored from an old savepoint, two jobs sharing one group id, or an operator's
// offset reset all show up as a committed offset that goes back. Pure: two snapshots in, the
// regressions out; the app keeps the running counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kafka/snapshot.h"

namespace lagsight::analysis {

struct OffsetRegression {
  std::string group;
  kafka::TopicPartition partition;
  std::int64_t from = 0;
  std::int64_t to = 0;
};

std::vector<OffsetRegression> FindOffsetRegressions(const kafka::KafkaSnapshot& previous,
                                                    const kafka::KafkaSnapshot& current);

}  // namespace lagsight::analysis
