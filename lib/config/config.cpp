#include "config/config.h"

#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "common/bounded_file.h"
#include "config/duration.h"
#include "config/section_reader.h"

namespace lagsight::config {
namespace {

using internal::ConfigProblem;
using internal::SectionReader;

using internal::kMaxPollInterval;
using internal::kMaxTimeout;
using std::chrono::milliseconds;

// librdkafka properties may carry whole PEM bundles (ssl.ca.pem).
constexpr std::size_t kMaxPropertyValueLength = 1024 * 1024;
constexpr milliseconds kMinDiagnosisWindow = std::chrono::seconds(5);
constexpr milliseconds kMaxDiagnosisWindow = std::chrono::hours(24);

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

// Far above what one Prometheus server ingests per scrape: a larger budget is a typo.
constexpr int kMaxSeriesBudget = 100'000'000;

KafkaSeriesConfig ReadKafkaSeries(const SectionReader& reader, const YAML::Node& node,
                                  const std::string& path) {
  reader.RequireMap(node, path);
  reader.RequireOnlyKeys(
      node, path,
      {"granularity", "partition_committed_offsets", "partition_lag_seconds", "budget"});
  KafkaSeriesConfig series;
  if (const YAML::Node rules = node["granularity"]) {
    const std::string rules_path = path + ".granularity";
    if (!rules.IsSequence()) {
      reader.Fail(rules, rules_path, "must be a list of {groups, topics, level} rules");
    }
    for (std::size_t i = 0; i < rules.size(); ++i) {
      const YAML::Node rule_node = rules[i];
      const std::string rule_path = rules_path + "[" + std::to_string(i) + "]";
      reader.RequireMap(rule_node, rule_path);
      reader.RequireOnlyKeys(rule_node, rule_path, {"groups", "topics", "level"});
      SeriesGranularityRule rule;
      for (const char* key : {"groups", "topics"}) {
        if (!rule_node[key]) continue;
        const std::string key_path = rule_path + "." + key;
        auto pattern = Pattern::Compile(reader.String(rule_node[key], key_path));
        if (!pattern) reader.Fail(rule_node[key], key_path, pattern.error().message);
        (std::string_view(key) == "groups" ? rule.group : rule.topic) = std::move(pattern).value();
      }
      if (!rule_node["level"]) reader.Fail(rule_node, rule_path, "missing required key \"level\"");
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
      series.granularity.push_back(std::move(rule));
    }
  }
  if (node["partition_committed_offsets"]) {
    series.partition_committed_offsets =
        reader.Boolean(node["partition_committed_offsets"], path + ".partition_committed_offsets");
  }
  if (node["partition_lag_seconds"]) {
    series.partition_lag_seconds =
        reader.Boolean(node["partition_lag_seconds"], path + ".partition_lag_seconds");
  }
  if (node["budget"]) {
    series.budget = static_cast<std::size_t>(
        reader.Integer(node["budget"], path + ".budget", 0, kMaxSeriesBudget));
  }
  return series;
}

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

  const YAML::Node servers = node["bootstrap_servers"];
  const std::string servers_path = path + ".bootstrap_servers";
  if (!servers) reader.Fail(node, path, "missing required key \"bootstrap_servers\"");
  if (servers.IsSequence()) {
    cluster.bootstrap_servers = reader.StringList(servers, servers_path);
  } else {
    std::stringstream list(reader.String(servers, servers_path));
    for (std::string item; std::getline(list, item, ',');) {
      item.erase(0, item.find_first_not_of(" \t"));
      item.erase(item.find_last_not_of(" \t") + 1);
      if (!item.empty()) cluster.bootstrap_servers.push_back(item);
    }
  }
  if (cluster.bootstrap_servers.empty())
    reader.Fail(servers, servers_path, "must name at least one host:port");
  for (const std::string& server : cluster.bootstrap_servers) {
    ValidateBootstrapServer(reader, servers, servers_path, server);
  }

