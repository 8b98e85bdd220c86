#include "analysis/kafka_history.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "analysis/analysis_time.h"
#include "analysis/history.h"
#include "kafka/topic_cursor.h"

namespace lagsight::analysis {
namespace {

constexpr std::size_t kCommitEventsKept = 16;
// Superseded committed offsets kept per partition for matching jobs to groups (see
// CommittedEarlier): a bound for jobs that checkpoint every second while Flink's metric refresh
// is slow.
constexpr std::size_t kEarlierCommitsKept = 32;
// ... for this many metric refreshes of the slowest Flink cluster.
constexpr double kEarlierCommitsRefreshes = 3;

}  // namespace

double UsualPollGap(const ThinningSeries<GroupSample>& samples) {
  constexpr std::size_t kGapsConsidered = 8;
  const auto& all = samples.samples();
  if (all.size() < 2) return 0;
  std::vector<double> gaps;
  for (std::size_t i = all.size() - 1; i > 0 && gaps.size() < kGapsConsidered; --i) {
    gaps.push_back(all[i].time - all[i - 1].time);
  }
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<long>(gaps.size() / 2), gaps.end());
  return gaps[gaps.size() / 2];
}

double EarlierCommitsKeptFor(double slowest_metrics_refresh) {
  return kEarlierCommitsRefreshes * slowest_metrics_refresh;
}

void KafkaHistory::Record(const kafka::KafkaSnapshot& snapshot, const std::vector<GroupLag>& lags,
                          const std::vector<OffsetRegression>& regressions,
                          const EarlierCommitsPolicy& policy, double window, double now) {
  RecordLogEnds(snapshot, window, now);
  requested_at_ = KnownAt(snapshot.requested_at, now);

  std::map<std::string, const GroupLag*> lag_of;
  for (const GroupLag& lag : lags) lag_of[lag.group] = &lag;
  std::map<std::string, GroupHistory> groups;
  for (const kafka::ConsumerGroup& group : snapshot.groups) {
    if (!group.offsets_known) {
      // Keep what we had; this poll says nothing about the group's offsets.
      if (auto existing = groups_.find(group.id); existing != groups_.end()) {
        groups.emplace(group.id, std::move(existing->second));
      }
      continue;
    }
    auto existing = groups_.find(group.id);
    const bool known = existing != groups_.end();
    GroupHistory history = known ? std::move(existing->second) : GroupHistory();
    const auto lag = lag_of.find(group.id);
    RecordGroup(history, known, group, lag != lag_of.end() ? lag->second : nullptr, snapshot,
                policy, window, now);
    groups.emplace(group.id, std::move(history));
  }
  for (const OffsetRegression& regression : regressions) {
    if (auto group = groups.find(regression.group); group != groups.end()) {
      auto& times = group->second.regression_times;
      if (times.empty() || times.back() != now) times.push_back(now);
    }
  }
  groups_ = std::move(groups);
  RecordShareGroups(snapshot, window, now);
}

void KafkaHistory::RecordShareGroups(const kafka::KafkaSnapshot& snapshot, double window,
                                     double now) {
  std::map<std::string, GroupHistory> groups;
  for (const kafka::ShareGroup& group : snapshot.share_groups) {
    auto existing = share_groups_.find(group.id);
    const bool known = existing != share_groups_.end();
    GroupHistory history = known ? std::move(existing->second) : GroupHistory();
    // A poll that could not read the group's progress says nothing about it: keep what we had.
    if (group.offsets_known) RecordShareGroup(history, known, group, snapshot, window, now);
    if (known || group.offsets_known) groups.emplace(group.id, std::move(history));
  }
  share_groups_ = std::move(groups);
}

// Log-end history per partition; a log end that went back means the topic was recreated.
// Updated in place, walking both maps in order (a partition the poll did not read is dropped):
// rebuilding the map each poll freed and allocated every node, and malloc's bookkeeping of that
// was a sixth of tests/bench/analyzer_bench.
void KafkaHistory::RecordLogEnds(const kafka::KafkaSnapshot& snapshot, double window, double now) {
  auto entry = log_ends_.begin();
  for (const auto& [tp, offsets] : snapshot.partitions) {
    if (!offsets.log_end) continue;
    while (entry != log_ends_.end() && entry->first < tp) {
      entry = log_ends_.erase(entry);
    }
    if (entry == log_ends_.end() || tp < entry->first) {
      entry = log_ends_.emplace_hint(entry, tp, PartitionLogEnds{LogEndHistory(), std::nullopt});
    }
    LogEndHistory& history = entry->second.history;
    if (!history.empty() && history.back().log_end > *offsets.log_end) history.Clear();
    history.Add({now, *offsets.log_end, *kafka::ReadableEnd(offsets, true)});
    entry->second.input_rate = InputRate(history, now, window, window / 4);
    ++entry;
  }
  log_ends_.erase(entry, log_ends_.end());
}

