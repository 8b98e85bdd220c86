// Lag in seconds: how old the oldest record a consumer (a group, or a Flink job's own position)
// has not read is.
//
// Pure: the position, the timestamp of the record there and the partition's log-end history in,
// seconds out; `now` is a parameter. The method is part of the answer because the methods differ
// in trust:
//   caught_up         the consumer is at log end: 0 s;
//   record_timestamp  now - timestamp of the record at the position (exact; stays right through
//                     restarts and reprocessing, where the record really is that old). Taken as
//                     it is from a LogAppendTime topic (the broker's clock); a CreateTime is the
//                     producer's clock and is checked against when lagsight saw log end pass the
//                     offset (to within a poll), see PlausibleCreateTime;
//   interpolated      now - the time log end passed the position, interpolated between two
//                     log-end samples lagsight took (bounded by its poll interval and, for old
//                     positions, by how far the history has thinned there: ErrorBoundSeconds);
//   lower_bound       the position is older than all the history lagsight kept: now - its oldest
//                     sample, which the true age exceeds. Never extrapolated: extrapolating log-end
//                     rates is what gives other exporters absurd values after a restart.
//   interpolated_implausible_timestamp, lower_bound_implausible_timestamp
//                     the record had a CreateTime that cannot be when it was written (in the
//                     future, at the epoch, or far outside when log end passed it): the age is
//                     the interpolated one (or its lower bound), and the method says why.
// No answer when none applies (e.g. lagsight just started and fetched nothing yet). Seconds are
// rounded to the millisecond, the resolution of Kafka's record timestamps.
#pragma once

#include <cstdint>
#include <optional>

#include "analysis/series.h"
#include "kafka/snapshot.h"

namespace lagsight::analysis {

enum class LagSecondsMethod {
  kCaughtUp,
  kRecordTimestamp,
  kInterpolated,
  kLowerBound,
  kInterpolatedImplausibleTimestamp,
  kLowerBoundImplausibleTimestamp,
};
const char* LagSecondsMethodName(LagSecondsMethod method);

struct LogEndSample {
  double time = 0;  // unix seconds of the poll
  std::int64_t log_end = 0;
  // The end a read_committed reader reads to: the last stable offset where it was read, else
  // the log end.
  std::int64_t last_stable = 0;
};
using LogEndHistory = ThinningSeries<LogEndSample>;

struct LagSeconds {
  double seconds = 0;
  LagSecondsMethod method = LagSecondsMethod::kCaughtUp;
};

// How far a CreateTime may sit after the latest time its record can have been written (producer
// clocks ahead of lagsight's), and before the earliest (the producer's buffering and retries,
// delivery.timeout.ms = 120 s by default, and clocks behind).
inline constexpr double kCreateTimeAheadSlackSeconds = 60;
inline constexpr double kCreateTimeBehindSlackSeconds = 300;
// No Kafka record was written before this (2010-01-01): an earlier CreateTime (0, 1, a unit
// mix-up) is not when it was written.
inline constexpr double kEarliestPlausibleWriteSeconds = 1262304000;

// When log end passed `position` (the record there was written): within [earliest, latest];
// earliest is absent when the history starts after the record was written.
struct WrittenBetween {
  std::optional<double> earliest;
  double latest = 0;
};
std::optional<WrittenBetween> WhenWritten(std::int64_t position, const LogEndHistory& history);

// Whether a CreateTime can be when the record at `position` was written, given lagsight's
// log-end history and `now`.
bool PlausibleCreateTime(double timestamp_seconds, std::int64_t position,
                         const LogEndHistory& history, double now);

// `position`: the offset of the oldest unread record (a committed offset, or log start when
// retention deleted what was never read, or a Flink job's currentOffset + 1). `lag`: log end -
// position. `record`: the fetched timestamp of the record at `position`, if any.
std::optional<LagSeconds> ComputeLagSeconds(std::int64_t position, std::int64_t lag,
                                            std::optional<kafka::RecordTimestamp> record,
                                            const LogEndHistory& history, double now);

}  // namespace lagsight::analysis
