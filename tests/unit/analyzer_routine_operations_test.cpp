// The analyzer through routine operations and the moments around them: a host that stalls, a slow
// Flink REST API, failover, savepoint restores and upgrades, redeploys, fresh starts, a Flink poll
// that fails, restart loops and a job that vanished. None may name a false cause.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "analyzer_world.h"

using namespace lagsight;
using namespace lagsight::analyzer_testing;

TEST_CASE("the host stalls: no new cause until every source has been polled afresh", "[analysis]") {
  // CI: every process on the machine stood still for 12 s. Kafka polls resumed first, twice in
  // 0.2 s, against the Flink snapshot from before the stall; and Flink's REST API may serve
  // checkpoint statistics cached from before the stall for a few seconds more.
  World world = HealthyJob();
  auto checkpoint_each_second = [&](int) { world.CheckpointedSecond(); };
  CHECK(world.Run(40, "enrich", "job-1", checkpoint_each_second) ==
        std::set<Cause>{Cause::kHealthy});

  world.now += 20;  // nothing ran
  world.flink_polled = false;
  world.poll_seconds = 0.2;
  CHECK(world.Run(2, "enrich", "job-1", [](int) {}) == std::set<Cause>{Cause::kHealthy});
  // Flink answers again: three polls of cached statistics (the newest checkpoint is from before
  // the stall), then the checkpoint its timer fired at once.
  world.flink_polled = true;
  world.poll_seconds = 1;
  CHECK(world.Run(13, "enrich", "job-1", [&](int second) {
    if (second < 3) {
      world.log_end += 5;
    } else {
      world.CheckpointedSecond();
    }
  }) == std::set<Cause>{Cause::kHealthy});

  // The control: after a stall the checkpoints really stop; once the sources have been polled
  // afresh, it shows.
  world.now += 20;
  const auto seen = world.Run(30, "enrich", "job-1", [&](int) { world.log_end += 5; });
  CHECK(seen.contains(Cause::kCheckpointsFailing));
}

TEST_CASE("a slow Flink REST API: the checkpoint is judged as of when the poll asked",
          "[analysis]") {
  // A loaded JobManager: a Flink poll takes 9 s, so its snapshot is up to 18 s old at a Kafka
  // poll, while the job checkpoints every second.
  World world = HealthyJob();
  world.flink_poll_seconds = 9;
  std::set<Cause> seen = world.Run(90, "enrich", "job-1", [&](int second) {
    world.log_end += 5;
    world.flink_polled = second % 9 == 8;
    if (!world.flink_polled) return;
    // Flink answered right after it was asked, nine seconds ago.
    world.job_current = world.log_end - 1;
    world.completed += 9;
    world.latest_completed_ms = static_cast<std::int64_t>((world.now + 1 - 9.5) * 1000);
    world.commits_succeeded += 9;
    world.job_committed = world.log_end;
    world.committed["enrich"] = world.log_end;
  });
  CHECK(seen == std::set<Cause>{Cause::kHealthy});

  // The control: the same slow polls, and Flink's answers show no new checkpoint.
  seen = world.Run(30, "enrich", "job-1", [&](int second) {
    world.log_end += 5;
    world.flink_polled = second % 9 == 8;
  });
  CHECK(seen.contains(Cause::kCheckpointsFailing));
}

