// The schema of one `kafka:` entry: a Kafka cluster to read consumer-group lag from.
#include <re2/re2.h>

#include <set>
#include <sstream>

#include "config/duration.h"
#include "config/sections.h"

namespace lagsight::config::internal {
namespace {

// librdkafka properties may carry whole PEM bundles (ssl.ca.pem).
constexpr std::size_t kMaxPropertyValueLength = 1024 * 1024;

// Far above what one Prometheus server ingests per scrape: a larger budget is a typo.
constexpr int kMaxSeriesBudget = 100'000'000;

// Properties lagsight sets itself; letting users override them would break its promises
// (it must never join or commit for a group it observes).
const std::set<std::string, std::less<>> kReservedProperties = {
    "bootstrap.servers", "group.id", "enable.auto.commit", "enable.auto.offset.store",
    "isolation.level"};

void ValidateBootstrapServer(const SectionReader& reader, const YAML::Node& node,
                             const std::string& path, const std::string& server) {
  static const RE2 kHostPort(R"((\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]{1,255}):([0-9]{1,5}))");
  int port = 0;
  if (!RE2::FullMatch(server, kHostPort, nullptr, &port) || port == 0 || port > 65535) {
    reader.Fail(node, path, "\"" + server + "\" is not host:port");
  }
}

// `bootstrap_servers`: a list, or one comma-separated string as librdkafka takes it.
std::vector<std::string> ReadBootstrapServers(const SectionReader& reader, const YAML::Node& node,
                                              const std::string& path) {
  const YAML::Node servers = node["bootstrap_servers"];
  const std::string servers_path = path + ".bootstrap_servers";
  reader.RequireKey(node, path, "bootstrap_servers");
  std::vector<std::string> out;
  if (servers.IsSequence()) {
    out = reader.StringList(servers, servers_path);
  } else {
    std::stringstream list(reader.String(servers, servers_path));
    for (std::string item; std::getline(list, item, ',');) {
      item.erase(0, item.find_first_not_of(" \t"));
      item.erase(item.find_last_not_of(" \t") + 1);
      if (!item.empty()) out.push_back(item);
    }
  }
  if (out.empty()) reader.Fail(servers, servers_path, "must name at least one host:port");
  for (const std::string& server : out) {
    ValidateBootstrapServer(reader, servers, servers_path, server);
  }
  return out;
}

// `properties`: passed to librdkafka, except those lagsight must keep to itself.
std::map<std::string, std::string> ReadProperties(const SectionReader& reader,
                                                  const YAML::Node& props,
                                                  const std::string& props_path) {
  reader.RequireMap(props, props_path);
  reader.RequireDistinctKeys(props, props_path);
  std::map<std::string, std::string> out;
  for (const auto& entry : props) {
    const std::string key = entry.first.as<std::string>();
    const std::string key_path = props_path + "." + key;
    if (kReservedProperties.contains(key)) {
      reader.Fail(entry.first, key_path,
                  key == "bootstrap.servers" ? "set it with bootstrap_servers instead"
                                             : "is set by lagsight and cannot be overridden");
    }
    out[key] = reader.String(entry.second, key_path, kMaxPropertyValueLength);
  }
  return out;
}

// How often a poll starts and how long it and each of its requests may take; a poll must have
// time for at least one whole request.
void ReadPollTiming(const SectionReader& reader, const YAML::Node& node, const std::string& path,
                    KafkaClusterConfig& cluster) {
  reader.OptionalPeriod(node, path, "poll_interval", kMaxPollInterval, cluster.poll_interval);
  reader.OptionalPeriod(node, path, "request_timeout", kMaxTimeout, cluster.request_timeout);
  reader.OptionalPeriod(node, path, "poll_timeout", kMaxTimeout, cluster.poll_timeout);
  if (cluster.poll_timeout < cluster.request_timeout) {
    if (node["poll_timeout"]) {
      reader.Fail(
          node["poll_timeout"], path + ".poll_timeout",
          "must be at least request_timeout (" + FormatDuration(cluster.request_timeout) + ")");
    }
    reader.Fail(node["request_timeout"], path + ".request_timeout",
                "must not exceed poll_timeout (" + FormatDuration(cluster.poll_timeout) +
                    ", the default; set poll_timeout too)");
  }
}

// One `series.granularity` rule: the group-topic pairs it matches and their level.
SeriesGranularityRule ReadGranularityRule(const SectionReader& reader, const YAML::Node& rule_node,
                                          const std::string& rule_path) {
  reader.RequireMap(rule_node, rule_path);
  reader.RequireOnlyKeys(rule_node, rule_path, {"groups", "topics", "level"});
  SeriesGranularityRule rule;
  if (rule_node["groups"]) rule.group = reader.Regex(rule_node["groups"], rule_path + ".groups");
  if (rule_node["topics"]) rule.topic = reader.Regex(rule_node["topics"], rule_path + ".topics");
  reader.RequireKey(rule_node, rule_path, "level");
  const std::string level = reader.String(rule_node["level"], rule_path + ".level");
  if (level == "partition") {
    rule.level = SeriesLevel::kPartition;
  } else if (level == "topic") {
    rule.level = SeriesLevel::kTopic;
  } else if (level == "group") {
    rule.level = SeriesLevel::kGroup;
  } else {
    reader.Fail(rule_node["level"], rule_path + ".level",
                "must be partition, topic or group, got \"" + level + "\"");
  }
  return rule;
}

// `series`: what the cluster's group series may cost.
KafkaSeriesConfig ReadKafkaSeries(const SectionReader& reader, const YAML::Node& node,
                                  const std::string& path) {
  reader.RequireMap(node, path);
  reader.RequireOnlyKeys(node, path,
                         {"granularity", "partition_committed_offsets", "partition_lag_seconds",
                          "partition_owners", "budget"});
  KafkaSeriesConfig series;
  if (const YAML::Node rules = node["granularity"]) {
    const std::string rules_path = path + ".granularity";
    if (!rules.IsSequence()) {
      reader.Fail(rules, rules_path, "must be a list of {groups, topics, level} rules");
    }
    for (std::size_t i = 0; i < rules.size(); ++i) {
      series.granularity.push_back(
          ReadGranularityRule(reader, rules[i], SectionReader::ItemPath(rules_path, i)));
    }
  }
  reader.OptionalBoolean(node, path, "partition_committed_offsets",
                         series.partition_committed_offsets);
  reader.OptionalBoolean(node, path, "partition_lag_seconds", series.partition_lag_seconds);
  reader.OptionalBoolean(node, path, "partition_owners", series.partition_owners);
  reader.OptionalInteger(node, path, "budget", 0, kMaxSeriesBudget, series.budget);
  return series;
}

}  // namespace

KafkaClusterConfig ReadKafkaCluster(const SectionReader& reader, const YAML::Node& node,
                                    const std::string& path) {
  reader.RequireMap(node, path);
  reader.RequireOnlyKeys(
      node, path,
      {"name", "bootstrap_servers", "properties", "poll_interval", "request_timeout",
       "poll_timeout", "max_concurrent_requests", "batched_offset_fetch",
       "lag_seconds_fetch_budget", "groups", "topics", "read_committed_groups", "series"});
  KafkaClusterConfig cluster;
  cluster.name = reader.ClusterName(node, path);
  cluster.bootstrap_servers = ReadBootstrapServers(reader, node, path);
  if (const YAML::Node props = node["properties"]) {
    cluster.properties = ReadProperties(reader, props, path + ".properties");
  }
  ReadPollTiming(reader, node, path, cluster);
  reader.OptionalInteger(node, path, "max_concurrent_requests", 1, 1000,
                         cluster.max_concurrent_requests);
  reader.OptionalBoolean(node, path, "batched_offset_fetch", cluster.batched_offset_fetch);
  reader.OptionalInteger(node, path, "lag_seconds_fetch_budget", 0, 100000,
                         cluster.lag_seconds_fetch_budget);
  if (node["groups"]) cluster.groups = reader.Filter(node["groups"], path + ".groups");
  if (node["topics"]) cluster.topics = reader.Filter(node["topics"], path + ".topics");
  if (node["read_committed_groups"]) {
    cluster.read_committed_groups =
        reader.PatternList(node["read_committed_groups"], path + ".read_committed_groups");
  }
  if (node["series"]) cluster.series = ReadKafkaSeries(reader, node["series"], path + ".series");
  return cluster;
}

}  // namespace lagsight::config::internal