// One group's poll: its lag sample, whether its offsets moved (a commit event, an earlier
// offset to remember) and since when each stands.
void KafkaHistory::RecordGroup(GroupHistory& history, bool known, const kafka::ConsumerGroup& group,
                               const GroupLag* lag, const kafka::KafkaSnapshot& snapshot,
                               const EarlierCommitsPolicy& policy, double window, double now) {
  GroupSample sample{now, 0, 0};
  if (lag != nullptr) {
    for (const TopicLag& topic : lag->topics) {
      sample.lag_sum += topic.lag_sum;
      kafka::TopicCursor log_ends(snapshot.partitions, topic.topic);
      for (const PartitionLag& partition : topic.partitions) {
        const kafka::PartitionOffsets* log = log_ends.Find(partition.partition);
        if (log != nullptr && log->log_end) sample.log_end_sum += *log->log_end;
      }
    }
  }
  RememberEarlierCommits(history, group, policy, now);
  RecordProgress(history, known, group.committed, sample, window, now);
  if (group.members.value_or(0) > 0) history.last_active = now;
}

// A share group's poll, its start offsets standing for a consumer group's commits: they moving
// forward is its progress, going back a reset (a regression).
void KafkaHistory::RecordShareGroup(GroupHistory& history, bool known,
                                    const kafka::ShareGroup& group,
                                    const kafka::KafkaSnapshot& snapshot, double window,
                                    double now) {
  GroupSample sample{now, 0, 0};
  std::vector<std::pair<kafka::TopicPartition, std::int64_t>> starts;  // sorted, as partitions
  for (const kafka::SharePartition& partition : group.partitions) {
    if (partition.start_offset < 0) continue;
    starts.emplace_back(partition.partition, partition.start_offset);
    if (const auto lag = kafka::ShareLagOf(partition, snapshot)) sample.lag_sum += lag->records;
    const auto log = snapshot.partitions.find(partition.partition);
    if (log != snapshot.partitions.end() && log->second.log_end) {
      sample.log_end_sum += *log->second.log_end;
    }
  }
  if (RecordProgress(history, known, starts, sample, window, now) == Progress::kRegressed) {
    history.regression_times.push_back(now);
  }
  if (group.members.value_or(0) > 0) history.last_active = now;
}

// What both kinds of group keep of a poll: its sample, and whether its offsets (committed, or a
// share group's start offsets) moved: a commit event when they moved forward, since when each
// stands.
template <typename SortedOffsets>
KafkaHistory::Progress KafkaHistory::RecordProgress(GroupHistory& history, bool known,
                                                    const SortedOffsets& offsets,
                                                    const GroupSample& sample, double window,
                                                    double now) {
  if (!known) {
    history.first_seen = now;
    history.last_commit = now;
  }
  bool advanced = false;
  bool regressed = false;
  ForEachWithStanding(
      history.committed_standing, offsets,
      [&](const kafka::TopicPartition&, std::int64_t offset, const Standing* before) {
        if (before == nullptr) {
          advanced = advanced || known;
        } else if (offset > before->offset) {
          advanced = true;
        } else if (offset < before->offset) {
          regressed = true;
        }
      });
  if (known && (advanced || regressed)) history.last_commit = now;
  if (known && advanced && !regressed && !history.samples.empty()) {
    history.commits.push_back({now, history.samples.back().lag_sum, sample.lag_sum});
    if (history.commits.size() > kCommitEventsKept) history.commits.erase(history.commits.begin());
  }
  UpdateStanding(history.committed_standing, offsets, now);
  history.samples.Add(sample);
  std::erase_if(history.regression_times, [&](double time) { return time < now - window; });
  if (!known) return Progress::kNone;
  return regressed ? Progress::kRegressed : (advanced ? Progress::kAdvanced : Progress::kNone);
}

