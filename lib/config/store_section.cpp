// The schema of one `positions:` entry: an external store (Redis) where Flink jobs keep their own
// position, and how to find a job's offsets in it.
#include <re2/re2.h>

#include <algorithm>

#include "config/sections.h"

namespace lagsight::config::internal {
namespace {

// `url`: redis://host[:port][/database] into the store's host, port and database.
void ReadRedisUrl(const SectionReader& reader, const YAML::Node& node, const std::string& path,
                  PositionStoreConfig& store) {
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
}

// `auth`: a password (inline or in a file), with a Redis 6 ACL user or without.
void ReadRedisAuth(const SectionReader& reader, const YAML::Node& auth,
                   const std::string& auth_path, PositionStoreConfig& store) {
  reader.RequireMap(auth, auth_path);
  reader.RequireOnlyKeys(auth, auth_path, {"username", "password", "password_file"});
  reader.OptionalString(auth, auth_path, "username", store.username);
  reader.OptionalString(auth, auth_path, "password", store.password);
  if (auth["password_file"]) {
    store.password = reader.SecretFile(auth["password_file"], auth_path + ".password_file");
  }
  if (!store.username.empty() && store.password.empty()) {
    reader.Fail(auth, auth_path, "a username needs a password");
  }
}

// A `flink_cluster` value: the name of one of the configured Flink clusters.
std::string ReadFlinkClusterName(const SectionReader& reader, const YAML::Node& value,
                                 const std::string& value_path,
                                 const std::vector<FlinkClusterConfig>& flink) {
  std::string name = reader.String(value, value_path);
  const bool known = std::any_of(flink.begin(), flink.end(),
                                 [&](const FlinkClusterConfig& f) { return f.name == name; });
  if (!known) {
    reader.Fail(value, value_path, "names no configured flink cluster (\"" + name + "\")");
  }
  return name;
}

// Each placeholder once at most, and only where it can be filled in: `text` is the template
// read from `value` at `key_path`, `allowed` the placeholders it may hold.
void CheckPlaceholders(const SectionReader& reader, const YAML::Node& value,
                       const std::string& text, const std::string& key_path,
                       std::initializer_list<std::string_view> allowed) {
  for (std::size_t open = text.find('{'); open != std::string::npos;
       open = text.find('{', open + 1)) {
    const std::size_t close = text.find('}', open);
    const std::string name = close == std::string::npos ? "" : text.substr(open, close - open + 1);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      std::string list;
      for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      reader.Fail(value, key_path, "\"" + text + "\": unknown placeholder (known: " + list + ")");
    }
    if (text.find(name, close) != std::string::npos) {
      reader.Fail(value, key_path, "\"" + text + "\": " + name + " appears twice");
    }
  }
}

// `key` and `field`: the templates that name a job's hash and a partition's field in it; between
// them they must tell every topic and partition apart.
void ReadKeyTemplates(const SectionReader& reader, const YAML::Node& node, const std::string& path,
                      PositionStoreConfig& store) {
  store.key = reader.String(node["key"], path + ".key");
  store.field = reader.String(node["field"], path + ".field");
  CheckPlaceholders(reader, node["key"], store.key, path + ".key", {"{job}", "{topic}"});
  CheckPlaceholders(reader, node["field"], store.field, path + ".field",
                    {"{topic}", "{partition}"});
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
}

}  // namespace

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
    reader.RequireKey(node, path, required);
  }
  if (reader.String(node["store"], path + ".store") != "redis") {
    reader.Fail(node["store"], path + ".store", "must be \"redis\" (the only kind of store)");
  }
  ReadRedisUrl(reader, node, path, store);
  if (const YAML::Node auth = node["auth"]) ReadRedisAuth(reader, auth, path + ".auth", store);
  if (node["flink_cluster"]) {
    store.flink_cluster =
        ReadFlinkClusterName(reader, node["flink_cluster"], path + ".flink_cluster", flink);
  }
  store.job = reader.Regex(node["job"], path + ".job");
  ReadKeyTemplates(reader, node, path, store);
  reader.OptionalString(node, path, "updated_at_field", store.updated_at_field);
  reader.OptionalPeriod(node, path, "poll_interval", kMaxPollInterval, store.poll_interval);
  reader.OptionalPeriod(node, path, "request_timeout", kMaxTimeout, store.request_timeout);
  return store;
}

}  // namespace lagsight::config::internal
