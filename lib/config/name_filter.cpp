#include "config/name_filter.h"

#include <re2/re2.h>

#include <algorithm>

namespace lagsight::config {

Result<Pattern> Pattern::Compile(std::string text) {
  if (text.size() > kMaxPatternLength) {
    return Error{"the regular expression is " + std::to_string(text.size()) +
                 " characters long; at most " + std::to_string(kMaxPatternLength) + " are allowed"};
  }
  RE2::Options options;
  // Byte by byte, as std::regex did: "." matches any byte, even of a name that is not UTF-8.
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_log_errors(false);  // the error is returned, not printed to stderr
  auto regex = std::make_shared<const RE2>(text, options);
  if (!regex->ok()) {
    // RE2 says "missing ): (unclosed": the reason, then the fragment it points at.
    std::string reason = regex->error();
    const std::string fragment = regex->error_arg();
    if (!fragment.empty() && reason.ends_with(": " + fragment)) {
      reason.resize(reason.size() - fragment.size() - 2);
    }
    if (!fragment.empty() && fragment != text) reason += " at \"" + fragment + "\"";
    return Error{"invalid regular expression \"" + text + "\": " + reason +
                 " (RE2 syntax, as in Prometheus: no look-around or back-references)"};
  }
  Pattern pattern;
  pattern.regex_ = std::move(regex);
  pattern.text_ = std::move(text);
  return pattern;
}

bool Pattern::FullMatch(std::string_view name) const {
  // A default-constructed Pattern (a config struct built by hand, not by Compile) matches
  // nothing instead of dereferencing a null regex.
  if (!regex_) return false;
  return RE2::FullMatch(re2::StringPiece(name.data(), name.size()), *regex_);
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
