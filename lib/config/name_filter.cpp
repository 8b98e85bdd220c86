#include "config/name_filter.h"

#include <algorithm>

namespace lagsight::config {

Result<Pattern> Pattern::Compile(std::string text) {
  Pattern pattern;
  try {
    pattern.regex_ =
        std::make_shared<const std::regex>(text, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    return Error{"invalid regular expression \"" + text + "\": " + e.what()};
  }
  pattern.text_ = std::move(text);
  return pattern;
}

bool Pattern::FullMatch(std::string_view name) const {
  return std::regex_match(name.begin(), name.end(), *regex_);
}

namespace {

Result<std::vector<Pattern>> Compile(const std::vector<std::string>& patterns,
                                     std::string_view list_name) {
  std::vector<Pattern> compiled;
  compiled.reserve(patterns.size());
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    auto pattern = Pattern::Compile(patterns[i]);
    if (!pattern) {
      return Error{std::string(list_name) + "[" + std::to_string(i) +
                   "]: " + pattern.error().message};
    }
    compiled.push_back(std::move(pattern).value());
  }
  return compiled;
}

bool AnyFullMatch(const std::vector<Pattern>& patterns, std::string_view name) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const Pattern& pattern) { return pattern.FullMatch(name); });
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
