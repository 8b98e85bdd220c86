// World: the analyzer's test bench for tests/unit/analyzer_*_test.cpp. One Kafka cluster with one
// topic and simple groups, polled once a second by default, and an optional Flink cluster whose
// one job reads the topic; each Poll() builds both snapshots from its fields and hands them to a
// real analysis::Analyzer. Time is a parameter, so minutes of behaviour run in microseconds.
// HealthyJob, JobStep and SteadyJob script the job most scenarios start from.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "analysis/analyzer.h"

namespace lagsight::analyzer_testing {

using analysis::Cause;

inline constexpr const char* kCluster = "prod";

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

// A job that reads at once what arrives (50 records/s) and commits on each checkpoint (every
// second: its Kafka-side sawtooth stays below the threshold, so the only cause left is healthy).
inline constexpr int kCheckpointEvery = 1;

// One second of a job that reads `read_per_second` records at most (50 arrive) and commits its
// position on each checkpoint.
inline void JobStep(World& world, int second, std::int64_t read_per_second) {
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

inline void SteadyJob(World& world, int second) { JobStep(world, second, 1'000'000); }

inline World HealthyJob() {
  World world;
  world.with_job = true;
  world.interval_ms = 1000 * kCheckpointEvery;
  world.committed["enrich"] = 1000;
  world.job_committed = 1000;
  world.job_current = 999;
  world.latest_completed_ms = static_cast<std::int64_t>(world.now * 1000);
  return world;
}

}  // namespace lagsight::analyzer_testing
