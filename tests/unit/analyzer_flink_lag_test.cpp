// The analyzer's Flink-side lag and pairing: the age of the metric values Flink serves, a stalled
// job's backlog, jobs paired with their group at default polls and metric refreshes, and the job's
// lag in seconds.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "analyzer_world.h"

using namespace lagsight;
using namespace lagsight::analyzer_testing;

TEST_CASE("Flink-side lag accounts for the age of the metric values Flink serves", "[analysis]") {
  World world = HealthyJob();
  world.fetch_interval_ms = 10'000;  // Flink's default
  std::int64_t shown_max = 0;
  world.Run(120, "enrich", "job-1", [&](int s) {
    world.log_end += 150;
    // Flink refreshes the served value every 10 s: the position is up to 10 s old.
    if (s % 10 == 0) world.job_current = world.log_end - 1;
    if (s % kCheckpointEvery ==
        kCheckpointEvery -
            1) {  // commits where the job really is, not where Flink last said it was
      world.completed++;
      world.latest_completed_ms = static_cast<std::int64_t>((world.now + 1) * 1000);
      world.commits_succeeded++;
      world.job_committed = world.log_end;
      world.committed["enrich"] = world.log_end;
    }
    if (world.last_ != nullptr) {
      for (const auto& join : world.last_->flink.at("flink").joins) {
        for (const auto& topic : join.topics) shown_max = std::max(shown_max, topic.flink_lag_sum);
      }
    }
  });
  // Against the latest log end this showed up to 1,500 records (10 s of input).
  CHECK(shown_max <= 150);
  for (const auto& d : world.last_->diagnosis) {
    UNSCOPED_INFO(d.group << " " << d.job_id << " " << analysis::CauseName(d.cause));
  }
  CHECK(World::CauseOf(*world.last_, "enrich", "job-1") == Cause::kHealthy);
}

TEST_CASE(
    "routine: a restore whose reader reports late and whose commits trail is not offsets_missing",
    "[analysis]") {
  World world = HealthyJob();
  world.Run(60, "enrich", "job-1", [&](int s) { SteadyJob(world, s); });
  // A burst of 3000 records, read and committed: the window's input rate is now high, so the
  // restored job's backlog is only ~25 s of it.
  world.Run(5, "enrich", "job-1", [&](int s) {
    if (s == 0) world.log_end += 3000;
    SteadyJob(world, s);
  });
  world.job_present = false;  // cancelled
  world.Run(2, "enrich", "job-1", [&](int s) {
    world.log_end += 50;
    (void)s;
  });
  world.job_present = true;
  world.job_id = "job-2";
  world.job_start = world.now;
  world.restored_ms = static_cast<std::int64_t>((world.now + 1) * 1000);
  world.reader_reports = false;
  world.commits_succeeded = 0;
  world.job_committed = -1;
  const std::int64_t restored_at = world.committed["enrich"] - 3000 - 1;
  std::set<Cause> seen;
  for (int s = 0; s < 90; ++s) {
    world.log_end += 40;
    if (s == 6) {
      world.reader_reports = true;
      world.job_current = restored_at;
    } else if (s > 6) {
      world.job_current += 50;  // slowly catching up, under backpressure
    }
    world.completed++;
    world.latest_completed_ms = static_cast<std::int64_t>((world.now + 1) * 1000);
    if (s > 25) {  // commits reach the broker late, and the counters later still
      world.committed["enrich"] = world.job_current + 1;
      if (s > 35) world.commits_succeeded++;
    }
    const auto findings = world.Poll();
    if (const auto* f = World::FindingOf(*findings, "enrich", "job-2")) {
      seen.insert(f->cause);
      std::string evidence;
      for (const Cause c : f->evidence) evidence += std::string(analysis::CauseName(c)) + " ";
      UNSCOPED_INFO(s << ": " << analysis::CauseName(f->cause) << " [" << evidence << "]");
    }
    world.last_ = findings;
  }
  CHECK(seen.contains(Cause::kRestoredFromOldPosition));
  CHECK_FALSE(seen.contains(Cause::kOffsetsMissing));
}

