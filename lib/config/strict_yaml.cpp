#include "config/strict_yaml.h"

#include <set>
#include <string>

namespace lagsight::config {

std::optional<YAML::Node> FirstRepeatedKey(const YAML::Node& map) {
  if (!map.IsMap()) return std::nullopt;
  std::set<std::string, std::less<>> seen;
  for (const auto& entry : map) {
    if (!entry.first.IsScalar()) continue;
    if (!seen.insert(entry.first.Scalar()).second) return entry.first;
  }
  return std::nullopt;
}

}  // namespace lagsight::config
