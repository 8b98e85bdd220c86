// Config: good files parse into the values they say; each bad file fails with exactly the text
// in its .error twin, which is what the user sees from --config.check.
#include "config/config.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "error_files.h"

using lagsight::testing::ReadText;

namespace {

using lagsight::config::Config;
using lagsight::config::EnvLookup;
using lagsight::config::ParseConfig;
namespace fs = std::filesystem;

const fs::path kConfigData = fs::path(LAGSIGHT_TEST_DATA) / "config";

EnvLookup FakeEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    if (name == "LAGSIGHT_TEST_PASSWORD") return "s3cret";
    return std::nullopt;
  };
}

lagsight::Result<Config> ParseTestFile(const std::string& relative) {
  return ParseConfig(ReadText(kConfigData / relative), relative, FakeEnvironment());
}

}  // namespace

TEST_CASE("every bad config fails with the exact message in its .error file", "[config]") {
  CHECK(lagsight::testing::CheckBadFiles(kConfigData, ParseTestFile) >= 63);
}

TEST_CASE("a minimal config gets the documented defaults", "[config]") {
  const auto parsed = ParseTestFile("good/minimal.yaml");
  REQUIRE(parsed.ok());
  REQUIRE(parsed->kafka.size() == 1);
  const auto& cluster = parsed->kafka[0];
  CHECK(cluster.name == "local");
  CHECK(cluster.bootstrap_servers == std::vector<std::string>{"127.0.0.1:9092"});
  CHECK(cluster.poll_interval == std::chrono::seconds(15));
  CHECK(cluster.request_timeout == std::chrono::seconds(10));
  CHECK(cluster.poll_timeout == std::chrono::seconds(60));
  CHECK(cluster.max_concurrent_requests == 64);
  CHECK(cluster.batched_offset_fetch);
  CHECK(cluster.groups.Accepts("anything"));
  CHECK(cluster.topics.Accepts("__consumer_offsets"));
}

TEST_CASE("a full config carries every value, with environment variables expanded", "[config]") {
  const auto parsed = ParseTestFile("good/full.yaml");
  REQUIRE(parsed.ok());
  REQUIRE(parsed->kafka.size() == 2);
  const auto& prod = parsed->kafka[0];
  CHECK(prod.bootstrap_servers == std::vector<std::string>{"b1:9092", "b2:9093", "[::1]:9094"});
  CHECK(prod.properties.at("sasl.password") == "s3cret");
  CHECK(prod.properties.at("message.max.bytes") == "2000000");
  CHECK(prod.properties.at("literal") == "cost$5");
  CHECK(prod.poll_interval == std::chrono::seconds(90));
  CHECK(prod.request_timeout == std::chrono::seconds(5));
  CHECK(prod.poll_timeout == std::chrono::seconds(20));
  CHECK(prod.max_concurrent_requests == 4);
  CHECK_FALSE(prod.batched_offset_fetch);
  CHECK(prod.groups.Accepts("orders-enrichment"));
  CHECK_FALSE(prod.groups.Accepts("orders-tmp"));
  CHECK_FALSE(prod.groups.Accepts("payments"));
  CHECK_FALSE(prod.groups.Accepts("xorders-a"));  // full match, not search
  CHECK_FALSE(prod.topics.Accepts("__consumer_offsets"));
  CHECK(prod.topics.Accepts("orders"));
  CHECK(parsed->kafka[1].bootstrap_servers == std::vector<std::string>{"dr1:9092"});
  CHECK(prod.read_committed_groups.empty());
  const auto& read_committed = parsed->kafka[1].read_committed_groups;
  REQUIRE(read_committed.size() == 2);
  CHECK(read_committed[0].FullMatch("ledger-eu"));
  CHECK_FALSE(read_committed[0].FullMatch("xledger-eu"));
  CHECK(read_committed[1].FullMatch("audit"));
  CHECK(prod.series == lagsight::config::KafkaSeriesConfig{});  // the defaults, no budget
  CHECK_FALSE(prod.series.partition_committed_offsets);         // opt-in: per topic by default
  CHECK_FALSE(prod.series.partition_lag_seconds);
  CHECK_FALSE(prod.series.partition_owners);
  const auto& series = parsed->kafka[1].series;
  REQUIRE(series.granularity.size() == 2);
  CHECK(series.granularity[0].group->FullMatch("batch-7"));
  CHECK_FALSE(series.granularity[0].topic);
  CHECK(series.granularity[0].level == lagsight::config::SeriesLevel::kTopic);
  CHECK_FALSE(series.granularity[1].group);
  CHECK(series.granularity[1].topic->FullMatch("clicks"));
  CHECK(series.granularity[1].level == lagsight::config::SeriesLevel::kGroup);
  CHECK(series.partition_committed_offsets);
  CHECK(series.partition_lag_seconds);
  CHECK(series.partition_owners);
  CHECK(series.budget == 250000);
  CHECK(parsed->diagnosis.window == std::chrono::minutes(2));
  CHECK(parsed->diagnosis.confirm_polls == 3);
  CHECK(parsed->diagnosis.lag_threshold_records == 5000);
  CHECK(parsed->diagnosis.expiry_warning_ratio == 0.1);
  const auto& targets = parsed->diagnosis.lateness_targets;
  REQUIRE(targets.size() == 3);
  CHECK(targets[0].of == lagsight::config::LatenessTarget::Of::kJobs);
  CHECK(targets[0].pattern.FullMatch("orders-enrichment"));
  CHECK(targets[0].target == std::chrono::minutes(5));
  CHECK(targets[1].of == lagsight::config::LatenessTarget::Of::kGroups);
  CHECK(targets[1].target == std::chrono::seconds(90));
  CHECK(targets[2].target == std::chrono::hours(1));
}

