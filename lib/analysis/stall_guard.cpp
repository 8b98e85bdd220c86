#include "analysis/stall_guard.h"

#include <algorithm>

namespace lagsight::analysis {
namespace {

// lagsight stood still (a VM pause, swap, SIGSTOP) when a source's observations are this many of
// its usual gaps apart, plus the slack; what it sees next mixes before and after for a while.
constexpr double kStallGaps = 2;
constexpr double kStallSlackSeconds = 5;

}  // namespace

void StallGuard::NoteObservation(char kind, const std::string& cluster, double now,
                                 double slowest_metrics_refresh) {
  ObservationClock& clock = observation_clocks_[{kind, cluster}];
  if (clock.last > 0 && now > clock.last) {
    const double gap = now - clock.last;
    if (clock.usual_gap > 0 && gap > kStallGaps * clock.usual_gap + kStallSlackSeconds) {
      settle_until_ =
          std::max(settle_until_, now + std::max(2 * clock.usual_gap, slowest_metrics_refresh) +
                                      kStallSlackSeconds);
    }
    // Always folded in: after a reload to a longer poll interval the usual gap catches up.
    clock.usual_gap = clock.usual_gap > 0 ? 0.8 * clock.usual_gap + 0.2 * gap : gap;
  }
  clock.last = now;
}

void StallGuard::Retain(const std::set<std::string>& kafka_clusters,
                        const std::set<std::string>& flink_clusters) {
  std::erase_if(observation_clocks_, [&](const auto& entry) {
    const auto& [kind, name] = entry.first;
    return kind == 'k' ? !kafka_clusters.contains(name) : !flink_clusters.contains(name);
  });
}

}  // namespace lagsight::analysis