TEST_CASE("routine: a task failure restarts from the last checkpoint and catches up",
          "[analysis]") {
  World world = HealthyJob();
  CHECK(world.Run(60, "enrich", "job-1", [&](int s) { SteadyJob(world, s); }) ==
        std::set<Cause>{Cause::kHealthy});
  // 8 s of RESTARTING, then the job resumes at the last committed offset with 8 s + of backlog.
  const std::int64_t resume_at = world.committed["enrich"];
  auto seen = world.Run(8, "enrich", "job-1", [&](int) {
    world.log_end += 50;
    world.job_state = "RESTARTING";
  });
  world.job_state = "RUNNING";
  world.num_restarts = 1;
  world.restored_ms = static_cast<std::int64_t>(world.now * 1000);
  world.job_current = resume_at - 1;
  world.commits_succeeded = 0;  // the reader's counters start again at 0
  const auto after = world.Run(60, "enrich", "job-1", [&](int s) {
    JobStep(world, s, 120);  // catches up, commits where it is
  });
  seen.insert(after.begin(), after.end());
  for (const Cause cause : seen) {
    CHECK((cause == Cause::kHealthy || cause == Cause::kRestarting));
  }
  CHECK(World::CauseOf(*world.last_, "enrich", "job-1") == Cause::kHealthy);
  const auto& source = world.last_->flink.at("flink").sources.at(0);
  REQUIRE(source.commit_failure_ratio);
  CHECK(*source.commit_failure_ratio == 0);  // the counter reset is no failure
}

TEST_CASE("routine: restore from an older savepoint is restored_from_old_position until caught up",
          "[analysis]") {
  World world = HealthyJob();
  world.Run(60, "enrich", "job-1", [&](int s) { SteadyJob(world, s); });
  // Redeployed as a new job from a savepoint 3000 records older than the group's offsets.
  world.job_id = "job-2";
  world.job_start = world.now;
  world.restored_ms = static_cast<std::int64_t>((world.now + 1) * 1000);
  world.job_current = world.committed["enrich"] - 3000 - 1;
  world.job_committed = -1;
  world.commits_succeeded = 0;
  std::set<Cause> seen;
  bool caught_up = false;
  for (int s = 0; s < 120 && !caught_up; ++s) {
    JobStep(world, s, 80);  // catches up, commits where it is
    const auto findings = world.Poll();
    if (const auto cause = World::CauseOf(*findings, "enrich", "job-2")) seen.insert(*cause);
    caught_up = world.job_current == world.log_end - 1 && s > 60;
    world.last_ = findings;
  }
  CHECK(seen.contains(Cause::kRestoredFromOldPosition));
  CHECK_FALSE(seen.contains(Cause::kSharedGroupId));
  CHECK_FALSE(seen.contains(Cause::kReplaying));
  world.Run(10, "enrich", "job-2", [&](int s) { SteadyJob(world, s); });
  for (const auto& d : world.last_->diagnosis) {
    UNSCOPED_INFO(d.group << " " << d.job_id << " " << analysis::CauseName(d.cause));
  }
  CHECK(World::CauseOf(*world.last_, "enrich", "job-2") == Cause::kHealthy);
}

TEST_CASE("routine: an upgrade from a fresh savepoint is healthy throughout", "[analysis]") {
  World world = HealthyJob();
  world.Run(60, "enrich", "job-1", [&](int s) { SteadyJob(world, s); });
  world.job_present = false;  // stopped with a savepoint, 20 s until the new job runs
  auto seen = world.Run(20, "enrich", "job-1", [&](int) { world.log_end += 50; });
  world.job_present = true;
  world.job_id = "job-2";
  world.job_start = world.now;
  world.restored_ms = static_cast<std::int64_t>((world.now + 1) * 1000);
  world.job_current = world.committed["enrich"] - 1;  // the savepoint is where it stopped
  world.commits_succeeded = 0;
  const auto after = world.Run(60, "enrich", "job-2", [&](int s) {
    JobStep(world, s, 100);  // catches up, commits where it is
  });
  seen.insert(after.begin(), after.end());
  CHECK(seen == std::set<Cause>{Cause::kHealthy});
}

