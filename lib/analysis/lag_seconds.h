// Kafka-side lag in seconds: how old the oldest record a group has not consumed is.
//
// Pure: the position, the record timestamps lagsight fetched and the partition's log-end history
// in, seconds out; `now` is a parameter. The method is part of the answer because the methods
// differ in trust:
//   caught_up         the group is at log end: 0 s;
//   record_timestamp  now - timestamp of the record at the group's position (exact; stays right
//                     through restarts and reprocessing, where the record really is that old);
//   interpolated      now - the time log end passed the position, interpolated between two
//                     log-end samples lagsight took (bounded by its poll interval);
//   lower_bound       the position is older than all the history lagsight kept: now - its oldest
//                     sample, which the true age exceeds. Never extrapolated: extrapolating log-end
//                     rates is what gives other exporters absurd values after a restart.
// No answer when none applies (e.g. lagsight just started and fetched nothing yet).
#pragma once

#include <cstdint>
#include <optional>

#include "analysis/series.h"

namespace lagsight::analysis {

enum class LagSecondsMethod { kCaughtUp, kRecordTimestamp, kInterpolated, kLowerBound };
const char* LagSecondsMethodName(LagSecondsMethod method);

struct LogEndSample {
  double time = 0;  // unix seconds of the poll
  std::int64_t log_end = 0;
};
using LogEndHistory = ThinningSeries<LogEndSample>;

struct LagSeconds {
  double seconds = 0;
  LagSecondsMethod method = LagSecondsMethod::kCaughtUp;
};

// `position`: the offset of the oldest unconsumed record (the committed offset, or log start when
// retention deleted what the group never read). `lag`: log end - committed. `record_timestamp_ms`:
// the fetched timestamp of the record at `position`, if any.
std::optional<LagSeconds> ComputeLagSeconds(std::int64_t position, std::int64_t lag,
                                            std::optional<std::int64_t> record_timestamp_ms,
                                            const LogEndHistory& history, double now);

}  // namespace lagsight::analysis
