#include "config/name_filter.h"

#include <algorithm>

namespace lagsight::config {
namespace {

Result<std::vector<std::regex>> Compile(const std::vector<std::string>& patterns,
                                        std::string_view list_name) {
  std::vector<std::regex> compiled;
  compiled.reserve(patterns.size());
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    try {
      compiled.emplace_back(patterns[i], std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      return Error{std::string(list_name) + "[" + std::to_string(i) +
                   "]: invalid regular expression \"" + patterns[i] + "\": " + e.what()};
    }
  }
  return compiled;
}

bool AnyFullMatch(const std::vector<std::regex>& patterns, std::string_view name) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::regex& pattern) {
    return std::regex_match(name.begin(), name.end(), pattern);
  });
}

}  // namespace

Result<NameFilter> NameFilter::Create(std::vector<std::string> allow,
                                      std::vector<std::string> deny) {
  auto allow_compiled = Compile(allow, "allow");
  if (!allow_compiled) return allow_compiled.error();
  auto deny_compiled = Compile(deny, "deny");
  if (!deny_compiled) return deny_compiled.error();
  NameFilter filter;
  filter.allow_patterns_ = std::move(allow);
  filter.deny_patterns_ = std::move(deny);
  filter.allow_ = std::move(allow_compiled).value();
  filter.deny_ = std::move(deny_compiled).value();
  return filter;
}

bool NameFilter::Accepts(std::string_view name) const {
  if (!allow_.empty() && !AnyFullMatch(allow_, name)) return false;
  return !AnyFullMatch(deny_, name);
}

}  // namespace lagsight::config