TEST_CASE("Flink-side lag of a stalled job reaches the whole backlog within one metric refresh",
          "[analysis]") {
  World world = HealthyJob();
  world.fetch_interval_ms = 10'000;
  world.Run(30, "enrich", "job-1", [&](int s) { SteadyJob(world, s); });
  world.log_end += 20'000;  // a burst; the job reads nothing more
  std::int64_t shown = 0;
  world.Run(15, "enrich", "job-1", [&](int) {
    if (world.last_ == nullptr) return;
    for (const auto& join : world.last_->flink.at("flink").joins) {
      for (const auto& topic : join.topics) shown = topic.flink_lag_sum;
    }
  });
  CHECK(shown == 20'000);
}

TEST_CASE("a job that commits more often than Flink refreshes its metrics is paired with its group",
          "[analysis]") {
  // Checkpoints (and commits) every 2 s; the JobManager refreshes the reader's gauges every
  // 10 s. At every poll the group holds offsets newer than the job's position as Flink serves
  // it, so only the group's recent past shows the job's committedOffset.
  World world;
  world.with_job = true;
  world.fetch_interval_ms = 10'000;
  world.interval_ms = 2'000;
  world.committed["enrich"] = 1000;
  world.committed["another-reader"] = 1000;  // a plain consumer of the same topic, near the head
  world.job_committed = 1000;
  world.job_current = 999;
  std::int64_t committed_now = 1000;
  const auto seen = world.Run(60, "enrich", "job-1", [&](int second) {
    world.log_end += 50;
    world.committed["another-reader"] = world.log_end - 7;
    if (second % 2 == 1) {
      world.completed++;
      world.latest_completed_ms = static_cast<std::int64_t>((world.now + 1) * 1000);
      world.commits_succeeded++;
      committed_now = world.log_end;
      world.committed["enrich"] = committed_now;
    }
    if (second % 10 == 0) {  // the metric refresh: the values Flink serves for the next 10 s
      world.job_current = world.log_end - 1;
      world.job_committed = committed_now;
    }
  });
  CHECK(seen.contains(Cause::kHealthy));
  const auto* pair = World::FindingOf(*world.last_, "enrich", "job-1");
  REQUIRE(pair != nullptr);
  CHECK(pair->cause == Cause::kHealthy);
  CHECK(World::FindingOf(*world.last_, "another-reader", "job-1") == nullptr);
}

TEST_CASE("a job is paired at a 15 s Kafka poll that never sees the offsets Flink reports",
          "[analysis]") {
  // Commits every 2 s (at even seconds), the JobManager's refresh every 10 s (at 3 past),
  // Kafka and Flink polled every 15 s: no poll sees the group hold the job's committedOffset,
  // now or before. The group's offsets passed through it between two polls, and no other group's
  // did: that pairs them. With a second reader at the head, both passed through it: unpaired,
  // never guessed.
  for (const bool second_reader : {false, true}) {
    INFO("second reader: " << second_reader);
    World world;
    world.with_job = true;
    world.poll_seconds = 15;
    world.fetch_interval_ms = 10'000;
    world.interval_ms = 2'000;
    const double t0 = world.now;
    const auto log_end_at = [&](double t) {
      return static_cast<std::int64_t>(50 * (t - t0)) + 1000;
    };
    const auto committed_at = [&](double t) {
      return log_end_at(t0 + 2 * std::floor((t - t0) / 2));
    };
    std::set<std::string> groups_paired;
    for (int poll = 0; poll < 12; ++poll) {
      const double t = world.now + world.poll_seconds;
      const double refreshed = t0 + 3 + 10 * std::floor((t - t0 - 3) / 10);
      world.log_end = log_end_at(t);
      world.committed["enrich"] = committed_at(t);
      if (second_reader) world.committed["another-reader"] = log_end_at(t) - 7;
      world.job_current = log_end_at(refreshed) - 1;
      world.job_committed = committed_at(refreshed);
      world.completed = poll * 7;
      world.commits_succeeded = poll * 7;
      world.latest_completed_ms = static_cast<std::int64_t>(t * 1000);
      const auto findings = world.Poll();
      for (const auto& finding : findings->diagnosis) {
        if (finding.job_id == "job-1" && !finding.group.empty())
          groups_paired.insert(finding.group);
      }
    }
    if (second_reader) {
      CHECK_FALSE(groups_paired.contains("another-reader"));
    } else {
      CHECK(groups_paired == std::set<std::string>{"enrich"});
    }
  }
}

TEST_CASE("a new job is paired at its reader's first report, not a metric refresh later",
          "[analysis]") {
  // Until the JobManager's first metric refresh the reader reports no partitions, so lagsight
  // does not know the job's topic yet; the group's earlier offsets must be known anyway.
  World world;
  world.with_job = true;
  world.fetch_interval_ms = 10'000;
  world.interval_ms = 1'000;
  world.reader_reports = false;
  world.committed["enrich"] = 1000;
  const double t0 = world.now;
  std::optional<int> paired_at;
  for (int second = 1; second <= 30 && !paired_at; ++second) {
    world.log_end += 100;
    world.committed["enrich"] = world.log_end - 30;  // a checkpoint commits every second
    world.completed++;
    world.commits_succeeded++;
    world.latest_completed_ms = static_cast<std::int64_t>((t0 + second) * 1000);
    if (second % 10 == 7) {  // first served at 7 s (the next at 17 s), taken 3 s before
      world.reader_reports = true;
      world.job_current = world.log_end - 300 - 20;
      world.job_committed = world.log_end - 300 - 30;
    }
    const auto findings = world.Poll();
    if (World::FindingOf(*findings, "enrich", "job-1") != nullptr) paired_at = second;
  }
  REQUIRE(paired_at);
  CHECK(*paired_at <= 10);
}

// The job's next record (the one at currentOffset + 1 as Flink serves it) per poll.
struct JobLateness {
  std::vector<double> seconds;
  std::vector<double> records;  // the Flink-side lag
  std::vector<std::string> methods;
  std::vector<std::optional<double>> catch_up;       // the source's
  std::vector<std::optional<double>> pair_catch_up;  // the pair's, on the status page
};

void RecordLateness(const World& world, JobLateness& out) {
  if (world.last_ == nullptr) return;
  const auto& flink = world.last_->flink.at("flink");
  REQUIRE(flink.joins.size() == 1);
  REQUIRE(flink.joins[0].partitions.size() == 1);
  const auto& partition = flink.joins[0].partitions[0];
  REQUIRE(partition.lag_seconds);
  out.seconds.push_back(partition.lag_seconds->seconds);
  out.records.push_back(static_cast<double>(partition.flink_lag.value_or(-1)));
  out.methods.push_back(analysis::LagSecondsMethodName(partition.lag_seconds->method));
  REQUIRE(flink.sources.size() == 1);
  out.catch_up.push_back(flink.sources[0].catch_up_seconds);
  const auto* finding = World::FindingOf(*world.last_, "enrich", "job-1");
  out.pair_catch_up.push_back(finding != nullptr ? finding->catch_up_seconds : std::nullopt);
}

TEST_CASE("Flink-side lag in seconds: the age of the job's next record, without a sawtooth",
          "[analysis]") {
  World world = HealthyJob();
  world.now = 1'700'000'000;  // record timestamps are checked against plausible write times
  world.job_start = world.now - 600;
  world.fetch_interval_ms = 10'000;        // Flink serves positions refreshed every 10 s
  std::map<std::int64_t, double> written;  // log end after each poll -> that poll's time
  const auto step = [&](bool with_timestamps) {
    return [&, with_timestamps](int s) {
      world.log_end += 100;
      written[world.log_end] = world.now + world.poll_seconds;
      // The job reads as fast as records arrive, 40 s behind (a backlog that matters: more than
      // lag_threshold, 30 s, of input); Flink refreshes every 10 s.
      if (s % 10 == 0) {
        const auto behind = std::prev(written.end(), 41);
        world.job_current = behind->first - 1;
        const std::int64_t next = world.job_current + 1;  // written in the poll after `behind`
        if (with_timestamps) {
          world.record_timestamps[{{"orders", 0}, next}] = {
              static_cast<std::int64_t>((std::next(behind)->second - 0.5) * 1000), false};
        }
      }
      world.commits_succeeded++;
      world.completed++;
      world.latest_completed_ms = static_cast<std::int64_t>((world.now + 1) * 1000);
    };
  };
  world.Run(60, "enrich", "job-1", step(false));
  SECTION("from the record's timestamp") {
    JobLateness lateness;
    world.Run(60, "enrich", "job-1", [&](int s) {
      step(true)(s);
      RecordLateness(world, lateness);
    });
    // At each refresh the job's next record is 39.5 s old. Measured at `now`, that would read
    // 39.5..48.5 s, rising between two refreshes and dropping at each. lagsight reads it as of the
    // earliest time Flink can have taken the position (the previous poll, 1 s before the value
    // first showed): 38.5 s at every poll, a lower bound within one poll of the truth.
    for (std::size_t i = 1; i < lateness.seconds.size(); ++i) {  // [0] predates the timestamps
      UNSCOPED_INFO(i << ": " << lateness.seconds[i] << " " << lateness.methods[i]);
      CHECK(lateness.methods[i] == "record_timestamp");
      CHECK(lateness.seconds[i] == Approx(38.5).margin(0.01));
    }
    // Keeping pace 40 s behind: the backlog does not shrink, so it never catches up.
    REQUIRE(lateness.catch_up.back());
    CHECK(std::isinf(*lateness.catch_up.back()));
  }
  SECTION("interpolated from the log-end history when no record was read") {
    JobLateness lateness;
    world.Run(30, "enrich", "job-1", [&](int s) {
      step(false)(s);
      RecordLateness(world, lateness);
    });
    // The record was written in the poll interval 40 s before the refresh (the first of its
    // 100 records): 39 s as of the poll before the refresh.
    for (std::size_t i = 0; i < lateness.seconds.size(); ++i) {
      CHECK(lateness.methods[i] == "interpolated");
      CHECK(lateness.seconds[i] == Approx(39).margin(0.05));
    }
  }
  SECTION("catching up: a finite catch-up time that falls to 0") {
    JobLateness lateness;
    // Twice as fast as the input now, from where it stands.
    world.Run(60, "enrich", "job-1", [&](int s) {
      world.log_end += 100;
      world.job_current = std::min(world.log_end - 1, world.job_current + 200);
      (void)s;
      world.commits_succeeded++;
      world.completed++;
      world.latest_completed_ms = static_cast<std::int64_t>((world.now + 1) * 1000);
      RecordLateness(world, lateness);
    });
    // The backlog (about 4,000 records) shrinks by 100/s. The pace is fitted over the window
    // (30 s here), so the catch-up time starts high while the window still holds the level part,
    // and falls from then on; once the window holds only the catching up, it is the backlog's
    // own time to go. Below 30 s of input (lag_threshold) the backlog no longer matters: 0.
    std::vector<double> finite;
    for (std::size_t i = 0; i < lateness.catch_up.size(); ++i) {
      const auto& eta = lateness.catch_up[i];
      if (!eta || *eta == 0 || std::isinf(*eta)) continue;
      finite.push_back(*eta);
      if (i >= 31) CHECK(*eta == Approx(lateness.records[i] / 100.0).epsilon(0.2));
    }
    REQUIRE(finite.size() >= 5);
    CHECK(std::is_sorted(finite.rbegin(), finite.rend()));
    REQUIRE(lateness.catch_up.back());
    CHECK(*lateness.catch_up.back() == 0);
    CHECK(lateness.seconds.back() == 0);
    CHECK(lateness.methods.back() == "caught_up");
    REQUIRE(lateness.pair_catch_up.back());
    CHECK(*lateness.pair_catch_up.back() == 0);
  }
}
