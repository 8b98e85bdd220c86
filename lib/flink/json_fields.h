// Reading fields of a Flink REST answer with simdjson, shared by the REST parsers: numbers as
// Flink writes them (integers, doubles, or strings in metric values), counts that must be
// non-negative int64s, and anomalies noted instead of undefined conversions. Internal to
// lib/flink (rest_parsers.cpp, job_graph_parsers.cpp).
#pragma once

#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace lagsight::flink::json_fields {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;
inline Result<element> Parse(simdjson::dom::parser& parser, std::string_view body,
                             const char* what) {
  element root;
  if (const auto error = parser.parse(body.data(), body.size()).get(root)) {
    return Error{std::string(what) + ": not JSON: " + simdjson::error_message(error)};
  }
  return root;
}

inline std::optional<std::string_view> String(object o, std::string_view key) {
  std::string_view value;
  if (o[key].get(value)) return std::nullopt;
  return value;
}

// Numbers may come as integers, doubles or (metric values) strings.
inline std::optional<double> Number(element e) {
  if (double d; !e.get(d)) return std::isfinite(d) ? std::optional(d) : std::nullopt;
  if (std::int64_t i; !e.get(i)) return static_cast<double>(i);
  if (std::uint64_t u; !e.get(u)) return static_cast<double>(u);
  if (std::string_view s; !e.get(s)) {
    double d = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
    if (ec == std::errc() && end == s.data() + s.size() && std::isfinite(d)) return d;
  }
  return std::nullopt;
}

inline std::optional<double> Number(object o, std::string_view key) {
  element e;
  if (o[key].get(e)) return std::nullopt;
  return Number(e);
}

constexpr double kTwoTo63 = 9223372036854775808.0;

inline std::string Shown(element e) {
  std::string text = simdjson::minify(e);
  if (text.size() > 40) text = text.substr(0, 40) + "...";
  return text;
}

inline void Note(std::vector<std::string>* anomalies, std::string message) {
  if (anomalies != nullptr) anomalies->push_back(std::move(message));
}

// Flink writes -1 for a time it does not know (yet): a value, not an anomaly.
enum class Minus1 { kIsAnomaly, kMeansUnset };

// A field that can only be a non-negative int64 (a count, an id, a time): empty when absent or
// not a number; also empty, and noted in `anomalies`, when beyond int64 or negative. No value
// ever reaches a conversion whose result is undefined.
inline std::optional<std::int64_t> Count(object o, std::string_view key, std::string_view what,
                                         std::vector<std::string>* anomalies,
                                         Minus1 minus_one = Minus1::kIsAnomaly) {
  element e;
  if (o[key].get(e)) return std::nullopt;
  std::optional<std::int64_t> exact;
  if (std::int64_t i; !e.get(i)) {
    exact = i;
  } else {
    const auto number = Number(e);
    if (!number) return std::nullopt;  // not a finite number ("NaN", garbage): not reported
    if (*number >= -kTwoTo63 && *number < kTwoTo63) exact = static_cast<std::int64_t>(*number);
  }
  if (!exact) {
    Note(anomalies, std::string(what) + "." + std::string(key) + " = " + Shown(e) +
                        " is beyond the int64 range; left out");
    return std::nullopt;
  }
  if (*exact == -1 && minus_one == Minus1::kMeansUnset) return std::nullopt;
  if (*exact < 0) {
    Note(anomalies, std::string(what) + "." + std::string(key) + " = " + std::to_string(*exact) +
                        " cannot be negative; left out");
    return std::nullopt;
  }
  return exact;
}

inline Result<object> ObjectOf(element root, const char* what) {
  object o;
  if (root.get(o)) return Error{std::string(what) + ": expected a JSON object"};
  return o;
}

}  // namespace lagsight::flink::json_fields
