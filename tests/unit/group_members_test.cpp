// Who holds each partition of a classic group: the member series, the opt-in owner series (and
// what the budget counts of them), the trace's member list, and the holder on the status page.
#include <catch2/catch.hpp>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/kafka_lag.h"
#include "metrics/kafka_metrics.h"
#include "status/status_page.h"
#include "trace/json_text.h"
#include "trace/kafka_snapshot_json.h"

namespace {

using namespace lagsight;

// "app" (classic) reads orders/0..3 with two members, one static, and holds refunds/0 without
// having committed on it; "flink" (simple) has no members.
kafka::KafkaSnapshot Snapshot() {
  kafka::KafkaSnapshot snapshot;
  kafka::ConsumerGroup app;
  app.id = "app";
  app.state = "stable";
  app.members = 2;
  for (int p = 0; p < 4; ++p) app.committed[{"orders", p}] = 10;
  app.member_list = {
      {"m-a", "client-a", "/10.0.0.1", "", {{"orders", 0}, {"orders", 1}}},
      {"m-b", "client-b", "/10.0.0.2", "static-b", {{"orders", 2}, {"orders", 3}, {"refunds", 0}}}};
  kafka::ConsumerGroup flink;
  flink.id = "flink";
  flink.state = "empty";
  flink.kind = kafka::GroupKind::kSimple;
  flink.members = 0;
  flink.committed[{"orders", 0}] = 5;
  snapshot.groups = {app, flink};
  snapshot.topic_partitions = {{"orders", 4}, {"refunds", 1}};
  snapshot.partitions[{"refunds", 0}] = {0, 3};
  for (int p = 0; p < 4; ++p) snapshot.partitions[{"orders", p}] = {0, 20};
  return snapshot;
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
  metrics::FamilyBuilder builder;
  Rendered out;
  out.use = metrics::AppendKafkaMetrics("prod", {true, 1, 1, 1, 0}, poll, nullptr, series, builder);
  out.text = std::move(builder).Render();
  return out;
}

int Lines(const std::string& text, const std::string& name) {
  int count = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + "{", 0) == 0) ++count;
  }
  return count;
}

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("members: one info series each, and their partitions per topic", "[members]") {
  const std::string text = Render({}).text;
  CHECK(Has(text,
            R"(lagsight_kafka_group_member_info{kafka_cluster="prod",group="app",member_id="m-a",)"
            R"(client_id="client-a",host="/10.0.0.1",group_instance_id=""} 1)"));
  CHECK(Has(text,
            R"(lagsight_kafka_group_member_info{kafka_cluster="prod",group="app",member_id="m-b",)"
            R"(client_id="client-b",host="/10.0.0.2",group_instance_id="static-b"} 1)"));
  CHECK(Lines(text, "lagsight_kafka_group_member_info") == 2);  // the simple group has none
  CHECK(Has(text, R"(lagsight_kafka_group_member_assigned_partitions{kafka_cluster="prod",)"
                  R"(group="app",member_id="m-b",topic="orders"} 2)"));
  CHECK(Has(text, R"(lagsight_kafka_group_member_assigned_partitions{kafka_cluster="prod",)"
                  R"(group="app",member_id="m-b",topic="refunds"} 1)"));
  // Off by default: a series per assigned partition.
  CHECK(Lines(text, "lagsight_kafka_group_partition_owner") == 0);
}

TEST_CASE("members: the owner of every partition, counted in the budget", "[members]") {
  config::KafkaSeriesConfig series;
  series.partition_owners = true;
  const Rendered on = Render(series);
  CHECK(Lines(on.text, "lagsight_kafka_group_partition_owner") == 5);
  CHECK(Has(on.text, R"(lagsight_kafka_group_partition_owner{kafka_cluster="prod",group="app",)"
                     R"(topic="orders",partition="3",member_id="m-b"} 1)"));
  // Held before the group's first commit on the topic: still named.
  CHECK(Has(on.text, R"(lagsight_kafka_group_partition_owner{kafka_cluster="prod",group="app",)"
                     R"(topic="refunds",partition="0",member_id="m-b"} 1)"));
  const Rendered off = Render({});
  CHECK(on.use.detail_series == off.use.detail_series + 5);

  SECTION("a pair at topic level has no owner series") {
    series.granularity.push_back({std::nullopt, std::nullopt, config::SeriesLevel::kTopic});
    CHECK(Lines(Render(series).text, "lagsight_kafka_group_partition_owner") == 0);
  }
  SECTION("a budget too small for them coarsens the pair, owners included") {
    series.budget = on.use.detail_series - 2;
    const Rendered tight = Render(series);
    CHECK(Lines(tight.text, "lagsight_kafka_group_partition_owner") == 1);  // refunds/0: no pair
    CHECK(tight.use.pairs_to_topic == 1);
  }
}

TEST_CASE("members: a trace keeps them, and an older trace reads without", "[members][trace]") {
  const kafka::KafkaSnapshot snapshot = Snapshot();
  std::string text;
  trace::AppendKafkaSnapshot(text, snapshot);
  simdjson::dom::parser parser;
  const kafka::KafkaSnapshot read = trace::ReadKafkaSnapshot(parser.parse(text).value());
  REQUIRE(read.groups.size() == 2);
  CHECK(read.groups[0].member_list == snapshot.groups[0].member_list);
  CHECK(read.groups[1].member_list.empty());

  // The simple group's empty list, as a trace recorded before members were kept has none.
  std::string older = text;
  const std::string empty_list = R"("member_list":[],)";
  const std::size_t at = older.find(empty_list);
  REQUIRE(at != std::string::npos);
  older.erase(at, empty_list.size());
  const kafka::KafkaSnapshot old_read = trace::ReadKafkaSnapshot(parser.parse(older).value());
  CHECK(old_read.groups[1].member_list.empty());
  CHECK(old_read.groups[1].committed == snapshot.groups[1].committed);
}

TEST_CASE("members: the status page names who holds a stuck partition", "[members][status]") {
  analysis::Findings findings;
  analysis::DiagnosisFinding stuck;
  stuck.kafka_cluster = "prod";
  stuck.group = "app";
  stuck.cause = analysis::Cause::kPartitionStuck;
  stuck.since = 1'800'000'000 - 600;
  stuck.stuck_partitions = {{"orders", 3}};
  stuck.holders = {{{"orders", 3}, "m-b", "client-<b>", "/10.0.0.2"}};
  findings.diagnosis.push_back(stuck);
  const std::string page = status::RenderStatusPage(
      findings, {{status::SourceStatus::Kind::kKafka, "prod", true, true, 1'800'000'000, ""}},
      "1.0", 1'800'000'000);
  CHECK(page.find("stuck: orders/3, held by client-&lt;b&gt; on /10.0.0.2 (m-b)") !=
        std::string::npos);
  CHECK(page.find("largest lag") == std::string::npos);  // none known

  findings.diagnosis[0].largest_lag_partition = {"orders", 3};
  findings.diagnosis[0].largest_lag = 1234;
  const std::string behind = status::RenderStatusPage(
      findings, {{status::SourceStatus::Kind::kKafka, "prod", true, true, 1'800'000'000, ""}},
      "1.0", 1'800'000'000);
  CHECK(behind.find("largest lag (1234 records): orders/3, held by client-&lt;b&gt; on "
                    "/10.0.0.2 (m-b)") != std::string::npos);
}
