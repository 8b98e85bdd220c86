// Cardinality controls of the Kafka-side group series (config series:): granularity rules, the
// switches of the per-partition families, and the budget, whose metrics must equal what the
// exposition really holds (counted here from the text, not from the renderer's own numbers).
#include <catch2/catch.hpp>
#include <cstddef>
#include <map>
#include <sstream>
#include <string>

#include "analysis/kafka_lag.h"
#include "metrics/kafka_metrics.h"

namespace {

using namespace lagsight;

// Group "big" reads 8 partitions of "events" and 1 of "audit"; "small" 2 of "events". Every
// committed offset is 10 behind the log end, except big's events/7 (none committed) and
// small's events/1 (beyond the log end).
kafka::KafkaSnapshot Snapshot() {
  kafka::KafkaSnapshot snapshot;
  kafka::ConsumerGroup big;
  big.id = "big";
  big.state = "empty";
  big.kind = kafka::GroupKind::kSimple;
  for (int p = 0; p < 7; ++p) big.committed[{"events", p}] = 90;
  big.committed[{"audit", 0}] = 40;
  kafka::ConsumerGroup small;
  small.id = "small";
  small.state = "empty";
  small.kind = kafka::GroupKind::kSimple;
  small.committed[{"events", 0}] = 90;
  small.committed[{"events", 1}] = 500;
  snapshot.groups = {big, small};
  snapshot.topic_partitions = {{"events", 8}, {"audit", 1}};
  for (int p = 0; p < 8; ++p) snapshot.partitions[{"events", p}] = {0, 100};
  snapshot.partitions[{"audit", 0}] = {0, 50};
  return snapshot;
}

analysis::KafkaFindings LagSecondsOfBig() {
  analysis::KafkaFindings findings;
  analysis::GroupFindings big;
  big.group = "big";
  analysis::TopicLagSeconds events{"events", {}};
  for (int p = 0; p < 7; ++p) {
    events.partitions.push_back({p, {12.5, analysis::LagSecondsMethod::kRecordTimestamp}});
  }
  big.lag_seconds.push_back(events);
  big.lag_seconds.push_back({"audit", {{0, {3, analysis::LagSecondsMethod::kRecordTimestamp}}}});
  findings.groups.push_back(big);
  return findings;
}

struct Rendered {
  std::string text;
  metrics::KafkaSeriesUse use;
};

Rendered Render(const config::KafkaSeriesConfig& series) {
  const kafka::KafkaSnapshot snapshot = Snapshot();
  analysis::KafkaPoll poll;
  poll.snapshot = std::make_shared<const kafka::KafkaSnapshot>(snapshot);
  poll.lags =
      std::make_shared<const std::vector<analysis::GroupLag>>(analysis::ComputeGroupLags(snapshot));
  const analysis::KafkaFindings findings = LagSecondsOfBig();
  metrics::FamilyBuilder builder;
  Rendered out;
  out.use =
      metrics::AppendKafkaMetrics("prod", {true, 1, 1, 1, 0}, poll, &findings, series, builder);
  out.text = std::move(builder).Render();
  return out;
}

// Sample lines per metric name, read back from the text.
std::map<std::string, int> LinesByName(const std::string& text) {
  std::map<std::string, int> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    ++out[line.substr(0, line.find_first_of("{ "))];
  }
  return out;
}

// The per-topic and per-partition group families, as the budget counts them.
int DetailLines(const std::string& text) {
  const std::map<std::string, int> lines = LinesByName(text);
  int total = 0;
  for (const char* name :
       {"lagsight_kafka_group_committed_offset", "lagsight_kafka_group_lag_records",
        "lagsight_kafka_group_partition_uncommitted", "lagsight_kafka_group_lag_seconds",
        "lagsight_kafka_group_topic_lag_records",
        "lagsight_kafka_group_topic_uncommitted_partitions",
        "lagsight_kafka_group_topic_committed_offsets",
        "lagsight_kafka_group_topic_max_lag_seconds"}) {
    if (lines.contains(name)) total += lines.at(name);
  }
  return total;
}

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

