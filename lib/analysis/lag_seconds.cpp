#include "analysis/lag_seconds.h"

#include <algorithm>

namespace lagsight::analysis {

const char* LagSecondsMethodName(LagSecondsMethod method) {
  switch (method) {
    case LagSecondsMethod::kRecordTimestamp:
      return "record_timestamp";
    case LagSecondsMethod::kInterpolated:
      return "interpolated";
    case LagSecondsMethod::kLowerBound:
      return "lower_bound";
    case LagSecondsMethod::kCaughtUp:
      break;
  }
  return "caught_up";
}

std::optional<LagSeconds> ComputeLagSeconds(std::int64_t position, std::int64_t lag,
                                            std::optional<std::int64_t> record_timestamp_ms,
                                            const LogEndHistory& history, double now) {
  if (lag <= 0) return LagSeconds{0, LagSecondsMethod::kCaughtUp};
  if (record_timestamp_ms) {
    // A producer clock ahead of ours would give a negative age; the record is at least new.
    return LagSeconds{std::max(0.0, now - static_cast<double>(*record_timestamp_ms) / 1000.0),
                      LagSecondsMethod::kRecordTimestamp};
  }
  const auto& samples = history.samples();
  if (samples.empty()) return std::nullopt;
  // The record at `position` was written when log end first went past it.
  if (samples.front().log_end > position) {
    return LagSeconds{std::max(0.0, now - samples.front().time), LagSecondsMethod::kLowerBound};
  }
  for (std::size_t i = 1; i < samples.size(); ++i) {
    const LogEndSample& before = samples[i - 1];
    const LogEndSample& after = samples[i];
    if (after.log_end <= position) continue;
    // Log end went from before.log_end (<= position) to after.log_end (> position) between the
    // two samples; assume records arrived evenly in between.
    const double share = static_cast<double>(position - before.log_end + 1) /
                         static_cast<double>(after.log_end - before.log_end);
    const double written = before.time + share * (after.time - before.time);
    return LagSeconds{std::max(0.0, now - written), LagSecondsMethod::kInterpolated};
  }
  return std::nullopt;  // history has not seen log end pass the position: written after it
}

}  // namespace lagsight::analysis
