// The one checkpoint-age rule: as of the Flink poll's start, a ratio only with a periodic interval.
#include "analysis/checkpoint_age.h"

#include <catch2/catch.hpp>

using namespace lagsight;

namespace {

flink::FlinkJob JobCheckpointingEvery(double interval_ms, std::int64_t latest_completed_ms) {
  flink::FlinkJob job;
  job.overview.id = "job-1";
  job.checkpoint_config.interval_ms = interval_ms;
  job.checkpoints.latest_completed_timestamp_ms = latest_completed_ms;
  return job;
}

}  // namespace

TEST_CASE("a checkpoint's age is taken as of the poll's start, and its ratio against the interval",
          "[analysis]") {
  const auto age =
      analysis::CheckpointAgeOf(JobCheckpointingEvery(10'000, 1'000'000'000), 1'000'030);
  REQUIRE(age);
  CHECK(age->age_seconds == Approx(30));
  REQUIRE(age->interval_seconds);
  CHECK(*age->interval_seconds == Approx(10));
  REQUIRE(age->ratio);
  CHECK(*age->ratio == Approx(3));
}

TEST_CASE("a checkpoint newer than the poll's start is 0 s old, never negative", "[analysis]") {
  // Flink answered after the poll began, with a checkpoint that completed in between.
  const auto age =
      analysis::CheckpointAgeOf(JobCheckpointingEvery(1'000, 1'000'000'500), 1'000'000);
  REQUIRE(age);
  CHECK(age->age_seconds == 0);
}

TEST_CASE("a ratio needs a periodic interval", "[analysis]") {
  // As the parser leaves a job without periodic checkpoints (Flink 1.20/2.x answer an interval of
  // Long.MAX_VALUE): checkpointing off, so no age at all.
  auto job = JobCheckpointingEvery(1'000, 1'000'000'000);
  job.checkpoint_config.enabled = false;
  job.checkpoint_config.interval_ms.reset();
  job.checkpoints.enabled = false;
  CHECK_FALSE(analysis::CheckpointAgeOf(job, 1'000'100));
  CHECK_FALSE(analysis::PeriodicIntervalSeconds(job));

  // An interval of a year or more, however it got here, is no period either.
  job = JobCheckpointingEvery(9.223372036854776e18, 1'000'000'000);
  const auto age = analysis::CheckpointAgeOf(job, 1'000'100);
  REQUIRE(age);
  CHECK(age->age_seconds == Approx(100));
  CHECK_FALSE(age->interval_seconds);
  CHECK_FALSE(age->ratio);
}

TEST_CASE("no age without a completed checkpoint, with checkpointing off, or unreported stats",
          "[analysis]") {
  auto job = JobCheckpointingEvery(1'000, 1'000'000'000);
  job.checkpoints.latest_completed_timestamp_ms.reset();
  CHECK_FALSE(analysis::CheckpointAgeOf(job, 1'000'100));

  job = JobCheckpointingEvery(1'000, 1'000'000'000);
  job.checkpoints.enabled = false;
  CHECK_FALSE(analysis::CheckpointAgeOf(job, 1'000'100));

  job = JobCheckpointingEvery(1'000, 1'000'000'000);
  job.checkpoint_stats_reported = false;  // a job not running whose statistics went unanswered
  CHECK_FALSE(analysis::CheckpointAgeOf(job, 1'000'100));
}

TEST_CASE("the ages of a snapshot are keyed by job id, only for jobs that have one", "[analysis]") {
  flink::FlinkSnapshot snapshot;
  snapshot.jobs.push_back(JobCheckpointingEvery(1'000, 1'000'000'000));
  auto without = JobCheckpointingEvery(1'000, 0);
  without.overview.id = "job-2";
  without.checkpoints.latest_completed_timestamp_ms.reset();
  snapshot.jobs.push_back(without);
  const auto ages = analysis::CheckpointAges(snapshot, 1'000'002);
  REQUIRE(ages.size() == 1);
  CHECK(ages.at("job-1").age_seconds == Approx(2));
}
