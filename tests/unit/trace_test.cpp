// Traces (lib/trace): every field round-trips byte for byte, a replayed trace gives the findings
// the daemon's analyzer gave, bad input is an error and never a crash, and the recorder keeps its
// bound on disk.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "temp_dir.h"
#include "trace/replay.h"
#include "trace/trace_format.h"
#include "trace/trace_reader.h"
#include "trace/trace_recorder.h"

using namespace lagsight;
namespace fs = std::filesystem;

namespace {

config::Pattern MustCompile(const std::string& text) { return *config::Pattern::Compile(text); }

// A snapshot with every field set, and strings JSON must escape (or cannot hold as text).
kafka::KafkaSnapshot FullKafkaSnapshot() {
  kafka::KafkaSnapshot snapshot;
  kafka::ConsumerGroup group;
  group.id = "orders \"enrich\"\\\n\x01";
  group.state = "stable";
  group.kind = kafka::GroupKind::kConsumer;
  group.members = 3;
  group.committed[{"orders.v2", 0}] = 9'223'372'036'854'775'807;
  group.committed[{"orders.v2", 7}] = -1;
  group.offsets_known = false;
  group.read_committed = true;
  snapshot.groups.push_back(group);
  kafka::ConsumerGroup plain;
  plain.id = std::string("bytes \xff\xfe not UTF-8", 18);
  plain.state = "empty";
  plain.kind = kafka::GroupKind::kSimple;
  snapshot.groups.push_back(plain);
  snapshot.topic_partitions = {{"orders.v2", 8}, {"caf\xc3\xa9", 1}};
  snapshot.all_topics = {"orders.v2", "caf\xc3\xa9"};
  snapshot.partitions[{"orders.v2", 0}] = {5, 100, 90};
  snapshot.partitions[{"orders.v2", 1}] = {std::nullopt, std::nullopt, std::nullopt};
  snapshot.partial_errors = {"group x: timed out"};
  snapshot.cluster_id = "abc-123";
  snapshot.offsets_retention_seconds = 604800.125;
  snapshot.bootstraps = {{"a:9092", "abc-123", "", {{"orders.v2", 8}}},
                         {"b:9092", std::nullopt, "connection refused", {}}};
  snapshot.record_timestamps[{{"orders.v2", 0}, 50, true}] = {1'700'000'000'123, true};
  snapshot.record_timestamps[{{"orders.v2", 0}, 51, false}] = {-5, false};
  snapshot.record_timestamp_fetches_total = std::numeric_limits<std::uint64_t>::max();
  snapshot.record_timestamp_cache_entries = 42;
  snapshot.requested_at = 1'765'000'000.1234567;
  snapshot.markers_only[{{"orders.v2", 0}, 99, true}] = 100;
  kafka::ShareGroup share;
  share.id = "queue";
  share.state = "stable";
  share.members = 1;
  share.partitions = {{{"orders", 0}, 15, 3}, {{"orders", 1}, -1, std::nullopt}};
  share.member_list = {{"m", "c", "/h", "", {{"orders", 0}, {"orders", 1}}}};
  snapshot.share_groups = {share, kafka::ShareGroup{"broken", "empty", {}, false, {}, {}}};
  return snapshot;
}

flink::FlinkSnapshot FullFlinkSnapshot() {
  flink::FlinkSnapshot snapshot;
  flink::FlinkJob job;
  job.overview = {"a1b2", "enrich \u00e9", "RUNNING", 1'700'000'000'000, 4, 1'700'000'001'000};
  job.vertices = {{"v1", "Source: orders", 4}, {"v2", "Sink", 1}};
  job.checkpoints.enabled = false;
  job.checkpoints.counts = {10, 2, 1, 1};
  job.checkpoints.latest_completed_id = 10;
  job.checkpoints.latest_completed_timestamp_ms = 1'700'000'002'000;
  job.checkpoints.latest_duration_ms = 0.1;
  job.checkpoints.latest_size_bytes = 1e300;
  job.checkpoints.latest_failed_timestamp_ms = 1'700'000'003'000;
  job.checkpoints.restored_timestamp_ms = 1'700'000'004'000;
  job.checkpoints.restored_from_savepoint = false;
  job.checkpoint_config = {false, 60000, 600000, 0.5, 123456789012345678901.0};
  job.checkpoint_stats_reported = false;
  flink::SourceReader reader;
  reader.vertex_id = "v1";
  reader.name = "Source: orders";
  reader.connector = flink::SourceConnector::kFlinkKafkaConsumer;
  reader.partitions[{"orders_v2", 0}] = {99, 100};
  reader.partitions[{"orders_v2", 1}] = {std::nullopt, std::nullopt};
  reader.subtasks_with_splits = {0, 3};
  reader.commits_succeeded = 5;
  reader.commits_failed = 1;
  reader.pending_records = std::numeric_limits<double>::infinity();
  reader.records_lag_max = -std::numeric_limits<double>::infinity();
  reader.emit_event_time_lag_ms = 1.0 / 3;
  reader.watermark_lag_ms = 2e-310;  // subnormal
  reader.subtask_watermark_lag_ms = {{0, 12.5}, {3, -0.0}};
  reader.busy_ms_per_second = 1000;
  reader.backpressured_ms_per_second = 0;
  reader.idle_ms_per_second = 5e-324;
  job.sources.push_back(reader);
  job.read_committed = true;
  snapshot.jobs.push_back(job);
  snapshot.partial_errors = {"job x: 500"};
  snapshot.metrics_fetch_interval_ms = 10000;
  snapshot.requested_at = 1'765'000'000.5;
  return snapshot;
}

config::DiagnosisConfig FullDiagnosisConfig() {
  config::DiagnosisConfig diagnosis;
  diagnosis.window = std::chrono::milliseconds(123'456);
  diagnosis.confirm_polls = 3;
  diagnosis.lag_threshold_records = 5000;
  diagnosis.lag_threshold = std::chrono::milliseconds(7);
  diagnosis.expiry_warning_ratio = 0.3;
  diagnosis.checkpoint_stale_gaps = 2.5;
  diagnosis.commit_failure_ratio = 0.1;
  diagnosis.stalled_commit_periods = 4;
  diagnosis.restart_loop_restarts = 9;
  diagnosis.job_gone_after = std::chrono::milliseconds(1001);
  diagnosis.lateness_targets = {{config::LatenessTarget::Of::kGroups, MustCompile("orders-.*"),
                                 std::chrono::milliseconds(60'000)}};
  diagnosis.commit_modes = {{MustCompile("legacy-.*"), config::CommitModeRule::Mode::kAuto},
                            {MustCompile("x"), config::CommitModeRule::Mode::kExternal}};
  return diagnosis;
}

config::FlinkClusterConfig FlinkConfigWithSecrets() {
  config::FlinkClusterConfig config;
  config.name = "flink-prod";
  config.rest_url = "https://admin:hunter2@jm:8081";
  config.kafka_cluster = "prod";
  config.username = "admin";
  config.password = "hunter2";
  config.bearer_token = "sekrit-token";
  config.tls_key_file = "/etc/keys/client.key";
  config.groups = {{MustCompile("enrich.*"), "enrich", "", std::nullopt},
                   {MustCompile("x"), "g", "other", MustCompile("Source: .*")}};
  config.read_committed_jobs = {MustCompile("tx-.*")};
  return config;
}

// The line of `event`, read back and written again: must be the same bytes.
std::string RoundTrip(const std::string& line) {
  REQUIRE(line.back() == '\n');
  const auto event = trace::ParseTraceEvent(std::string_view(line).substr(0, line.size() - 1));
  REQUIRE(event.ok());
  return trace::FormatTraceEvent(*event);
}

}  // namespace

TEST_CASE("trace: a Kafka snapshot with every field set round-trips byte for byte", "[trace]") {
  const kafka::KafkaSnapshot snapshot = FullKafkaSnapshot();
  const std::string line = trace::FormatKafkaEvent("prod", 1'765'000'001.75, true, &snapshot);
  CHECK(RoundTrip(line) == line);
  const auto event = trace::ParseTraceEvent(line.substr(0, line.size() - 1));
  REQUIRE(event.ok());
  const auto& kafka = std::get<trace::KafkaEvent>(*event);
  CHECK(kafka.cluster == "prod");
  CHECK(kafka.now == 1'765'000'001.75);
  REQUIRE(kafka.snapshot);
  CHECK(kafka.snapshot->groups[0].id == snapshot.groups[0].id);
  CHECK(kafka.snapshot->groups[1].id == snapshot.groups[1].id);  // not UTF-8: as bytes
  CHECK(kafka.snapshot->groups[0].committed == snapshot.groups[0].committed);
  CHECK(kafka.snapshot->requested_at == snapshot.requested_at);
  CHECK(kafka.snapshot->record_timestamps == snapshot.record_timestamps);
  CHECK(kafka.snapshot->markers_only == snapshot.markers_only);
  CHECK(kafka.snapshot->record_timestamp_fetches_total == snapshot.record_timestamp_fetches_total);
  REQUIRE(kafka.snapshot->share_groups.size() == 2);
  CHECK(kafka.snapshot->share_groups[0].partitions[0].lag == 3);
  CHECK_FALSE(kafka.snapshot->share_groups[0].partitions[1].lag);
  CHECK(kafka.snapshot->share_groups[0].member_list == snapshot.share_groups[0].member_list);
  CHECK_FALSE(kafka.snapshot->share_groups[1].offsets_known);
  // Without share groups the line has no share_groups field: older traces read as before.
  kafka::KafkaSnapshot without = snapshot;
  without.share_groups.clear();
  CHECK(trace::FormatKafkaEvent("prod", 1, true, &without).find("share_groups") ==
        std::string::npos);
  const std::string failed = trace::FormatKafkaEvent("prod", 2, false, nullptr);
  CHECK(RoundTrip(failed) == failed);
}

TEST_CASE("trace: a Flink snapshot with every field set round-trips byte for byte", "[trace]") {
  const flink::FlinkSnapshot snapshot = FullFlinkSnapshot();
  const std::string line =
      trace::FormatFlinkEvent("flink-prod", 3, true, FlinkConfigWithSecrets(), &snapshot);
  CHECK(RoundTrip(line) == line);
  const auto event = trace::ParseTraceEvent(line.substr(0, line.size() - 1));
  REQUIRE(event.ok());
  const auto& flink = std::get<trace::FlinkEvent>(*event);
  REQUIRE(flink.snapshot);
  const flink::SourceReader& reader = flink.snapshot->jobs[0].sources[0];
  CHECK(reader.emit_event_time_lag_ms == 1.0 / 3);
  CHECK(reader.watermark_lag_ms == 2e-310);
  CHECK(std::isinf(*reader.pending_records));
  CHECK(reader.subtask_watermark_lag_ms == snapshot.jobs[0].sources[0].subtask_watermark_lag_ms);
  CHECK(flink.snapshot->jobs[0].checkpoint_config.tolerable_failures == 123456789012345678901.0);
  CHECK(flink.config.groups == FlinkConfigWithSecrets().groups);
  CHECK(flink.config.kafka_cluster == "prod");
}

TEST_CASE("trace: a position store's reading round-trips byte for byte", "[trace]") {
  stores::StoreSnapshot snapshot;
  stores::StoredJob job;
  job.flink_cluster = "prod-flink";
  job.job_id = "a1b2";
  job.job_name = "enrich";
  job.topics = {"orders", "orders.v2"};
  job.keys = {"flink:offsets:orders", "flink:offsets:orders.v2"};
  job.offsets = {{{"orders", 0}, 5807}, {{"orders", 1}, 12}};
  job.updated_at_unix_seconds = 1'765'000'000.5;
  job.unread_topics = {"orders.v2"};
  snapshot.jobs = {job, stores::StoredJob{}};
  snapshot.partial_errors = {"flink:offsets:orders field \"x\": not an offset"};
  snapshot.requested_at = 1'765'000'001.25;
  snapshot.read_until = 1'765'000'001.5;
  const std::string line = trace::FormatStoreEvent("redis", 1'765'000'002, &snapshot);
  CHECK(RoundTrip(line) == line);
  const auto event = trace::ParseTraceEvent(line.substr(0, line.size() - 1));
  REQUIRE(event.ok());
  const auto& store = std::get<trace::StoreEvent>(*event);
  CHECK(store.cluster == "redis");
  REQUIRE(store.snapshot);
  CHECK(store.snapshot->jobs[0].offsets == job.offsets);
  CHECK(store.snapshot->jobs[0].unread_topics == job.unread_topics);
  CHECK(store.snapshot->read_until == snapshot.read_until);
  const std::string failed = trace::FormatStoreEvent("redis", 3, nullptr);
  CHECK(RoundTrip(failed) == failed);
}

TEST_CASE("trace: the Flink cluster's secrets, URL and TLS files are never written", "[trace]") {
  const std::string line =
      trace::FormatFlinkEvent("flink-prod", 3, true, FlinkConfigWithSecrets(), nullptr);
  CHECK(line.find("hunter2") == std::string::npos);
  CHECK(line.find("admin") == std::string::npos);
  CHECK(line.find("sekrit") == std::string::npos);
  CHECK(line.find("client.key") == std::string::npos);
  CHECK(line.find("jm:8081") == std::string::npos);
}

TEST_CASE("trace: the diagnosis config and retain events round-trip", "[trace]") {
  const std::string config = trace::FormatConfigEvent(FullDiagnosisConfig());
  CHECK(RoundTrip(config) == config);
  const auto event = trace::ParseTraceEvent(config.substr(0, config.size() - 1));
  REQUIRE(event.ok());
  CHECK(std::get<trace::ConfigEvent>(*event).diagnosis == FullDiagnosisConfig());
  const std::string retain = trace::FormatRetainEvent({"prod", "b"}, {});
  CHECK(RoundTrip(retain) == retain);
}

TEST_CASE("trace: truncated and corrupted lines are errors, never crashes", "[trace]") {
  const kafka::KafkaSnapshot kafka = FullKafkaSnapshot();
  const flink::FlinkSnapshot flink = FullFlinkSnapshot();
  for (std::string line : {trace::FormatKafkaEvent("prod", 1, true, &kafka),
                           trace::FormatFlinkEvent("f", 1, true, FlinkConfigWithSecrets(), &flink),
                           trace::FormatConfigEvent(FullDiagnosisConfig())}) {
    line.pop_back();
    for (std::size_t length = 0; length < line.size(); ++length) {
      INFO(length);
      CHECK_FALSE(trace::ParseTraceEvent(line.substr(0, length)).ok());
    }
    // Any byte replaced by any of these: an event or an error, whichever it makes.
    for (std::size_t at = 0; at < line.size(); ++at) {
      for (const char replacement : {'\0', '"', '}', ']', '9', '-', 'n', '\xff'}) {
        std::string corrupted = line;
        corrupted[at] = replacement;
        (void)trace::ParseTraceEvent(corrupted);
      }
    }
  }
}

TEST_CASE("trace: bad lines say what is wrong", "[trace]") {
  const auto error = [](std::string_view line) {
    const auto event = trace::ParseTraceEvent(line);
    REQUIRE_FALSE(event.ok());
    return event.error().message;
  };
  CHECK_THAT(error("{\"v\":1,"), Catch::StartsWith("not JSON: "));
  CHECK(error("[1,2]") == "the line: expected an object");
  CHECK(error("{\"v\":2,\"event\":\"kafka\"}") ==
        "trace format version 2, this lagsight reads version 1");
  CHECK(error("{\"v\":1,\"event\":\"nap\"}") == "unknown event \"nap\"");
  CHECK(error("{\"v\":1,\"event\":\"kafka\",\"now\":1,\"observe\":true}") ==
        "missing key \"cluster\"");
  CHECK(error("{\"v\":1,\"event\":\"kafka\",\"cluster\":7}") == "cluster: expected a string");
  std::string config = trace::FormatConfigEvent(FullDiagnosisConfig());
  config.replace(config.find("legacy-.*"), 9, "legacy-(.");
  CHECK_THAT(error(config.substr(0, config.size() - 1)), Catch::StartsWith("job: "));
  // Valid JSON with values no daemon runs with: refused before they reach the analyzer.
  config = trace::FormatConfigEvent(FullDiagnosisConfig());
  config.replace(config.find("\"confirm_polls\":3"), 17, "\"confirm_polls\":0");
  CHECK(error(config) == "confirm_polls: 0 is outside 1..100");
  kafka::KafkaSnapshot huge;
  huge.topic_partitions["t"] = 2'147'483'647;
  CHECK(error(trace::FormatKafkaEvent("prod", 1, true, &huge)) ==
        "topic_partitions: partition count 2147483647 is outside 0..1000000");
  CHECK(error(trace::FormatKafkaEvent("prod", std::numeric_limits<double>::infinity(), true,
                                      nullptr)) == "now: not a finite number");
}

TEST_CASE("trace: the reader refuses an oversize line by its number, and garbage", "[trace]") {
  TempDir dir;
  const std::string path = dir.File("trace.jsonl");
  const std::string retain = trace::FormatRetainEvent({"prod"}, {});
  {
    std::ofstream out(path, std::ios::binary);
    out << retain << "\n" << std::string(3000, ' ') << "\n" << retain;
  }
  auto reader = trace::TraceReader::Open(path, 2048);
  REQUIRE(reader.ok());
  auto first = reader->Next();
  REQUIRE(first.ok());
  CHECK(std::holds_alternative<trace::RetainEvent>(**first));
  const auto second = reader->Next();
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().message == "line 3: longer than the limit of 2 KiB");

  {
    std::ofstream out(path, std::ios::binary);
    out << retain << retain.substr(0, retain.size() / 2);  // cut while it was being written
  }
  reader = trace::TraceReader::Open(path);
  REQUIRE(reader->Next().ok());
  const auto truncated = reader->Next();
  REQUIRE_FALSE(truncated.ok());
  CHECK_THAT(truncated.error().message, Catch::StartsWith("line 2: not JSON"));

  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 5000; ++i) out << static_cast<char>((i * 7919) % 256);
  }
  reader = trace::TraceReader::Open(path);
  bool failed = false;
  for (int i = 0; i < 100 && !failed; ++i) {
    const auto event = reader->Next();
    failed = !event.ok();
    if (event.ok() && !*event) break;
  }
  CHECK(failed);
  CHECK_FALSE(trace::TraceReader::Open(dir.File("missing")).ok());
  CHECK_FALSE(trace::TraceReader::Open(dir.File("")).ok());  // a directory
}
