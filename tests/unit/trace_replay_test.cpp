// Record and replay: a scenario fed to an Analyzer as the daemon feeds it, recorded, then
// replayed from the file, gives the same findings poll by poll; the recorder keeps its bound.
#include <fmt/format.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "temp_dir.h"
#include "trace/replay.h"
#include "trace/trace_format.h"
#include "trace/trace_recorder.h"

using namespace lagsight;
namespace fs = std::filesystem;

namespace {

template <typename T>
std::string Shown(const std::optional<T>& value) {
  return value ? fmt::format("{}", *value) : "none";
}

std::string Shown(const std::vector<kafka::TopicPartition>& partitions) {
  std::string text;
  for (const auto& tp : partitions) text += fmt::format("{}/{} ", tp.topic, tp.partition);
  return text;
}

// Everything the diagnosis says, and the per-group and per-source numbers, as text: equal
// findings give equal text (doubles shortest-round-trip, so any difference shows).
std::string Describe(const analysis::Findings& findings) {
  std::string text;
  for (const analysis::DiagnosisFinding& f : findings.diagnosis) {
    text += fmt::format("{}|{}|{}|{}|{}|{}|", f.kafka_cluster, f.group, f.job_id, f.job_name,
                        analysis::CauseName(f.cause), f.since);
    for (const analysis::Cause cause : f.evidence)
      text += analysis::CauseName(cause) + std::string(",");
    text += fmt::format("|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|", Shown(f.stuck_partitions),
                        Shown(f.beyond_log_end_partitions), Shown(f.unread_partitions),
                        f.idle_subtasks, f.source_subtasks, Shown(f.kafka_lag), Shown(f.flink_lag),
                        Shown(f.max_lag_seconds), Shown(f.flink_max_lag_seconds),
                        Shown(f.catch_up_seconds), Shown(f.checkpoint_age_seconds),
                        Shown(f.checkpoint_interval_seconds), f.history.size());
    for (const analysis::LagPoint& point : f.history) {
      text += fmt::format("{}:{}:{} ", point.time, point.kafka_lag, Shown(point.flink_lag));
    }
    text += '\n';
  }
  for (const auto& [cluster, kafka] : findings.kafka) {
    for (const analysis::GroupFindings& g : kafka->groups) {
      text += fmt::format("group {} {} {} {} {}\n", cluster, g.group, Shown(g.max_lag_seconds),
                          g.last_commit_time, Shown(g.catch_up_seconds));
    }
  }
  for (const auto& [cluster, flink] : findings.flink) {
    for (const analysis::SourceFindings& s : flink.sources) {
      text += fmt::format("source {} {} {} {} {}\n", cluster, s.job_id, s.commit_mode,
                          Shown(s.commit_failure_ratio), Shown(s.catch_up_seconds));
    }
  }
  return text;
}

// Two Kafka clusters and a Flink job reading "prod": the job keeps up, stalls, recovers; a
// Flink poll and a Kafka poll fail; a group's offset goes back; the config is reloaded; "dr" is
// polled but handed to the analyzer only now and then (its state reaches the trace beforehand).
class Scenario {
 public:
  explicit Scenario(trace::TraceRecorder* recorder) : recorder_(recorder) {
    flink_config_ = std::make_shared<config::FlinkClusterConfig>();
    flink_config_->name = "flink";
    flink_config_->kafka_cluster = "prod";
    flink_config_->groups = {{*config::Pattern::Compile("enrich.*"), "enrich", "", std::nullopt}};
    diagnosis_.window = std::chrono::seconds(20);
    diagnosis_.lag_threshold_records = 50;
    diagnosis_.lag_threshold = std::chrono::seconds(5);
    SetConfig();
  }

