// Lag in seconds, the sawtooth, the bounded series and the verdict hysteresis, on data alone.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "analysis/diagnosis.h"
#include "analysis/history.h"
#include "analysis/lag_seconds.h"
#include "analysis/sawtooth.h"
#include "analysis/series.h"

using namespace lagsight::analysis;
namespace config = lagsight::config;

namespace {

LogEndHistory History(std::initializer_list<LogEndSample> samples) {
  LogEndHistory history;
  for (const LogEndSample& sample : samples) history.Add(sample);
  return history;
}

}  // namespace

TEST_CASE("a thinning series keeps its capacity and reaches ever further back", "[analysis]") {
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

// Unix seconds of the tests' first log-end sample: a time Kafka records can have.
constexpr double kT = 1'700'000'000;

lagsight::kafka::RecordTimestamp CreateTime(double seconds) {
  return {static_cast<std::int64_t>(seconds * 1000), false};
}

TEST_CASE("lag seconds: caught up, record timestamp, interpolation, lower bound, nothing",
          "[analysis]") {
  const auto history = History({{kT, 100}, {kT + 10, 200}, {kT + 20, 300}});
  SECTION("no lag is zero seconds, whatever else is known") {
    const auto lag = ComputeLagSeconds(300, 0, std::nullopt, history, kT + 30);
    REQUIRE(lag);
    CHECK(lag->seconds == 0);
    CHECK(lag->method == LagSecondsMethod::kCaughtUp);
  }
  SECTION("the fetched record timestamp wins, even far older than the history") {
    const auto lag = ComputeLagSeconds(50, 250, CreateTime(kT - 600), history, kT + 30);
    REQUIRE(lag);
    CHECK(lag->seconds == Approx(630));
    CHECK(lag->method == LagSecondsMethod::kRecordTimestamp);
  }
  SECTION("a producer clock a little ahead of ours gives zero, not a negative age") {
    const auto lag = ComputeLagSeconds(250, 50, CreateTime(kT + 45), history, kT + 30);
    REQUIRE(lag);
    CHECK(lag->seconds == 0);
    CHECK(lag->method == LagSecondsMethod::kRecordTimestamp);
  }
  SECTION("interpolated between the samples around the position") {
    // Offset 149 was written when log end went from 100 to 200: half way, at t = kT + 5.
    const auto lag = ComputeLagSeconds(149, 151, std::nullopt, history, kT + 30);
    REQUIRE(lag);
    CHECK(lag->method == LagSecondsMethod::kInterpolated);
    CHECK(lag->seconds == Approx(25));
  }
  SECTION("older than all history: a lower bound, never an extrapolation") {
    const auto lag = ComputeLagSeconds(10, 290, std::nullopt, history, kT + 30);
    REQUIRE(lag);
    CHECK(lag->method == LagSecondsMethod::kLowerBound);
    CHECK(lag->seconds == Approx(30));
  }
  SECTION("no history and no record: no answer") {
    CHECK_FALSE(ComputeLagSeconds(10, 5, std::nullopt, LogEndHistory(), kT + 30));
  }
}

TEST_CASE("lag seconds: a CreateTime that cannot be when the record was written is not used",
          "[analysis]") {
  // Offset 149 was written between kT and kT + 10 (log end 100 -> 200).
  const auto history = History({{kT, 100}, {kT + 10, 200}, {kT + 20, 300}});
  const double now = kT + 30;
  SECTION("an hour in the future: the interpolated age, and the method says why") {
    const auto lag = ComputeLagSeconds(149, 151, CreateTime(kT + 3600), history, now);
    REQUIRE(lag);
    CHECK(lag->method == LagSecondsMethod::kInterpolatedImplausibleTimestamp);
    CHECK(lag->seconds == Approx(25));
    CHECK(std::string(LagSecondsMethodName(lag->method)) == "interpolated_implausible_timestamp");
  }
  SECTION("the epoch (a producer that sends 0 or 1 ms) does not read as 56 years") {
    const auto lag = ComputeLagSeconds(149, 151, CreateTime(0.001), history, now);
    REQUIRE(lag);
    CHECK(lag->method == LagSecondsMethod::kInterpolatedImplausibleTimestamp);
    CHECK(lag->seconds == Approx(25));
  }
  SECTION("an event time far older than the write (a replay of old data) is not its wait") {
    const auto lag = ComputeLagSeconds(149, 151, CreateTime(kT - 86400), history, now);
    REQUIRE(lag);
    CHECK(lag->method == LagSecondsMethod::kInterpolatedImplausibleTimestamp);
  }
  SECTION("within the slack of a producer's buffering and clock, the record's own time") {
    const auto behind = ComputeLagSeconds(149, 151, CreateTime(kT - 200), history, now);
    REQUIRE(behind);
    CHECK(behind->method == LagSecondsMethod::kRecordTimestamp);
    CHECK(behind->seconds == Approx(230));
    const auto ahead = ComputeLagSeconds(149, 151, CreateTime(kT + 50), history, now);
    REQUIRE(ahead);
    CHECK(ahead->method == LagSecondsMethod::kRecordTimestamp);
  }
  SECTION("older than the history, a future or epoch CreateTime gives the lower bound") {
    const auto future = ComputeLagSeconds(10, 290, CreateTime(now + 3600), history, now);
    REQUIRE(future);
    CHECK(future->method == LagSecondsMethod::kLowerBoundImplausibleTimestamp);
    CHECK(future->seconds == Approx(30));
    const auto epoch = ComputeLagSeconds(10, 290, CreateTime(0), history, now);
    REQUIRE(epoch);
    CHECK(epoch->method == LagSecondsMethod::kLowerBoundImplausibleTimestamp);
  }
  SECTION("a LogAppendTime is the broker's clock: taken as it is") {
    const auto lag =
        ComputeLagSeconds(149, 151, lagsight::kafka::RecordTimestamp{1000, true}, history, now);
    REQUIRE(lag);
    CHECK(lag->method == LagSecondsMethod::kRecordTimestamp);
    CHECK(lag->seconds == Approx(now - 1));
  }
}

TEST_CASE("catch-up time: from the backlog's pace over the window", "[analysis]") {
  struct Point {
    double time = 0;
    std::int64_t lag = 0;
  };
  const auto lag_of = [](const Point& p) { return p.lag; };
  const auto series_of = [](std::initializer_list<Point> points) {
    ThinningSeries<Point> series;
    for (const Point& p : points) series.Add(p);
    return series;
  };
  SECTION("shrinking by 100 records/s with 3000 left: 30 s") {
    const auto series = series_of({{0, 9000}, {20, 7000}, {40, 5000}, {60, 3000}});
    const auto eta = CatchUpSeconds(series, lag_of, 60, 300);
    REQUIRE(eta);
    CHECK(*eta == Approx(30));
  }
  SECTION("growing or level: never (+Inf)") {
    const auto growing = series_of({{0, 100}, {20, 200}, {40, 300}});
    CHECK(std::isinf(*CatchUpSeconds(growing, lag_of, 40, 300)));
    const auto level = series_of({{0, 100}, {20, 100}, {40, 100}});
    CHECK(std::isinf(*CatchUpSeconds(level, lag_of, 40, 300)));
  }
  SECTION("no backlog: 0, however short the history") {
    CHECK(*CatchUpSeconds(series_of({{0, 0}}), lag_of, 0, 300) == 0);
  }
  SECTION("too little history: no answer") {
    CHECK_FALSE(CatchUpSeconds(series_of({{0, 900}, {10, 800}}), lag_of, 10, 300));
    CHECK_FALSE(CatchUpSeconds(series_of({{0, 900}, {5, 800}, {10, 700}}), lag_of, 10, 300));
  }
  SECTION("only the window counts: an old rise does not hide today's drain") {
    const auto series = series_of({{0, 0}, {100, 10000}, {400, 6000}, {420, 5800}, {440, 5600}});
    const auto eta = CatchUpSeconds(series, lag_of, 440, 60);
    REQUIRE(eta);
    CHECK(*eta == Approx(560));
  }
}

TEST_CASE("the sawtooth: regular commits that drop the lag, with their period and amplitude",
          "[analysis]") {
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
  SECTION("a period shorter than two polls is not measured: 5 s commits seen by 15 s polls") {
    std::vector<CommitEvent> seen;
    // Every poll sees the newest of three commits; the drops mix them (a restore's catch-up).
    for (double time : {15.0, 30.0, 45.0, 60.0, 75.0}) seen.push_back({time, 1800, 700});
    const Sawtooth aliased = DetectSawtooth(seen, 76, 15);
    CHECK_FALSE(aliased.detected);
    CHECK_FALSE(aliased.period_seconds.has_value());
    CHECK_FALSE(aliased.amplitude_records.has_value());
    // 60 s checkpoints at the same polls are measured, with their own period.
    std::vector<CommitEvent> slow;
    for (double time : {60.0, 120.0, 180.0, 240.0}) slow.push_back({time, 3600, 0});
    const Sawtooth measured = DetectSawtooth(slow, 250, 15);
    CHECK(measured.detected);
    REQUIRE(measured.period_seconds);
    CHECK(*measured.period_seconds == Approx(60));
  }
  SECTION("an irregular early gap is left out of the period") {
    commits.insert(commits.begin(), CommitEvent{-50, 1000, 50});
    shape = DetectSawtooth(commits, 52);
    CHECK(shape.detected);
    CHECK(*shape.period_seconds == Approx(10));
  }
}

TEST_CASE("a verdict changes only after confirm_polls consecutive raw verdicts, the first too",
          "[analysis]") {
  Verdict verdict;
  CHECK_FALSE(verdict.Update(Cause::kHealthy, 0, 2));
  CHECK_FALSE(verdict.active());  // one poll never pages on its own
  CHECK(verdict.Update(Cause::kHealthy, 1, 2));
  CHECK(verdict.active() == Cause::kHealthy);
  CHECK_FALSE(verdict.Update(Cause::kStalled, 2, 2));
  CHECK(verdict.active() == Cause::kHealthy);
  CHECK_FALSE(verdict.Update(Cause::kHealthy, 3, 2));  // flap back: candidate forgotten
  CHECK_FALSE(verdict.Update(Cause::kStalled, 4, 2));
  CHECK(verdict.Update(Cause::kStalled, 5, 2));
  CHECK(verdict.active() == Cause::kStalled);
  CHECK(verdict.since() == 5);
}

TEST_CASE("precedence: mixed clusters, then the job's lifecycle, then late data, then commits",
          "[analysis]") {
  Evidence evidence;
  CHECK(Winner(evidence, PairPrecedence()) == Cause::kHealthy);
  evidence.Add(Cause::kLongCheckpointInterval);
  CHECK(Winner(evidence, PairPrecedence()) == Cause::kLongCheckpointInterval);
  evidence.Add(Cause::kRestoredFromOldPosition);
  evidence.Add(Cause::kSharedGroupId);
  evidence.Add(Cause::kPartitionsUncommitted);
  evidence.Add(Cause::kOffsetsMissing);
  CHECK(Winner(evidence, PairPrecedence()) == Cause::kOffsetsMissing);
  evidence.Add(Cause::kCheckpointsFailing);  // explains the missing offsets
  CHECK(Winner(evidence, PairPrecedence()) == Cause::kCheckpointsFailing);
  evidence.Add(Cause::kReallyBehind);  // data is late: first of what the job itself does
  CHECK(Winner(evidence, PairPrecedence()) == Cause::kReallyBehind);
  evidence.Add(Cause::kRestarting);
  CHECK(Winner(evidence, PairPrecedence()) == Cause::kRestarting);
  evidence.Add(Cause::kClusterMismatch);
  CHECK(Winner(evidence, PairPrecedence()) == Cause::kClusterMismatch);
  CHECK(evidence.Causes().size() == 9);

  Evidence group;
  CHECK(Winner(group, GroupPrecedence()) == Cause::kHealthy);
  group.Add(Cause::kRewinding);
  CHECK(Winner(group, GroupPrecedence()) == Cause::kRewinding);
  group.Add(Cause::kStalled);
  CHECK(Winner(group, GroupPrecedence()) == Cause::kStalled);
  group.Add(Cause::kReallyBehind);
  CHECK(Winner(group, GroupPrecedence()) == Cause::kReallyBehind);
  CHECK(std::string(CauseName(Cause::kRestoredFromOldPosition)) == "restored_from_old_position");
}

TEST_CASE("a lag matters in records and, with the input rate known, in seconds of input",
          "[analysis]") {
  config::DiagnosisConfig config;  // 1000 records, 30 s
  CHECK_FALSE(LagMatters(999, std::nullopt, config));
  CHECK(LagMatters(1000, std::nullopt, config));
  CHECK_FALSE(LagMatters(1000, 100'000.0, config));  // 10 ms of input: noise
  CHECK(LagMatters(1000, 1.0, config));              // a quarter of an hour
  CHECK(LagMatters(3'000'000, 100'000.0, config));   // 30 s
}

TEST_CASE("stalled is measured against the group's own commit period, with the window as floor",
          "[analysis]") {
  config::DiagnosisConfig config;
  config.window = std::chrono::minutes(5);
  CHECK(StalledAfterSeconds(std::nullopt, config) == 900);  // not seen committing twice yet
  CHECK(StalledAfterSeconds(10.0, config) == 300);
  CHECK(StalledAfterSeconds(600.0, config) == 1800);  // a 10-minute committer
}

TEST_CASE("pair rules: restores, replays and sharing are told apart", "[analysis]") {
  config::DiagnosisConfig config;
  PairFacts facts;
  facts.flink_lag = 5000;
  facts.input_rate = 10;
  facts.flink_lag_trend = Trend::kFalling;
  facts.group_known = true;
  facts.group_has_offsets = true;
  facts.job_age_seconds = 600;
  CHECK(PairEvidenceFrom(facts, config).empty());  // catching up after a failover: fine
  facts.moved_back = MovedBack::kRestore;
  CHECK(Winner(PairEvidenceFrom(facts, config), PairPrecedence()) ==
        Cause::kRestoredFromOldPosition);
  facts.flink_lag_trend = Trend::kGrowing;  // the lag does not fall: late data wins
  CHECK(Winner(PairEvidenceFrom(facts, config), PairPrecedence()) == Cause::kReallyBehind);
  facts.flink_lag_trend = Trend::kFalling;
  facts.moved_back = MovedBack::kReplay;
  facts.regressions_in_window = 1;
  CHECK(Winner(PairEvidenceFrom(facts, config), PairPrecedence()) == Cause::kReplaying);
  facts.regressions_in_window = 3;  // back and forth: two writers
  CHECK(Winner(PairEvidenceFrom(facts, config), PairPrecedence()) == Cause::kSharedGroupId);
  facts.regressions_in_window = 0;
  facts.moved_back = MovedBack::kNo;
  facts.other_job_on_same_partitions = true;
  CHECK(Winner(PairEvidenceFrom(facts, config), PairPrecedence()) == Cause::kSharedGroupId);
}

TEST_CASE("pair rules: a source that commits nothing by design is a fact, not offsets_missing",
          "[analysis]") {
  config::DiagnosisConfig config;
  PairFacts facts;
  facts.job_age_seconds = 600;
  facts.checkpointing = true;
  facts.expected_checkpoint_gap_seconds = 10;
  facts.checkpoint_age_seconds = 5;
  facts.commits_nothing = true;
  CHECK(PairEvidenceFrom(facts, config).empty());
  facts.group_expected = true;  // the operator says it commits to a group
  CHECK(PairEvidenceFrom(facts, config).Has(Cause::kOffsetsMissing));
  facts.commits_nothing = false;
  facts.group_expected = false;
  facts.group_candidates = true;  // a quiet topic: two groups hold the same offsets
  CHECK_FALSE(PairEvidenceFrom(facts, config).Has(Cause::kOffsetsMissing));
}

TEST_CASE("pair rules: min-pause widens the gap a checkpoint may have", "[analysis]") {
  config::DiagnosisConfig config;
  PairFacts facts;
  facts.job_age_seconds = 600;
  facts.group_known = true;
  facts.group_has_offsets = true;
  facts.checkpointing = true;
  facts.expected_checkpoint_gap_seconds = 10;
  facts.checkpoint_age_seconds = 40;
  CHECK(PairEvidenceFrom(facts, config).Has(Cause::kCheckpointsFailing));
  facts.expected_checkpoint_gap_seconds = 32;  // interval 10 s, min pause 30 s, duration 2 s
  CHECK_FALSE(PairEvidenceFrom(facts, config).Has(Cause::kCheckpointsFailing));
}

TEST_CASE("pair rules: the job's lifecycle", "[analysis]") {
  config::DiagnosisConfig config;
  PairFacts facts;
  facts.lifecycle = JobLifecycle::kNotRunning;
  CHECK(Winner(PairEvidenceFrom(facts, config), PairPrecedence()) == Cause::kRestarting);
  facts.restarts_in_window = 3;
  CHECK(Winner(PairEvidenceFrom(facts, config), PairPrecedence()) == Cause::kRestartLoop);
  facts = {};
  facts.lifecycle = JobLifecycle::kGone;
  facts.not_running_seconds = 60;  // a redeploy takes that long
  facts.group_lag_growing = true;
  CHECK(PairEvidenceFrom(facts, config).empty());
  facts.not_running_seconds = 121;
  CHECK(Winner(PairEvidenceFrom(facts, config), PairPrecedence()) == Cause::kJobGone);
  facts.group_lag_growing = false;  // gone, but nothing waits for it
  CHECK(PairEvidenceFrom(facts, config).empty());
}
