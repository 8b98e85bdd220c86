// Since when each partition's offset stands: kept in place poll after poll, rebuilt when a
// group's partitions change, and never confused by the change.
#include "analysis/standing.h"

#include <catch2/catch.hpp>

using lagsight::analysis::Standing;
using lagsight::analysis::StandingOffsets;
using lagsight::analysis::UpdateStanding;
using lagsight::kafka::CommittedOffsets;

namespace {

double SinceOf(const StandingOffsets& standing, const char* topic, int partition) {
  const auto found = standing.find({topic, partition});
  REQUIRE(found != standing.end());
  return found->second.since;
}

}  // namespace

TEST_CASE("standing: an unchanged offset keeps its time, a moved one starts again", "[analysis]") {
  StandingOffsets standing;
  UpdateStanding(standing, CommittedOffsets{{{"a", 0}, 10}, {{"a", 1}, 20}}, 100);
  UpdateStanding(standing, CommittedOffsets{{{"a", 0}, 10}, {{"a", 1}, 25}}, 160);
  CHECK(SinceOf(standing, "a", 0) == 100);
  CHECK(SinceOf(standing, "a", 1) == 160);
  CHECK(standing.at({"a", 1}).offset == 25);
}

TEST_CASE("standing: partitions that come and go keep the others' times", "[analysis]") {
  StandingOffsets standing;
  UpdateStanding(standing, CommittedOffsets{{{"a", 0}, 10}, {{"a", 2}, 30}, {{"b", 0}, 5}}, 100);
  // a/1 is new (it sorts between the two kept), a/2 is gone, b/0 moved, a/0 stands.
  UpdateStanding(standing, CommittedOffsets{{{"a", 0}, 10}, {{"a", 1}, 7}, {{"b", 0}, 6}}, 200);
  REQUIRE(standing.size() == 3);
  CHECK(SinceOf(standing, "a", 0) == 100);
  CHECK(SinceOf(standing, "a", 1) == 200);
  CHECK(SinceOf(standing, "b", 0) == 200);
  CHECK_FALSE(standing.contains({"a", 2}));
  // A partition that comes back with the offset it had is new again: its time was forgotten.
  UpdateStanding(standing, CommittedOffsets{{{"a", 0}, 10}, {{"a", 2}, 30}}, 300);
  CHECK(SinceOf(standing, "a", 0) == 100);
  CHECK(SinceOf(standing, "a", 2) == 300);
  CHECK(standing.size() == 2);
  // No offsets at all: nothing stands.
  UpdateStanding(standing, CommittedOffsets{}, 400);
  CHECK(standing.empty());
}

TEST_CASE("standing: each offset is visited with its own partition's standing, or none",
          "[analysis]") {
  StandingOffsets standing;
  UpdateStanding(standing, CommittedOffsets{{{"a", 1}, 10}, {{"a-b", 0}, 20}, {{"ab", 0}, 30}},
                 100);
  // a/0 and b/0 are new; "a-b" sorts between "a" and "ab", and each keeps its own entry.
  const CommittedOffsets now{{{"a", 0}, 1}, {{"a", 1}, 11}, {{"a-b", 0}, 21}, {{"b", 0}, 2}};
  std::vector<std::pair<std::string, std::optional<std::int64_t>>> seen;
  lagsight::analysis::ForEachWithStanding(
      standing, now,
      [&](const lagsight::kafka::TopicPartition& tp, std::int64_t, const Standing* before) {
        seen.emplace_back(tp.topic + "/" + std::to_string(tp.partition),
                          before != nullptr ? std::optional(before->offset) : std::nullopt);
      });
  const std::vector<std::pair<std::string, std::optional<std::int64_t>>> expected{
      {"a/0", std::nullopt}, {"a/1", 10}, {"a-b/0", 20}, {"b/0", std::nullopt}};
  CHECK(seen == expected);
}
