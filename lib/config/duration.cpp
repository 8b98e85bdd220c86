#include "config/duration.h"

#include <cctype>
#include <cstdint>

namespace lagsight::config {
namespace {

struct Unit {
  std::string_view suffix;
  std::int64_t millis;
};

// Longest suffix first so "ms" is not read as "m" followed by garbage.
constexpr Unit kUnits[] = {
    {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000},
};

}  // namespace

Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  const auto invalid = [&] {
    return Error{"invalid duration \"" + std::string(text) +
                 "\" (use a number with a unit: ms, s, m, h, d; e.g. 500ms, 15s, 1m30s)"};
  };
  // Checked arithmetic: a signed overflow is undefined behaviour, and in practice a huge
  // interval wrapped round to a tiny or negative one (polls back to back).
  const auto too_long = [&] {
    return Error{"duration \"" + std::string(text) +
                 "\" is too long (it does not fit in 64-bit milliseconds, ~292 million years)"};
  };
  if (text.empty()) return invalid();
  std::int64_t total = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[pos]))) return invalid();
    std::int64_t number = 0;
    bool overflow = false;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      overflow = overflow || __builtin_mul_overflow(number, 10, &number) ||
                 __builtin_add_overflow(number, text[pos] - '0', &number);
      ++pos;
    }
    const Unit* unit = nullptr;
    for (const Unit& candidate : kUnits) {
      if (text.substr(pos, candidate.suffix.size()) == candidate.suffix) {
        unit = &candidate;
        break;
      }
    }
    if (unit == nullptr) return invalid();
    pos += unit->suffix.size();
    std::int64_t millis = 0;
    if (overflow || __builtin_mul_overflow(number, unit->millis, &millis) ||
        __builtin_add_overflow(total, millis, &total)) {
      return too_long();
    }
  }
  return std::chrono::milliseconds(total);
}

std::string FormatDuration(std::chrono::milliseconds duration) {
  std::int64_t ms = duration.count();
  if (ms == 0) return "0s";
  std::string out;
  for (auto it = std::rbegin(kUnits); it != std::rend(kUnits); ++it) {
    if (ms >= it->millis) {
      out += std::to_string(ms / it->millis) + std::string(it->suffix);
      ms %= it->millis;
    }
  }
  return out;
}

}  // namespace lagsight::config