  if (const YAML::Node props = node["properties"]) {
    const std::string props_path = path + ".properties";
    reader.RequireMap(props, props_path);
    reader.RequireDistinctKeys(props, props_path);
    for (const auto& entry : props) {
      const std::string key = entry.first.as<std::string>();
      const std::string key_path = props_path + "." + key;
      if (kReservedProperties.contains(key)) {
        reader.Fail(entry.first, key_path,
                    key == "bootstrap.servers" ? "set it with bootstrap_servers instead"
                                               : "is set by lagsight and cannot be overridden");
      }
      cluster.properties[key] = reader.String(entry.second, key_path, kMaxPropertyValueLength);
    }
  }

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
  if (node["max_concurrent_requests"]) {
    cluster.max_concurrent_requests =
        reader.Integer(node["max_concurrent_requests"], path + ".max_concurrent_requests", 1, 1000);
  }
  if (node["batched_offset_fetch"]) {
    cluster.batched_offset_fetch =
        reader.Boolean(node["batched_offset_fetch"], path + ".batched_offset_fetch");
  }
  if (node["lag_seconds_fetch_budget"]) {
    cluster.lag_seconds_fetch_budget = reader.Integer(
        node["lag_seconds_fetch_budget"], path + ".lag_seconds_fetch_budget", 0, 100000);
  }
  if (node["groups"]) cluster.groups = reader.Filter(node["groups"], path + ".groups");
  if (node["topics"]) cluster.topics = reader.Filter(node["topics"], path + ".topics");
  if (node["read_committed_groups"]) {
    cluster.read_committed_groups =
        reader.PatternList(node["read_committed_groups"], path + ".read_committed_groups");
  }
  if (node["series"]) cluster.series = ReadKafkaSeries(reader, node["series"], path + ".series");
  return cluster;
}

// A certificate, key or CA file that OpenSSL opens by name later: a FIFO there would block the
// daemon in that open, a device would be read without end.
std::string TlsFile(const SectionReader& reader, const YAML::Node& node, const std::string& path) {
  std::string file_name = reader.String(node, path);
  if (const auto problem = DescribeIfNotRegularFile(file_name)) {
    reader.Fail(node, path, "\"" + file_name + "\" is " + *problem);
  }
  return file_name;
}

FlinkClusterConfig ReadFlinkCluster(const SectionReader& reader, const YAML::Node& node,
                                    const std::string& path,
                                    const std::vector<KafkaClusterConfig>& kafka) {
  reader.RequireMap(node, path);
  reader.RequireOnlyKeys(node, path,
                         {"name", "rest_url", "kafka_cluster", "poll_interval", "request_timeout",
                          "max_concurrent_requests", "max_response_bytes", "tls", "auth", "jobs",
                          "groups", "read_committed_jobs"});
  FlinkClusterConfig cluster;
  cluster.name = reader.ClusterName(node, path);
  if (!node["rest_url"]) reader.Fail(node, path, "missing required key \"rest_url\"");
  cluster.rest_url = reader.String(node["rest_url"], path + ".rest_url");
  static const RE2 kUrl(R"(https?://(?:\[[^\]]+\]|[^/:]+)(:[0-9]*)?(?:/.*)?)");
  std::string port;  // ":8081", or empty when the URL has none (the scheme's default)
  if (!RE2::FullMatch(cluster.rest_url, kUrl, &port)) {
    reader.Fail(node["rest_url"], path + ".rest_url",
                "\"" + cluster.rest_url + "\" is not an http:// or https:// URL");
  }
  if (!port.empty() && (port.size() < 2 || port.size() > 6 || std::stoi(port.substr(1)) < 1 ||
                        std::stoi(port.substr(1)) > 65535)) {
    reader.Fail(node["rest_url"], path + ".rest_url",
                "\"" + cluster.rest_url + "\": the port must be a number from 1 to 65535");
  }
  const auto require_kafka_cluster = [&](const YAML::Node& value, const std::string& value_path) {
    const std::string name = reader.String(value, value_path);
    for (const KafkaClusterConfig& k : kafka) {
      if (k.name == name) return name;
    }
    reader.Fail(value, value_path, "names no configured kafka cluster (\"" + name + "\")");
  };
  if (node["kafka_cluster"]) {
    cluster.kafka_cluster = require_kafka_cluster(node["kafka_cluster"], path + ".kafka_cluster");
  }
  reader.OptionalPeriod(node, path, "poll_interval", kMaxPollInterval, cluster.poll_interval);
  reader.OptionalPeriod(node, path, "request_timeout", kMaxTimeout, cluster.request_timeout);
  if (node["max_concurrent_requests"]) {
    cluster.max_concurrent_requests =
        reader.Integer(node["max_concurrent_requests"], path + ".max_concurrent_requests", 1, 64);
  }
  if (node["max_response_bytes"]) {
    cluster.max_response_bytes = static_cast<std::size_t>(
        reader.Integer(node["max_response_bytes"], path + ".max_response_bytes", 1024, 1 << 30));
  }
  if (const YAML::Node tls = node["tls"]) {
    const std::string tls_path = path + ".tls";
    reader.RequireMap(tls, tls_path);
    reader.RequireOnlyKeys(tls, tls_path,
                           {"ca_file", "cert_file", "key_file", "insecure_skip_verify"});
    if (tls["ca_file"])
      cluster.tls_ca_file = TlsFile(reader, tls["ca_file"], tls_path + ".ca_file");
    if (tls["cert_file"])
      cluster.tls_cert_file = TlsFile(reader, tls["cert_file"], tls_path + ".cert_file");
    if (tls["key_file"])
      cluster.tls_key_file = TlsFile(reader, tls["key_file"], tls_path + ".key_file");
    if (cluster.tls_cert_file.empty() != cluster.tls_key_file.empty()) {
      reader.Fail(tls, tls_path, "cert_file and key_file go together");
    }
    if (tls["insecure_skip_verify"]) {
      cluster.tls_insecure_skip_verify =
          reader.Boolean(tls["insecure_skip_verify"], tls_path + ".insecure_skip_verify");
    }
  }
  if (const YAML::Node auth = node["auth"]) {
    const std::string auth_path = path + ".auth";
    reader.RequireMap(auth, auth_path);
    reader.RequireOnlyKeys(
        auth, auth_path,
        {"username", "password", "password_file", "bearer_token", "bearer_token_file"});
    if (auth["username"])
      cluster.username = reader.String(auth["username"], auth_path + ".username");
    if (auth["password"])
      cluster.password = reader.String(auth["password"], auth_path + ".password");
    if (auth["password_file"]) {
      cluster.password = reader.SecretFile(auth["password_file"], auth_path + ".password_file");
    }
    if (auth["bearer_token"]) {
      cluster.bearer_token = reader.String(auth["bearer_token"], auth_path + ".bearer_token");
    }
    if (auth["bearer_token_file"]) {
      cluster.bearer_token =
          reader.SecretFile(auth["bearer_token_file"], auth_path + ".bearer_token_file");
    }
    if (!cluster.bearer_token.empty() && !cluster.username.empty()) {
      reader.Fail(auth, auth_path, "use either username/password or a bearer token, not both");
    }
  }
  if (node["jobs"]) cluster.jobs = reader.Filter(node["jobs"], path + ".jobs");
  if (node["read_committed_jobs"]) {
    cluster.read_committed_jobs =
        reader.PatternList(node["read_committed_jobs"], path + ".read_committed_jobs");
  }
  if (const YAML::Node groups = node["groups"]) {
    const std::string groups_path = path + ".groups";
    if (!groups.IsSequence()) reader.Fail(groups, groups_path, "must be a list of {job, group}");
    for (std::size_t i = 0; i < groups.size(); ++i) {
      const std::string item_path = groups_path + "[" + std::to_string(i) + "]";
      const YAML::Node item = groups[i];
      reader.RequireMap(item, item_path);
      reader.RequireOnlyKeys(item, item_path, {"job", "source", "group", "kafka_cluster"});
      if (!item["job"]) reader.Fail(item, item_path, "missing required key \"job\"");
      if (!item["group"]) reader.Fail(item, item_path, "missing required key \"group\"");
      auto job = Pattern::Compile(reader.String(item["job"], item_path + ".job"));
      if (!job) reader.Fail(item["job"], item_path + ".job", job.error().message);
      FlinkGroupMapping mapping{std::move(job).value(),
                                reader.String(item["group"], item_path + ".group"),
                                cluster.kafka_cluster, std::nullopt};
      if (item["source"]) {
        auto source = Pattern::Compile(reader.String(item["source"], item_path + ".source"));
        if (!source) reader.Fail(item["source"], item_path + ".source", source.error().message);
        mapping.source = std::move(source).value();
      }
      if (item["kafka_cluster"]) {
        mapping.kafka_cluster =
            require_kafka_cluster(item["kafka_cluster"], item_path + ".kafka_cluster");
      }
      cluster.groups.push_back(std::move(mapping));
    }
  }
  return cluster;
}

PositionStoreConfig ReadPositionStore(const SectionReader& reader, const YAML::Node& node,
                                      const std::string& path,
                                      const std::vector<FlinkClusterConfig>& flink) {
  reader.RequireMap(node, path);
  reader.RequireOnlyKeys(node, path,
                         {"name", "store", "url", "auth", "flink_cluster", "job", "key", "field",
                          "updated_at_field", "poll_interval", "request_timeout"});
  PositionStoreConfig store;
  store.name = reader.ClusterName(node, path);
  for (const char* required : {"store", "url", "job", "key", "field"}) {
    if (!node[required])
      reader.Fail(node, path, std::string("missing required key \"") + required + "\"");
  }
  if (reader.String(node["store"], path + ".store") != "redis") {
    reader.Fail(node["store"], path + ".store", "must be \"redis\" (the only kind of store)");
  }
  const std::string url = reader.String(node["url"], path + ".url");
  static const RE2 kRedisUrl(
      R"(redis://(\[[^\]]+\]|[^/:@\[]+)(?::([0-9]{1,5}))?(?:/([0-9]{1,2}))?/?)");
  std::string port;
  std::string database;
  if (!RE2::FullMatch(url, kRedisUrl, &store.host, &port, &database)) {
    reader.Fail(node["url"], path + ".url",
                "\"" + url +
                    "\" is not redis://host[:port][/database] (credentials go under auth; "
                    "rediss:// is not supported: Debian's hiredis has no TLS)");
  }
  if (store.host.front() == '[') store.host = store.host.substr(1, store.host.size() - 2);
  if (!port.empty()) {
    store.port = std::stoi(port);
    if (store.port < 1 || store.port > 65535) {
      reader.Fail(node["url"], path + ".url",
                  "\"" + url + "\": the port must be a number from 1 to 65535");
    }
  }
  if (!database.empty()) store.database = std::stoi(database);
  if (const YAML::Node auth = node["auth"]) {
    const std::string auth_path = path + ".auth";
    reader.RequireMap(auth, auth_path);
    reader.RequireOnlyKeys(auth, auth_path, {"username", "password", "password_file"});
    if (auth["username"]) store.username = reader.String(auth["username"], auth_path + ".username");
    if (auth["password"]) store.password = reader.String(auth["password"], auth_path + ".password");
    if (auth["password_file"]) {
      store.password = reader.SecretFile(auth["password_file"], auth_path + ".password_file");
    }
    if (!store.username.empty() && store.password.empty()) {
      reader.Fail(auth, auth_path, "a username needs a password");
    }
  }
  if (node["flink_cluster"]) {
    store.flink_cluster = reader.String(node["flink_cluster"], path + ".flink_cluster");
    const bool known = std::any_of(flink.begin(), flink.end(), [&](const FlinkClusterConfig& f) {
      return f.name == store.flink_cluster;
    });
    if (!known) {
      reader.Fail(node["flink_cluster"], path + ".flink_cluster",
                  "names no configured flink cluster (\"" + store.flink_cluster + "\")");
    }
  }
  auto job = Pattern::Compile(reader.String(node["job"], path + ".job"));
  if (!job) reader.Fail(node["job"], path + ".job", job.error().message);
  store.job = std::move(job).value();
  store.key = reader.String(node["key"], path + ".key");
  store.field = reader.String(node["field"], path + ".field");
  // Each placeholder once at most, and only where it can be filled in.
  const auto check_template = [&](const std::string& text, const std::string& key_path,
                                  std::initializer_list<std::string_view> allowed) {
    for (std::size_t open = text.find('{'); open != std::string::npos;
         open = text.find('{', open + 1)) {
      const std::size_t close = text.find('}', open);
      const std::string name =
          close == std::string::npos ? "" : text.substr(open, close - open + 1);
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        std::string list;
        for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        reader.Fail(node[key_path.substr(key_path.rfind('.') + 1)], key_path,
                    "\"" + text + "\": unknown placeholder (known: " + list + ")");
      }
      if (text.find(name, close) != std::string::npos) {
        reader.Fail(node[key_path.substr(key_path.rfind('.') + 1)], key_path,
                    "\"" + text + "\": " + name + " appears twice");
      }
    }
  };
  check_template(store.key, path + ".key", {"{job}", "{topic}"});
  check_template(store.field, path + ".field", {"{topic}", "{partition}"});
  if (store.field.find("{partition}") == std::string::npos) {
    reader.Fail(node["field"], path + ".field", "must contain {partition}");
  }
  if (store.key.find("{topic}") == std::string::npos &&
      store.field.find("{topic}") == std::string::npos) {
    reader.Fail(node["key"], path + ".key", "the key or the field must contain {topic}");
  }
  if (store.key.find("{topic}") != std::string::npos &&
      store.field.find("{topic}") != std::string::npos) {
    reader.Fail(node["field"], path + ".field", "{topic} is already in the key");
  }
  if (node["updated_at_field"]) {
    store.updated_at_field = reader.String(node["updated_at_field"], path + ".updated_at_field");
  }
  reader.OptionalPeriod(node, path, "poll_interval", kMaxPollInterval, store.poll_interval);
  reader.OptionalPeriod(node, path, "request_timeout", kMaxTimeout, store.request_timeout);
  return store;
}

