// The schema of one `flink:` entry: a Flink cluster whose jobs' Kafka sources lagsight reads
// through the JobManager's REST API, and how its jobs map to consumer groups.
#include <re2/re2.h>

#include "common/bounded_file.h"
#include "config/sections.h"

namespace lagsight::config::internal {
namespace {

// `rest_url`: http(s)://host[:port][/prefix], with a port (if any) a TCP port can have.
std::string ReadRestUrl(const SectionReader& reader, const YAML::Node& node,
                        const std::string& path) {
  reader.RequireKey(node, path, "rest_url");
  const std::string url = reader.String(node["rest_url"], path + ".rest_url");
  static const RE2 kUrl(R"(https?://(?:\[[^\]]+\]|[^/:]+)(:[0-9]*)?(?:/.*)?)");
  std::string port;  // ":8081", or empty when the URL has none (the scheme's default)
  if (!RE2::FullMatch(url, kUrl, &port)) {
    reader.Fail(node["rest_url"], path + ".rest_url",
                "\"" + url + "\" is not an http:// or https:// URL");
  }
  if (!port.empty() && (port.size() < 2 || port.size() > 6 || std::stoi(port.substr(1)) < 1 ||
                        std::stoi(port.substr(1)) > 65535)) {
    reader.Fail(node["rest_url"], path + ".rest_url",
                "\"" + url + "\": the port must be a number from 1 to 65535");
  }
  return url;
}

// A `kafka_cluster` value: the name of one of the configured Kafka clusters.
std::string ReadKafkaClusterName(const SectionReader& reader, const YAML::Node& value,
                                 const std::string& value_path,
                                 const std::vector<KafkaClusterConfig>& kafka) {
  const std::string name = reader.String(value, value_path);
  for (const KafkaClusterConfig& k : kafka) {
    if (k.name == name) return name;
  }
  reader.Fail(value, value_path, "names no configured kafka cluster (\"" + name + "\")");
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

// `tls`: how to trust the JobManager and, with a client certificate, be trusted by it.
void ReadTls(const SectionReader& reader, const YAML::Node& tls, const std::string& tls_path,
             FlinkClusterConfig& cluster) {
  reader.RequireMap(tls, tls_path);
  reader.RequireOnlyKeys(tls, tls_path,
                         {"ca_file", "cert_file", "key_file", "insecure_skip_verify"});
  if (tls["ca_file"]) cluster.tls_ca_file = TlsFile(reader, tls["ca_file"], tls_path + ".ca_file");
  if (tls["cert_file"])
    cluster.tls_cert_file = TlsFile(reader, tls["cert_file"], tls_path + ".cert_file");
  if (tls["key_file"])
    cluster.tls_key_file = TlsFile(reader, tls["key_file"], tls_path + ".key_file");
  if (cluster.tls_cert_file.empty() != cluster.tls_key_file.empty()) {
    reader.Fail(tls, tls_path, "cert_file and key_file go together");
  }
  reader.OptionalBoolean(tls, tls_path, "insecure_skip_verify", cluster.tls_insecure_skip_verify);
}

// `auth`: basic auth or a bearer token (each given inline or in a file), not both.
void ReadRestAuth(const SectionReader& reader, const YAML::Node& auth, const std::string& auth_path,
                  FlinkClusterConfig& cluster) {
  reader.RequireMap(auth, auth_path);
  reader.RequireOnlyKeys(
      auth, auth_path,
      {"username", "password", "password_file", "bearer_token", "bearer_token_file"});
  reader.OptionalString(auth, auth_path, "username", cluster.username);
  reader.OptionalString(auth, auth_path, "password", cluster.password);
  if (auth["password_file"]) {
    cluster.password = reader.SecretFile(auth["password_file"], auth_path + ".password_file");
  }
  reader.OptionalString(auth, auth_path, "bearer_token", cluster.bearer_token);
  if (auth["bearer_token_file"]) {
    cluster.bearer_token =
        reader.SecretFile(auth["bearer_token_file"], auth_path + ".bearer_token_file");
  }
  if (!cluster.bearer_token.empty() && !cluster.username.empty()) {
    reader.Fail(auth, auth_path, "use either username/password or a bearer token, not both");
  }
}

// One `groups` item: the jobs it is for, the group their source commits to and where.
FlinkGroupMapping ReadGroupMapping(const SectionReader& reader, const YAML::Node& item,
                                   const std::string& item_path, const FlinkClusterConfig& cluster,
                                   const std::vector<KafkaClusterConfig>& kafka) {
  reader.RequireMap(item, item_path);
  reader.RequireOnlyKeys(item, item_path, {"job", "source", "group", "kafka_cluster"});
  reader.RequireKey(item, item_path, "job");
  reader.RequireKey(item, item_path, "group");
  Pattern job = reader.Regex(item["job"], item_path + ".job");
  FlinkGroupMapping mapping{std::move(job), reader.String(item["group"], item_path + ".group"),
                            cluster.kafka_cluster, std::nullopt};
  if (item["source"]) mapping.source = reader.Regex(item["source"], item_path + ".source");
  if (item["kafka_cluster"]) {
    mapping.kafka_cluster =
        ReadKafkaClusterName(reader, item["kafka_cluster"], item_path + ".kafka_cluster", kafka);
  }
  return mapping;
}

}  // namespace

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
  cluster.rest_url = ReadRestUrl(reader, node, path);
  if (node["kafka_cluster"]) {
    cluster.kafka_cluster =
        ReadKafkaClusterName(reader, node["kafka_cluster"], path + ".kafka_cluster", kafka);
  }
  reader.OptionalPeriod(node, path, "poll_interval", kMaxPollInterval, cluster.poll_interval);
  reader.OptionalPeriod(node, path, "request_timeout", kMaxTimeout, cluster.request_timeout);
  reader.OptionalInteger(node, path, "max_concurrent_requests", 1, 64,
                         cluster.max_concurrent_requests);
  reader.OptionalInteger(node, path, "max_response_bytes", 1024, 1 << 30,
                         cluster.max_response_bytes);
  if (const YAML::Node tls = node["tls"]) ReadTls(reader, tls, path + ".tls", cluster);
  if (const YAML::Node auth = node["auth"]) ReadRestAuth(reader, auth, path + ".auth", cluster);
  if (node["jobs"]) cluster.jobs = reader.Filter(node["jobs"], path + ".jobs");
  if (node["read_committed_jobs"]) {
    cluster.read_committed_jobs =
        reader.PatternList(node["read_committed_jobs"], path + ".read_committed_jobs");
  }
  if (const YAML::Node groups = node["groups"]) {
    const std::string groups_path = path + ".groups";
    if (!groups.IsSequence()) reader.Fail(groups, groups_path, "must be a list of {job, group}");
    for (std::size_t i = 0; i < groups.size(); ++i) {
      cluster.groups.push_back(ReadGroupMapping(
          reader, groups[i], SectionReader::ItemPath(groups_path, i), cluster, kafka));
    }
  }
  return cluster;
}

}  // namespace lagsight::config::internal
