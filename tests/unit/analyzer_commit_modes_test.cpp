// The analyzer on jobs without a group: positions beyond the log end (another cluster, or a race),
// when a young job's offsets are expected, and offsets_missing unless stated external.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "analyzer_world.h"

using namespace lagsight;
using namespace lagsight::analyzer_testing;

namespace {

// A job that keeps its position outside Kafka: no group, checkpoints complete, no commits; it
// reads 30 of the 50 records/s that arrive, so it falls behind.
std::set<Cause> RunJobWithoutGroup(World& world, int seconds, std::int64_t read_per_second) {
  return world.Run(seconds, "", "job-1", [&](int) {
    world.log_end += 50;
    world.job_current = std::min(world.log_end - 1, world.job_current + read_per_second);
    world.completed++;
    world.latest_completed_ms = static_cast<std::int64_t>((world.now + 1) * 1000);
  });
}

World JobWithoutGroup() {
  World world;
  world.with_job = true;
  world.interval_ms = 1000;
  world.job_committed = -1;  // never committed
  world.job_current = 999;
  world.latest_completed_ms = static_cast<std::int64_t>(world.now * 1000);
  return world;
}

}  // namespace

TEST_CASE("a job position beyond the log end proves the job reads another cluster", "[analysis]") {
  // Its bootstrap list named two clusters and it reached the other, which holds more records of
  // the same topic: positions no partition of the polled cluster has. Flink-side lag alone
  // would show 0 there (clamped), hiding it.
  World world = HealthyJob();
  auto checkpoint_each_second = [&](int) { world.CheckpointedSecond(); };
  CHECK(world.Run(10, "enrich", "job-1", checkpoint_each_second) ==
        std::set<Cause>{Cause::kHealthy});
  const auto elsewhere = [&](int) {
    world.log_end += 5;
    world.job_current = world.log_end + 500;  // last record read, on the other cluster
    world.job_committed = world.log_end + 501;
    world.commits_succeeded++;
    world.completed++;
    world.latest_completed_ms = static_cast<std::int64_t>((world.now + 1) * 1000);
  };
  CHECK(world.Run(5, "enrich", "job-1", elsewhere).contains(Cause::kClusterMismatch));
  const auto* finding = World::FindingOf(*world.last_, "enrich", "job-1");
  REQUIRE(finding != nullptr);
  CHECK(finding->cause == Cause::kClusterMismatch);
  CHECK(finding->beyond_log_end_partitions == std::vector<kafka::TopicPartition>{{"orders", 0}});
  const auto& join = world.last_->flink.at("flink").joins.at(0);
  REQUIRE(join.partitions.size() == 1);
  CHECK(join.partitions[0].beyond_log_end == 501);  // (currentOffset + 1) - log end
  CHECK(join.partitions[0].flink_lag == 0);

  // Back on the polled cluster: the evidence goes with the next judgement.
  world.job_current = world.log_end - 1;
  world.job_committed = world.log_end;
  CHECK(world.Run(5, "enrich", "job-1", checkpoint_each_second).contains(Cause::kHealthy));
  CHECK_FALSE(world.last_->flink.at("flink").joins.at(0).partitions[0].beyond_log_end);
}

TEST_CASE("a position beyond log ends read before Flink answered is a race, not another cluster",
          "[analysis]") {
  // Every Kafka poll began before the Flink snapshot arrived: records written in between were
  // read by the job, so its position may pass those log ends without anything wrong.
  World world = HealthyJob();
  world.kafka_poll_began_before = 0.5;
  const auto racing = [&](int) {
    world.CheckpointedSecond();
    world.job_current = world.log_end + 2;  // three records the Kafka poll had not seen yet
  };
  CHECK(world.Run(20, "enrich", "job-1", racing) == std::set<Cause>{Cause::kHealthy});
  CHECK_FALSE(world.last_->flink.at("flink").joins.at(0).partitions[0].beyond_log_end);
}

TEST_CASE("a young job's offsets are expected only once a commit can have been seen through Flink",
          "[analysis]") {
  // Flink's default metric refresh (10 s) and a 30 s window: the first commit shows up in the
  // REST API up to a refresh after the first checkpoint, and a job that moves is matched on the
  // refresh after. Grace: max(2 gaps, window/2 = 15 s, 1 s + 2 x 10 s + 5 s = 26 s).
  World world = JobWithoutGroup();
  world.fetch_interval_ms = 10'000;
  world.job_start = world.now;
  int first = -1;
  for (int second = 0; second < 60 && first < 0; ++second) {
    if (RunJobWithoutGroup(world, 1, 30).contains(Cause::kOffsetsMissing)) first = second;
  }
  CHECK(first >= 26);
  CHECK(first <= 30);
}

TEST_CASE("commit modes: a job behind without a group is offsets_missing unless stated external",
          "[analysis]") {
  World unstated = JobWithoutGroup();
  CHECK(RunJobWithoutGroup(unstated, 90, 30).contains(Cause::kOffsetsMissing));

  // A positions: store (or diagnosis.commit_modes) says its position is kept elsewhere.
  for (const auto mode :
       {config::CommitModeRule::Mode::kExternal, config::CommitModeRule::Mode::kNone}) {
    World stated = JobWithoutGroup();
    stated.Reconfigure([mode](config::DiagnosisConfig& config) {
      config.commit_modes.push_back({*config::Pattern::Compile("enr.*"), mode});
    });
    const auto seen = RunJobWithoutGroup(stated, 90, 30);
    INFO(seen.size());
    CHECK_FALSE(seen.contains(Cause::kOffsetsMissing));
    CHECK(seen.contains(Cause::kReallyBehind));
  }
}

TEST_CASE(
    "commit modes: a caught-up job that commits nothing is offsets_missing once stated "
    "checkpoint",
    "[analysis]") {
  // Unstated, committing nothing is taken as by design once the job is seen caught up.
  World unstated = JobWithoutGroup();
  RunJobWithoutGroup(unstated, 90, 1000);
  CHECK(World::CauseOf(*unstated.last_, "", "job-1") == Cause::kHealthy);

  World stated = JobWithoutGroup();
  stated.Reconfigure([](config::DiagnosisConfig& config) {
    config.commit_modes.push_back(
        {*config::Pattern::Compile("enrich"), config::CommitModeRule::Mode::kCheckpoint});
  });
  RunJobWithoutGroup(stated, 90, 1000);
  CHECK(World::CauseOf(*stated.last_, "", "job-1") == Cause::kOffsetsMissing);
}