// A number in the range (`low`, `high`] (or (`low`, `high`) when `high_exclusive`), from a
// YAML scalar; anything else fails with the range in the message.
double ReadNumber(const SectionReader& reader, const YAML::Node& node, const std::string& path,
                  double low, double high, bool high_exclusive = false) {
  const std::string text = reader.String(node, path);
  std::size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const bool below_high = high_exclusive ? value < high : value <= high;
  if (used != text.size() || !(value > low && below_high)) {
    std::ostringstream message;
    if (high_exclusive) {
      message << "must be a number between " << low << " and " << high << " (exclusive)";
    } else {
      message << "must be a number above " << low << " and at most " << high;
    }
    message << ", got \"" << text << "\"";
    reader.Fail(node, path, message.str());
  }
  return value;
}

DiagnosisConfig ReadDiagnosis(const SectionReader& reader, const YAML::Node& node,
                              const std::string& path) {
  reader.RequireMap(node, path);
  reader.RequireOnlyKeys(
      node, path,
      {"window", "confirm_polls", "lag_threshold_records", "lag_threshold", "expiry_warning_ratio",
       "checkpoint_stale_gaps", "commit_failure_ratio", "stalled_commit_periods",
       "restart_loop_restarts", "job_gone_after", "lateness_targets", "commit_modes"});
  DiagnosisConfig diagnosis;
  if (node["window"]) {
    diagnosis.window =
        reader.Duration(node["window"], path + ".window", kMinDiagnosisWindow, kMaxDiagnosisWindow);
  }
  if (node["confirm_polls"]) {
    diagnosis.confirm_polls =
        reader.Integer(node["confirm_polls"], path + ".confirm_polls", 1, 100);
  }
  if (node["lag_threshold_records"]) {
    diagnosis.lag_threshold_records = reader.Integer(
        node["lag_threshold_records"], path + ".lag_threshold_records", 1, 2'000'000'000);
  }
  if (node["lag_threshold"]) {
    diagnosis.lag_threshold = reader.Duration(node["lag_threshold"], path + ".lag_threshold",
                                              std::chrono::seconds(0), std::chrono::hours(24));
  }
  if (const YAML::Node ratio = node["expiry_warning_ratio"]) {
    diagnosis.expiry_warning_ratio =
        ReadNumber(reader, ratio, path + ".expiry_warning_ratio", 0, 1, /*high_exclusive=*/true);
  }
  if (const YAML::Node gaps = node["checkpoint_stale_gaps"]) {
    diagnosis.checkpoint_stale_gaps =
        ReadNumber(reader, gaps, path + ".checkpoint_stale_gaps", 1, 1000);
  }
  if (const YAML::Node ratio = node["commit_failure_ratio"]) {
    diagnosis.commit_failure_ratio =
        ReadNumber(reader, ratio, path + ".commit_failure_ratio", 0, 1);
  }
  if (const YAML::Node periods = node["stalled_commit_periods"]) {
    diagnosis.stalled_commit_periods =
        ReadNumber(reader, periods, path + ".stalled_commit_periods", 1, 1000);
  }
  if (node["restart_loop_restarts"]) {
    diagnosis.restart_loop_restarts =
        reader.Integer(node["restart_loop_restarts"], path + ".restart_loop_restarts", 1, 10000);
  }
  if (node["job_gone_after"]) {
    diagnosis.job_gone_after = reader.Duration(node["job_gone_after"], path + ".job_gone_after",
                                               std::chrono::seconds(1), std::chrono::hours(24));
  }
  if (const YAML::Node targets = node["lateness_targets"]; targets && !targets.IsNull()) {
    const std::string targets_path = path + ".lateness_targets";
    if (!targets.IsSequence()) {
      reader.Fail(targets, targets_path, "must be a list of {job or group, target}");
    }
    for (std::size_t i = 0; i < targets.size(); ++i) {
      const std::string item_path = targets_path + "[" + std::to_string(i) + "]";
      const YAML::Node item = targets[i];
      reader.RequireMap(item, item_path);
      reader.RequireOnlyKeys(item, item_path, {"job", "group", "target"});
      if (item["job"].IsDefined() == item["group"].IsDefined()) {
        reader.Fail(item, item_path,
                    "needs exactly one of \"job\" (a job name pattern) or "
                    "\"group\" (a consumer group pattern)");
      }
      if (!item["target"]) reader.Fail(item, item_path, "missing required key \"target\"");
      const bool of_jobs = item["job"].IsDefined();
      const std::string key = of_jobs ? "job" : "group";
      auto pattern = Pattern::Compile(reader.String(item[key], item_path + "." + key));
      if (!pattern) reader.Fail(item[key], item_path + "." + key, pattern.error().message);
      diagnosis.lateness_targets.push_back(
          {of_jobs ? LatenessTarget::Of::kJobs : LatenessTarget::Of::kGroups,
           std::move(pattern).value(),
           reader.Duration(item["target"], item_path + ".target", std::chrono::seconds(1),
                           std::chrono::days(30))});
    }
  }
  if (const YAML::Node modes = node["commit_modes"]; modes && !modes.IsNull()) {
    const std::string modes_path = path + ".commit_modes";
    if (!modes.IsSequence()) reader.Fail(modes, modes_path, "must be a list of {job, mode}");
    for (std::size_t i = 0; i < modes.size(); ++i) {
      const std::string item_path = modes_path + "[" + std::to_string(i) + "]";
      const YAML::Node item = modes[i];
      reader.RequireMap(item, item_path);
      reader.RequireOnlyKeys(item, item_path, {"job", "mode"});
      for (const char* required : {"job", "mode"}) {
        if (!item[required])
          reader.Fail(item, item_path, std::string("missing required key \"") + required + "\"");
      }
      auto pattern = Pattern::Compile(reader.String(item["job"], item_path + ".job"));
      if (!pattern) reader.Fail(item["job"], item_path + ".job", pattern.error().message);
      const std::string mode = reader.String(item["mode"], item_path + ".mode");
      CommitModeRule rule{std::move(pattern).value(), CommitModeRule::Mode::kCheckpoint};
      if (mode == "external") {
        rule.mode = CommitModeRule::Mode::kExternal;
      } else if (mode == "none") {
        rule.mode = CommitModeRule::Mode::kNone;
      } else if (mode == "auto") {
        rule.mode = CommitModeRule::Mode::kAuto;
      } else if (mode != "checkpoint") {
        reader.Fail(item["mode"], item_path + ".mode",
                    "\"" + mode + "\" must be checkpoint, auto, external or none");
      }
      diagnosis.commit_modes.push_back(std::move(rule));
    }
  }
  return diagnosis;
}

// Reads the list `section` of the root, one item with `read_item(node, path)` each, and requires
// every item's name to be unique: a second item of a name fails at its own line, naming the first
// one's. `noun` says what an item is, in the errors ("cluster", "store").
template <typename Item, typename ReadItem>
std::vector<Item> ReadNamedList(const SectionReader& reader, const YAML::Node& list,
                                const std::string& section, const std::string& noun,
                                const ReadItem& read_item) {
  if (!list.IsSequence()) reader.Fail(list, section, "must be a list of " + noun + "s");
  std::vector<Item> items;
  std::map<std::string, int> first_line_of_name;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = SectionReader::ItemPath(section, i);
    Item item = read_item(list[i], path);
    const auto [it, inserted] =
        first_line_of_name.emplace(item.name, list[i]["name"].Mark().line + 1);
    if (!inserted) {
      reader.Fail(list[i]["name"], path + ".name",
                  "duplicate " + noun + " name \"" + item.name + "\" (first used at line " +
                      std::to_string(it->second) + ")");
    }
    items.push_back(std::move(item));
  }
  return items;
}

