// Time in the analysis: a configured duration in seconds, the time a snapshot's answers are
// known to date from, and the one rule for comparing facts read at different moments.
//
// The analysis reads no clock: every time is a parameter (unix seconds as doubles). Every fact a
// source hands over carries when it was read (a poll's requested_at: it began; the time it was
// observed, or a store's read_until: its answers had arrived). Two facts of different sources
// are compared as of one moment only through ReadBefore and what is built on it (BeyondLogEnd
// here; LogEndAt in history.h for a log end at a past time): comparing a fresh value with an
// older one as if they were read together was the shape of every false judgement the team
// fixed in a special case before.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>

namespace lagsight::analysis {

inline double Seconds(std::chrono::milliseconds duration) {
  return std::chrono::duration<double>(duration).count();
}

// When a snapshot's answers are known to date from: when its poll began (see FlinkSnapshot),
// never after it was observed; unknown (0): when it was observed.
inline double KnownAt(double requested_at, double observed_at) {
  return requested_at > 0 ? std::min(observed_at, requested_at) : observed_at;
}

// Whether a fact whose reading ended at `earlier_read_until` was read before one whose poll
// began at `later_read_from` (0: unknown, never ordered): only then does the later reading see
// the world at least as it was when the earlier one was taken.
inline bool ReadBefore(double earlier_read_until, double later_read_from) {
  return earlier_read_until > 0 && later_read_from > 0 && later_read_from >= earlier_read_until;
}

// Whether `position` (a job's next offset, a stored offset) lies beyond `log_end`: no when it
// does not exceed it, whichever was read first; yes when it does and the log end was read after
// it (a log end only grows, a recreated topic aside, so one read later is at least what the log
// held then); none (unknown) when the log end is older than the position: records written in
// between are no anomaly.
inline std::optional<bool> BeyondLogEnd(std::int64_t position, double position_read_until,
                                        std::int64_t log_end, double log_end_read_from) {
  if (position <= log_end) return false;
  if (ReadBefore(position_read_until, log_end_read_from)) return true;
  return std::nullopt;
}

}  // namespace lagsight::analysis