  // Runs `steps` polls; returns the described findings of every observation.
  std::vector<std::string> Run(int steps) {
    std::vector<std::string> seen;
    for (int step = 0; step < steps; ++step) {
      now_ += 1.3;
      Advance(step);
      if (step == 30) {
        diagnosis_.confirm_polls = 1;
        SetConfig();
      }
      PollDr(step);
      if (step % 2 == 0) seen.push_back(ObserveFlink(step == 35));
      seen.push_back(ObserveKafka(step == 40));
    }
    return seen;
  }

 private:
  void SetConfig() {
    analyzer_.SetConfig(diagnosis_);
    analyzer_.Retain({"prod", "dr"}, {"flink"});
    if (recorder_ != nullptr) {
      recorder_->RecordConfig(diagnosis_);
      recorder_->RecordRetain({"prod", "dr"}, {"flink"});
    }
  }

  void Advance(int step) {
    log_end_ += 10;
    const bool stalled = step >= 20 && step < 30;
    if (!stalled) job_current_ = log_end_ - 1 - (step % 3);
    if (!stalled && step % 2 == 0) {
      ++completed_;
      job_committed_ = job_current_ + 1;
      latest_checkpoint_ms_ = static_cast<std::int64_t>(now_ * 1000);
    }
    billing_ = step == 45 ? billing_ - 30 : billing_ + 9;
  }

  kafka::KafkaSnapshot KafkaSnapshot() const {
    kafka::KafkaSnapshot snapshot;
    snapshot.requested_at = now_ - 0.4;
    snapshot.all_topics = {"orders"};
    snapshot.topic_partitions["orders"] = 1;
    snapshot.partitions[{"orders", 0}] = {0, log_end_};
    snapshot.offsets_retention_seconds = 3600;
    for (const auto& [id, offset] :
         {std::pair{"billing", billing_}, std::pair{"enrich", job_committed_}}) {
      kafka::ConsumerGroup group;
      group.id = id;
      group.state = "stable";
      group.members = 1;
      group.committed[{"orders", 0}] = offset;
      snapshot.groups.push_back(group);
      snapshot.record_timestamps[{{"orders", 0}, offset, false}] = {
          static_cast<std::int64_t>((now_ - static_cast<double>(log_end_ - offset) / 8) * 1000),
          false};
    }
    return snapshot;
  }

  std::string ObserveKafka(bool fails) {
    std::optional<kafka::KafkaSnapshot> snapshot;
    if (!fails) snapshot = KafkaSnapshot();
    view_.kafka["prod"] = analysis::DeriveKafkaPoll(snapshot, view_.kafka["prod"]);
    const auto findings = analyzer_.ObserveKafka("prod", view_, now_);
    if (recorder_ != nullptr) recorder_->RecordKafkaObservation("prod", view_, now_);
    return Describe(*findings);
  }

  void PollDr(int step) {
    if (step % 3 != 0) return;
    kafka::KafkaSnapshot snapshot = KafkaSnapshot();
    snapshot.groups.resize(1);
    view_.kafka["dr"] = analysis::DeriveKafkaPoll(std::move(snapshot), view_.kafka["dr"]);
    if (step % 9 != 0) return;
    analyzer_.ObserveKafka("dr", view_, now_);
    if (recorder_ != nullptr) recorder_->RecordKafkaObservation("dr", view_, now_);
  }

  std::string ObserveFlink(bool fails) {
    auto snapshot = std::make_shared<flink::FlinkSnapshot>();
    snapshot->requested_at = now_ - 0.2;
    snapshot->metrics_fetch_interval_ms = 1000;
    flink::FlinkJob job;
    job.overview = {"job-1", "enrich", "RUNNING", 1'000'000, 0, {}};
    job.checkpoints.counts = {completed_, 0, 0, 0};
    job.checkpoints.latest_completed_timestamp_ms = latest_checkpoint_ms_;
    job.checkpoint_config.interval_ms = 2600;
    flink::SourceReader reader;
    reader.vertex_id = "v1";
    reader.name = "Source: orders";
    reader.connector = flink::SourceConnector::kKafkaSource;
    reader.partitions[{"orders", 0}] = {job_current_, job_committed_};
    reader.subtasks_with_splits = {0};
    reader.commits_succeeded = static_cast<double>(completed_);
    reader.commits_failed = 0;
    job.sources.push_back(reader);
    snapshot->jobs.push_back(job);
    view_.flink["flink"] = {flink_config_, fails ? nullptr : snapshot};
    const auto findings = analyzer_.ObserveFlink("flink", view_, now_);
    if (recorder_ != nullptr) recorder_->RecordFlinkObservation("flink", view_, now_);
    return Describe(*findings);
  }

