#include "analysis/offset_regressions.h"

#include <map>

namespace lagsight::analysis {

std::vector<OffsetRegression> FindOffsetRegressions(const kafka::KafkaSnapshot& previous,
                                                    const kafka::KafkaSnapshot& current) {
  std::map<std::string_view, const kafka::ConsumerGroup*> before;
  for (const kafka::ConsumerGroup& group : previous.groups) before[group.id] = &group;
  std::vector<OffsetRegression> regressions;
  for (const kafka::ConsumerGroup& group : current.groups) {
    const auto earlier = before.find(group.id);
    if (earlier == before.end()) continue;
    for (const auto& [tp, offset] : group.committed) {
      const auto was = earlier->second->committed.find(tp);
      if (was != earlier->second->committed.end() && offset < was->second) {
        regressions.push_back({group.id, tp, was->second, offset});
      }
    }
  }
  return regressions;
}

}  // namespace lagsight::analysis
