#include "config/section_reader.h"

#include <algorithm>
#include <cctype>
#include <exception>

#include "common/bounded_file.h"
#include "config/duration.h"
#include "config/strict_yaml.h"

namespace lagsight::config::internal {

using std::chrono::milliseconds;

void SectionReader::Fail(const YAML::Node& node, const std::string& path,
                         const std::string& what) const {
  std::string where = std::string(source_);
  const YAML::Mark mark = node.Mark();
  if (mark.line >= 0) where += ":" + std::to_string(mark.line + 1);
  throw ConfigProblem{where + ": " + (path.empty() ? "" : path + ": ") + what};
}

void SectionReader::RequireOnlyKeys(const YAML::Node& map, const std::string& path,
                                    std::initializer_list<std::string_view> known) const {
  RequireDistinctKeys(map, path);
  for (const auto& entry : map) {
    const std::string key = entry.first.as<std::string>();
    bool found = false;
    for (std::string_view k : known) found = found || k == key;
    if (!found) {
      std::string list;
      for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      Fail(entry.first, Join(path, key), "unknown key (known keys: " + list + ")");
    }
  }
}

void SectionReader::RequireDistinctKeys(const YAML::Node& map, const std::string& path) const {
  if (const auto repeated = FirstRepeatedKey(map)) {
    Fail(*repeated, Join(path, repeated->Scalar()), "duplicate key");
  }
}

void SectionReader::RequireMap(const YAML::Node& node, const std::string& path) const {
  if (!node.IsMap()) Fail(node, path, "must be a mapping of keys to values");
}

void SectionReader::RequireKey(const YAML::Node& map, const std::string& path,
                               std::string_view key) const {
  if (!map[std::string(key)]) {
    Fail(map, path, "missing required key \"" + std::string(key) + "\"");
  }
}

std::string SectionReader::String(const YAML::Node& node, const std::string& path,
                                  std::size_t max_length) const {
  if (!node.IsScalar()) Fail(node, path, "must be a string");
  std::string value = ExpandEnvironment(node, path, node.Scalar());
  if (value.size() > max_length) {
    Fail(node, path,
         "is " + std::to_string(value.size()) + " characters long; at most " +
             std::to_string(max_length) + " are allowed");
  }
  return value;
}

std::vector<std::string> SectionReader::StringList(const YAML::Node& node,
                                                   const std::string& path) const {
  if (!node.IsDefined() || node.IsNull()) return {};
  if (!node.IsSequence()) Fail(node, path, "must be a list of strings");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < node.size(); ++i) out.push_back(String(node[i], ItemPath(path, i)));
  return out;
}

Pattern SectionReader::Regex(const YAML::Node& node, const std::string& path) const {
  auto pattern = Pattern::Compile(String(node, path));
  if (!pattern) Fail(node, path, pattern.error().message);
  return std::move(pattern).value();
}

std::vector<Pattern> SectionReader::PatternList(const YAML::Node& node,
                                                const std::string& path) const {
  if (!node.IsSequence()) Fail(node, path, "must be a list of regular expressions");
  std::vector<Pattern> out;
  for (std::size_t i = 0; i < node.size(); ++i) out.push_back(Regex(node[i], ItemPath(path, i)));
  return out;
}

milliseconds SectionReader::Duration(const YAML::Node& node, const std::string& path,
                                     milliseconds minimum, milliseconds maximum) const {
  auto parsed = ParseDuration(String(node, path));
  if (!parsed) Fail(node, path, parsed.error().message);
  if (*parsed < minimum) {
    Fail(node, path,
         "must be at least " + FormatDuration(minimum) + ", got \"" + node.Scalar() + "\"");
  }
  if (*parsed > maximum) {
    Fail(node, path,
         "must be at most " + FormatDuration(maximum) + ", got \"" + node.Scalar() + "\"");
  }
  return *parsed;
}

bool SectionReader::Boolean(const YAML::Node& node, const std::string& path) const {
  const std::string value = String(node, path);
  if (value != "true" && value != "false") Fail(node, path, "must be true or false");
  return value == "true";
}

int SectionReader::Integer(const YAML::Node& node, const std::string& path, int min,
                           int max) const {
  const std::string text = String(node, path);
  std::size_t used = 0;
  long value = 0;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || value < min || value > max) {
    Fail(node, path,
         "must be a whole number from " + std::to_string(min) + " to " + std::to_string(max) +
             ", got \"" + text + "\"");
  }
  return static_cast<int>(value);
}

NameFilter SectionReader::Filter(const YAML::Node& node, const std::string& path) const {
  RequireMap(node, path);
  RequireOnlyKeys(node, path, {"allow", "deny"});
  auto filter = NameFilter::Create(StringList(node["allow"], Join(path, "allow")),
                                   StringList(node["deny"], Join(path, "deny")));
  if (!filter) {
    // The filter names the list and index ("deny[1]: ..."); point at that list's line.
    const std::string& message = filter.error().message;
    const bool in_deny = message.rfind("deny", 0) == 0;
    Fail(node[in_deny ? "deny" : "allow"], path + "." + message.substr(0, message.find(':')),
         message.substr(message.find(':') + 2));
  }
  return std::move(filter).value();
}

std::string SectionReader::ClusterName(const YAML::Node& node, const std::string& path) const {
  RequireKey(node, path, "name");
  const std::string name = String(node["name"], path + ".name", kMaxClusterNameLength);
  const auto allowed = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':' ||
           c == '-';
  };
  if (name.empty() || !std::all_of(name.begin(), name.end(), allowed)) {
    Fail(node["name"], path + ".name",
         "\"" + name + "\" must be non-empty and use only letters, digits and _.:-");
  }
  return name;
}

std::string SectionReader::SecretFile(const YAML::Node& node, const std::string& path) const {
  const std::string file_name = String(node, path);
  auto content = ReadBoundedFile(file_name, kMaxSecretFileBytes);
  if (!content) Fail(node, path, "cannot read \"" + file_name + "\": " + content.error().message);
  std::string secret = std::move(content).value();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  return secret;
}

std::string SectionReader::ExpandEnvironment(const YAML::Node& node, const std::string& path,
                                             const std::string& text) const {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$') {
      out += text[i];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '{') {
      const std::size_t close = text.find('}', i + 2);
      if (close == std::string::npos)
        Fail(node, path, "unterminated \"${\" (write \"$$\" for a literal \"$\")");
      const std::string variable = text.substr(i + 2, close - i - 2);
      const auto value = env_(variable);
      if (!value) Fail(node, path, "environment variable \"" + variable + "\" is not set");
      out += *value;
      i = close;
      continue;
    }
    out += '$';
  }
  return out;
}

}  // namespace lagsight::config::internal
