// KafkaHistory: the bounded history of one Kafka cluster, the first stage of the analysis.
//
// Per poll it keeps, per partition, the log ends over the window (for lag in seconds, input
// rates and the log end at the older time a Flink metric value was taken) and, per group, its
// lag samples, the last commit events (sawtooth, commit period), the times its offsets went back
// within the window, since when each committed offset stands and a few offsets it held before
// (to match a Flink job's late committedOffset). It reads only the Kafka poll it is given and
// what the Flink side tells it through EarlierCommitsPolicy; later stages read it, it reads none
// of them. Groups and partitions a poll no longer shows are dropped; a group whose offsets a
// poll did not answer keeps its history. Share groups (KIP-932) are kept apart, in the same
// shape: their start offsets are their progress.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/flink_join.h"
#include "analysis/kafka_lag.h"
#include "analysis/lag_seconds.h"
#include "analysis/offset_regressions.h"
#include "analysis/sawtooth.h"
#include "analysis/series.h"
#include "analysis/standing.h"
#include "kafka/snapshot.h"

namespace lagsight::analysis {

struct GroupSample {
  double time = 0;
  std::int64_t lag_sum = 0;
  std::int64_t log_end_sum = 0;
};

struct GroupHistory {
  ThinningSeries<GroupSample> samples;
  std::vector<CommitEvent> commits;
  std::vector<double> regression_times;  // within the window
  // The offsets of the latest poll, each with since when it stands (one map, not a copy of the
  // snapshot's offsets beside it: at 100,000 group-partitions that copy was 8 MB).
  StandingOffsets committed_standing;
  // Offsets the group held before its current ones, with when it moved on from each; kept a few
  // metric refreshes (groups without members, topics Flink jobs read) to match a job's late
  // committedOffset gauge.
  std::map<kafka::TopicPartition, std::vector<Standing>> committed_earlier;
  double first_seen = 0;
  double last_commit = 0;             // last time lagsight saw the offsets change (or first_seen)
  std::optional<double> last_active;  // last time the group had members
  std::optional<double> uncommitted_since;
};

// The usual gap between a group's polls: the median of its latest gaps (0 with fewer than two
// samples). The newest samples keep their poll resolution (ThinningSeries).
double UsualPollGap(const ThinningSeries<GroupSample>& samples);

// A partition's log ends over the window.
struct PartitionLogEnds {
  LogEndHistory history;
  // Records/s that arrived over the window as of the latest poll (InputRate), none while the
  // history is short. Worked out once a poll: every group reading the partition asks for it, and
  // 2,000 groups on one topic asked 2,000 times.
  std::optional<double> input_rate;
};

// What the Flink side tells the Kafka history about a group's superseded offsets: how long one
// can still be what a Flink job reports (EarlierCommitsKeptFor), and which topics Flink jobs
// read (only there, or in groups without members, are they worth keeping).
struct EarlierCommitsPolicy {
  double kept_for = 0;  // seconds
  std::function<bool(const std::string& topic)> read_by_flink;
};

// How long a superseded committed offset can still be what a Flink job reports, when the slowest
// Flink cluster refreshes its metrics every `slowest_metrics_refresh` seconds.
double EarlierCommitsKeptFor(double slowest_metrics_refresh);

class KafkaHistory {
 public:
  // Folds in one successful poll taken at `now` (its lags and the offsets that went back since
  // the poll before); `window` is the diagnosis window in seconds.
  void Record(const kafka::KafkaSnapshot& snapshot, const std::vector<GroupLag>& lags,
              const std::vector<OffsetRegression>& regressions, const EarlierCommitsPolicy& policy,
              double window, double now);

  // What the group's offsets on `tp` did before its current ones, within `kept_for` seconds.
  EarlierCommit CommittedEarlier(const std::string& group, const kafka::TopicPartition& tp,
                                 std::int64_t offset, double kept_for, double now) const;

  // A Flink source committed to `group` successfully at `now`: that refreshes the group's
  // offsets at the broker even when they did not move, so it counts for the expiry clock.
  void NoteCommit(const std::string& group, double now);

  // Records/s arriving on `partitions`, none while no partition's history is long enough.
  // Measured at `now`: a Flink poll's analysis asks between two Kafka polls.
  std::optional<double> InputRateOf(const std::set<kafka::TopicPartition>& partitions,
                                    double window, double now) const;
  // The same over a group's partitions (with `committed_only`, those it committed on) as of the
  // Kafka poll just recorded, from the rates Record worked out: only a Kafka poll's analysis
  // asks this, at the time of that poll.
  std::optional<double> InputRateOf(const GroupLag& lag, bool committed_only) const;

  const GroupHistory* Group(const std::string& group) const;
  // A share group's history: its start offsets stand for the committed offsets (commits are
  // the polls at which they moved forward, regressions those at which they went back), its lag
  // is the one exported for it (kafka::ShareLagOf).
  const GroupHistory* ShareGroup(const std::string& group) const;
  const std::map<std::string, GroupHistory>& groups() const { return groups_; }
  const std::map<kafka::TopicPartition, PartitionLogEnds>& log_ends() const { return log_ends_; }
  // When the poll of the latest log ends began: they were read after that.
  double requested_at() const { return requested_at_; }

 private:
  void RecordLogEnds(const kafka::KafkaSnapshot& snapshot, double window, double now);
  static void RecordGroup(GroupHistory& history, bool known, const kafka::ConsumerGroup& group,
                          const GroupLag* lag, const kafka::KafkaSnapshot& snapshot,
                          const EarlierCommitsPolicy& policy, double window, double now);
  void RecordShareGroups(const kafka::KafkaSnapshot& snapshot, double window, double now);
  static void RecordShareGroup(GroupHistory& history, bool known, const kafka::ShareGroup& group,
                               const kafka::KafkaSnapshot& snapshot, double window, double now);
  enum class Progress { kNone, kAdvanced, kRegressed };
  template <typename SortedOffsets>
  static Progress RecordProgress(GroupHistory& history, bool known, const SortedOffsets& offsets,
                                 const GroupSample& sample, double window, double now);
  static void RememberEarlierCommits(GroupHistory& history, const kafka::ConsumerGroup& group,
                                     const EarlierCommitsPolicy& policy, double now);

  double requested_at_ = 0;
  std::map<kafka::TopicPartition, PartitionLogEnds> log_ends_;
  std::map<std::string, GroupHistory> groups_;
  std::map<std::string, GroupHistory> share_groups_;
};

using KafkaHistories = std::map<std::string, KafkaHistory>;  // by cluster name

}  // namespace lagsight::analysis