// The old job's pair goes at the first poll that sees its successor; the successor's verdict
// used to need two confirming polls, leaving the group without a diagnosis series meanwhile.
TEST_CASE("routine: a redeployed job's group has a diagnosis at every poll", "[analysis]") {
  World world = HealthyJob();
  world.poll_seconds = 15;
  const auto steady = [&](int s) {
    SteadyJob(world, s);
    world.latest_completed_ms = static_cast<std::int64_t>((world.now + 15) * 1000);
  };
  world.Run(12, "enrich", "job-1", steady);
  REQUIRE(World::CauseOf(*world.last_, "enrich", "job-1") == Cause::kHealthy);
  world.job_present = false;  // stopped with a savepoint for one poll
  world.Run(1, "enrich", "job-1", [&](int) { world.log_end += 50; });
  world.job_present = true;
  world.job_id = "job-2";
  world.job_start = world.now;
  world.commits_succeeded = 0;
  int polls_without = 0;
  for (int poll = 0; poll < 8; ++poll) {
    steady(poll);
    const auto findings = world.Poll();
    const bool any = World::CauseOf(*findings, "enrich", "job-1").has_value() ||
                     World::CauseOf(*findings, "enrich", "job-2").has_value();
    polls_without += any ? 0 : 1;
    for (const auto& d : findings->diagnosis) {
      UNSCOPED_INFO(poll << ": " << d.group << "/" << d.job_id << " "
                         << analysis::CauseName(d.cause));
    }
  }
  CHECK(polls_without == 0);
  steady(8);
  CHECK(World::CauseOf(*world.Poll(), "enrich", "job-2") == Cause::kHealthy);
}

// A successor that lists no source or whose reader reports no partitions while it deploys or
// restores has no joins:
// nothing tied it to its group, which was judged Kafka-only meanwhile, and the job's pair had no
// diagnosis (8-10 s in each redeploy of the suite at 1 s polls; recordings in
// tests/fixtures/traces pin it too). Its predecessor's verdict is held until it reports.
TEST_CASE("routine: a redeployed job that does not report yet keeps its pair's diagnosis",
          "[analysis]") {
  for (const double poll : {1.0, 15.0}) {  // the suite's poll, and lagsight's default
    CAPTURE(poll);
    World world = HealthyJob();
    world.poll_seconds = poll;
    const auto steady = [&](int s) {
      SteadyJob(world, s);
      world.latest_completed_ms = static_cast<std::int64_t>((world.now + poll) * 1000);
    };
    world.Run(static_cast<int>(180 / poll), "enrich", "job-1", steady);
    REQUIRE(World::CauseOf(*world.last_, "enrich", "job-1") == Cause::kHealthy);
    world.job_id = "job-2";  // cancelled and resubmitted at once under the same name
    world.job_start = world.now;
    world.commits_succeeded = 0;
    world.reader_reports = false;
    int polls_without = 0;
    const int deploying = static_cast<int>(30 / poll);
    for (int poll_number = 0; poll_number < deploying + static_cast<int>(60 / poll);
         ++poll_number) {
      // Initializing (no source listed at all), then running with a reader that reports
      // no partitions yet, then reporting.
      world.job_state = poll_number < deploying / 2 ? "INITIALIZING" : "RUNNING";
      world.reader_reports = poll_number >= deploying;
      steady(poll_number);
      const auto findings = world.Poll();
      const auto cause = World::CauseOf(*findings, "enrich", "job-2");
      polls_without += cause ? 0 : 1;
      CHECK_FALSE(World::CauseOf(*findings, "enrich", "").has_value());  // not Kafka-only
      if (cause) CHECK(*cause == Cause::kHealthy);
    }
    CHECK(polls_without == 0);
  }
}

