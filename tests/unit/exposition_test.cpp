// The rendered exposition against a golden file (also checked by `promtool check metrics` in
// ctest), and the rule that a failed poll serves no lag series.
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "analysis/flink_join.h"
#include "analysis/kafka_lag.h"
#include "common/gzip_stream.h"
#include "metrics/flink_metrics.h"
#include "metrics/kafka_metrics.h"
#include "metrics/process_metrics.h"

namespace {

namespace fs = std::filesystem;
using namespace lagsight;

kafka::KafkaSnapshot SampleSnapshot() {
  kafka::KafkaSnapshot snapshot;
  kafka::ConsumerGroup flink;
  flink.id = "orders-enrichment";
  flink.state = "empty";
  flink.kind = kafka::GroupKind::kSimple;
  flink.members = 0;
  flink.committed = {{{"orders.v2", 0}, 90}, {{"orders.v2", 1}, 120}};
  kafka::ConsumerGroup app;
  app.id = "billing \"eu\"";  // label values are escaped
  app.state = "stable";
  app.kind = kafka::GroupKind::kClassic;
  app.members = 2;
  app.committed = {{{"orders.v2", 2}, 500}, {{"audit", 0}, 3}};
  kafka::ConsumerGroup modern;
  modern.id = "kip848";
  modern.state = "stable";
  modern.kind = kafka::GroupKind::kConsumer;
  modern.committed = {{{"audit", 0}, 1}};
  snapshot.groups = {app, modern, flink};
  snapshot.topic_partitions = {{"orders.v2", 3}, {"audit", 1}};
  snapshot.partitions = {{{"orders.v2", 0}, {0, 100}},
                         {{"orders.v2", 1}, {0, 150}},
                         {{"orders.v2", 2}, {10, 400}},
                         {{"audit", 0}, {2, 9}}};
  snapshot.partial_errors = {"one"};
  snapshot.cluster_id = "qR3vD5mFT6uYk0cZp9sW1A";
  snapshot.offsets_retention_seconds = 604800;
  // A bootstrap list mixing two clusters, and an address that did not answer.
  snapshot.bootstraps = {{"10.0.0.1:9092", "qR3vD5mFT6uYk0cZp9sW1A", "", {{"orders.v2", 3}}},
                         {"10.0.0.2:9092", std::nullopt, "Local: Broker transport failure", {}},
                         {"10.9.0.1:9092", "Zx8bN2kLQ0eWm4rTy7uI3o", "", {{"orders.v2", 6}}}};
  snapshot.record_timestamps = {{{{"orders.v2", 0}, 90}, {1699999990000}}};
  snapshot.record_timestamp_fetches_total = 17;
  snapshot.record_timestamp_cache_entries = 1;
  return snapshot;
}

std::string Render(const metrics::PollStatus& status, const kafka::KafkaSnapshot* snapshot) {
  metrics::FamilyBuilder builder;
  metrics::AppendProcessMetrics("1.2.3", "abc", true, 1700000000.5, builder);
  analysis::KafkaPoll poll;
  if (snapshot) {
    poll.snapshot = std::make_shared<const kafka::KafkaSnapshot>(*snapshot);
    poll.lags = std::make_shared<const std::vector<analysis::GroupLag>>(
        analysis::ComputeGroupLags(*snapshot));
  }
  poll.regression_counts = std::make_shared<const analysis::OffsetRegressionCounts>(
      analysis::OffsetRegressionCounts{{{"orders-enrichment", {"orders.v2", 1}}, 2}});
  metrics::AppendKafkaMetrics("prod", status, poll, nullptr, {}, builder);
  return std::move(builder).Render();
}

std::string ReadText(const fs::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("the exposition matches the golden file", "[metrics]") {
  const kafka::KafkaSnapshot snapshot = SampleSnapshot();
  metrics::PollStatus status{true, 0.25, 1700000100.0, 12, 1};
  const std::string text = Render(status, &snapshot);
  const fs::path golden = fs::path(LAGSIGHT_TEST_DATA) / "exposition" / "kafka.prom";
  if (std::getenv("LAGSIGHT_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden) << text;
  }
  CHECK(text == ReadText(golden));
}

TEST_CASE("the published exposition holds what it uses, no more", "[metrics]") {
  // Published and kept while scrapes read it: a capacity twice the size doubled the memory.
  const kafka::KafkaSnapshot snapshot = SampleSnapshot();
  metrics::FamilyBuilder builder;
  analysis::KafkaPoll poll;
  poll.snapshot = std::make_shared<const kafka::KafkaSnapshot>(snapshot);
  poll.lags =
      std::make_shared<const std::vector<analysis::GroupLag>>(analysis::ComputeGroupLags(snapshot));
  metrics::AppendKafkaMetrics("prod", {true, 0.25, 1700000100.0, 12, 1}, poll, nullptr, {},
                              builder);
  const GzippedText published = std::move(builder).RenderGzip();
  CHECK(published.bytes.capacity() == published.bytes.size());
  const std::string text = Gunzip(published.bytes);
  CHECK(published.text_size == text.size());
  // Many small families, each compressed from the end of the one before: about the size of one
  // stream (pieces that referred to nothing before them came to 1.7 times that).
  CHECK(published.bytes.size() < Gzip(text).bytes.size() * 11 / 10);
}

TEST_CASE("a failed poll serves health series only, no stale lag", "[metrics]") {
  metrics::PollStatus status{false, 10.0, 1700000100.0, 13, 2};
  const std::string text = Render(status, nullptr);
  CHECK(text.find("lagsight_kafka_up{kafka_cluster=\"prod\"} 0") != std::string::npos);
  CHECK(
      text.find("lagsight_kafka_last_poll_timestamp_seconds{kafka_cluster=\"prod\"} 1700000100") !=
      std::string::npos);
  CHECK(text.find("lagsight_kafka_group_") == std::string::npos);
  CHECK(text.find("lagsight_kafka_partition_") == std::string::npos);
}

TEST_CASE("a cluster never polled successfully has no last-poll timestamp", "[metrics]") {
  metrics::PollStatus status{false, 10.0, std::nullopt, 1, 1};
  CHECK(Render(status, nullptr).find("last_poll_timestamp") == std::string::npos);
}

namespace {

// Every series line of an exposition (name and labels, without the value), for duplicates.
std::vector<std::string> SeriesOf(const std::string& text) {
  std::vector<std::string> series;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    series.push_back(line.substr(0, line.rfind(' ')));
  }
  return series;
}

}  // namespace

TEST_CASE("a Flink job with two sources of one name committing to one group: no duplicate series",
          "[metrics]") {
  flink::FlinkJob job;
  job.overview = {"0a9b8c7d6e5f40312233445566778899", "enrich", "RUNNING", 0, 3, {}};
  for (const char* vertex :
       {"cbc357ccb763df2852fee8c4fc7d55f2", "feca28aff5a3958840bee985ee7de4d3"}) {
    flink::SourceReader reader;
    reader.vertex_id = vertex;
    reader.name = "Source: Kafka Source";  // the connector's default name, twice
    reader.partitions[{"orders", 0}] = {99, 100};
    reader.commits_succeeded = 4;
    job.sources.push_back(reader);
  }
  flink::FlinkSnapshot snapshot;
  snapshot.jobs = {job};
  kafka::KafkaSnapshot kafka_snapshot;
  kafka_snapshot.all_topics = {"orders"};
  kafka_snapshot.topic_partitions = {{"orders", 1}};
  kafka_snapshot.partitions = {{{"orders", 0}, {0, 120}}};
  kafka::ConsumerGroup group;
  group.id = "enrich";
  group.committed = {{{"orders", 0}, 100}};
  kafka_snapshot.groups = {group};
  config::FlinkClusterConfig flink_config;
  flink_config.name = "mini";
  flink_config.kafka_cluster = "prod";
  const auto joins =
      analysis::JoinFlinkWithKafka(flink_config, snapshot, {{"prod", &kafka_snapshot}});
  REQUIRE(joins.size() == 2);
  CHECK(joins[0].source != joins[1].source);

  metrics::FamilyBuilder builder;
  metrics::PollStatus status;
  status.up = true;
  analysis::FlinkFindings findings;
  findings.joins = joins;
  findings.checkpoint_ages = analysis::CheckpointAges(snapshot, 1700000000);
  metrics::AppendFlinkMetrics("mini", status, &snapshot, findings, builder);
  const std::string text = std::move(builder).Render();
  const std::vector<std::string> series = SeriesOf(text);
  const std::set<std::string> unique(series.begin(), series.end());
  CHECK(unique.size() == series.size());
  CHECK(text.find("lagsight_flink_job_group_info") != std::string::npos);
  CHECK(text.find("lagsight_flink_job_restarts_total") != std::string::npos);
}

// The hand-written writer must say exactly what prometheus-cpp's TextSerializer says for the
// same samples: the reason for writing by hand is speed (exposition.h), not a dialect.
TEST_CASE("the direct writer writes what prometheus-cpp's TextSerializer writes", "[metrics]") {
  static constexpr metrics::MetricDef kGauge{"lagsight_test_gauge", "A gauge, with \"quotes\".",
                                             prometheus::MetricType::Gauge};
  static constexpr metrics::MetricDef kCounter{"lagsight_test_total", "A counter.",
                                               prometheus::MetricType::Counter};
  static constexpr metrics::MetricDef kBare{"lagsight_a_first", "Sorted first; no labels.",
                                            prometheus::MetricType::Gauge};
  const std::vector<double> values = {0,
                                      -0.0,
                                      1,
                                      -1,
                                      0.1,
                                      1.0 / 3,
                                      1e21,
                                      1.5e-7,
                                      123456789012345678.0,
                                      9007199254740993.0,
                                      9007199254740992.0,  // 2^53: the last integer written as one
                                      -9007199254740991.0,
                                      18014398509481984.0,  // 2^54: an exponent
                                      1e15,
                                      1e16,
                                      999999999999999.0,
                                      -42,
                                      1700000000.5,
                                      std::numeric_limits<double>::max(),
                                      std::numeric_limits<double>::denorm_min(),
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(),
                                      std::numeric_limits<double>::quiet_NaN()};
  const std::vector<std::string> label_values = {"",
                                                 "plain",
                                                 "quote \" in",
                                                 "back\\slash",
                                                 "new\nline",
                                                 "\xc3\xa9t\xc3\xa9 \xe2\x86\x92",
                                                 "trailing\\"};

  metrics::FamilyBuilder builder;
  std::map<std::string, prometheus::MetricFamily> oracle;
  const auto add = [&](const metrics::MetricDef& def, const metrics::Labels& labels, double value) {
    builder.Add(def, labels, value);
    prometheus::MetricFamily& family = oracle[def.name];
    family.name = def.name;
    family.help = def.help;
    family.type = def.type;
    prometheus::ClientMetric& sample = family.metric.emplace_back();
    for (const auto& [name, label_value] : labels) sample.label.push_back({name, label_value});
    (def.type == prometheus::MetricType::Counter ? sample.counter.value : sample.gauge.value) =
        value;
  };
  // Labels shared by many series, escaped once (LabelText), then the series' own.
  static constexpr metrics::MetricDef kShared{"lagsight_test_shared", "Shared labels first.",
                                              prometheus::MetricType::Gauge};
  const auto add_shared = [&](const std::string& group, const std::string& own, double value) {
    metrics::LabelText shared;
    shared.Add("kafka_cluster", "prod").Add("group", group);
    builder.Add(kShared, shared, {{"partition", own}, {"position", "beyond_log_end"}}, value);
    prometheus::MetricFamily& family = oracle[kShared.name];
    family.name = kShared.name;
    family.help = kShared.help;
    family.type = kShared.type;
    prometheus::ClientMetric& sample = family.metric.emplace_back();
    sample.label = {{"kafka_cluster", "prod"},
                    {"group", group},
                    {"partition", own},
                    {"position", "beyond_log_end"}};
    sample.gauge.value = value;
  };
  // The same, from a prefix written once for the lines that differ from one label on.
  static constexpr metrics::MetricDef kPrefixed{"lagsight_test_prefixed", "From a prefix.",
                                                prometheus::MetricType::Gauge};
  const auto add_prefixed = [&](const std::string& group, const std::string& own, double value) {
    metrics::LabelText shared;
    if (!group.empty()) shared.Add("group", group);
    const metrics::SeriesPrefix prefix(kPrefixed, shared, "partition");
    builder.Add(prefix, own, {}, value);
    builder.Add(prefix, own, {{"method", group}}, value);
    prometheus::MetricFamily& family = oracle[kPrefixed.name];
    family.name = kPrefixed.name;
    family.help = kPrefixed.help;
    family.type = kPrefixed.type;
    prometheus::ClientMetric& bare = family.metric.emplace_back();
    if (!group.empty()) bare.label.push_back({"group", group});
    bare.label.push_back({"partition", own});
    bare.gauge.value = value;
    prometheus::ClientMetric& more = family.metric.emplace_back(bare);
    more.label.push_back({"method", group});
  };
  for (std::size_t i = 0; i < values.size(); ++i) {
    add(kGauge, {{"kafka_cluster", "prod"}, {"value", label_values[i % label_values.size()]}},
        values[i]);
    add_prefixed(label_values[i % label_values.size()], label_values[(i + 2) % label_values.size()],
                 values[i]);
    add(kCounter, {{"n", std::to_string(i)}}, values[i]);
    add_shared(label_values[i % label_values.size()], label_values[(i + 3) % label_values.size()],
               values[i]);
  }
  add(kBare, {}, 42);
  std::vector<prometheus::MetricFamily> families;
  for (auto& [name, family] : oracle) families.push_back(std::move(family));

  CHECK(builder.series() == 5 * values.size() + 1);
  CHECK(std::move(builder).Render() == prometheus::TextSerializer().Serialize(families));
}

// AppendValue takes shortcuts for integers and for whole milliseconds (lag in seconds); each
// must come out as prometheus-cpp's %.16g writes the value, where near a millisecond is not
// the millisecond to 16 digits (709.656 is 709.6559999999999) and at powers of ten.
TEST_CASE("values are written as %.16g writes them, shortcuts included", "[metrics]") {
  std::vector<double> values;
  std::mt19937_64 random(20261205);
  const auto around = [&](double value) {
    double below = value;
    double above = value;
    values.push_back(value);
    for (int step = 0; step < 4; ++step) {
      below = std::nextafter(below, -INFINITY);
      above = std::nextafter(above, INFINITY);
      values.push_back(below);
      values.push_back(above);
    }
  };
  for (double scale = 1e-3; scale <= 1e13; scale *= 10) {
    std::uniform_int_distribution<std::int64_t> thousandths(
        0, static_cast<std::int64_t>(scale * 10'000));
    for (int i = 0; i < 20'000; ++i) {
      const double milliseconds = static_cast<double>(thousandths(random)) / 1000;
      values.push_back(milliseconds);
      values.push_back(-milliseconds);
      if (i % 20 == 0) around(milliseconds);
    }
    around(scale);  // a power of ten: the digits below it are a decade finer
    around(scale - 0.001);
  }
  std::uniform_real_distribution<double> noisy(0, 4000);
  for (int i = 0; i < 20'000; ++i) values.push_back(noisy(random));
  for (const double value : values) {
    std::array<char, 64> expected;
    std::snprintf(expected.data(), expected.size(), "%.16g", value);
    std::string written;
    metrics::AppendValue(value, written);
    // Checked only when they differ: Catch2 would record 600,000 assertions.
    if (written != expected.data()) REQUIRE(written == expected.data());
  }
  CHECK(values.size() > 600'000);
}

TEST_CASE("families compressed in pieces as they grow read back as TextSerializer writes them",
          "[metrics]") {
  // Three families added to in turn, each many times kPieceBytes long: every family is
  // compressed in many pieces, interleaved with the others', then joined in name order.
  static constexpr metrics::MetricDef kLag{"b_lag", "Lag.", prometheus::MetricType::Gauge};
  static constexpr metrics::MetricDef kOffset{"a_offset", "Offset.", prometheus::MetricType::Gauge};
  static constexpr metrics::MetricDef kTotal{"c_total", "Total.", prometheus::MetricType::Counter};
  metrics::FamilyBuilder builder;
  std::map<std::string, prometheus::MetricFamily> oracle;
  for (const metrics::MetricDef* def : {&kLag, &kOffset, &kTotal}) {
    oracle[def->name] = {def->name, def->help, def->type, {}};
  }
  std::size_t text_bytes = 0;
  for (int i = 0; text_bytes < 12 * metrics::FamilyBuilder::kPieceBytes; ++i) {
    for (const metrics::MetricDef* def : {&kLag, &kOffset, &kTotal}) {
      const metrics::Labels labels = {{"group", "group-" + std::to_string(i % 997)},
                                      {"partition", std::to_string(i)}};
      const double value = i * 7919.0 + (def == &kLag ? 0.5 : 0);
      builder.Add(*def, labels, value);
      prometheus::ClientMetric& sample = oracle[def->name].metric.emplace_back();
      for (const auto& [name, label_value] : labels) sample.label.push_back({name, label_value});
      (def->type == prometheus::MetricType::Counter ? sample.counter.value : sample.gauge.value) =
          value;
      text_bytes += 60;
    }
  }
  std::vector<prometheus::MetricFamily> families;
  for (auto& [name, family] : oracle) families.push_back(std::move(family));
  const std::string expected = prometheus::TextSerializer().Serialize(families);
  REQUIRE(expected.size() > 10 * metrics::FamilyBuilder::kPieceBytes);
  const GzippedText published = std::move(builder).RenderGzip();
  CHECK(published.text_size == expected.size());
  CHECK(Gunzip(published.bytes) == expected);
  // Compressed about as well as in one go.
  CHECK(published.bytes.size() < Gzip(expected).bytes.size() * 11 / 10);
}
