// The analyzer on a Flink job's checkpoints and commits: a sawtooth from infrequent checkpoints
// (also as lagsight's default 15 s poll sees it), commits that fail while checkpoints complete,
// and checkpoints that stop completing.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "analyzer_world.h"

using namespace lagsight;
using namespace lagsight::analyzer_testing;

TEST_CASE("a Flink job whose checkpoints commit every 10 s: sawtooth, long_checkpoint_interval",
          "[analysis]") {
  World world;
  world.with_job = true;
  world.interval_ms = 10'000;
  world.latest_completed_ms = static_cast<std::int64_t>(world.now * 1000);
  world.committed["enrich"] = 1000;
  world.job_committed = 1000;
  world.job_current = 999;
  const auto seen = world.Run(90, "enrich", "job-1", [&](int second) {
    world.log_end += 50;  // 50 records/s, read at once
    world.job_current = world.log_end - 1;
    if (second % 10 == 9) {  // a checkpoint completes and commits
      world.completed++;
      world.latest_completed_ms = static_cast<std::int64_t>((world.now + 1) * 1000);
      world.commits_succeeded++;
      world.job_committed = world.log_end;
      world.committed["enrich"] = world.log_end;
    }
  });
  const auto& group = world.last_->kafka.at(kCluster)->groups.at(0);
  CHECK(group.sawtooth.detected);
  REQUIRE(group.sawtooth.period_seconds);
  CHECK(*group.sawtooth.period_seconds == Approx(10).epsilon(0.05));
  CHECK(World::CauseOf(*world.last_, "enrich", "job-1") == Cause::kLongCheckpointInterval);
  CHECK_FALSE(seen.contains(Cause::kReallyBehind));
  CHECK_FALSE(seen.contains(Cause::kCheckpointsFailing));
}

// lagsight's default 15 s poll sees a commit at every poll of a job that checkpoints every 5 s:
// the period it could measure is the poll's, and the drops mix three commits. The interval is
// known from Flink instead; its sawtooth (150 records/s x 5 s = 750) is below the threshold.
TEST_CASE("at a 15 s poll, 5 s checkpoints are not long_checkpoint_interval; 60 s ones are",
          "[analysis]") {
  struct Case {
    double interval_seconds;
    double records_per_second;
    bool long_interval;
  };
  for (const Case c : {Case{5, 150, false}, Case{60, 60, true}}) {
    CAPTURE(c.interval_seconds);
    World world;
    world.Reconfigure([](config::DiagnosisConfig& config) {
      config.window = std::chrono::minutes(5);  // lagsight's defaults
      config.lag_threshold_records = 1000;
    });
    world.with_job = true;
    world.poll_seconds = 15;
    world.fetch_interval_ms = 10'000;
    world.interval_ms = c.interval_seconds * 1000;
    const double start = world.now;
    const std::int64_t base = world.log_end;
    world.committed["enrich"] = base;
    world.job_committed = base;
    world.job_current = base - 1;
    world.latest_completed_ms = static_cast<std::int64_t>(start * 1000);
    const auto log_end_at = [&](double time) {
      return base + static_cast<std::int64_t>(c.records_per_second * (time - start));
    };
    const auto seen = world.Run(60, "enrich", "job-1", [&](int) {
      const double at = world.now + world.poll_seconds;
      const double checkpoint =
          start + std::floor((at - start) / c.interval_seconds) * c.interval_seconds;
      world.log_end = log_end_at(at);
      world.job_current = world.log_end - 1;  // keeps up
      world.completed = static_cast<std::int64_t>((checkpoint - start) / c.interval_seconds);
      world.latest_completed_ms = static_cast<std::int64_t>(checkpoint * 1000);
      world.commits_succeeded = static_cast<double>(world.completed);
      world.job_committed = log_end_at(checkpoint);
      world.committed["enrich"] = log_end_at(checkpoint);
    });
    CHECK(seen.contains(Cause::kLongCheckpointInterval) == c.long_interval);
    const auto& group = world.last_->kafka.at(kCluster)->groups.at(0);
    if (c.long_interval) {
      CHECK(World::CauseOf(*world.last_, "enrich", "job-1") == Cause::kLongCheckpointInterval);
      REQUIRE(group.sawtooth.period_seconds);
      CHECK(*group.sawtooth.period_seconds == Approx(60).epsilon(0.05));
    } else {
      CHECK_FALSE(group.sawtooth.period_seconds.has_value());
      CHECK(World::CauseOf(*world.last_, "enrich", "job-1") == Cause::kHealthy);
    }
  }
}

TEST_CASE("a Flink job whose commits fail while checkpoints complete: commits_failing",
          "[analysis]") {
  World world;
  world.with_job = true;
  world.committed["enrich"] = 1000;
  world.job_committed = 1000;
  world.job_current = 999;
  const auto before = world.Run(40, "enrich", "job-1", [&](int) { world.CheckpointedSecond(); });
  CHECK(before == std::set<Cause>{Cause::kHealthy});
  world.Run(20, "enrich", "job-1", [&](int) {
    world.log_end += 5;
    world.job_current = world.log_end - 1;
    world.completed++;
    world.latest_completed_ms = static_cast<std::int64_t>((world.now + 1) * 1000);
    world.commits_failed++;  // Kafka's committed offset and Flink's last success stay put
  });
  CHECK(World::CauseOf(*world.last_, "enrich", "job-1") == Cause::kCommitsFailing);
  const auto& source = world.last_->flink.at("flink").sources.at(0);
  REQUIRE(source.commit_failure_ratio);
  CHECK(*source.commit_failure_ratio > 0.5);
}

TEST_CASE("a Flink job whose checkpoints stop completing: checkpoints_failing", "[analysis]") {
  World world;
  world.with_job = true;
  world.committed["enrich"] = 1000;
  world.job_committed = 1000;
  world.job_current = 999;
  world.latest_completed_ms = static_cast<std::int64_t>(world.now * 1000);
  world.Run(40, "enrich", "job-1", [&](int) {
    world.log_end += 5;
    world.job_current = world.log_end - 1;
    world.failed++;
  });
  CHECK(World::CauseOf(*world.last_, "enrich", "job-1") == Cause::kCheckpointsFailing);
}