// A new job is judged on its own (no group) until Flink reports a committedOffset that matches
// its group: up to a metrics refresh after its first commit. The pair then moved to the group and
// its verdict started over, so the job had no diagnosis series for two polls; cancelled in
// between (CI, test_routine_operations[2.x-offset-reset]), the job left no verdict to hand over
// and its successor had none for 12 s. The job is the same job with its group known: its verdict
// goes with it.
TEST_CASE("routine: a job whose group becomes known keeps its diagnosis", "[analysis]") {
  for (const double poll : {1.0, 15.0}) {  // the suite's poll, and lagsight's default
    CAPTURE(poll);
    World world = HealthyJob();
    world.poll_seconds = poll;
    world.job_start = world.now;       // submitted just now
    world.fetch_interval_ms = 10'000;  // Flink's default metrics refresh
    int polls_without = 0;
    bool shown = false;
    for (int poll_number = 0; poll_number < static_cast<int>(120 / poll); ++poll_number) {
      SteadyJob(world, poll_number);
      world.latest_completed_ms = static_cast<std::int64_t>((world.now + poll) * 1000);
      if (poll_number * poll < 20) {  // Flink's reader metrics: no commit reported yet
        world.job_committed = -1;
        world.commits_succeeded = 0;
      }
      const auto findings = world.Poll();
      world.last_ = findings;
      const auto cause = World::CauseOf(*findings, "enrich", "job-1")
                             ? World::CauseOf(*findings, "enrich", "job-1")
                             : World::CauseOf(*findings, "", "job-1");
      if (cause) {
        CHECK(*cause == Cause::kHealthy);
        shown = true;
      } else if (shown) {
        ++polls_without;
      }
    }
    CHECK(shown);
    CHECK(World::CauseOf(*world.last_, "enrich", "job-1") == Cause::kHealthy);
    CHECK(polls_without == 0);
  }
}

TEST_CASE("routine: a fresh start from earliest on an existing group is a replay", "[analysis]") {
  World world = HealthyJob();
  world.Run(60, "enrich", "job-1", [&](int s) { SteadyJob(world, s); });
  world.job_id = "job-2";
  world.job_start = world.now;
  world.job_current = -1;  // reads from offset 0, no restore
  world.job_committed = -1;
  world.commits_succeeded = 0;
  const auto seen = world.Run(60, "enrich", "job-2", [&](int s) {
    JobStep(world, s, 200);  // catches up, commits where it is
  });
  CHECK(seen.contains(Cause::kReplaying));
  CHECK_FALSE(seen.contains(Cause::kSharedGroupId));
  CHECK_FALSE(seen.contains(Cause::kRestoredFromOldPosition));
}

// Flink 2.x counts a trigger refused while the resubmitted job's tasks still deploy as a failed
// checkpoint; the first checkpoint then queues 16 s behind the replay's buffered records (CI,
// test_routine_operations[2.x-fresh-start]). Neither is a checkpoint failing.
TEST_CASE("routine: a trigger refused while a fresh job deploys is not checkpoints_failing",
          "[analysis]") {
  for (const double poll : {1.0, 15.0}) {  // the suite's poll, and lagsight's default
    CAPTURE(poll);
    World world = HealthyJob();
    world.poll_seconds = poll;
    world.Run(static_cast<int>(120 / poll), "enrich", "job-1", [&](int s) {
      SteadyJob(world, s);
      world.latest_completed_ms = static_cast<std::int64_t>((world.now + poll) * 1000);
    });
    REQUIRE(World::CauseOf(*world.last_, "enrich", "job-1") == Cause::kHealthy);
    world.job_id = "job-2";
    world.job_start = world.now;
    world.job_current = -1;  // from earliest, no restore
    world.job_committed = -1;
    world.commits_succeeded = 0;
    world.completed = 0;
    world.failed = 0;
    world.latest_completed_ms.reset();
    const double started = world.now;
    const auto seen = world.Run(static_cast<int>(90 / poll), "enrich", "job-2", [&](int) {
      const double age = world.now + world.poll_seconds - started;
      world.log_end += static_cast<std::int64_t>(50 * world.poll_seconds);
      world.job_current =
          std::min(world.log_end - 1,
                   world.job_current + static_cast<std::int64_t>(100 * world.poll_seconds));
      if (age >= 2) world.failed = 1;  // refused: tasks not running yet
      world.in_progress = age >= 3 && age < 17 ? 1 : 0;
      if (age >= 17) {  // the slow first checkpoint, then one every second
        world.completed = static_cast<std::int64_t>(age - 16);
        world.latest_completed_ms = static_cast<std::int64_t>((world.now + poll) * 1000);
        world.commits_succeeded = static_cast<double>(world.completed);
        world.job_committed = world.job_current + 1;
        world.committed["enrich"] = world.job_current + 1;
      }
    });
    CHECK_FALSE(seen.contains(Cause::kCheckpointsFailing));
  }
}

