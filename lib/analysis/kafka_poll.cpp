#include "analysis/kafka_poll.h"

namespace lagsight::analysis {

KafkaPoll DeriveKafkaPoll(std::optional<kafka::KafkaSnapshot> snapshot, const KafkaPoll& previous) {
  KafkaPoll poll;
  poll.regression_counts = previous.regression_counts;
  if (!snapshot) return poll;
  auto current = std::make_shared<const kafka::KafkaSnapshot>(std::move(*snapshot));
  poll.lags = std::make_shared<const std::vector<GroupLag>>(ComputeGroupLags(*current));
  if (previous.snapshot) poll.regressions = FindOffsetRegressions(*previous.snapshot, *current);

  auto counts = std::make_shared<OffsetRegressionCounts>();
  for (const kafka::ConsumerGroup& group : current->groups) {
    for (const auto& [tp, offset] : group.committed) {
      const auto existing = previous.regression_counts->find({group.id, tp});
      if (existing != previous.regression_counts->end()) counts->emplace(*existing);
    }
  }
  for (const OffsetRegression& regression : poll.regressions) {
    ++(*counts)[{regression.group, regression.partition}];
  }
  poll.regression_counts = std::move(counts);
  poll.snapshot = std::move(current);
  return poll;
}

}  // namespace lagsight::analysis
