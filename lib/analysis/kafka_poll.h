// analysis::KafkaPoll: the latest poll of one Kafka cluster and every number derived from that
// poll alone (group lags, the committed offsets that went back since the poll before, and how
// often each went back since lagsight started).
//
// Pure and immutable once built: DeriveKafkaPoll is a function of the new snapshot and the
// previous KafkaPoll, so it runs on a worker beside the collector, and the result is shared as
// is with the analyzer (history, diagnosis) and the renderer. Each of these numbers is computed
// here and nowhere else.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/kafka_lag.h"
#include "analysis/offset_regressions.h"
#include "kafka/snapshot.h"

namespace lagsight::analysis {

// How often each group's committed offset went backwards since lagsight started; only entries
// of groups and partitions the latest successful poll still saw.
using OffsetRegressionCounts =
    std::map<std::pair<std::string, kafka::TopicPartition>, std::uint64_t>;

struct KafkaPoll {
  std::shared_ptr<const kafka::KafkaSnapshot> snapshot;  // null: the latest poll failed
  std::shared_ptr<const std::vector<GroupLag>> lags;     // null with the snapshot
  // Found by this poll against the previous successful one (none after a failed poll).
  std::vector<OffsetRegression> regressions;
  // Kept through failed polls, so a blip does not reset the counters.
  std::shared_ptr<const OffsetRegressionCounts> regression_counts =
      std::make_shared<const OffsetRegressionCounts>();
};

// `snapshot` is none when the poll failed. `previous` is the cluster's KafkaPoll before it.
KafkaPoll DeriveKafkaPoll(std::optional<kafka::KafkaSnapshot> snapshot, const KafkaPoll& previous);

}  // namespace lagsight::analysis