// The top level: which sections there are, which are required, and the order they are read in
// (a section may name the items of those before it).
Config ReadConfig(const SectionReader& reader, const YAML::Node& root) {
  if (!root || root.IsNull()) {
    reader.Fail(root, "",
                "the configuration is empty; it needs at least one source under \"kafka\"");
  }
  reader.RequireMap(root, "");
  reader.RequireOnlyKeys(root, "", {"kafka", "flink", "positions", "diagnosis"});
  Config config;
  const YAML::Node kafka = root["kafka"];
  if (!kafka || kafka.IsNull() || (kafka.IsSequence() && kafka.size() == 0)) {
    reader.Fail(kafka ? kafka : root, "kafka", "needs at least one cluster");
  }
  config.kafka = ReadNamedList<KafkaClusterConfig>(
      reader, kafka, "kafka", "cluster", [&](const YAML::Node& node, const std::string& path) {
        return ReadKafkaCluster(reader, node, path);
      });
  if (const YAML::Node flink = root["flink"]; flink && !flink.IsNull()) {
    config.flink = ReadNamedList<FlinkClusterConfig>(
        reader, flink, "flink", "cluster", [&](const YAML::Node& node, const std::string& path) {
          return ReadFlinkCluster(reader, node, path, config.kafka);
        });
  }
  if (const YAML::Node positions = root["positions"]; positions && !positions.IsNull()) {
    config.positions = ReadNamedList<PositionStoreConfig>(
        reader, positions, "positions", "store",
        [&](const YAML::Node& node, const std::string& path) {
          return ReadPositionStore(reader, node, path, config.flink);
        });
  }
  if (const YAML::Node diagnosis = root["diagnosis"]; diagnosis && !diagnosis.IsNull()) {
    config.diagnosis = ReadDiagnosis(reader, diagnosis, "diagnosis");
  }
  // A job whose position a store keeps commits to Kafka only if a rule above says so.
  for (const PositionStoreConfig& store : config.positions) {
    config.diagnosis.commit_modes.push_back({store.job, CommitModeRule::Mode::kExternal});
  }
  return config;
}

}  // namespace

