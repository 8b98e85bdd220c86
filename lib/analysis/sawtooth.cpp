#include "analysis/sawtooth.h"

#include <algorithm>

namespace lagsight::analysis {
namespace {

// A period of two poll gaps measures as slightly less when a poll comes late and the next on
// time; below this share of two gaps it is one gap seen with jitter.
constexpr double kPollGapJitter = 0.9;

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

}  // namespace

Sawtooth DetectSawtooth(const std::vector<CommitEvent>& commits, double now,
                        double poll_gap_seconds) {
  Sawtooth result;
  if (commits.size() < kSawtoothMinCommits) return result;
  // The longest run of regular gaps ending at the latest commit.
  std::vector<double> gaps;
  for (std::size_t i = 1; i < commits.size(); ++i) {
    gaps.push_back(commits[i].time - commits[i - 1].time);
  }
  const double median_gap = Median(gaps);
  if (median_gap <= 0) return result;
  std::size_t first = commits.size() - 1;
  while (first > 0) {
    const double gap = commits[first].time - commits[first - 1].time;
    if (gap < 0.5 * median_gap || gap > 1.5 * median_gap) break;
    --first;
  }
  const std::size_t run_gaps = commits.size() - 1 - first;
  if (run_gaps + 1 < kSawtoothMinCommits) return result;
  const double period = (commits.back().time - commits[first].time) / static_cast<double>(run_gaps);
  // Every poll (or nearly) saw a commit: the true period is anything up to this one.
  if (period < kSawtoothMinPollsPerPeriod * poll_gap_seconds * kPollGapJitter) return result;
  std::vector<double> drops;
  std::size_t dropping = 0;
  for (std::size_t i = first; i < commits.size(); ++i) {
    const auto drop = commits[i].lag_before - commits[i].lag_after;
    if (drop > 0) ++dropping;
    drops.push_back(static_cast<double>(drop));
  }
  // A commit seen in the same poll as a burst of new records may not lower the lag; most must.
  const bool commits_drop_lag = 3 * dropping >= 2 * drops.size();
  result.period_seconds = period;
  result.amplitude_records = std::max(0.0, Median(drops));
  result.detected = commits_drop_lag && now - commits.back().time <= 2 * period;
  return result;
}

}  // namespace lagsight::analysis
