#include "app/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>

namespace lagsight::app {
namespace {

void AppendEscaped(std::string_view text, spdlog::memory_buf_t& out, bool json) {
  for (char c : text) {
    switch (c) {
      case '"':
        out.append(std::string_view("\\\""));
        break;
      case '\\':
        out.append(std::string_view("\\\\"));
        break;
      case '\n':
        out.append(std::string_view("\\n"));
        break;
      case '\r':
        out.append(std::string_view("\\r"));
        break;
      case '\t':
        out.append(std::string_view("\\t"));
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, json ? "\\u%04x" : "\\x%02x", c);
          out.append(std::string_view(escaped));
        } else {
          out.push_back(c);
        }
    }
  }
}

// Formats records as `ts=... level=info msg="..."` or `{"ts":"...","level":"info","msg":"..."}`.
class StructuredFormatter final : public spdlog::formatter {
 public:
  explicit StructuredFormatter(bool json) : json_(json) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto time = std::chrono::system_clock::to_time_t(msg.time);
    const auto millis =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count() %
        1000;
    std::tm utc{};
    gmtime_r(&time, &utc);
    char stamp[40];
    const std::size_t length = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
    std::snprintf(stamp + length, sizeof stamp - length, ".%03dZ", static_cast<int>(millis));
    const auto level = spdlog::level::to_string_view(msg.level);
    const std::string_view text(msg.payload.data(), msg.payload.size());
    if (json_) {
      dest.append(std::string_view("{\"ts\":\""));
      dest.append(std::string_view(stamp));
      dest.append(std::string_view("\",\"level\":\""));
      dest.append(level.data(), level.data() + level.size());
      dest.append(std::string_view("\",\"msg\":\""));
      AppendEscaped(text, dest, true);
      dest.append(std::string_view("\"}\n"));
    } else {
      dest.append(std::string_view("ts="));
      dest.append(std::string_view(stamp));
      dest.append(std::string_view(" level="));
      dest.append(level.data(), level.data() + level.size());
      dest.append(std::string_view(" msg=\""));
      AppendEscaped(text, dest, false);
      dest.append(std::string_view("\"\n"));
    }
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<StructuredFormatter>(json_);
  }

 private:
  bool json_;
};

}  // namespace

std::optional<Error> ConfigureLogging(const std::string& level, const std::string& format) {
  spdlog::level::level_enum parsed;
  if (level == "debug") {
    parsed = spdlog::level::debug;
  } else if (level == "info") {
    parsed = spdlog::level::info;
  } else if (level == "warn") {
    parsed = spdlog::level::warn;
  } else if (level == "error") {
    parsed = spdlog::level::err;
  } else {
    return Error{"--log.level: \"" + level + "\" is not one of debug, info, warn, error"};
  }
  if (format != "logfmt" && format != "json") {
    return Error{"--log.format: \"" + format + "\" is not one of logfmt, json"};
  }
  auto logger = std::make_shared<spdlog::logger>("lagsight",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_formatter(std::make_unique<StructuredFormatter>(format == "json"));
  logger->set_level(parsed);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  return std::nullopt;
}

}  // namespace lagsight::app
