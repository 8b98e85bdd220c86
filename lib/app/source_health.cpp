#include "app/source_health.h"

#include <spdlog/spdlog.h>

namespace lagsight::app {

void SourceHealth::Record(std::string_view kind, const std::string& name,
                          const std::optional<std::string>& error, double seconds,
                          double now_unix_seconds) {
  const bool was_up = status.up || !polled_once;
  polling = false;
  polled_once = true;
  status.polls_total++;
  status.last_duration_seconds = seconds;
  if (!error) {
    if (!status.up && status.polls_total > 1)
      spdlog::info("{} cluster \"{}\": polled successfully again", kind, name);
    status.up = true;
    status.last_success_unix_seconds = now_unix_seconds;
    last_error.clear();
    return;
  }
  status.up = false;
  status.poll_failures_total++;
  spdlog::log(was_up || *error != last_error ? spdlog::level::warn : spdlog::level::debug,
              "{} cluster \"{}\": poll failed: {}", kind, name, *error);
  last_error = *error;
}

}  // namespace lagsight::app
