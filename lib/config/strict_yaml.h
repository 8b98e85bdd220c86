// What the two strict YAML readers (the configuration and the web configuration) check alike.
//
// yaml-cpp keeps every entry of a mapping whose key repeats, and a lookup by key returns the
// first: "poll_interval: 1h" written twice with different values silently used the first. Both
// readers reject a repeated key with this one check. Pure functions; thread-safe.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>

namespace lagsight::config {

// The key node of the first entry of `map` whose (scalar) key an earlier entry already has, for
// an error at its line; nullopt when every key is distinct. Non-scalar keys are left to the
// readers, which reject them anyway.
std::optional<YAML::Node> FirstRepeatedKey(const YAML::Node& map);

}  // namespace lagsight::config
