// The analyzer over sequences of synthetic polls: history in, findings and diagnosis out.
// Time is a parameter, so minutes of behaviour run in microseconds.
#include "analysis/analyzer.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

using namespace lagsight;
using analysis::Cause;

namespace {

constexpr const char* kCluster = "prod";

// One Kafka cluster with one topic and simple groups, polled once a second, plus an optional
// Flink cluster whose one job reads the topic.
class World {
 public:
  World() {
    config_.window = std::chrono::seconds(30);
    config_.confirm_polls = 2;
    config_.lag_threshold_records = 100;
    analyzer_ = std::make_unique<analysis::Analyzer>(config_);
    flink_config_.name = "flink";
    flink_config_.kafka_cluster = kCluster;
  }

  std::int64_t log_end = 1000;
  std::map<std::string, std::int64_t> committed;  // group -> committed offset on partition 0
  std::optional<double> retention_seconds;
  // Timestamps of the records lagsight read, as the Kafka poll would hand them over.
  std::map<kafka::RecordKey, kafka::RecordTimestamp> record_timestamps;

  // The Flink job: position, checkpoint and commit counters.
  bool with_job = false;
  std::int64_t job_current = 0;    // last record read
  std::int64_t job_committed = 0;  // as Flink reports its last successful commit
  double interval_ms = 1000;
  std::int64_t completed = 0;
  std::int64_t failed = 0;
  std::int64_t in_progress = 0;  // checkpoints under way
  std::optional<std::int64_t> latest_completed_ms;
  double commits_succeeded = 0;
  double commits_failed = 0;
  std::string job_state = "RUNNING";
  std::optional<std::int64_t> num_restarts = 0;
  std::optional<std::int64_t> restored_ms;
  double min_pause_ms = 0;
  double fetch_interval_ms = 1000;     // the JobManager's metrics.fetcher.update-interval
  bool job_present = true;             // false: missing from the Flink poll
  std::string job_id = "job-1";        // the job Flink reports
  double job_start = 1'000'000 - 600;  // unix seconds
  bool flink_up = true;                // false: the Flink poll fails
  bool reader_reports = true;          // false: the source exists but reports no partitions yet
  bool flink_polled = true;            // false: this poll is Kafka's alone (Flink's is late)
  double flink_poll_seconds = 0;       // how long the Flink poll took (it began that long ago)
  // How long before the Flink snapshot arrived the Kafka poll began (0: unknown, taken as "at
  // the poll"): its log ends may then predate records the job read.
  double kafka_poll_began_before = 0;

  double now = 1'000'000;
  double poll_seconds = 1;  // between polls (Flink and Kafka are polled together)
  config::FlinkClusterConfig& flink_config() { return flink_config_; }
  // Changes the diagnosis settings as a reload does (history kept).
  void Reconfigure(const std::function<void(config::DiagnosisConfig&)>& change) {
    change(config_);
    analyzer_->SetConfig(config_);
  }

  // One second of a job that keeps up: 5 records arrive and are read, a checkpoint completes
  // at the next poll and commits them.
  void CheckpointedSecond() {
    log_end += 5;
    job_current = log_end - 1;
    completed++;
    latest_completed_ms = static_cast<std::int64_t>((now + poll_seconds) * 1000);
    commits_succeeded++;
    job_committed = log_end;
    committed["enrich"] = log_end;
  }

