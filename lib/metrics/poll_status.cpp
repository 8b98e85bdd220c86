#include "metrics/poll_status.h"

namespace lagsight::metrics {

void AppendPollStatus(const PollStatusMetrics& defs, const Labels& labels, const PollStatus& status,
                      FamilyBuilder& out) {
  out.Add(defs.up, labels, status.up ? 1 : 0);
  out.Add(defs.duration, labels, status.last_duration_seconds);
  // Absent until a poll succeeded: a made-up time would read as "fresh data".
  if (status.last_success_unix_seconds)
    out.Add(defs.last_success, labels, *status.last_success_unix_seconds);
  out.Add(defs.polls, labels, static_cast<double>(status.polls_total));
  out.Add(defs.failures, labels, static_cast<double>(status.poll_failures_total));
}

}  // namespace lagsight::metrics
