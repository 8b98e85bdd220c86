// The checkpoint sawtooth: Kafka-side lag that climbs between commits and drops at each one.
//
// A Flink KafkaSource commits only when a checkpoint completes, so a healthy job's Kafka-side lag
// rises for a whole checkpoint interval and falls back at each commit. Pure: the commit events
// lagsight saw (polls at which the group's committed offsets advanced) in, the shape out.
//   detected   at least kMinCommits commits whose spacing is regular (every gap within 50% of the
//              median gap), at least two thirds of them dropping the lag, the last one no older
//              than two periods;
//   period     (last commit - first commit) / gaps over that regular run: the poll interval's
//              jitter averages out over the run (error <= poll interval / gaps);
//   amplitude  the median lag drop at a commit (lag just before it minus lag just after).
// Commits are seen only at polls, so a period below two poll gaps cannot be measured (commits
// every 5 s seen by 15 s polls look like one every 15 s, with drops that mix several commits):
// then nothing is detected and period and amplitude are unknown. Where the period is known
// otherwise (a Flink job's checkpoint interval), the rules use that instead.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace lagsight::analysis {

struct CommitEvent {
  double time = 0;              // the poll that first saw the new committed offsets
  std::int64_t lag_before = 0;  // group lag (records) at the poll before
  std::int64_t lag_after = 0;   // at this poll
};

struct Sawtooth {
  bool detected = false;
  std::optional<double> period_seconds;
  std::optional<double> amplitude_records;
};

inline constexpr std::size_t kSawtoothMinCommits = 3;

// `commits` in time order (the most recent last); `poll_gap_seconds`: the usual gap between
// the polls that saw them (0: unknown, every period measurable).
Sawtooth DetectSawtooth(const std::vector<CommitEvent>& commits, double now,
                        double poll_gap_seconds = 0);

// Polls per period below which a period cannot be measured (sampling at less than twice the
// signal's frequency aliases it).
inline constexpr double kSawtoothMinPollsPerPeriod = 2;

}  // namespace lagsight::analysis
