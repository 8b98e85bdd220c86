// NameFilter: allow/deny regular expressions over group or topic names.
//
// A name passes when it fully matches at least one allow pattern (or there are none) and no deny
// pattern. Full match, as in Prometheus relabelling, so "orders" does not also select
// "orders-dlq". Filters are applied before anything is fetched for a name. Immutable after
// construction; safe to share between threads.
//
// Patterns are RE2 syntax (as in Prometheus), matched byte by byte like the ECMAScript regexes
// lagsight used before. RE2 runs in time linear in the name and without recursion, so a name of
// any length (a 100,000-character group id, say) is matched safely; a pattern RE2 cannot compile,
// such as a back-reference or a look-ahead, or one longer than kMaxPatternLength, is an error.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace re2 {
class RE2;
}

namespace lagsight::config {

// Longer patterns are refused: no sane name filter needs more, and RE2's memory grows with it.
inline constexpr std::size_t kMaxPatternLength = 1024;

// A regular expression that must match a whole name; compared by its text.
class Pattern {
 public:
  static Result<Pattern> Compile(std::string text);
  // False for a default-constructed Pattern, which matches nothing.
  bool FullMatch(std::string_view name) const;
  const std::string& text() const { return text_; }
  friend bool operator==(const Pattern& a, const Pattern& b) { return a.text_ == b.text_; }

 private:
  std::string text_;
  std::shared_ptr<const re2::RE2> regex_;  // shared: immutable, and Patterns are copied often
};

class NameFilter {
 public:
  NameFilter() = default;

  // Compiles the patterns; the error names the first pattern that does not compile.
  static Result<NameFilter> Create(std::vector<std::string> allow, std::vector<std::string> deny);

  bool Accepts(std::string_view name) const;

  const std::vector<std::string>& allow_patterns() const { return allow_patterns_; }
  const std::vector<std::string>& deny_patterns() const { return deny_patterns_; }

  friend bool operator==(const NameFilter& a, const NameFilter& b) {
    return a.allow_patterns_ == b.allow_patterns_ && a.deny_patterns_ == b.deny_patterns_;
  }

 private:
  std::vector<std::string> allow_patterns_;
  std::vector<std::string> deny_patterns_;
  std::vector<Pattern> allow_;
  std::vector<Pattern> deny_;
};

}  // namespace lagsight::config
