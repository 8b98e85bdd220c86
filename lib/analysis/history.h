// What the analyzer measures over its bounded histories: trends, reset-safe counter increases,
// the log end at a past time, input rates.
//
// Pure functions over ThinningSeries; `now` and the window are parameters, nothing reads a
// clock. They turn history into the plain numbers of diagnosis.h's facts, so the rules never
// see a series.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
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

// How long a backlog takes to reach 0 at the pace it shrank over the window (least-squares slope
// of `value` over the samples in the window): 0 when the latest value is 0, +Inf when it is not
// shrinking (level or growing), none when the history is too short to tell (fewer than 3
// samples in the window, or spanning less than kCatchUpMinimumSpan of it).
inline constexpr double kCatchUpMinimumSpanSeconds = 30;
inline constexpr double kCatchUpMinimumSpanShare = 0.5;

template <typename Sample, typename Value>
std::optional<double> CatchUpSeconds(const ThinningSeries<Sample>& series, Value value, double now,
                                     double window) {
  if (series.empty()) return std::nullopt;
  const double latest = static_cast<double>(value(series.back()));
  if (latest <= 0) return 0.0;
  double n = 0, sum_t = 0, sum_v = 0, sum_tt = 0, sum_tv = 0;
  double first = 0;
  for (const Sample& sample : series.samples()) {
    if (sample.time < now - window) continue;
    if (n == 0) first = sample.time;
    // Times relative to the first sample keep the sums well conditioned.
    const double t = sample.time - first;
    const double v = static_cast<double>(value(sample));
    n += 1;
    sum_t += t;
    sum_v += v;
    sum_tt += t * t;
    sum_tv += t * v;
  }
  const double span = series.back().time - first;
  if (n < 3 || span < std::min(kCatchUpMinimumSpanSeconds, kCatchUpMinimumSpanShare * window)) {
    return std::nullopt;
  }
  const double denominator = n * sum_tt - sum_t * sum_t;
  if (denominator <= 0) return std::nullopt;
  const double slope = (n * sum_tv - sum_t * sum_v) / denominator;  // records per second
  if (slope >= 0) return std::numeric_limits<double>::infinity();
  return latest / -slope;
}

// The log end at `time` (for a read_committed reader the last stable offset), interpolated
// between the samples around it; the oldest (newest) one before (after) the history. None
// without history.
std::optional<double> LogEndAt(const LogEndHistory& history, double time,
                               bool read_committed = false);

// Records per second that arrived over the window (from the log-end history), none when the
// history spans less than `minimum_span` seconds.
std::optional<double> InputRate(const LogEndHistory& history, double now, double window,
                                double minimum_span);

}  // namespace lagsight::analysis
