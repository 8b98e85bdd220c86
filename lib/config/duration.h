// Parsing of durations written the Prometheus way: "500ms", "15s", "1m30s", "2h".
//
// Pure functions, no state. A bare number is rejected on purpose: "15" could mean seconds or
// milliseconds, and a config that guesses wrong polls a broker 1000 times too often.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "common/result.h"

namespace lagsight::config {

Result<std::chrono::milliseconds> ParseDuration(std::string_view text);

// The inverse, for messages and the example config: 90000ms -> "1m30s".
std::string FormatDuration(std::chrono::milliseconds duration);

}  // namespace lagsight::config
