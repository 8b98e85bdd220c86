// Process-wide logging setup: spdlog to stderr in logfmt or JSON, one line per event.
//
// Both formats carry ts, level and msg, with msg quoted/escaped so that log shippers can parse
// every line (a librdkafka message may contain quotes or newlines).
#pragma once

#include <optional>
#include <string>

#include "common/result.h"

namespace lagsight::app {

// level: debug|info|warn|error; format: logfmt|json. The error names the bad value.
std::optional<Error> ConfigureLogging(const std::string& level, const std::string& format);

}  // namespace lagsight::app