  std::shared_ptr<const analysis::Findings> Poll() {
    now += poll_seconds;
    auto kafka_ = std::make_unique<kafka::KafkaSnapshot>();
    kafka_->all_topics = {"orders"};
    kafka_->topic_partitions["orders"] = 1;
    kafka_->partitions[{"orders", 0}] = {0, log_end};
    kafka_->offsets_retention_seconds = retention_seconds;
    kafka_->record_timestamps = record_timestamps;
    if (kafka_poll_began_before > 0) kafka_->requested_at = now - kafka_poll_began_before;
    for (const auto& [id, offset] : committed) {
      kafka::ConsumerGroup group;
      group.id = id;
      group.state = "empty";
      group.kind = kafka::GroupKind::kSimple;
      group.members = 0;
      group.committed[{"orders", 0}] = offset;
      kafka_->groups.push_back(group);
    }
    // As the daemon's Kafka source does on its worker.
    kafka_poll_ = analysis::DeriveKafkaPoll(std::move(*kafka_), kafka_poll_);
    if (with_job && flink_polled) {
      flink_ = std::make_shared<flink::FlinkSnapshot>();
      flink_->metrics_fetch_interval_ms = fetch_interval_ms;
      flink_->requested_at = now - flink_poll_seconds;
      flink::FlinkJob job;
      job.overview = {job_id,       "enrich",
                      job_state,    static_cast<std::int64_t>(job_start * 1000),
                      num_restarts, {}};
      job.checkpoints.counts = {completed, failed, 0, in_progress};
      job.checkpoints.latest_completed_timestamp_ms = latest_completed_ms;
      job.checkpoints.restored_timestamp_ms = restored_ms;
      job.checkpoint_config.interval_ms = interval_ms;
      job.checkpoint_config.min_pause_ms = min_pause_ms;
      if (job_state == "RUNNING") {
        flink::SourceReader reader;
        reader.vertex_id = "v1";
        reader.name = "Source: enrich-source";
        std::optional<std::int64_t> committed_gauge;
        if (job_committed >= 0) committed_gauge = job_committed;
        if (reader_reports) reader.partitions[{"orders", 0}] = {job_current, committed_gauge};
        reader.commits_succeeded = commits_succeeded;
        reader.commits_failed = commits_failed;
        job.sources.push_back(reader);
      }
      if (job_present) flink_->jobs.push_back(job);
    }
    analysis::SourcesView view;
    view.kafka[kCluster] = kafka_poll_;
    if (with_job) {
      view.flink["flink"] = {std::make_shared<const config::FlinkClusterConfig>(flink_config_),
                             flink_up ? flink_ : nullptr};
      if (flink_polled) analyzer_->ObserveFlink("flink", view, now);
    }
    return analyzer_->ObserveKafka(kCluster, view, now);
  }

  static std::optional<Cause> CauseOf(const analysis::Findings& findings, const std::string& group,
                                      const std::string& job_id = "") {
    for (const auto& verdict : findings.diagnosis) {
      if (verdict.group == group && verdict.job_id == job_id) return verdict.cause;
    }
    return std::nullopt;
  }

  // Polls `seconds` times, calling `step` before each; returns every cause seen for the pair.
  template <typename Step>
  std::set<Cause> Run(int seconds, const std::string& group, const std::string& pair_job,
                      Step step) {
    std::set<Cause> seen;
    for (int i = 0; i < seconds; ++i) {
      step(i);
      const auto findings = Poll();
      if (const auto cause = CauseOf(*findings, group, pair_job)) seen.insert(*cause);
      last_ = findings;
    }
    return seen;
  }

  std::shared_ptr<const analysis::Findings> last_;

  static const analysis::DiagnosisFinding* FindingOf(const analysis::Findings& findings,
                                                     const std::string& group,
                                                     const std::string& job_id = "") {
    for (const auto& verdict : findings.diagnosis) {
      if (verdict.group == group && verdict.job_id == job_id) return &verdict;
    }
    return nullptr;
  }

 private:
  config::DiagnosisConfig config_;
  config::FlinkClusterConfig flink_config_;
  std::unique_ptr<analysis::Analyzer> analyzer_;
  analysis::KafkaPoll kafka_poll_;
  std::shared_ptr<flink::FlinkSnapshot> flink_;
};

}  // namespace

TEST_CASE("Kafka-only: an idle topic with lag is healthy, never stalled", "[analysis]") {
  World world;
  world.committed["idle"] = 900;  // 100 records behind, nothing arrives, nothing commits
  const auto seen = world.Run(120, "idle", "", [](int) {});
  CHECK(seen == std::set<Cause>{Cause::kHealthy});
}

