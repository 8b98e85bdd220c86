// A source's health across polls (kept by the app) and the five series every source exports
// about it: up, last poll duration, last successful poll time, polls and failed polls.
#pragma once

#include <cstdint>
#include <optional>

#include "metrics/exposition.h"

namespace lagsight::metrics {

struct PollStatus {
  bool up = false;
  double last_duration_seconds = 0;
  std::optional<double> last_success_unix_seconds;
  std::uint64_t polls_total = 0;
  std::uint64_t poll_failures_total = 0;
};

// The names and help texts of one kind of source's health series.
struct PollStatusMetrics {
  MetricDef up;
  MetricDef duration;
  MetricDef last_success;
  MetricDef polls;
  MetricDef failures;
};

void AppendPollStatus(const PollStatusMetrics& defs, const Labels& labels, const PollStatus& status,
                      FamilyBuilder& out);

}  // namespace lagsight::metrics
