#include "analysis/offset_regressions.h"

#include <catch2/catch.hpp>

using namespace lagsight;

namespace {

kafka::KafkaSnapshot With(
    std::vector<std::pair<std::string, std::map<kafka::TopicPartition, std::int64_t>>> groups) {
  kafka::KafkaSnapshot snapshot;
  for (auto& [id, committed] : groups) {
    kafka::ConsumerGroup group;
    group.id = id;
    group.committed = committed;
    snapshot.groups.push_back(group);
  }
  return snapshot;
}

}  // namespace

TEST_CASE(
    "a committed offset that goes back is a regression; forward, equal and new ones are not") {
  const auto before =
      With({{"g", {{{"t", 0}, 100}, {{"t", 1}, 50}, {{"t", 2}, 7}}}, {"gone", {{{"t", 0}, 9}}}});
  const auto after = With({{"g", {{{"t", 0}, 40}, {{"t", 1}, 60}, {{"t", 2}, 7}, {{"t", 3}, 1}}},
                           {"new", {{{"t", 0}, 0}}}});
  const auto regressions = analysis::FindOffsetRegressions(before, after);
  REQUIRE(regressions.size() == 1);
  CHECK(regressions[0].group == "g");
  CHECK(regressions[0].partition == kafka::TopicPartition{"t", 0});
  CHECK(regressions[0].from == 100);
  CHECK(regressions[0].to == 40);
}
