#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <map>

#include "common/bounded_file.h"
#include "config/section_reader.h"
#include "config/sections.h"

namespace lagsight::config {
namespace {

using internal::ConfigProblem;
using internal::SectionReader;

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
  if (!kafka.IsSequence()) reader.Fail(kafka, "kafka", "must be a list of clusters");
  std::map<std::string, int> first_line_of_name;
  for (std::size_t i = 0; i < kafka.size(); ++i) {
    const std::string path = "kafka[" + std::to_string(i) + "]";
    KafkaClusterConfig cluster = internal::ReadKafkaCluster(reader, kafka[i], path);
    const int line = kafka[i]["name"].Mark().line + 1;
    const auto [it, inserted] = first_line_of_name.emplace(cluster.name, line);
    if (!inserted) {
      reader.Fail(kafka[i]["name"], path + ".name",
                  "duplicate cluster name \"" + cluster.name + "\" (first used at line " +
                      std::to_string(it->second) + ")");
    }
    config.kafka.push_back(std::move(cluster));
  }
  if (const YAML::Node flink = root["flink"]; flink && !flink.IsNull()) {
    if (!flink.IsSequence()) reader.Fail(flink, "flink", "must be a list of clusters");
    std::map<std::string, int> first_line_of_flink_name;
    for (std::size_t i = 0; i < flink.size(); ++i) {
      const std::string path = "flink[" + std::to_string(i) + "]";
      FlinkClusterConfig cluster = internal::ReadFlinkCluster(reader, flink[i], path, config.kafka);
      const auto [it, inserted] =
          first_line_of_flink_name.emplace(cluster.name, flink[i]["name"].Mark().line + 1);
      if (!inserted) {
        reader.Fail(flink[i]["name"], path + ".name",
                    "duplicate cluster name \"" + cluster.name + "\" (first used at line " +
                        std::to_string(it->second) + ")");
      }
      config.flink.push_back(std::move(cluster));
    }
  }
  if (const YAML::Node positions = root["positions"]; positions && !positions.IsNull()) {
    if (!positions.IsSequence()) reader.Fail(positions, "positions", "must be a list of stores");
    std::map<std::string, int> first_line_of_store;
    for (std::size_t i = 0; i < positions.size(); ++i) {
      const std::string path = "positions[" + std::to_string(i) + "]";
      PositionStoreConfig store =
          internal::ReadPositionStore(reader, positions[i], path, config.flink);
      const auto [it, inserted] =
          first_line_of_store.emplace(store.name, positions[i]["name"].Mark().line + 1);
      if (!inserted) {
        reader.Fail(positions[i]["name"], path + ".name",
                    "duplicate store name \"" + store.name + "\" (first used at line " +
                        std::to_string(it->second) + ")");
      }
      config.positions.push_back(std::move(store));
    }
  }
  if (const YAML::Node diagnosis = root["diagnosis"]; diagnosis && !diagnosis.IsNull()) {
    config.diagnosis = internal::ReadDiagnosis(reader, diagnosis, "diagnosis");
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
