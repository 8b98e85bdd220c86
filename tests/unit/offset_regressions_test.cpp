#include "analysis/offset_regressions.h"

#include <catch2/catch.hpp>

#include "analysis/kafka_poll.h"

using namespace lagsight;

namespace {

kafka::KafkaSnapshot With(std::vector<std::pair<std::string, kafka::CommittedOffsets>> groups) {
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

TEST_CASE("a committed offset that goes back is a regression; forward, equal and new ones are not",
          "[analysis]") {
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

TEST_CASE("regressions are found on every topic of a group, by topic and partition", "[analysis]") {
  // "a-b" sorts between "a" and "b"; a/1 and b/0 are new, a-b/0 moved forward.
  const auto before = With({{"m", {{{"a", 0}, 10}, {{"a-b", 0}, 5}, {{"b", 1}, 8}}}});
  const auto after =
      With({{"m", {{{"a", 0}, 9}, {{"a", 1}, 3}, {{"a-b", 0}, 6}, {{"b", 0}, 1}, {{"b", 1}, 7}}}});
  const auto regressions = analysis::FindOffsetRegressions(before, after);
  REQUIRE(regressions.size() == 2);
  CHECK(regressions[0].partition == kafka::TopicPartition{"a", 0});
  CHECK(regressions[0].from == 10);
  CHECK(regressions[1].partition == kafka::TopicPartition{"b", 1});
  CHECK(regressions[1].to == 7);
}

TEST_CASE(
    "a Kafka poll counts regressions, keeps the counts through a failed poll, drops vanished "
    "groups",
    "[analysis]") {
  const analysis::KafkaPoll first = analysis::DeriveKafkaPoll(
      With({{"g", {{{"t", 0}, 100}}}, {"h", {{{"t", 0}, 10}}}}), analysis::KafkaPoll{});
  REQUIRE(first.snapshot);
  REQUIRE(first.lags);
  CHECK(first.regressions.empty());
  CHECK(first.regression_counts->empty());

  const auto second =
      analysis::DeriveKafkaPoll(With({{"g", {{{"t", 0}, 40}}}, {"h", {{{"t", 0}, 5}}}}), first);
  REQUIRE(second.regressions.size() == 2);
  CHECK(second.regression_counts->at({"g", {"t", 0}}) == 1);
  CHECK(second.regression_counts->at({"h", {"t", 0}}) == 1);

  // A failed poll serves no data but forgets no count; the poll after it compares with nothing.
  const auto failed = analysis::DeriveKafkaPoll(std::nullopt, second);
  CHECK_FALSE(failed.snapshot);
  CHECK_FALSE(failed.lags);
  CHECK(failed.regressions.empty());
  CHECK(failed.regression_counts->size() == 2);
  const auto after_failure = analysis::DeriveKafkaPoll(With({{"g", {{{"t", 0}, 30}}}}), failed);
  CHECK(after_failure.regressions.empty());
  // h vanished: its count goes with it; g's stays.
  CHECK(*after_failure.regression_counts == analysis::OffsetRegressionCounts{{{"g", {"t", 0}}, 1}});

  const auto third = analysis::DeriveKafkaPoll(With({{"g", {{{"t", 0}, 20}}}}), after_failure);
  CHECK(third.regression_counts->at({"g", {"t", 0}}) == 2);
  // The previous poll's result is untouched: the renderer may still be reading it.
  CHECK(after_failure.regression_counts->at({"g", {"t", 0}}) == 1);
}
