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
        return internal::ReadKafkaCluster(reader, node, path);
      });
  if (const YAML::Node flink = root["flink"]; flink && !flink.IsNull()) {
    config.flink = ReadNamedList<FlinkClusterConfig>(
        reader, flink, "flink", "cluster", [&](const YAML::Node& node, const std::string& path) {
          return internal::ReadFlinkCluster(reader, node, path, config.kafka);
        });
  }
  if (const YAML::Node positions = root["positions"]; positions && !positions.IsNull()) {
    config.positions = ReadNamedList<PositionStoreConfig>(
        reader, positions, "positions", "store",
        [&](const YAML::Node& node, const std::string& path) {
          return internal::ReadPositionStore(reader, node, path, config.flink);
        });
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