TEST_CASE("Kafka-only: commits that stop while records arrive are stalled", "[analysis]") {
  World world;
  world.committed["g"] = 1000;
  // Never seen committing: three windows (90 s) before it is stalled.
  auto seen = world.Run(85, "g", "", [&](int) { world.log_end += 10; });
  CHECK_FALSE(seen.contains(Cause::kStalled));
  seen = world.Run(10, "g", "", [&](int) { world.log_end += 10; });
  CHECK(World::CauseOf(*world.last_, "g") == Cause::kStalled);
}

TEST_CASE("Kafka-only: stalled is judged against the group's own commit period", "[analysis]") {
  World world;
  world.committed["slow"] = 1000;  // commits every 50 s (a long flush): never stalled for it
  world.committed["fast"] = 1000;  // commits every 5 s, then stops
  bool fast_stopped = false;
  const auto slow = world.Run(300, "slow", "", [&](int second) {
    world.log_end += 10;
    if (second % 50 == 49) world.committed["slow"] = world.log_end;
    if (second == 150) fast_stopped = true;
    if (!fast_stopped && second % 5 == 4) world.committed["fast"] = world.log_end;
  });
  CHECK_FALSE(slow.contains(Cause::kStalled));
  // 150 s without a commit is 30 periods of 5 s: stalled (after max(window, 3 periods)).
  CHECK(World::CauseOf(*world.last_, "fast") == Cause::kStalled);
}

TEST_CASE("Kafka-only: commits that move but fall further behind are really behind", "[analysis]") {
  World world;
  world.committed["g"] = 1000;
  const auto seen = world.Run(60, "g", "", [&](int) {
    world.log_end += 20;
    world.committed["g"] += 5;
  });
  CHECK(World::CauseOf(*world.last_, "g") == Cause::kReallyBehind);
  CHECK_FALSE(seen.contains(Cause::kStalled));
}

TEST_CASE("Kafka-only: a committed offset that goes back is rewinding, then healthy again",
          "[analysis]") {
  World world;
  world.committed["g"] = 1000;
  world.Run(10, "g", "", [](int) {});
  world.committed["g"] = 500;
  world.Run(3, "g", "", [](int) {});
  CHECK(World::CauseOf(*world.last_, "g") == Cause::kRewinding);
  world.committed["g"] = 1000;
  world.Run(40, "g", "", [](int) {});
  CHECK(World::CauseOf(*world.last_, "g") == Cause::kHealthy);
}

TEST_CASE("Kafka-only: offsets of a group without members that near retention are expiring",
          "[analysis]") {
  World world;
  world.retention_seconds = 60;
  world.committed["g"] = 1000;
  const auto seen = world.Run(30, "g", "", [](int) {});
  CHECK(World::CauseOf(*world.last_, "g") == Cause::kHealthy);
  world.Run(20, "g", "", [](int) {});
  CHECK(World::CauseOf(*world.last_, "g") == Cause::kOffsetsExpiring);
  const auto& group = world.last_->kafka.at(kCluster)->groups.at(0);
  REQUIRE(group.offsets_expiry_seconds);
  CHECK(*group.offsets_expiry_seconds == Approx(60 - 49));
}

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

namespace {

// A job that reads at once what arrives (50 records/s) and commits on each checkpoint (every
// second: its Kafka-side sawtooth stays below the threshold, so the only cause left is healthy).
constexpr int kCheckpointEvery = 1;

// One second of a job that reads `read_per_second` records at most (50 arrive) and commits its
// position on each checkpoint.
void JobStep(World& world, int second, std::int64_t read_per_second) {
  world.log_end += 50;
  world.job_current = std::min(world.log_end - 1, world.job_current + read_per_second);
  if (second % kCheckpointEvery == kCheckpointEvery - 1) {
    world.completed++;
    world.latest_completed_ms = static_cast<std::int64_t>((world.now + 1) * 1000);
    world.commits_succeeded++;
    world.job_committed = world.job_current + 1;
    world.committed["enrich"] = world.job_current + 1;
  }
}

void SteadyJob(World& world, int second) { JobStep(world, second, 1'000'000); }

World HealthyJob() {
  World world;
  world.with_job = true;
  world.interval_ms = 1000 * kCheckpointEvery;
  world.committed["enrich"] = 1000;
  world.job_committed = 1000;
  world.job_current = 999;
  world.latest_completed_ms = static_cast<std::int64_t>(world.now * 1000);
  return world;
}

}  // namespace

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