// The same refusal is no excuse once the run's checkpoints started: later failures count.
TEST_CASE("a fresh job whose checkpoints fail after the first attempt is checkpoints_failing",
          "[analysis]") {
  World world = HealthyJob();
  world.job_start = world.now;
  world.completed = 0;
  world.latest_completed_ms.reset();
  world.Run(40, "enrich", "job-1", [&](int second) {
    world.log_end += 5;
    world.job_current = world.log_end - 1;
    world.in_progress = second % 2;  // attempts start, then fail
    if (second % 2 == 0 && second > 0) world.failed++;
  });
  CHECK(World::CauseOf(*world.last_, "enrich", "job-1") == Cause::kCheckpointsFailing);
}

TEST_CASE("routine: a Flink poll that fails, or a job missing from one poll, changes nothing",
          "[analysis]") {
  World world = HealthyJob();
  world.Run(60, "enrich", "job-1", [&](int s) { SteadyJob(world, s); });
  const auto* before = World::FindingOf(*world.last_, "enrich", "job-1");
  REQUIRE(before != nullptr);
  const double since = before->since;
  world.flink_up = false;  // the job runs on, its REST API does not answer
  const auto down = world.Run(30, "enrich", "job-1", [&](int s) { SteadyJob(world, s); });
  CHECK(down == std::set<Cause>{Cause::kHealthy});  // held, and no Kafka-only verdict meanwhile
  CHECK_FALSE(World::CauseOf(*world.last_, "enrich").has_value());
  world.flink_up = true;
  world.job_present = false;
  world.Run(1, "enrich", "job-1", [&](int s) { SteadyJob(world, s); });
  world.job_present = true;
  const auto back = world.Run(10, "enrich", "job-1", [&](int s) { SteadyJob(world, s); });
  CHECK(back == std::set<Cause>{Cause::kHealthy});
  const auto* after = World::FindingOf(*world.last_, "enrich", "job-1");
  REQUIRE(after != nullptr);
  CHECK(after->since == since);  // the verdict's age survived the blips
}

TEST_CASE("lifecycle: a job restarting again and again is a restart_loop", "[analysis]") {
  World world = HealthyJob();
  world.Run(40, "enrich", "job-1", [&](int s) { SteadyJob(world, s); });
  const auto seen = world.Run(30, "enrich", "job-1", [&](int s) {
    world.log_end += 50;
    world.job_state = s % 8 < 3 ? "RESTARTING" : "RUNNING";
    if (s % 8 == 3) world.num_restarts = *world.num_restarts + 1;
  });
  CHECK(seen.contains(Cause::kRestartLoop));
  CHECK_FALSE(seen.contains(Cause::kCheckpointsFailing));
}

TEST_CASE("lifecycle: a job that vanished while its group falls behind is job_gone", "[analysis]") {
  World world = HealthyJob();
  world.Run(40, "enrich", "job-1", [&](int s) { SteadyJob(world, s); });
  world.job_present = false;
  const auto seen = world.Run(150, "enrich", "job-1", [&](int) { world.log_end += 50; });
  CHECK(seen.contains(Cause::kJobGone));
  CHECK_FALSE(seen.contains(Cause::kRestarting));
  CHECK_FALSE(World::CauseOf(*world.last_, "enrich").has_value());  // not judged Kafka-only yet
}
