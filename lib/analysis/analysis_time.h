// Time in the analysis: a configured duration in seconds, and the time a snapshot's answers are
// known to date from.
//
// The analysis reads no clock: every time is a parameter (unix seconds as doubles). These two
// helpers are the only conversions every stage shares.
#pragma once

#include <algorithm>
#include <chrono>

namespace lagsight::analysis {

inline double Seconds(std::chrono::milliseconds duration) {
  return std::chrono::duration<double>(duration).count();
}

// When a snapshot's answers are known to date from: when its poll began (see FlinkSnapshot),
// never after it was observed; unknown (0): when it was observed.
inline double KnownAt(double requested_at, double observed_at) {
  return requested_at > 0 ? std::min(observed_at, requested_at) : observed_at;
}

}  // namespace lagsight::analysis
