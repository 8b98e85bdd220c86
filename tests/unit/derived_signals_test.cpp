// Lag in seconds, the sawtooth, the bounded series and the verdict hysteresis, on data alone.
#include <catch.hpp>

#include "analysis/diagnosis.h"
#include "analysis/lag_seconds.h"
#include "analysis/sawtooth.h"
#include "analysis/series.h"

using namespace lagsight::analysis;

namespace {

LogEndHistory History(std::initializer_list<LogEndSample> samples) {
  LogEndHistory history;
  for (const LogEndSample& sample : samples) history.Add(sample);
  return history;
}

}  // namespace

TEST_CASE("a thinning series keeps its capacity and reaches ever further back") {
  ThinningSeries<LogEndSample> series(8);
  for (int i = 0; i < 100; ++i) series.Add({static_cast<double>(i), i});
  CHECK(series.size() <= 8);
  CHECK(series.back().time == 99);
  // The newest samples keep full resolution...
  const auto& samples = series.samples();
  CHECK(samples[samples.size() - 2].time == 98);
  // ...and the oldest reaches back much further than capacity samples.
  CHECK(samples.front().time < 99 - 8);
  series.Add({50, 0});  // out of order: ignored
  CHECK(series.back().time == 99);
}

TEST_CASE("lag seconds: caught up, record timestamp, interpolation, lower bound, nothing") {
  const auto history = History({{1000, 100}, {1010, 200}, {1020, 300}});
  SECTION("no lag is zero seconds, whatever else is known") {
    const auto lag = ComputeLagSeconds(300, 0, std::nullopt, history, 1030);
    REQUIRE(lag);
    CHECK(lag->seconds == 0);
    CHECK(lag->method == LagSecondsMethod::kCaughtUp);
  }
  SECTION("the fetched record timestamp wins, even far older than the history") {
    const auto lag = ComputeLagSeconds(50, 250, 400'000, history, 1030);
    REQUIRE(lag);
    CHECK(lag->seconds == Approx(630));
    CHECK(lag->method == LagSecondsMethod::kRecordTimestamp);
  }
  SECTION("a producer clock ahead of ours gives zero, not a negative age") {
    const auto lag = ComputeLagSeconds(250, 50, 2'000'000, history, 1030);
    REQUIRE(lag);
    CHECK(lag->seconds == 0);
  }
  SECTION("interpolated between the samples around the position") {
    // Offset 149 was written when log end went from 100 to 200: half way, at t = 1005.
    const auto lag = ComputeLagSeconds(149, 151, std::nullopt, history, 1030);
    REQUIRE(lag);
    CHECK(lag->method == LagSecondsMethod::kInterpolated);
    CHECK(lag->seconds == Approx(25));
  }
  SECTION("older than all history: a lower bound, never an extrapolation") {
    const auto lag = ComputeLagSeconds(10, 290, std::nullopt, history, 1030);
    REQUIRE(lag);
    CHECK(lag->method == LagSecondsMethod::kLowerBound);
    CHECK(lag->seconds == Approx(30));
  }
  SECTION("no history and no record: no answer") {
    CHECK_FALSE(ComputeLagSeconds(10, 5, std::nullopt, LogEndHistory(), 1030));
  }
}

TEST_CASE("the sawtooth: regular commits that drop the lag, with their period and amplitude") {
  std::vector<CommitEvent> commits;
  // Commits every ~10 s seen by 1 s polls: 10, 21, 30, 41, 50.
  for (double time : {10.0, 21.0, 30.0, 41.0, 50.0}) commits.push_back({time, 1000, 50});
  auto shape = DetectSawtooth(commits, 52);
  CHECK(shape.detected);
  REQUIRE(shape.period_seconds);
  CHECK(*shape.period_seconds == Approx(10));
  CHECK(*shape.amplitude_records == Approx(950));

  SECTION("not when commits stopped two periods ago") {
    CHECK_FALSE(DetectSawtooth(commits, 80).detected);
  }
  SECTION("not with too few commits") {
    commits.resize(2);
    CHECK_FALSE(DetectSawtooth(commits, 22).detected);
  }
  SECTION("not when commits do not lower the lag") {
    for (CommitEvent& commit : commits) commit.lag_after = commit.lag_before + 10;
    CHECK_FALSE(DetectSawtooth(commits, 52).detected);
  }
  SECTION("an irregular early gap is left out of the period") {
    commits.insert(commits.begin(), CommitEvent{-50, 1000, 50});
    shape = DetectSawtooth(commits, 52);
    CHECK(shape.detected);
    CHECK(*shape.period_seconds == Approx(10));
  }
}

TEST_CASE("a verdict changes only after confirm_polls consecutive raw verdicts") {
  Verdict verdict(Cause::kHealthy, 0);
  CHECK_FALSE(verdict.Update(Cause::kStalled, 1, 2));
  CHECK(verdict.active() == Cause::kHealthy);
  CHECK_FALSE(verdict.Update(Cause::kHealthy, 2, 2));  // flap back: candidate forgotten
  CHECK_FALSE(verdict.Update(Cause::kStalled, 3, 2));
  CHECK(verdict.Update(Cause::kStalled, 4, 2));
  CHECK(verdict.active() == Cause::kStalled);
  CHECK(verdict.since() == 4);
}

TEST_CASE("the rules' order: what makes other readings wrong comes first") {
  PairEvidence evidence;
  CHECK(JudgePair(evidence) == Cause::kHealthy);
  evidence.sawtooth_above_threshold = true;
  CHECK(JudgePair(evidence) == Cause::kLongCheckpointInterval);
  evidence.really_behind = true;
  CHECK(JudgePair(evidence) == Cause::kReallyBehind);
  evidence.commits_failing = true;
  CHECK(JudgePair(evidence) == Cause::kCommitsFailing);
  evidence.checkpoints_failing = true;
  CHECK(JudgePair(evidence) == Cause::kCheckpointsFailing);
  evidence.offsets_missing = true;
  CHECK(JudgePair(evidence) == Cause::kOffsetsMissing);
  evidence.cluster_mismatch = true;
  CHECK(JudgePair(evidence) == Cause::kClusterMismatch);

  GroupEvidence group;
  CHECK(JudgeGroup(group) == Cause::kHealthy);
  group.really_behind = true;
  CHECK(JudgeGroup(group) == Cause::kReallyBehind);
  group.stalled = true;
  CHECK(JudgeGroup(group) == Cause::kStalled);
  group.rewinding = true;
  CHECK(JudgeGroup(group) == Cause::kRewinding);
  CHECK(std::string(CauseName(Cause::kRestoredFromOldPosition)) == "restored_from_old_position");
}
