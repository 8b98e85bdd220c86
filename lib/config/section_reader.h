// SectionReader: the tool every schema of the configuration file (one per section: kafka_section,
// flink_section, store_section, diagnosis_section) reads its YAML with. Internal to lib/config/;
// the public surface stays config/config.h.
//
// Contract: a SectionReader knows the source (usually the file path) and where in the tree it
// reads (the key path, "kafka[0].groups"), reads a value only after checking it, and on the first
// problem throws ConfigProblem with "<source>:<line>: <path>: <what is wrong>". ParseConfig alone
// catches it and turns it into an Error, so no exception leaves lib/config/ and a schema reads one
// value per line without threading a Result through every helper. The error texts are what users
// see and what tests compare byte for byte: change none of them by accident.
// Every string read is "${VAR}"-expanded through the EnvLookup, so secrets stay out of the file.
// Holds references to its source name and EnvLookup: it lives within one ParseConfig call. Its
// methods are const and keep no state; one thread at a time, like the tree it reads.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/name_filter.h"

namespace lagsight::config::internal {

// Bounds on what a string value may hold (after "${VAR}" expansion). Far above any sane value;
// they exist so a runaway value is a clear error, not a slow or failing daemon.
inline constexpr std::size_t kMaxStringLength = 4096;
// A cluster name becomes a label value on every series.
inline constexpr std::size_t kMaxClusterNameLength = 128;

// Ranges of the durations, documented in docs/configuration.md#limits.
inline constexpr std::chrono::milliseconds kMinPeriod{100};
inline constexpr std::chrono::milliseconds kMaxPollInterval = std::chrono::hours(24);
inline constexpr std::chrono::milliseconds kMaxTimeout = std::chrono::hours(1);

// Thrown inside lib/config/ only, turned into an Error at the ParseConfig boundary.
struct ConfigProblem {
  std::string message;
};

// Walks the YAML tree, knows where it is (source, path) and how to phrase an error there.
class SectionReader {
 public:
  SectionReader(std::string_view source, const EnvLookup& env) : source_(source), env_(env) {}

  [[noreturn]] void Fail(const YAML::Node& node, const std::string& path,
                         const std::string& what) const;

  // Rejects keys this version does not know: a typo must not silently disable a setting. And keys
  // written twice: yaml-cpp would silently use the first.
  void RequireOnlyKeys(const YAML::Node& map, const std::string& path,
                       std::initializer_list<std::string_view> known) const;
  void RequireDistinctKeys(const YAML::Node& map, const std::string& path) const;
  void RequireMap(const YAML::Node& node, const std::string& path) const;
  // Fails at `map` (the mapping that lacks it) when `key` is absent.
  void RequireKey(const YAML::Node& map, const std::string& path, std::string_view key) const;

  std::string String(const YAML::Node& node, const std::string& path,
                     std::size_t max_length = kMaxStringLength) const;
  std::vector<std::string> StringList(const YAML::Node& node, const std::string& path) const;
  // One regular expression to fully match a name.
  Pattern Regex(const YAML::Node& node, const std::string& path) const;
  // A list of regular expressions, each to fully match a name; the error points at the item.
  std::vector<Pattern> PatternList(const YAML::Node& node, const std::string& path) const;
  std::chrono::milliseconds Duration(const YAML::Node& node, const std::string& path,
                                     std::chrono::milliseconds minimum,
                                     std::chrono::milliseconds maximum) const;
  bool Boolean(const YAML::Node& node, const std::string& path) const;
  int Integer(const YAML::Node& node, const std::string& path, int min, int max) const;
  NameFilter Filter(const YAML::Node& node, const std::string& path) const;
  // The required `name` of a cluster: it becomes a label value, so it is kept simple.
  std::string ClusterName(const YAML::Node& node, const std::string& path) const;
  // The content of the file the value names (a password, a token), without trailing line breaks.
  std::string SecretFile(const YAML::Node& node, const std::string& path) const;

  // Reads `key` as a duration from 100ms to `maximum` into `into` when present; keeps the default
  // if not.
  void OptionalPeriod(const YAML::Node& node, const std::string& path, const char* key,
                      std::chrono::milliseconds maximum, std::chrono::milliseconds& into) const {
    if (node[key]) into = Duration(node[key], path + "." + key, kMinPeriod, maximum);
  }
  // The same for a whole number from `min` to `max`, stored into any integer field.
  template <typename Number>
  void OptionalInteger(const YAML::Node& node, const std::string& path, const char* key, int min,
                       int max, Number& into) const {
    if (node[key]) into = static_cast<Number>(Integer(node[key], path + "." + key, min, max));
  }
  void OptionalBoolean(const YAML::Node& node, const std::string& path, const char* key,
                       bool& into) const {
    if (node[key]) into = Boolean(node[key], path + "." + key);
  }
  void OptionalString(const YAML::Node& node, const std::string& path, const char* key,
                      std::string& into) const {
    if (node[key]) into = String(node[key], path + "." + key);
  }

  static std::string Join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }
  // The path of the `index`th item of the list at `path`: "kafka[0]".
  static std::string ItemPath(const std::string& path, std::size_t index) {
    return path + "[" + std::to_string(index) + "]";
  }

 private:
  std::string ExpandEnvironment(const YAML::Node& node, const std::string& path,
                                const std::string& text) const;

  std::string_view source_;
  const EnvLookup& env_;
};

}  // namespace lagsight::config::internal
