// StallGuard: notices that lagsight itself stood still (a VM pause, swap, SIGSTOP) and holds new
// causes back until the sources have been polled afresh.
//
// After such a stall the first polls mix the world before and after: Flink's REST API serves
// checkpoint statistics cached from before (up to web.refresh-interval, 3 s) and reader metrics
// up to a fetch interval old, while Kafka's are fresh. A job whose checkpoint is "20 s old" right
// after a 20 s stall of the whole host is not failing. So after a gap of more than kStallGaps
// usual gaps (+ slack) between a source's observations, new causes wait until every source has
// been polled afresh and Flink's caches have turned over (Settled); active causes stay. Pure:
// times are parameters.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>

namespace lagsight::analysis {

class StallGuard {
 public:
  // Source `cluster` of `kind` ('k' Kafka, 'f' Flink) was observed at `now`; Flink's metrics
  // refresh at most every `slowest_metrics_refresh` seconds.
  void NoteObservation(char kind, const std::string& cluster, double now,
                       double slowest_metrics_refresh);

  // False while new causes must wait.
  bool Settled(double now) const { return now >= settle_until_; }

  // Forgets the sources that are no longer configured.
  void Retain(const std::set<std::string>& kafka_clusters,
              const std::set<std::string>& flink_clusters);

 private:
  // Per source (kind, cluster): when it was last observed and its usual gap between
  // observations, to notice that lagsight itself stood still.
  struct ObservationClock {
    double last = 0;
    double usual_gap = 0;
  };
  std::map<std::pair<char, std::string>, ObservationClock> observation_clocks_;
  // Until then no new cause is confirmed (see NoteObservation).
  double settle_until_ = 0;
};

}  // namespace lagsight::analysis