TEST_CASE("the diagnosis section has defaults", "[config]") {
  const auto parsed = ParseTestFile("good/minimal.yaml");
  REQUIRE(parsed.ok());
  CHECK(parsed->diagnosis.window == std::chrono::minutes(5));
  CHECK(parsed->diagnosis.confirm_polls == 2);
  CHECK(parsed->diagnosis.lag_threshold_records == 1000);
  CHECK(parsed->diagnosis.expiry_warning_ratio == 0.25);
}

TEST_CASE("the shipped example config is valid", "[config]") {
  const fs::path example = fs::path(LAGSIGHT_TEST_DATA) / "../../../config/lagsight.example.yaml";
  const auto parsed = ParseConfig(ReadText(example), "lagsight.example.yaml",
                                  [](const std::string&) { return std::string("from-env"); });
  INFO((parsed.ok() ? "" : parsed.error().message));
  REQUIRE(parsed.ok());
  CHECK(parsed->kafka.size() == 2);
  CHECK(parsed->kafka[0].properties.at("sasl.password") == "from-env");
}

TEST_CASE("configs compare equal exactly when they say the same", "[config]") {
  const auto a = ParseTestFile("good/full.yaml");
  const auto b = ParseTestFile("good/full.yaml");
  const auto c = ParseTestFile("good/minimal.yaml");
  REQUIRE((a.ok() && b.ok() && c.ok()));
  CHECK(*a == *b);
  CHECK_FALSE(*a == *c);
}