// Kept for groups without members (a Flink source never joins its group: a new job's group
// qualifies before its reader reports the topic, which takes a metric refresh) and on topics
// Flink jobs read; a plain consumer group on other topics is never a Flink job's.
void KafkaHistory::RememberEarlierCommits(GroupHistory& history, const kafka::ConsumerGroup& group,
                                          const EarlierCommitsPolicy& policy, double now) {
  const double kept_since = now - policy.kept_for;
  const bool memberless = group.members.value_or(0) == 0;
  // One walk over the committed partitions and the kept ones, both sorted: every partition of a
  // busy group moves every poll, and searching the kept ones for each (and each for the
  // committed ones) compared topic names a million times a poll at a million group-partitions
  // (perf, tests/bench/analyzer_bench 4000 50 1 1: 15 % of the analysis).
  auto& kept = history.committed_earlier;
  auto at = kept.begin();
  // Drops what is older than the window, and the partition when nothing of it is left.
  const auto prune = [&](auto entry) {
    std::erase_if(entry->second, [&](const Standing& s) { return s.since < kept_since; });
    return entry->second.empty() ? kept.erase(entry) : std::next(entry);
  };
  // Whether the topic's superseded offsets are worth keeping; partitions come by topic, so the
  // policy is asked once per topic.
  const std::string* asked = nullptr;
  bool read_by_flink = false;
  const auto worth_keeping = [&](const std::string& topic) {
    if (memberless) return true;
    if (asked == nullptr || *asked != topic) {
      asked = &topic;
      read_by_flink = policy.read_by_flink(topic);
    }
    return read_by_flink;
  };
  ForEachWithStanding(
      history.committed_standing, group.committed,
      [&](const kafka::TopicPartition& tp, std::int64_t offset, const Standing* before) {
        while (at != kept.end() && at->first < tp) at = kept.erase(at);  // no longer committed
        if (before != nullptr && before->offset != offset && worth_keeping(tp.topic)) {
          if (at == kept.end() || at->first != tp) {
            at = kept.emplace_hint(at, tp, std::vector<Standing>{});
          }
          at->second.push_back({before->offset, now});
          if (at->second.size() > kEarlierCommitsKept) at->second.erase(at->second.begin());
        }
        if (at != kept.end() && at->first == tp) at = prune(at);
      });
  kept.erase(at, kept.end());
}

EarlierCommit KafkaHistory::CommittedEarlier(const std::string& group,
                                             const kafka::TopicPartition& tp, std::int64_t offset,
                                             double kept_for, double now) const {
  const auto history = groups_.find(group);
  if (history == groups_.end()) return EarlierCommit::kNo;
  const auto earlier = history->second.committed_earlier.find(tp);
  if (earlier == history->second.committed_earlier.end()) return EarlierCommit::kNo;
  const double kept_since = now - kept_for;
  EarlierCommit found = EarlierCommit::kNo;
  for (const Standing& held : earlier->second) {
    if (held.since < kept_since) continue;
    if (held.offset == offset) return EarlierCommit::kHeldExactly;
    if (held.offset < offset) found = EarlierCommit::kPassedThrough;
  }
  return found;
}

void KafkaHistory::NoteCommit(const std::string& group, double now) {
  if (auto history = groups_.find(group); history != groups_.end()) {
    history->second.last_commit = now;
  }
}

std::optional<double> KafkaHistory::InputRateOf(const std::set<kafka::TopicPartition>& partitions,
                                                double window, double now) const {
  std::optional<double> total;
  for (const kafka::TopicPartition& tp : partitions) {
    const auto log_ends = log_ends_.find(tp);
    if (log_ends == log_ends_.end()) continue;
    if (const auto rate = InputRate(log_ends->second.history, now, window, window / 4)) {
      total = total.value_or(0) + *rate;
    }
  }
  return total;
}

std::optional<double> KafkaHistory::InputRateOf(const GroupLag& lag, bool committed_only) const {
  std::optional<double> total;
  for (const TopicLag& topic : lag.topics) {
    kafka::TopicCursor log_ends_of(log_ends_, topic.topic);
    for (const PartitionLag& partition : topic.partitions) {
      if (committed_only && !partition.committed) continue;
      const PartitionLogEnds* log_ends = log_ends_of.Find(partition.partition);
      if (log_ends == nullptr || !log_ends->input_rate) continue;
      total = total.value_or(0) + *log_ends->input_rate;
    }
  }
  return total;
}

const GroupHistory* KafkaHistory::Group(const std::string& group) const {
  const auto found = groups_.find(group);
  return found != groups_.end() ? &found->second : nullptr;
}

const GroupHistory* KafkaHistory::ShareGroup(const std::string& group) const {
  const auto found = share_groups_.find(group);
  return found != share_groups_.end() ? &found->second : nullptr;
}

}  // namespace lagsight::analysis