config::Pattern Compile(const std::string& text) { return config::Pattern::Compile(text).value(); }

// Both per-partition switches on: every series a group-partition can have.
config::KafkaSeriesConfig EveryPartitionSeries() {
  config::KafkaSeriesConfig series;
  series.partition_committed_offsets = true;
  series.partition_lag_seconds = true;
  return series;
}

}  // namespace

TEST_CASE("by default a group-partition has its lag; committed offsets and seconds go per topic",
          "[metrics][series]") {
  const Rendered rendered = Render({});
  const std::string& text = rendered.text;
  const auto lines = LinesByName(text);
  CHECK(lines.at("lagsight_kafka_group_lag_records") == 10);
  CHECK_FALSE(lines.contains("lagsight_kafka_group_committed_offset"));
  CHECK_FALSE(lines.contains("lagsight_kafka_group_lag_seconds"));
  // 7 x 90 on big's events, 90 + 500 on small's: what a dashboard draws against the log end.
  CHECK(Has(text,
            "lagsight_kafka_group_topic_committed_offsets{kafka_cluster=\"prod\",group=\"big\","
            "topic=\"events\"} 630"));
  CHECK(Has(text,
            "lagsight_kafka_group_topic_committed_offsets{kafka_cluster=\"prod\",group=\"small\","
            "topic=\"events\"} 590"));
  CHECK(Has(text,
            "lagsight_kafka_group_topic_max_lag_seconds{kafka_cluster=\"prod\",group=\"big\","
            "topic=\"events\"} 12.5"));
  CHECK(Has(text,
            "lagsight_kafka_group_topic_max_lag_seconds{kafka_cluster=\"prod\",group=\"big\","
            "topic=\"audit\"} 3"));
  CHECK(lines.at("lagsight_kafka_group_topic_max_lag_seconds") == 2);  // none known for small
  CHECK(rendered.use.detail_series == static_cast<std::size_t>(DetailLines(text)));
}

TEST_CASE("with both switches on every group-partition has its series", "[metrics][series]") {
  const Rendered rendered = Render(EveryPartitionSeries());
  const auto lines = LinesByName(rendered.text);
  CHECK(lines.at("lagsight_kafka_group_committed_offset") == 10);  // 7 + 1 (big), 2 (small)
  CHECK(lines.at("lagsight_kafka_group_lag_seconds") == 8);
  CHECK(lines.at("lagsight_kafka_group_partition_uncommitted") == 7);  // 1 (big), 6 (small)
  CHECK(rendered.use.detail_series == static_cast<std::size_t>(DetailLines(rendered.text)));
  CHECK(Has(rendered.text, "lagsight_kafka_group_detail_series{kafka_cluster=\"prod\"} " +
                               std::to_string(DetailLines(rendered.text))));
  // The group's sum is there at every level: 7 x 10 on events, 10 on audit.
  CHECK(Has(rendered.text,
            "lagsight_kafka_group_sum_lag_records{kafka_cluster=\"prod\",group=\"big\"} 80"));
  CHECK(rendered.text.find("lagsight_kafka_series_budget") == std::string::npos);
}

TEST_CASE("a topic-level rule keeps the sums and drops the partitions of what it matches",
          "[metrics][series]") {
  config::KafkaSeriesConfig series = EveryPartitionSeries();
  series.granularity.push_back({Compile("big"), Compile("events"), config::SeriesLevel::kTopic});
  const Rendered rendered = Render(series);
  const std::string& text = rendered.text;
  CHECK_FALSE(Has(text,
                  "lagsight_kafka_group_committed_offset{kafka_cluster=\"prod\",group=\"big\","
                  "topic=\"events\",partition=\"0\"} 90"));
  CHECK(text.find("group=\"big\",topic=\"events\",partition=") == std::string::npos);
  CHECK(Has(text,
            "lagsight_kafka_group_topic_lag_records{kafka_cluster=\"prod\",group=\"big\","
            "topic=\"events\"} 70"));
  CHECK(Has(text,
            "lagsight_kafka_group_topic_uncommitted_partitions{kafka_cluster=\"prod\","
            "group=\"big\",topic=\"events\"} 1"));
  // Not matched: big's audit and small's events keep their partitions.
  CHECK(Has(text,
            "lagsight_kafka_group_committed_offset{kafka_cluster=\"prod\",group=\"big\","
            "topic=\"audit\",partition=\"0\"} 40"));
  CHECK(Has(text,
            "lagsight_kafka_group_lag_records{kafka_cluster=\"prod\",group=\"small\","
            "topic=\"events\",partition=\"0\"} 10"));
  CHECK(LinesByName(text).at("lagsight_kafka_group_lag_seconds") == 1);  // big's audit
  CHECK(rendered.use.detail_series == static_cast<std::size_t>(DetailLines(text)));
}