EnvLookup ProcessEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::string_view JobOwnerKey(const FlinkClusterConfig& cluster, std::string_view job_name) {
  for (const FlinkGroupMapping& mapping : cluster.groups) {
    if (mapping.job.FullMatch(job_name)) return mapping.group;
  }
  return job_name;
}

void ApplyShard(const Shard& shard, Config& config) {
  for (KafkaClusterConfig& cluster : config.kafka) cluster.shard = shard;
  for (FlinkClusterConfig& cluster : config.flink) cluster.shard = shard;
}

Result<Config> ParseConfig(std::string_view yaml_text, std::string_view source_name,
                           const EnvLookup& env) {
  const SectionReader reader(source_name, env);
  try {
    const YAML::Node root = YAML::Load(std::string(yaml_text));
    return ReadConfig(reader, root);
  } catch (const ConfigProblem& problem) {
    return Error{problem.message};
  } catch (const YAML::Exception& e) {
    std::string where(source_name);
    if (e.mark.line >= 0) where += ":" + std::to_string(e.mark.line + 1);
    return Error{where + ": invalid YAML: " + e.msg};
  }
}

Result<std::string> ReadConfigFile(const std::string& path) {
  auto text = ReadBoundedFile(path, kMaxConfigFileBytes);
  if (!text) return Error{path + ": cannot read the configuration file: " + text.error().message};
  return text;
}

}  // namespace lagsight::config