// Topics whose names share a prefix or sort next to each other, each partition with its own pace:
// the lag in seconds of each comes from its own log-end history (walked topic by topic), and a
// partition the poll did not read starts its history afresh when it is read again.
TEST_CASE("lag in seconds: each partition from its own history, a gap starts it afresh",
          "[analysis]") {
  analysis::Analyzer analyzer{config::DiagnosisConfig{}};
  analysis::KafkaPoll previous;
  // Records a second arriving on each partition; the group's offsets never move.
  const std::vector<std::pair<kafka::TopicPartition, std::int64_t>> paces{
      {{"a", 0}, 1}, {{"a", 1}, 2}, {{"a-b", 0}, 4}, {{"ab", 0}, 5}};
  const double start = 1'000'000;
  std::shared_ptr<const analysis::Findings> findings;
  const auto poll = [&](int second, bool read_a1) {
    kafka::KafkaSnapshot snapshot;
    snapshot.topic_partitions = {{"a", 2}, {"a-b", 1}, {"ab", 1}};
    snapshot.all_topics = {"a", "a-b", "ab"};
    kafka::ConsumerGroup group;
    group.id = "g";
    group.state = "empty";
    group.kind = kafka::GroupKind::kSimple;
    group.members = 0;
    for (const auto& [tp, pace] : paces) {
      group.committed[tp] = 100;  // the first poll's log end: every later record is unread
      if (tp == kafka::TopicPartition{"a", 1} && !read_a1) continue;
      snapshot.partitions[tp] = {0, 100 + pace * second};
    }
    snapshot.groups.push_back(group);
    previous = analysis::DeriveKafkaPoll(std::move(snapshot), previous);
    analysis::SourcesView view;
    view.kafka["prod"] = previous;
    findings = analyzer.ObserveKafka("prod", view, start + second);
  };
  const auto seconds_of = [&](const std::string& topic, std::int32_t partition) {
    for (const auto& group : findings->kafka.at("prod")->groups) {
      for (const auto& lag_seconds : group.lag_seconds) {
        if (lag_seconds.topic != topic) continue;
        for (const auto& entry : lag_seconds.partitions) {
          if (entry.partition == partition) return std::optional(entry.value);
        }
      }
    }
    return std::optional<analysis::LagSeconds>();
  };
  for (int second = 0; second <= 10; ++second) poll(second, true);
  // The record at offset 100 was written 1/pace seconds after the first poll.
  for (const auto& [tp, pace] : paces) {
    INFO(tp.topic << "/" << tp.partition);
    const auto value = seconds_of(tp.topic, tp.partition);
    REQUIRE(value);
    CHECK(value->method == analysis::LagSecondsMethod::kInterpolated);
    CHECK(value->seconds == Approx(10.0 - 1.0 / static_cast<double>(pace)));
  }
  poll(11, false);  // a/1 not read: no lag, so no lag in seconds
  CHECK_FALSE(seconds_of("a", 1));
  poll(12, true);
  // Its history begins again now: the record is at least as old as that, no older is known.
  const auto again = seconds_of("a", 1);
  REQUIRE(again);
  CHECK(again->method == analysis::LagSecondsMethod::kLowerBound);
  CHECK(again->seconds == 0);
  CHECK(seconds_of("a-b", 0)->seconds == Approx(12.0 - 1.0 / 4));
}