TEST_CASE("a group-level rule keeps only the group's own series, and out-of-range flags",
          "[metrics][series]") {
  config::KafkaSeriesConfig series = EveryPartitionSeries();
  series.granularity.push_back({Compile("small"), std::nullopt, config::SeriesLevel::kGroup});
  series.granularity.push_back({std::nullopt, std::nullopt, config::SeriesLevel::kPartition});
  const Rendered rendered = Render(series);
  const std::string& text = rendered.text;
  CHECK(text.find("group=\"small\",topic=\"events\"}") == std::string::npos);
  CHECK(Has(text,
            "lagsight_kafka_group_offset_out_of_range{kafka_cluster=\"prod\",group=\"small\","
            "topic=\"events\",partition=\"1\",position=\"beyond_log_end\"} 1"));
  CHECK(
      Has(text, "lagsight_kafka_group_sum_lag_records{kafka_cluster=\"prod\",group=\"small\"} 10"));
  CHECK(
      Has(text, "lagsight_kafka_group_max_lag_records{kafka_cluster=\"prod\",group=\"small\"} 10"));
  CHECK(LinesByName(text).at("lagsight_kafka_group_committed_offset") == 8);  // big's, by rule 2
}

TEST_CASE("the per-partition committed offsets and lag seconds are switched on one by one",
          "[metrics][series]") {
  config::KafkaSeriesConfig series;
  series.partition_lag_seconds = true;
  const Rendered rendered = Render(series);
  const auto lines = LinesByName(rendered.text);
  CHECK_FALSE(lines.contains("lagsight_kafka_group_committed_offset"));
  CHECK(lines.at("lagsight_kafka_group_lag_seconds") == 8);
  CHECK(lines.at("lagsight_kafka_group_lag_records") == 10);
  CHECK(rendered.use.detail_series == static_cast<std::size_t>(DetailLines(rendered.text)));
}

TEST_CASE(
    "over the budget, the largest pairs go to topic level, then to group level, and "
    "the metrics say so",
    "[metrics][series]") {
  const Rendered full = Render({});
  const auto wanted = static_cast<std::size_t>(DetailLines(full.text));
  config::KafkaSeriesConfig series;
  series.budget = wanted - 1;  // one too many: the largest pair (big, events) goes
  Rendered rendered = Render(series);
  CHECK(rendered.use.wanted_series == wanted);
  CHECK(rendered.use.pairs_to_topic == 1);
  CHECK(rendered.use.pairs_to_group == 0);
  CHECK(rendered.text.find("group=\"big\",topic=\"events\",partition=") == std::string::npos);
  CHECK(rendered.text.find("group=\"small\",topic=\"events\",partition=\"0\"") !=
        std::string::npos);
  CHECK(rendered.use.detail_series == static_cast<std::size_t>(DetailLines(rendered.text)));
  CHECK(rendered.use.detail_series <= series.budget);
  CHECK(Has(rendered.text, "lagsight_kafka_series_budget{kafka_cluster=\"prod\"} " +
                               std::to_string(series.budget)));
  CHECK(Has(
      rendered.text,
      "lagsight_kafka_series_budget_coarsened_pairs{kafka_cluster=\"prod\",level=\"topic\"} 1"));

  // Room for one pair's topic series only: small's events has three (lag sum, uncommitted
  // partitions, committed offsets), big's pairs four (and their largest lag in seconds).
  series.budget = 3;
  rendered = Render(series);
  CHECK(rendered.use.pairs_to_topic == 3);
  CHECK(rendered.use.pairs_to_group == 2);
  CHECK(DetailLines(rendered.text) == 3);
  CHECK(rendered.use.detail_series == 3);
  CHECK(Has(
      rendered.text,
      "lagsight_kafka_series_budget_coarsened_pairs{kafka_cluster=\"prod\",level=\"group\"} 2"));
  // Nothing silently gone: every group still has its sum and its max.
  CHECK(Has(rendered.text,
            "lagsight_kafka_group_sum_lag_records{kafka_cluster=\"prod\",group=\"big\"} 80"));
  CHECK(Has(rendered.text,
            "lagsight_kafka_group_sum_lag_records{kafka_cluster=\"prod\",group=\"small\"} 10"));
}