  trace::TraceRecorder* recorder_;
  analysis::Analyzer analyzer_{config::DiagnosisConfig{}};
  config::DiagnosisConfig diagnosis_;
  analysis::SourcesView view_;
  std::shared_ptr<config::FlinkClusterConfig> flink_config_;
  double now_ = 1'765'000'000.05;
  std::int64_t log_end_ = 1000;
  std::int64_t job_current_ = 999;
  std::int64_t job_committed_ = 1000;
  std::int64_t billing_ = 900;
  std::int64_t completed_ = 0;
  std::optional<std::int64_t> latest_checkpoint_ms_;
};

std::vector<std::string> Replayed(const std::string& path) {
  std::vector<std::string> seen;
  const auto replayed =
      trace::ReplayTrace(path, [&](const trace::TraceEvent& event,
                                   const analysis::Findings* findings, const trace::Replayer&) {
        const auto* kafka = std::get_if<trace::KafkaEvent>(&event);
        if (findings != nullptr && !(kafka && kafka->cluster == "dr")) {
          seen.push_back(Describe(*findings));
        }
      });
  REQUIRE(replayed.ok());
  return seen;
}

}  // namespace

TEST_CASE("replay: a recorded scenario replays to the same findings, poll by poll", "[trace]") {
  TempDir dir;
  const std::string path = dir.File("trace.jsonl");
  std::vector<std::string> direct;
  {
    auto recorder = trace::TraceRecorder::Open(path, trace::kDefaultTraceMaxBytes);
    REQUIRE(recorder.ok());
    Scenario scenario(recorder->get());
    direct = scenario.Run(60);
  }
  CHECK_FALSE(fs::exists(path + ".1"));
  const std::vector<std::string> replayed = Replayed(path);
  REQUIRE(replayed.size() == direct.size());
  for (std::size_t i = 0; i < direct.size(); ++i) {
    INFO("observation " << i);
    CHECK(replayed[i] == direct[i]);
  }
  // The scenario is not trivial: the stall shows in the diagnosis.
  bool behind = false;
  for (const std::string& findings : direct)
    behind |= findings.find("really_behind") != std::string::npos;
  CHECK(behind);
  // And the recording is what the analyzer saw: a scenario without recorder gives the same.
  Scenario unrecorded(nullptr);
  CHECK(unrecorded.Run(60) == direct);
}

TEST_CASE("replay: the recorder rotates at its bound and each file replays alone", "[trace]") {
  TempDir dir;
  const std::string path = dir.File("trace.jsonl");
  constexpr std::size_t kBound = 8 * 1024;
  {
    std::ofstream(path) << "a trace of the run before\n";
    auto recorder = trace::TraceRecorder::Open(path, kBound);
    REQUIRE(recorder.ok());
    CHECK(fs::file_size(path + ".1") == 26);  // the previous run's trace is kept
    Scenario scenario(recorder->get());
    scenario.Run(60);
  }
  CHECK(fs::exists(path + ".1"));
  CHECK_FALSE(fs::exists(path + ".2"));
  const auto unwritable = trace::TraceRecorder::Open(dir.File("no/such/dir"), kBound);
  REQUIRE_FALSE(unwritable.ok());
  CHECK(unwritable.error().message == dir.File("no/such/dir") + ": No such file or directory");
  // Each file holds at most the bound plus the observation that crossed it (< 4 KiB here).
  CHECK(fs::file_size(path) < kBound + 4096);
  CHECK(fs::file_size(path + ".1") < kBound + 4096);
  for (const std::string& file : {path, path + ".1"}) {
    std::ifstream in(file);
    std::string first;
    std::getline(in, first);
    CHECK_THAT(first, Catch::StartsWith("{\"v\":1,\"event\":\"config\""));
    CHECK_FALSE(Replayed(file).empty());
  }
}

