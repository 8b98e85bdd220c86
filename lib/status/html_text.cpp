#include "status/html_text.h"

#include <charconv>
#include <cmath>
#include <ctime>

namespace lagsight::status {

void AppendEscaped(std::string& out, std::string_view text) {
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
}

void AppendAttribute(std::string& out, std::string_view name, std::string_view value) {
  out += ' ';
  out += name;
  out += "=\"";
  AppendEscaped(out, value);
  out += '"';
}

void AppendInteger(std::string& out, std::int64_t value) {
  char buffer[24];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  out.append(buffer, end);
}

void AppendGrouped(std::string& out, std::int64_t value) {
  char buffer[24];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  const std::string_view digits(buffer, end - buffer);
  const std::size_t sign = digits.front() == '-' ? 1 : 0;
  out.append(digits.substr(0, sign));
  const std::size_t count = digits.size() - sign;
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0 && (count - i) % 3 == 0) out += ',';
    out += digits[sign + i];
  }
}

void AppendOptionalCount(std::string& out, const std::optional<std::int64_t>& value) {
  if (value) {
    AppendGrouped(out, *value);
  } else {
    out += kNone;
  }
}

void AppendFixed(std::string& out, double value, int precision) {
  char buffer[64];
  const auto result =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed, precision);
  if (result.ec == std::errc()) out.append(buffer, result.ptr);
}

void AppendDuration(std::string& out, double seconds) {
  if (!std::isfinite(seconds)) {
    out += "?";
    return;
  }
  if (seconds < 0) seconds = 0;
  if (seconds < 10) {
    AppendFixed(out, seconds, 1);
    out += " s";
    return;
  }
  const auto whole = static_cast<std::int64_t>(seconds);
  const auto two_digits = [&out](std::int64_t value) {
    if (value < 10) out += '0';
    AppendInteger(out, value);
  };
  if (whole < 60) {
    AppendInteger(out, whole);
    out += " s";
  } else if (whole < 3600) {
    AppendInteger(out, whole / 60);
    out += "m ";
    two_digits(whole % 60);
    out += 's';
  } else if (whole < 86400) {
    AppendInteger(out, whole / 3600);
    out += "h ";
    two_digits(whole / 60 % 60);
    out += 'm';
  } else {
    AppendInteger(out, whole / 86400);
    out += "d ";
    two_digits(whole / 3600 % 24);
    out += 'h';
  }
}

void AppendUtc(std::string& out, double unix_seconds) {
  const auto seconds = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  if (gmtime_r(&seconds, &tm) == nullptr) {
    out += "?";
    return;
  }
  char buffer[32];
  const std::size_t length = std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S UTC", &tm);
  out.append(buffer, length);
}

}  // namespace lagsight::status
