#include "analysis/offset_regressions.h"

#include <map>
#include <optional>
#include <string>

#include "kafka/topic_cursor.h"

namespace lagsight::analysis {

std::vector<OffsetRegression> FindOffsetRegressions(const kafka::KafkaSnapshot& previous,
                                                    const kafka::KafkaSnapshot& current) {
  std::map<std::string_view, const kafka::ConsumerGroup*> before;
  for (const kafka::ConsumerGroup& group : previous.groups) before[group.id] = &group;
  std::vector<OffsetRegression> regressions;
  for (const kafka::ConsumerGroup& group : current.groups) {
    const auto earlier = before.find(group.id);
    if (earlier == before.end()) continue;
    // By topic, then partition number: a search per partition compared topic names ~6 times,
    // a million group-partitions a poll at the S3 scale.
    std::optional<kafka::TopicCursor<const kafka::CommittedOffsets>> before_of;
    const std::string* topic = nullptr;
    for (const auto& [tp, offset] : group.committed) {
      if (topic == nullptr || *topic != tp.topic) {
        topic = &tp.topic;
        before_of.emplace(earlier->second->committed, tp.topic);
      }
      const std::int64_t* was = before_of->Find(tp.partition);
      if (was != nullptr && offset < *was) regressions.push_back({group.id, tp, *was, offset});
    }
  }
  return regressions;
}

}  // namespace lagsight::analysis