// std::regex recursed once per character of the name: a 32,000-character consumer group id
// overflowed the stack on every poll. RE2 matches in linear time without recursion.
TEST_CASE("names of 100,000 characters are matched safely against the example config's filters",
          "[config]") {
  const fs::path example = fs::path(LAGSIGHT_TEST_DATA) / "../../../config/lagsight.example.yaml";
  const auto parsed = ParseConfig(ReadText(example), "lagsight.example.yaml",
                                  [](const std::string&) { return std::string("from-env"); });
  REQUIRE(parsed.ok());
  const std::string long_tail(100'000, 'x');
  const auto& kafka = parsed->kafka[0];
  CHECK(kafka.groups.Accepts("orders-" + long_tail));
  CHECK_FALSE(kafka.groups.Accepts("console-consumer-" + long_tail));
  CHECK_FALSE(kafka.topics.Accepts("__" + long_tail));
  CHECK(kafka.topics.Accepts("orders." + long_tail));
  const auto& flink = parsed->flink[0];
  CHECK_FALSE(flink.jobs.Accepts("tmp-" + long_tail));
  CHECK(flink.jobs.Accepts("orders-" + long_tail));
  CHECK_FALSE(flink.groups[0].job.FullMatch("orders-enrichment" + long_tail));
  CHECK(flink.groups[0].job.FullMatch("orders-enrichment"));
}

TEST_CASE("a default-constructed pattern (a lateness target built by hand) matches nothing",
          "[config]") {
  const lagsight::config::LatenessTarget target;
  CHECK_FALSE(target.pattern.FullMatch("orders-enrichment"));
  CHECK_FALSE(target.pattern.FullMatch(""));
}

TEST_CASE("position stores: both layouts, URL parts, auth and templates", "[config]") {
  const auto parsed = ParseTestFile("good/positions.yaml");
  REQUIRE(parsed.ok());
  // Group mappings per source: the first names the source, the second every other source.
  const auto& mappings = parsed->flink.at(0).groups;
  REQUIRE(parsed->flink.at(0).read_committed_jobs.size() == 1);
  CHECK(parsed->flink.at(0).read_committed_jobs[0].FullMatch("payments-eu"));
  CHECK_FALSE(parsed->flink.at(0).read_committed_jobs[0].FullMatch("orders"));
  REQUIRE(mappings.size() == 2);
  REQUIRE(mappings[0].source.has_value());
  CHECK(mappings[0].source->FullMatch("clicks-source"));
  CHECK(mappings[0].kafka_cluster == "edge");
  CHECK_FALSE(mappings[1].source.has_value());
  CHECK(mappings[1].kafka_cluster == "prod");
  REQUIRE(parsed->positions.size() == 2);
  const auto& offsets = parsed->positions[0];
  CHECK(offsets.name == "offsets");
  CHECK(offsets.host == "redis.internal");
  CHECK(offsets.port == 6380);
  CHECK(offsets.database == 2);
  CHECK(offsets.username == "lagsight");
  CHECK(offsets.password == "s3cret");
  CHECK(offsets.flink_cluster == "jobs");
  CHECK(offsets.job.FullMatch("orders-enrichment"));
  CHECK_FALSE(offsets.job.FullMatch("billing"));
  CHECK(offsets.key == "flink:offsets:{topic}");
  CHECK(offsets.field == "{partition}");
  CHECK(offsets.updated_at_field == "updated_at");
  CHECK(offsets.poll_interval == std::chrono::seconds(30));
  CHECK(offsets.request_timeout == std::chrono::seconds(2));
  const auto& per_job = parsed->positions[1];
  CHECK(per_job.host == "::1");
  CHECK(per_job.port == 6379);
  CHECK(per_job.database == 0);
  CHECK(per_job.password.empty());
  CHECK(per_job.flink_cluster.empty());
  CHECK(per_job.field == "{topic}_{partition}");
  CHECK(per_job.poll_interval == std::chrono::seconds(15));
  // Stated modes first (the first match wins), then `external` for each store's jobs.
  using Mode = lagsight::config::CommitModeRule::Mode;
  const auto& modes = parsed->diagnosis.commit_modes;
  REQUIRE(modes.size() == 5);
  CHECK(modes[0].job.text() == "orders-legacy");
  CHECK(modes[0].mode == Mode::kCheckpoint);
  CHECK(modes[1].mode == Mode::kNone);
  CHECK(modes[2].job.text() == "clicks-autocommit");
  CHECK(modes[2].mode == Mode::kAuto);
  CHECK(modes[3].job.text() == "orders-.*");
  CHECK(modes[3].mode == Mode::kExternal);
  CHECK(modes[4].job.text() == ".*");
  CHECK(modes[4].mode == Mode::kExternal);
}
