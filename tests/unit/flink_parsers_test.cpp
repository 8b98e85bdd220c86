// The Flink REST parsers on responses recorded from real Flink 1.20 and 2.x MiniClusters
// (tests/fixtures, written by tests/harness/record_flink_fixtures.py), and on broken input.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "flink/collector.h"
#include "flink/job_graph_parsers.h"
#include "flink/rest_parsers.h"

namespace {

namespace fs = std::filesystem;
using namespace lagsight::flink;

const fs::path kFixtures = fs::path(LAGSIGHT_TEST_DATA) / "../../fixtures";

std::string Fixture(const std::string& version, const std::string& file) {
  std::ifstream in(kFixtures / version / file);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("recorded responses of both Flink versions parse", "[flink]") {
  for (const std::string& version : {std::string("flink-1.20"), std::string("flink-2.x")}) {
    INFO(version);
    const auto jobs = ParseJobsOverview(Fixture(version, "jobs_overview.json"));
    REQUIRE(jobs.ok());
    REQUIRE_FALSE(jobs->empty());
    bool found_enrichment = false;
    for (const auto& job : *jobs) {
      CHECK(job.id.size() == 32);
      if (job.name == "orders-enrichment") {
        found_enrichment = true;
        CHECK(job.state == "RUNNING");
        CHECK(job.start_time_ms.has_value());
      }
    }
    CHECK(found_enrichment);

    const auto vertices = ParseJobVertices(Fixture(version, "job.json"));
    REQUIRE(vertices.ok());
    REQUIRE(vertices->size() == 2);
    CHECK((*vertices)[0].name == "Source: orders-source");
    CHECK((*vertices)[0].parallelism == 2);

    const auto checkpoints = ParseCheckpoints(200, Fixture(version, "checkpoints.json"));
    REQUIRE(checkpoints.ok());
    CHECK(checkpoints->counts.completed >= 1);
    CHECK(checkpoints->latest_completed_timestamp_ms.has_value());
    CHECK(checkpoints->latest_duration_ms.has_value());

    const auto config = ParseCheckpointConfig(200, Fixture(version, "checkpoints_config.json"));
    REQUIRE(config.ok());
    CHECK(config->enabled);
    CHECK(*config->interval_ms == 1000);
    CHECK(config->timeout_ms.has_value());

    // Flink 1.20 and 2.x say "disabled" with HTTP 200 and interval Long.MAX_VALUE.
    const auto disabled =
        ParseCheckpointConfig(200, Fixture(version, "checkpoints_config_disabled.json"));
    REQUIRE(disabled.ok());
    CHECK_FALSE(disabled->enabled);
    CHECK_FALSE(disabled->interval_ms.has_value());

    const auto failing = ParseCheckpoints(200, Fixture(version, "checkpoints_failing.json"));
    REQUIRE(failing.ok());
    CHECK(failing->counts.failed >= 1);
    CHECK(failing->latest_failed_timestamp_ms.has_value());

    const auto ids = ParseMetricIds(Fixture(version, "vertex_metrics_list.json"));
    REQUIRE(ids.ok());
    int partition_ids = 0;
    for (const auto& id : *ids) {
      const auto classified = ClassifySourceMetricId(id);
      if (classified && classified->partition) {
        ++partition_ids;
        CHECK(classified->partition->escaped_topic == "orders_v2");
      }
    }
    CHECK(partition_ids == 6);  // 3 partitions x current/committed

    const auto values = ParseMetricValues(Fixture(version, "vertex_metrics_values.json"));
    REQUIRE(values.ok());
    const SourceReader reader = CombineSourceMetrics("v", "Source: orders-source", *values);
    CHECK(reader.partitions.size() == 3);
    for (const auto& [tp, offsets] : reader.partitions) CHECK(offsets.current.has_value());
    CHECK(reader.commits_succeeded.has_value());
    CHECK(reader.commits_failed.has_value());
    CHECK(reader.busy_ms_per_second.has_value());
  }
}

TEST_CASE("a 404 'checkpointing not enabled' (older Flink) is a state, not an error", "[flink]") {
  const std::string body = R"({"errors":["Checkpointing has not been enabled."]})";
  const auto stats = ParseCheckpoints(404, body);
  REQUIRE(stats.ok());
  CHECK_FALSE(stats->enabled);
  CHECK_FALSE(ParseCheckpointConfig(404, body)->enabled);
  CHECK_FALSE(ParseCheckpoints(500, "{}").ok());
}

TEST_CASE("garbage, truncated and wrong-typed responses are errors, never crashes", "[flink]") {
  const std::string truncated = Fixture("flink-2.x", "jobs_overview.json").substr(0, 40);
  for (const std::string& body :
       {std::string(), std::string("not json"), truncated, std::string("[1,2,3]"),
        std::string("{\"jobs\": 5}"), std::string(1 << 20, '['), std::string("\x00\xff\xfe", 3)}) {
    CHECK_FALSE(ParseJobsOverview(body).ok());
    CHECK_FALSE(ParseJobVertices(body).ok());
    CHECK_FALSE(ParseCheckpoints(200, body).ok());
    CHECK_FALSE(ParseMetricValues(body == "[1,2,3]" ? "{}" : body).ok());
  }
  // Wrong-typed fields inside valid JSON are skipped, not trusted.
  const auto jobs = ParseJobsOverview(R"({"jobs":[{"jid":7},{"jid":"a","state":["x"]}]})");
  REQUIRE(jobs.ok());
  REQUIRE(jobs->size() == 1);
  CHECK(jobs->front().state == "UNKNOWN");
}

TEST_CASE("metric values that are not finite numbers are left empty", "[flink]") {
  const auto values = ParseMetricValues(
      R"([{"id":"a","value":"NaN"},{"id":"b","value":"-Infinity"},{"id":"c","value":"12"},)"
      R"({"id":"d","value":"1e3"},{"id":"e","value":"x"},{"id":"f"},{"value":"3"}])");
  REQUIRE(values.ok());
  CHECK_FALSE(values->at("a").has_value());
  CHECK_FALSE(values->at("b").has_value());
  CHECK(*values->at("c") == 12);
  CHECK(*values->at("d") == 1000);
  CHECK_FALSE(values->at("e").has_value());
  CHECK_FALSE(values->at("f").has_value());
  CHECK(values->size() == 6);
}

TEST_CASE("source metric ids", "[flink]") {
  const auto offset = ClassifySourceMetricId(
      "3.Source__my.source.KafkaSourceReader.topic.a_b.partition.12.committedOffset");
  REQUIRE(offset);
  CHECK(offset->subtask == 3);
  CHECK(offset->kind == SourceMetricId::Kind::kCommittedOffset);
  CHECK(offset->partition->escaped_topic == "a_b");
  CHECK(offset->partition->partition == 12);
  CHECK(ClassifySourceMetricId("0.busyTimeMsPerSecond")->kind == SourceMetricId::Kind::kBusyTime);
  CHECK_FALSE(ClassifySourceMetricId("0.Source__x.KafkaSourceReader.KafkaConsumer.io-ratio"));
  CHECK_FALSE(ClassifySourceMetricId("busyTimeMsPerSecond"));
  CHECK_FALSE(ClassifySourceMetricId("x.busyTimeMsPerSecond"));
  CHECK_FALSE(
      ClassifySourceMetricId("0.Source__x.KafkaSourceReader.topic.t.partition.z.currentOffset"));
}

TEST_CASE("counters sum, lags max, offsets per partition, -1 means unset", "[flink]") {
  const SourceReader reader = CombineSourceMetrics(
      "v", "Source: s",
      {{"0.Source__s.KafkaSourceReader.commitsSucceeded", 2},
       {"1.Source__s.KafkaSourceReader.commitsSucceeded", 3},
       {"0.Source__s.watermarkLag", 10},
       {"1.Source__s.watermarkLag", 40},
       {"0.Source__s.KafkaSourceReader.topic.t.partition.0.currentOffset", 99},
       {"0.Source__s.KafkaSourceReader.topic.t.partition.0.committedOffset", -1},
       {"1.Source__s.pendingRecords", std::nullopt}});
  CHECK(*reader.commits_succeeded == 5);
  CHECK(*reader.watermark_lag_ms == 40);
  CHECK(*reader.partitions.at({"t", 0}).current == 99);
  CHECK_FALSE(reader.partitions.at({"t", 0}).committed.has_value());
  CHECK_FALSE(reader.pending_records.has_value());
}

TEST_CASE("Flink's -1 for an event-time lag not known yet is left out, not reported as a lag",
          "[flink]") {
  // currentEmitEventTimeLag is -1 until the subtask emitted a record; a source with two idle
  // subtasks and none that emitted has no emit lag at all.
  const SourceReader idle = CombineSourceMetrics("v", "Source: s",
                                                 {{"0.Source__s.currentEmitEventTimeLag", -1},
                                                  {"1.Source__s.currentEmitEventTimeLag", -1},
                                                  {"0.Source__s.watermarkLag", -1}});
  CHECK_FALSE(idle.emit_event_time_lag_ms.has_value());
  CHECK_FALSE(idle.watermark_lag_ms.has_value());
  const SourceReader one = CombineSourceMetrics(
      "v", "Source: s",
      {{"0.Source__s.currentEmitEventTimeLag", -1}, {"1.Source__s.currentEmitEventTimeLag", 250}});
  CHECK(*one.emit_event_time_lag_ms == 250);
}

TEST_CASE("each subtask's watermark lag is kept: the largest holds the watermark back", "[flink]") {
  const SourceReader reader = CombineSourceMetrics("v", "Source: s",
                                                   {{"0.Source__s.watermarkLag", 95'000},
                                                    {"1.Source__s.watermarkLag", 900},
                                                    {"2.Source__s.watermarkLag", -1}});
  CHECK(*reader.watermark_lag_ms == 95'000);
  CHECK(reader.subtask_watermark_lag_ms == std::map<int, double>{{0, 95'000}, {1, 900}});
}

TEST_CASE("the subtasks that hold a split are those reporting a partition's offset", "[flink]") {
  // Subtask 1 was assigned partition 3 and has read nothing yet (-1): it holds a split all the
  // same. Subtask 2 reports only task metrics: it holds none.
  const SourceReader reader = CombineSourceMetrics(
      "v", "Source: s",
      {{"0.Source__s.KafkaSourceReader.topic.t.partition.0.currentOffset", 99},
       {"0.Source__s.KafkaSourceReader.topic.t.partition.2.committedOffset", 40},
       {"1.Source__s.KafkaSourceReader.topic.t.partition.3.currentOffset", -1},
       {"2.Source__s.watermarkLag", 10},
       {"2.busyTimeMsPerSecond", 0}});
  CHECK(reader.subtasks_with_splits == std::set<int>{0, 1});
}

TEST_CASE("the legacy FlinkKafkaConsumer's offsets and counters mean the KafkaSource's",
          "[flink]") {
  // Its gauges sit in "KafkaConsumer.topic.<t>.partition.<p>", plural names; its commit counters
  // directly in the operator's group. Before a position it reports placeholders, not offsets.
  Anomalies anomalies;
  const SourceReader reader = CombineSourceMetrics(
      "v", "Source: clicks",
      {{"0.Source__clicks.KafkaConsumer.topic.a_b.partition.0.currentOffsets", 41},
       {"0.Source__clicks.KafkaConsumer.topic.a_b.partition.0.committedOffsets", 40},
       {"1.Source__clicks.KafkaConsumer.topic.a_b.partition.1.currentOffsets", -915623761773.0},
       {"1.Source__clicks.KafkaConsumer.topic.a_b.partition.1.committedOffsets", -915623761776.0},
       {"0.Source__clicks.commitsSucceeded", 7},
       {"1.Source__clicks.commitsSucceeded", 2},
       {"1.Source__clicks.commitsFailed", 1},
       {"0.Source__clicks.KafkaConsumer.records-lag-max", 12},
       {"0.Source__clicks.KafkaConsumer.current-offsets.a_b-0", 41}},
      &anomalies);
  CHECK(reader.connector == SourceConnector::kFlinkKafkaConsumer);
  CHECK(*reader.partitions.at({"a_b", 0}).current == 41);
  CHECK(*reader.partitions.at({"a_b", 0}).committed == 40);
  // Placeholders: the partition is held (subtask 1 reads it) but has no position yet.
  CHECK(reader.partitions.count({"a_b", 1}) == 0);
  CHECK(reader.subtasks_with_splits == std::set<int>{0, 1});
  CHECK(*reader.commits_succeeded == 9);
  CHECK(*reader.commits_failed == 1);
  CHECK(*reader.records_lag_max == 12);
  CHECK(anomalies.empty());

  const auto legacy =
      ClassifySourceMetricId("2.Source__c.KafkaConsumer.topic.t.partition.4.committedOffsets");
  REQUIRE(legacy);
  CHECK(legacy->legacy);
  CHECK(legacy->kind == SourceMetricId::Kind::kCommittedOffset);
  CHECK(legacy->partition->partition == 4);
  // The singular names are the KafkaSource's, and only under its reader's group.
  CHECK_FALSE(
      ClassifySourceMetricId("0.Source__c.KafkaConsumer.topic.t.partition.4.currentOffset"));
  CHECK_FALSE(ClassifySourceMetricId("0.commitsSucceeded"));
  CHECK_FALSE(ClassifySourceMetricId("0.Source__c.KafkaSourceReader.commitsSucceeded")->legacy);

  // Other negative values are still no offsets, and the KafkaSource has no placeholders.
  Anomalies noted;
  const SourceReader odd = CombineSourceMetrics(
      "v", "Source: s",
      {{"0.Source__s.KafkaConsumer.topic.t.partition.0.currentOffsets", -5},
       {"0.Source__s.KafkaSourceReader.topic.t.partition.1.currentOffset", -915623761773.0}},
      &noted);
  CHECK(odd.partitions.empty());
  CHECK(noted.size() == 2);
  CHECK(odd.connector == SourceConnector::kKafkaSource);
}

TEST_CASE("metric queries are split to keep URLs short", "[flink]") {
  std::vector<std::string> ids(100, std::string(50, 'a'));
  const auto batches = BatchMetricQueries(ids, 1000);
  CHECK(batches.size() == 6);
  for (const auto& batch : batches) CHECK(batch.size() <= 1000);
  CHECK(BatchMetricQueries({"a b", "c>d"}, 1000) == std::vector<std::string>{"a%20b,c%3Ed"});
}

TEST_CASE("mutated recorded responses never crash a parser", "[flink]") {
  // A deterministic poor man's fuzzer: flip, drop and duplicate bytes of real responses.
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  const auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int parsed_ok = 0;
  for (const char* file : {"jobs_overview.json", "job.json", "checkpoints.json",
                           "checkpoints_config.json", "vertex_metrics_values.json"}) {
    const std::string original = Fixture("flink-2.x", file);
    for (int round = 0; round < 400; ++round) {
      std::string body = original;
      for (int edit = 0; edit < 1 + static_cast<int>(next() % 4); ++edit) {
        const std::size_t at = next() % body.size();
        switch (next() % 3) {
          case 0:
            body[at] = static_cast<char>(next());
            break;
          case 1:
            body.erase(at, 1 + next() % 16);
            break;
          default:
            body.insert(at, body.substr(at, 1 + next() % 16));
            break;
        }
        if (body.empty()) body = "{";
      }
      parsed_ok += ParseJobsOverview(body).ok() + ParseJobVertices(body).ok() +
                   ParseCheckpoints(200, body).ok() + ParseCheckpointConfig(200, body).ok() +
                   ParseMetricValues(body).ok() + ParseMetricIds(body).ok() +
                   ParseVertexLoad(body).ok();
    }
  }
  CHECK(parsed_ok > 0);  // some mutations stay valid JSON; the point is that none crashed
}

TEST_CASE("impossible integers are left out and noted, never converted with undefined behaviour",
          "[flink]") {
  // 2^63 and 1e300 do not fit an int64; -5 is no count; "NaN"/"-Infinity" are not numbers.
  Anomalies anomalies;
  const auto stats = ParseCheckpoints(200, R"({
      "counts": {"completed": 9223372036854775808, "failed": -5, "restored": 1e300,
                 "in_progress": "NaN"},
      "latest": {"completed": {"id": -3, "latest_ack_timestamp": 1e300},
                 "failed": {"failure_timestamp": "-Infinity"},
                 "restored": {"restore_timestamp": -1}}})",
                                      &anomalies);
  REQUIRE(stats.ok());
  CHECK(stats->counts.completed == 0);
  CHECK(stats->counts.failed == 0);
  CHECK(stats->counts.restored == 0);
  CHECK(stats->counts.in_progress == 0);
  CHECK_FALSE(stats->latest_completed_timestamp_ms.has_value());
  CHECK_FALSE(stats->latest_failed_timestamp_ms.has_value());
  CHECK_FALSE(stats->restored_timestamp_ms.has_value());  // -1: Flink's "unknown", no anomaly
  // completed, failed, restored, latest_ack_timestamp (the id is not read without it).
  CHECK(anomalies.size() == 4);

  Anomalies overview_anomalies;
  const auto jobs = ParseJobsOverview(
      R"({"jobs":[{"jid":"a","state":"RUNNING","start-time":-1,"last-modification":1e300},
                  {"jid":"b","state":"RUNNING","start-time":-7,
                   "last-modification":9223372036854775807}]})",
      &overview_anomalies);
  REQUIRE(jobs.ok());
  CHECK_FALSE((*jobs)[0].start_time_ms.has_value());
  CHECK_FALSE((*jobs)[0].last_modification_ms.has_value());
  CHECK_FALSE((*jobs)[1].start_time_ms.has_value());
  CHECK((*jobs)[1].last_modification_ms == INT64_MAX);
  CHECK(overview_anomalies.size() == 2);

  Anomalies vertex_anomalies;
  const auto vertices = ParseJobVertices(
      R"({"vertices":[{"id":"v","name":"n","parallelism":1e300}]})", &vertex_anomalies);
  REQUIRE(vertices.ok());
  CHECK((*vertices)[0].parallelism == 0);
  CHECK(vertex_anomalies.size() == 1);
}

TEST_CASE("impossible offsets and counters from source metrics are left out and noted", "[flink]") {
  const std::string p = "0.Source__s.KafkaSourceReader.topic.t.partition.";
  const auto values = ParseMetricValues(R"([
      {"id":")" + p + R"(0.currentOffset","value":"1e300"},
      {"id":")" + p + R"(1.currentOffset","value":"9223372036854775808"},
      {"id":")" + p + R"(2.currentOffset","value":"-5"},
      {"id":")" + p + R"(3.currentOffset","value":"-1"},
      {"id":")" + p + R"(4.currentOffset","value":"NaN"},
      {"id":")" + p + R"(5.currentOffset","value":"-Infinity"},
      {"id":")" + p + R"(6.currentOffset","value":"42"},
      {"id":"0.Source__s.KafkaSourceReader.commitsSucceeded","value":"-5"},
      {"id":"1.Source__s.KafkaSourceReader.commitsSucceeded","value":"7"}])");
  REQUIRE(values.ok());
  Anomalies anomalies;
  const SourceReader reader = CombineSourceMetrics("v", "Source: s", *values, &anomalies);
  REQUIRE(reader.partitions.size() == 1);
  CHECK(reader.partitions.begin()->first.partition == 6);
  CHECK(reader.partitions.begin()->second.current == 42);
  CHECK(reader.commits_succeeded == 7);
  CHECK(anomalies.size() == 4);  // 1e300, 2^63, -5 offsets and the -5 counter
}

TEST_CASE("numRestarts of a job", "[flink]") {
  CHECK(ParseNumRestarts(R"([{"id":"numRestarts","value":"4"}])").value() == 4);
  CHECK_FALSE(ParseNumRestarts("[]").value().has_value());
  Anomalies anomalies;
  CHECK_FALSE(
      ParseNumRestarts(R"([{"id":"numRestarts","value":"-2"}])", &anomalies).value().has_value());
  CHECK(anomalies.size() == 1);
  CHECK_FALSE(ParseNumRestarts("{").ok());
}

TEST_CASE("last-modification of the recorded overviews", "[flink]") {
  for (const std::string& version : {std::string("flink-1.20"), std::string("flink-2.x")}) {
    INFO(version);
    const auto jobs = ParseJobsOverview(Fixture(version, "jobs_overview.json"));
    REQUIRE(jobs.ok());
    for (const auto& job : *jobs) CHECK(job.last_modification_ms >= job.start_time_ms);
  }
}

TEST_CASE("metrics.fetcher.update-interval from /jobmanager/config", "[flink]") {
  const auto config = [](std::string value) {
    return R"([{"key":"rest.port","value":"8081"},{"key":"metrics.fetcher.update-interval",)"
           R"("value":)" +
           value + "}]";
  };
  CHECK(ParseMetricsFetchIntervalMs(config(R"("10 s")")).value() == 10000);
  CHECK(ParseMetricsFetchIntervalMs(config(R"("2500")")).value() == 2500);
  CHECK(ParseMetricsFetchIntervalMs(config(R"("1min")")).value() == 60000);
  CHECK(ParseMetricsFetchIntervalMs(config(R"("500 ms")")).value() == 500);
  CHECK(ParseMetricsFetchIntervalMs(config("3000")).value() == 3000);
  CHECK(ParseMetricsFetchIntervalMs(R"([{"key":"rest.port","value":"8081"}])").value() ==
        kDefaultMetricsFetchIntervalMs);
  CHECK_FALSE(ParseMetricsFetchIntervalMs(config(R"("soon")")).ok());
  CHECK_FALSE(ParseMetricsFetchIntervalMs(config(R"("-5 s")")).ok());
  CHECK_FALSE(ParseMetricsFetchIntervalMs("{}").ok());
  CHECK(ParseFlinkDurationMs("2 h") == 7'200'000);
  CHECK_FALSE(ParseFlinkDurationMs("").has_value());
  CHECK_FALSE(ParseFlinkDurationMs("10 fortnights").has_value());
}

TEST_CASE("recorded numRestarts and JobManager configuration of both Flink versions", "[flink]") {
  for (const std::string& version : {std::string("flink-1.20"), std::string("flink-2.x")}) {
    INFO(version);
    const auto restarts = ParseNumRestarts(Fixture(version, "job_metrics_num_restarts.json"));
    REQUIRE(restarts.ok());
    CHECK(*restarts == 0);
    // The harness's MiniCluster sets the fetcher interval to 1 s.
    const auto interval = ParseMetricsFetchIntervalMs(Fixture(version, "jobmanager_config.json"));
    REQUIRE(interval.ok());
    CHECK(*interval == 1000);
  }
}
