// The analyzer over sequences of synthetic polls: history in, findings and diagnosis out.
// Time is a parameter, so minutes of behaviour run in microseconds.
#include "analysis/analyzer.h"

#include <catch.hpp>

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

  // The Flink job: position, checkpoint and commit counters.
  bool with_job = false;
  std::int64_t job_current = 0;    // last record read
  std::int64_t job_committed = 0;  // as Flink reports its last successful commit
  double interval_ms = 1000;
  std::int64_t completed = 0;
  std::int64_t failed = 0;
  std::optional<std::int64_t> latest_completed_ms;
  double commits_succeeded = 0;
  double commits_failed = 0;

  double now = 1'000'000;

  std::shared_ptr<const analysis::Findings> Poll() {
    now += 1;
    kafka_ = std::make_shared<kafka::KafkaSnapshot>();
    kafka_->all_topics = {"orders"};
    kafka_->topic_partitions["orders"] = 1;
    kafka_->partitions[{"orders", 0}] = {0, log_end};
    kafka_->offsets_retention_seconds = retention_seconds;
    for (const auto& [id, offset] : committed) {
      kafka::ConsumerGroup group;
      group.id = id;
      group.state = "empty";
      group.kind = kafka::GroupKind::kSimple;
      group.members = 0;
      group.committed[{"orders", 0}] = offset;
      kafka_->groups.push_back(group);
    }
    lags_ = std::make_shared<std::vector<analysis::GroupLag>>(analysis::ComputeGroupLags(*kafka_));
    if (with_job) {
      flink_ = std::make_shared<flink::FlinkSnapshot>();
      flink::FlinkJob job;
      job.overview = {"job-1", "enrich", "RUNNING", static_cast<std::int64_t>((now - 600) * 1000)};
      job.checkpoints.counts = {completed, failed, 0, 0};
      job.checkpoints.latest_completed_timestamp_ms = latest_completed_ms;
      job.checkpoint_config.interval_ms = interval_ms;
      flink::SourceReader reader;
      reader.name = "Source: enrich-source";
      reader.partitions[{"orders", 0}] = {job_current, job_committed};
      reader.commits_succeeded = commits_succeeded;
      reader.commits_failed = commits_failed;
      job.sources.push_back(reader);
      flink_->jobs.push_back(job);
    }
    analysis::SourcesView view;
    view.kafka[kCluster] = {kafka_.get(), lags_.get()};
    if (with_job) {
      view.flink["flink"] = {&flink_config_, flink_.get()};
      analyzer_->ObserveFlink("flink", view, now);
    }
    std::vector<analysis::OffsetRegression> regressions;
    if (previous_) regressions = analysis::FindOffsetRegressions(*previous_, *kafka_);
    previous_ = kafka_;
    return analyzer_->ObserveKafka(kCluster, regressions, view, now);
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
  std::set<Cause> Run(int seconds, const std::string& group, const std::string& job_id, Step step) {
    std::set<Cause> seen;
    for (int i = 0; i < seconds; ++i) {
      step(i);
      const auto findings = Poll();
      if (const auto cause = CauseOf(*findings, group, job_id)) seen.insert(*cause);
      last_ = findings;
    }
    return seen;
  }

  std::shared_ptr<const analysis::Findings> last_;

 private:
  config::DiagnosisConfig config_;
  config::FlinkClusterConfig flink_config_;
  std::unique_ptr<analysis::Analyzer> analyzer_;
  std::shared_ptr<kafka::KafkaSnapshot> kafka_;
  std::shared_ptr<const kafka::KafkaSnapshot> previous_;
  std::shared_ptr<std::vector<analysis::GroupLag>> lags_;
  std::shared_ptr<flink::FlinkSnapshot> flink_;
};

}  // namespace

TEST_CASE("Kafka-only: an idle topic with lag is healthy, never stalled") {
  World world;
  world.committed["idle"] = 900;  // 100 records behind, nothing arrives, nothing commits
  const auto seen = world.Run(120, "idle", "", [](int) {});
  CHECK(seen == std::set<Cause>{Cause::kHealthy});
}

TEST_CASE("Kafka-only: commits that stop while records arrive are stalled") {
  World world;
  world.committed["g"] = 1000;
  const auto seen = world.Run(60, "g", "", [&](int) { world.log_end += 10; });
  CHECK(seen.contains(Cause::kStalled));
  CHECK(World::CauseOf(*world.last_, "g") == Cause::kStalled);
}

TEST_CASE("Kafka-only: commits that move but fall further behind are really behind") {
  World world;
  world.committed["g"] = 1000;
  const auto seen = world.Run(60, "g", "", [&](int) {
    world.log_end += 20;
    world.committed["g"] += 5;
  });
  CHECK(World::CauseOf(*world.last_, "g") == Cause::kReallyBehind);
  CHECK_FALSE(seen.contains(Cause::kStalled));
}

TEST_CASE("Kafka-only: a committed offset that goes back is rewinding, then healthy again") {
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

TEST_CASE("Kafka-only: offsets of a group without members that near retention are expiring") {
  World world;
  world.retention_seconds = 60;
  world.committed["g"] = 1000;
  const auto seen = world.Run(30, "g", "", [](int) {});
  CHECK(World::CauseOf(*world.last_, "g") == Cause::kHealthy);
  world.Run(20, "g", "", [](int) {});
  CHECK(World::CauseOf(*world.last_, "g") == Cause::kOffsetsExpiring);
  const auto& group = world.last_->kafka.at(kCluster).groups.at(0);
  REQUIRE(group.offsets_expiry_seconds);
  CHECK(*group.offsets_expiry_seconds == Approx(60 - 49));
}

TEST_CASE("a Flink job whose checkpoints commit every 10 s: sawtooth, long_checkpoint_interval") {
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
  const auto& group = world.last_->kafka.at(kCluster).groups.at(0);
  CHECK(group.sawtooth.detected);
  REQUIRE(group.sawtooth.period_seconds);
  CHECK(*group.sawtooth.period_seconds == Approx(10).epsilon(0.05));
  CHECK(World::CauseOf(*world.last_, "enrich", "job-1") == Cause::kLongCheckpointInterval);
  CHECK_FALSE(seen.contains(Cause::kReallyBehind));
  CHECK_FALSE(seen.contains(Cause::kCheckpointsFailing));
}

TEST_CASE("a Flink job whose commits fail while checkpoints complete: commits_failing") {
  World world;
  world.with_job = true;
  world.committed["enrich"] = 1000;
  world.job_committed = 1000;
  world.job_current = 999;
  auto healthy_step = [&](int) {
    world.log_end += 5;
    world.job_current = world.log_end - 1;
    world.completed++;
    world.latest_completed_ms = static_cast<std::int64_t>((world.now + 1) * 1000);
    world.commits_succeeded++;
    world.job_committed = world.log_end;
    world.committed["enrich"] = world.log_end;
  };
  const auto before = world.Run(40, "enrich", "job-1", healthy_step);
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

TEST_CASE("a Flink job whose checkpoints stop completing: checkpoints_failing") {
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