// Enough groups that each thread's share of a family is compressed in pieces of its own (more
// than FamilyBuilder::kPieceBytes), with lag in seconds for some, partition-level series for
// others, and a coarser level for a few.
TEST_CASE("rendered on several threads, the exposition is byte for byte that of one thread",
          "[metrics]") {
  kafka::KafkaSnapshot snapshot;
  analysis::KafkaFindings findings;
  for (int g = 0; g < 900; ++g) {
    kafka::ConsumerGroup group;
    group.id = "flink-job-with-a-long-name-" + std::to_string(g);
    group.state = "empty";
    group.kind = kafka::GroupKind::kSimple;
    const std::string topic = "topic-" + std::to_string(g % 7);
    for (int p = 0; p < 30; ++p) {
      if ((g + p) % 11 != 0) group.committed[{topic, p}] = 1000 + g + p;  // some uncommitted
    }
    snapshot.groups.push_back(group);
    if (g % 3 == 0) {
      analysis::GroupFindings found;
      found.group = group.id;
      analysis::TopicLagSeconds seconds{topic, {}};
      for (int p = 0; p < 30; p += 2) {
        seconds.partitions.push_back({p, {0.5 * g + p, analysis::LagSecondsMethod::kInterpolated}});
      }
      found.lag_seconds.push_back(seconds);
      findings.groups.push_back(found);
    }
  }
  for (int t = 0; t < 7; ++t) {
    const std::string topic = "topic-" + std::to_string(t);
    snapshot.topic_partitions[topic] = 30;
    for (int p = 0; p < 30; ++p) snapshot.partitions[{topic, p}] = {0, 5000 + 13 * p + t};
  }
  analysis::KafkaPoll poll;
  poll.snapshot = std::make_shared<const kafka::KafkaSnapshot>(snapshot);
  poll.lags =
      std::make_shared<const std::vector<analysis::GroupLag>>(analysis::ComputeGroupLags(snapshot));
  config::KafkaSeriesConfig series;
  series.granularity.push_back({config::Pattern::Compile("flink-job-with-a-long-name-1.*").value(),
                                std::nullopt, config::SeriesLevel::kTopic});
  // A family before the Kafka ones, as the daemon's builder holds (kept: the builder refers to it).
  static constexpr metrics::MetricDef kBefore{"lagsight_up", "Before the Kafka series.",
                                              prometheus::MetricType::Gauge};
  const auto render = [&](int threads) {
    metrics::FamilyBuilder builder;
    builder.Add(kBefore, {}, 1);
    metrics::AppendKafkaMetrics("prod", {true, 1, 1, 1, 0}, poll, &findings, series, builder,
                                threads);
    const std::size_t count = builder.series();
    std::string text = std::move(builder).Render();  // gunzipped: its CRC and length checked
    return std::pair(count, text);
  };
  const auto [one_count, one] = render(1);
  REQUIRE(one.size() > 3 * 4 * metrics::FamilyBuilder::kPieceBytes);
  for (const int threads : {2, 3, 4, 7}) {
    INFO(threads << " threads");
    const auto [count, text] = render(threads);
    CHECK(count == one_count);
    CHECK((text == one));  // not expanded: a mismatch would print megabytes
  }
}
