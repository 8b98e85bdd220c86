// app::SourceHealth: one source's polling state and health across polls, and the one way they
// change after a poll. Kept by the daemon, the same for every kind of source.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "metrics/poll_status.h"

namespace lagsight::app {

struct SourceHealth {
  bool polling = false;
  bool polled_once = false;
  metrics::PollStatus status;
  std::string last_error;

  // Counts the poll that ended at `now_unix_seconds` and logs transitions: each new problem once
  // at warn, its repetitions at debug (the metrics show them), and the recovery at info.
  void Record(std::string_view kind, const std::string& name,
              const std::optional<std::string>& error, double seconds, double now_unix_seconds);
};

}  // namespace lagsight::app