TEST_CASE("replay: lagsight replay prints each poll's diagnosis, or why the trace is bad",
          "[trace]") {
  TempDir dir;
  const std::string path = dir.File("trace.jsonl");
  {
    auto recorder = trace::TraceRecorder::Open(path, trace::kDefaultTraceMaxBytes);
    REQUIRE(recorder.ok());
    Scenario(recorder->get()).Run(30);
  }
  const auto run = [](const std::string& trace_path) {
    std::FILE* out = std::tmpfile();
    std::FILE* err = std::tmpfile();
    const int code = trace::RunReplayCommand(trace_path, out, err);
    const auto text = [](std::FILE* file) {
      std::rewind(file);
      std::string content;
      for (int c; (c = std::fgetc(file)) != EOF;) content += static_cast<char>(c);
      std::fclose(file);
      return content;
    };
    return std::tuple{code, text(out), text(err)};
  };
  const auto [code, out, err] = run(path);
  CHECK(code == 0);
  CHECK_THAT(out, Catch::StartsWith("config\nretain kafka=[dr,prod] flink=[flink]\n"
                                    "2025-12-06T05:46:41.350Z kafka dr\n"));
  CHECK_THAT(out, Catch::Contains("\n  prod/enrich/enrich: "));
  CHECK_THAT(out, Catch::Contains("\n  prod/billing/-: healthy (evidence: none)\n"));
  CHECK_THAT(err, Catch::Contains("events replayed"));

  std::ofstream(path, std::ios::app) << "{\"v\":1,\"event\":\"kafka\"\n";
  const auto [bad_code, bad_out, bad_err] = run(path);
  CHECK(bad_code == 1);
  CHECK_THAT(bad_err, Catch::StartsWith("lagsight replay: " + path + ": line "));
  CHECK_THAT(bad_err, Catch::Contains(": not JSON"));
}

// What the daemon's analysis strand spends per Kafka poll with --trace.record
// (docs/development.md#recording-a-trace-for-a-bug-report); run by hand: lagsight_unit_tests
// "[.trace_cost]".
TEST_CASE("replay: the cost of recording a poll of 100,000 group-partitions", "[.trace_cost]") {
  kafka::KafkaSnapshot snapshot;
  for (int t = 0; t < 100; ++t) {
    const std::string topic = fmt::format("topic-{}", t);
    snapshot.all_topics.push_back(topic);
    snapshot.topic_partitions[topic] = 10;
    for (int p = 0; p < 10; ++p) snapshot.partitions[{topic, p}] = {0, 1'000'000 + p, {}};
  }
  for (int g = 0; g < 100; ++g) {
    kafka::ConsumerGroup group;
    group.id = fmt::format("group-{}", g);
    kafka::CommittedOffsets::sequence_type committed;
    for (const auto& [tp, offsets] : snapshot.partitions) committed.emplace_back(tp, 999'000);
    group.committed.adopt_sequence(std::move(committed));
    snapshot.groups.push_back(std::move(group));
  }
  TempDir dir;
  analysis::SourcesView view;
  view.kafka["prod"] = analysis::DeriveKafkaPoll(snapshot, {});
  auto recorder = trace::TraceRecorder::Open(dir.File("trace"), trace::kDefaultTraceMaxBytes);
  REQUIRE(recorder.ok());
  const auto start = std::chrono::steady_clock::now();
  (*recorder)->RecordKafkaObservation("prod", view, 1);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN(fmt::format("{} bytes in {:.3f} s", (*recorder)->bytes_in_file(), seconds));
}
