// What the analyzer measures over its bounded histories: trends, reset-safe counter increases,
// the log end at a past time, input rates.
//
// Pure functions over ThinningSeries; `now` and the window are parameters, nothing reads a
// clock. They turn history into the plain numbers of diagnosis.h's facts, so the rules never
// see a series.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

#include "analysis/diagnosis.h"
#include "analysis/lag_seconds.h"
#include "analysis/series.h"

namespace lagsight::analysis {

// The sample to measure a change over the window from: the last one at or before the window's
// start, else the oldest there is.
template <typename Sample>
const Sample* WindowBaseline(const ThinningSeries<Sample>& series, double now, double window) {
  const auto& samples = series.samples();
  if (samples.empty()) return nullptr;
  const Sample* baseline = &samples.front();
  for (const Sample& sample : samples) {
    if (sample.time > now - window) break;
    baseline = &sample;
  }
  return baseline;
}

// Share of steps that must go one way for a trend: one burst followed by a fall is no growth.
inline constexpr double kTrendStepShare = 0.6;
// Share of the window the history must span before a lag is called level (steady).
inline constexpr double kLevelCoverage = 0.8;

// How `value` moved over the window: growing (rose by at least `minimum_change`, most steps not
// down), falling (the mirror), level (spans most of the window, neither), unknown (too short).
template <typename Sample, typename Value>
Trend TrendOverWindow(const ThinningSeries<Sample>& series, Value value, double now, double window,
                      double minimum_change) {
  const Sample* baseline = WindowBaseline(series, now, window);
  if (baseline == nullptr) return Trend::kUnknown;
  const Sample& latest = series.back();
  const double span = latest.time - baseline->time;
  if (span < window / 2) return Trend::kUnknown;
  const double change = static_cast<double>(value(latest)) - static_cast<double>(value(*baseline));
  std::size_t steps = 0;
  std::size_t not_down = 0;
  std::size_t not_up = 0;
  const Sample* previous = nullptr;
  for (const Sample& sample : series.samples()) {
    if (sample.time < baseline->time) continue;
    if (previous != nullptr) {
      ++steps;
      if (value(sample) >= value(*previous)) ++not_down;
      if (value(sample) <= value(*previous)) ++not_up;
    }
    previous = &sample;
  }
  if (steps == 0) return Trend::kUnknown;
  const double share = kTrendStepShare * static_cast<double>(steps);
  if (change >= minimum_change && static_cast<double>(not_down) >= share) return Trend::kGrowing;
  if (-change >= minimum_change && static_cast<double>(not_up) >= share) return Trend::kFalling;
  return span >= kLevelCoverage * window ? Trend::kLevel : Trend::kUnknown;
}

// How much a counter rose over the window, safe against resets: a value below the one before
// means the counter restarted at 0 (a failover restarts a reader's counters), so the new value
// is all increase, as Prometheus's increase() counts it.
template <typename Sample, typename Value>
double IncreaseOverWindow(const ThinningSeries<Sample>& series, Value value, double now,
                          double window) {
  const Sample* baseline = WindowBaseline(series, now, window);
  if (baseline == nullptr) return 0;
  double increase = 0;
  const Sample* previous = nullptr;
  for (const Sample& sample : series.samples()) {
    if (sample.time < baseline->time) continue;
    if (previous != nullptr) {
      const double before = value(*previous);
      const double after = value(sample);
      increase += after >= before ? after - before : after;
    }
    previous = &sample;
  }
  return increase;
}

// The log end at `time`, interpolated between the samples around it; the oldest (newest) one
// before (after) the history. None without history.
std::optional<double> LogEndAt(const LogEndHistory& history, double time);

// Records per second that arrived over the window (from the log-end history), none when the
// history spans less than `minimum_span` seconds.
std::optional<double> InputRate(const LogEndHistory& history, double now, double window,
                                double minimum_span);

}  // namespace lagsight::analysis
