#include "analysis/analyzer.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>
#include <utility>

#include "analysis/history.h"
#include "analysis/standing.h"
#include "analysis/topic_cursor.h"

namespace lagsight::analysis {
namespace {

constexpr std::size_t kCommitEventsKept = 16;
// Superseded committed offsets kept per partition for matching jobs to groups (see
// CommittedEarlier): a bound for jobs that checkpoint every second while Flink's metric refresh
// is slow.
constexpr std::size_t kEarlierCommitsKept = 32;
// ... for this many metric refreshes of the slowest Flink cluster.
constexpr double kEarlierCommitsRefreshes = 3;
// Flink's default metrics.fetcher.update-interval, for a JobManager that does not say.
constexpr double kDefaultMetricsFetchIntervalSeconds = 10;
// lagsight stood still (a VM pause, swap, SIGSTOP) when a source's observations are this many of
// its usual gaps apart, plus the slack; what it sees next mixes before and after for a while.
constexpr double kStallGaps = 2;
constexpr double kStallSlackSeconds = 5;
// Added to a checkpoint and two metric refreshes before a young job's offsets are expected.
constexpr double kFirstCommitSlackSeconds = 5;

// When a snapshot's answers are known to date from: when its poll began (see FlinkSnapshot),
// never after it was observed; unknown (0): when it was observed.
double KnownAt(double requested_at, double observed_at) {
  return requested_at > 0 ? std::min(observed_at, requested_at) : observed_at;
}
// A job that vanished is forgotten (its group judged on its own) this many windows after it
// became job_gone.
constexpr double kForgetGoneJobWindows = 3;
// A partition's position stands still for at least this many metric refreshes before it can be
// called stuck: Flink serves the same value until its fetcher refreshes.
constexpr double kStuckFetchIntervals = 3;
// Slack for reading a restore time against the job's start (clocks, report delays).
constexpr double kRestoreSlackSeconds = 5;

double Seconds(std::chrono::milliseconds duration) {
  return std::chrono::duration<double>(duration).count();
}

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

// A partition's log ends over the window.
struct PartitionLogEnds {
  LogEndHistory history;
  // Records/s that arrived over the window as of the latest poll (InputRate), none while the
  // history is short. Worked out once a poll: every group reading the partition asks for it, and
  // 2,000 groups on one topic asked 2,000 times.
  std::optional<double> input_rate;
};

struct KafkaClusterState {
  bool up = false;
  // When the poll of the latest log ends began: they were read after that.
  double requested_at = 0;
  std::map<kafka::TopicPartition, PartitionLogEnds> log_ends;
  std::map<std::string, GroupHistory> groups;
  // Shared with every Findings published until the next poll: copying it into each (once per
  // Kafka and per Flink poll) held the per-partition lag in seconds twice.
  std::shared_ptr<const KafkaFindings> findings = std::make_shared<const KafkaFindings>();
  std::vector<DiagnosisFinding> diagnosis;
};

struct JobSample {
  double time = 0;
  double completed = 0;
  double failed = 0;
  double restarts = 0;
  bool in_progress = false;  // a checkpoint was under way
};

struct SourceSample {
  double time = 0;
  double succeeded = 0;
  double failed = 0;
  bool committed_known = false;  // the reader reported a committedOffset on some partition
  // A FlinkKafkaConsumer in a job without checkpointing: the connector leaves committing to the
  // Kafka client's own timer (enable.auto.commit), which Flink's metrics never see.
  bool kafka_client_commits = false;
};

// A source's Flink-side lag summed over its partitions, for its catch-up time.
struct BacklogSample {
  double time = 0;
  std::int64_t records = 0;
};

struct Association {
  std::string kafka_cluster;
  std::string group;
  bool configured = false;  // from the config's mapping (forgotten when the mapping goes)
};

struct JobHistory {
  std::string flink_cluster;
  std::string name;
  std::string state;
  ThinningSeries<JobSample> samples;
  std::map<std::string, ThinningSeries<SourceSample>> sources;    // by source label
  std::map<std::string, Association> associations;                // sticky, by source label
  std::map<std::string, ThinningSeries<BacklogSample>> backlogs;  // by source label
  const flink::FlinkJob* latest = nullptr;  // valid while its Flink snapshot is the current one
  double running_since = 0;                 // when lagsight last saw it (re)start running
  std::optional<double> not_running_since;  // present, in a state other than RUNNING
  std::optional<double> missing_since;      // absent from its cluster's polls
  std::optional<std::int64_t> num_restarts;
  // Per (source label, escaped topic, partition): the last currentOffset Flink served and the
  // earliest time that value can have been taken (see AlignFlinkLag).
  std::map<std::tuple<std::string, std::string, std::int32_t>, std::pair<std::int64_t, double>>
      positions_taken;
  // Per (source label, topic, partition): by how much the job's position (or committedOffset)
  // was beyond the partition's log end, 0 when it was not, as last judged (see AlignFlinkLag).
  std::map<std::tuple<std::string, std::string, std::int32_t>, std::int64_t> beyond_log_end;
};

struct FlinkClusterState {
  bool up = false;
  std::optional<double> down_since;
  double polled_at = 0;  // when its current snapshot was taken
  // When the poll that took it began: its answers are at least that recent (see PairFacts).
  double requested_at = 0;
  double metrics_fetch_interval = kDefaultMetricsFetchIntervalSeconds;
  FlinkFindings findings;
};

using PairKey = std::tuple<std::string, std::string, std::string>;  // cluster, group, job id

struct PairSample {
  double time = 0;
  std::int64_t flink_lag = 0;
  std::int64_t kafka_lag = 0;
};

struct PairState {
  ThinningSeries<PairSample> samples;
  Verdict verdict;
  std::optional<DiagnosisFinding> last;  // held through source blips
  std::optional<double> uncommitted_since;
  StandingOffsets positions;
  // The job went back behind what its group had committed and has not caught up since.
  MovedBack moved_back = MovedBack::kNo;
  double first_seen = 0;
};

bool HasRecords(const kafka::KafkaSnapshot& snapshot, const kafka::TopicPartition& tp) {
  const auto found = snapshot.partitions.find(tp);
  if (found == snapshot.partitions.end() || !found->second.log_end) return false;
  return *found->second.log_end > found->second.log_start.value_or(0);
}

// The median gap between the commits lagsight saw; none with fewer than two.
std::optional<double> CommitPeriod(const std::vector<CommitEvent>& commits) {
  if (commits.size() < 2) return std::nullopt;
  std::vector<double> gaps;
  for (std::size_t i = 1; i < commits.size(); ++i) {
    gaps.push_back(commits[i].time - commits[i - 1].time);
  }
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<long>(gaps.size() / 2), gaps.end());
  return gaps[gaps.size() / 2];
}

// The usual gap between a group's polls: the median of its latest gaps (0 with fewer than two
// samples). The newest samples keep their poll resolution (ThinningSeries).
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

std::string PartitionName(const kafka::TopicPartition& tp) {
  return tp.topic + "/" + std::to_string(tp.partition);
}

}  // namespace

struct Analyzer::State {
  config::DiagnosisConfig config;
  std::map<std::string, KafkaClusterState> kafka;
  std::map<std::string, FlinkClusterState> flink;
  std::map<std::string, JobHistory> jobs;  // by job id
  std::map<PairKey, PairState> pairs;
  // The last association of each (flink cluster, job name, source), kept for a window after
  // the job was last seen so a restart under the same name keeps its group.
  using NamedSource = std::tuple<std::string, std::string, std::string>;
  std::map<NamedSource, std::pair<Association, double>> associations_by_name;
  // Real topics the Flink jobs' sources read at their last polls: where a group's earlier
  // committed offsets are worth keeping.
  std::map<std::string, std::set<std::string>> topics_read_by_flink;  // by Flink cluster
  // Per source (kind, cluster): when it was last observed and its usual gap between
  // observations, to notice that lagsight itself stood still.
  struct ObservationClock {
    double last = 0;
    double usual_gap = 0;
  };
  std::map<std::pair<char, std::string>, ObservationClock> observation_clocks;
  // Until then no new cause is confirmed (see NoteObservation).
  double settle_until = 0;

  double window() const { return Seconds(config.window); }

  // After lagsight stood still, the first polls mix the world before and after: Flink's REST
  // API serves checkpoint statistics cached from before (up to web.refresh-interval, 3 s) and
  // reader metrics up to a fetch interval old, while Kafka's are fresh. A job whose checkpoint
  // is "20 s old" right after a 20 s stall of the whole host is not failing. So after a gap of
  // more than kStallGaps usual gaps (+ slack), new causes wait until every source has been
  // polled afresh and Flink's caches have turned over; active causes stay.
  void NoteObservation(char kind, const std::string& cluster, double now) {
    ObservationClock& clock = observation_clocks[{kind, cluster}];
    if (clock.last > 0 && now > clock.last) {
      const double gap = now - clock.last;
      if (clock.usual_gap > 0 && gap > kStallGaps * clock.usual_gap + kStallSlackSeconds) {
        double refresh = kDefaultMetricsFetchIntervalSeconds;
        for (const auto& [name, state] : flink) {
          refresh = std::max(refresh, state.metrics_fetch_interval);
        }
        settle_until = std::max(settle_until,
                                now + std::max(2 * clock.usual_gap, refresh) + kStallSlackSeconds);
      }
      // Always folded in: after a reload to a longer poll interval the usual gap catches up.
      clock.usual_gap = clock.usual_gap > 0 ? 0.8 * clock.usual_gap + 0.2 * gap : gap;
    }
    clock.last = now;
  }

  // --- Kafka history -------------------------------------------------------------------------

  void RecordKafka(KafkaClusterState& cluster, const kafka::KafkaSnapshot& snapshot,
                   const std::vector<GroupLag>& lags,
                   const std::vector<OffsetRegression>& regressions, double now) {
    // Log-end history per partition; a log end that went back means the topic was recreated.
    // Updated in place, walking both maps in order (a partition the poll did not read is
    // dropped): rebuilding the map each poll freed and allocated every node, and malloc's
    // bookkeeping of that was a sixth of tests/bench/analyzer_bench.
    auto entry = cluster.log_ends.begin();
    for (const auto& [tp, offsets] : snapshot.partitions) {
      if (!offsets.log_end) continue;
      while (entry != cluster.log_ends.end() && entry->first < tp) {
        entry = cluster.log_ends.erase(entry);
      }
      if (entry == cluster.log_ends.end() || tp < entry->first) {
        entry = cluster.log_ends.emplace_hint(entry, tp,
                                              PartitionLogEnds{LogEndHistory(), std::nullopt});
      }
      LogEndHistory& history = entry->second.history;
      if (!history.empty() && history.back().log_end > *offsets.log_end) history.Clear();
      history.Add({now, *offsets.log_end, *kafka::ReadableEnd(offsets, true)});
      entry->second.input_rate = InputRate(history, now, window(), window() / 4);
      ++entry;
    }
    cluster.log_ends.erase(entry, cluster.log_ends.end());
    cluster.requested_at = KnownAt(snapshot.requested_at, now);

    std::map<std::string, const GroupLag*> lag_of;
    for (const GroupLag& lag : lags) lag_of[lag.group] = &lag;
    std::map<std::string, GroupHistory> groups;
    for (const kafka::ConsumerGroup& group : snapshot.groups) {
      if (!group.offsets_known) {
        // Keep what we had; this poll says nothing about the group's offsets.
        if (auto existing = cluster.groups.find(group.id); existing != cluster.groups.end()) {
          groups.emplace(group.id, std::move(existing->second));
        }
        continue;
      }
      auto existing = cluster.groups.find(group.id);
      const bool known = existing != cluster.groups.end();
      GroupHistory history = known ? std::move(existing->second) : GroupHistory();
      if (!known) {
        history.first_seen = now;
        history.last_commit = now;
      }
      GroupSample sample{now, 0, 0};
      if (const auto lag = lag_of.find(group.id); lag != lag_of.end()) {
        for (const TopicLag& topic : lag->second->topics) {
          sample.lag_sum += topic.lag_sum;
          TopicCursor log_ends(snapshot.partitions, topic.topic);
          for (const PartitionLag& partition : topic.partitions) {
            const kafka::PartitionOffsets* log = log_ends.Find(partition.partition);
            if (log != nullptr && log->log_end) sample.log_end_sum += *log->log_end;
          }
        }
      }
      bool advanced = false;
      bool regressed = false;
      ForEachWithStanding(
          history.committed_standing, group.committed,
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
      RememberEarlierCommits(history, group, now);
      if (known && advanced && !regressed && !history.samples.empty()) {
        history.commits.push_back({now, history.samples.back().lag_sum, sample.lag_sum});
        if (history.commits.size() > kCommitEventsKept)
          history.commits.erase(history.commits.begin());
      }
      UpdateStanding(history.committed_standing, group.committed, now);
      if (group.members.value_or(0) > 0) history.last_active = now;
      history.samples.Add(sample);
      std::erase_if(history.regression_times, [&](double time) { return time < now - window(); });
      groups.emplace(group.id, std::move(history));
    }
    for (const OffsetRegression& regression : regressions) {
      if (auto group = groups.find(regression.group); group != groups.end()) {
        auto& times = group->second.regression_times;
        if (times.empty() || times.back() != now) times.push_back(now);
      }
    }
    cluster.groups = std::move(groups);
  }

  // How long a superseded committed offset can still be what a Flink job reports.
  double EarlierCommitsKeptFor() const {
    double refresh = kDefaultMetricsFetchIntervalSeconds;
    for (const auto& [name, cluster] : flink)
      refresh = std::max(refresh, cluster.metrics_fetch_interval);
    return kEarlierCommitsRefreshes * refresh;
  }

  bool ReadByFlink(const std::string& topic) const {
    for (const auto& [cluster, topics] : topics_read_by_flink) {
      if (topics.contains(topic)) return true;
    }
    return false;
  }

  // Kept for groups without members (a Flink source never joins its group: a new job's group
  // qualifies before its reader reports the topic, which takes a metric refresh) and on topics
  // Flink jobs read; a plain consumer group on other topics is never a Flink job's.
  void RememberEarlierCommits(GroupHistory& history, const kafka::ConsumerGroup& group,
                              double now) const {
    const kafka::CommittedOffsets& committed = group.committed;
    const double kept_since = now - EarlierCommitsKeptFor();
    const bool memberless = group.members.value_or(0) == 0;
    ForEachWithStanding(
        history.committed_standing, committed,
        [&](const kafka::TopicPartition& tp, std::int64_t offset, const Standing* before) {
          if (before == nullptr || before->offset == offset) return;
          if (!memberless && !ReadByFlink(tp.topic)) return;
          std::vector<Standing>& earlier = history.committed_earlier[tp];
          earlier.push_back({before->offset, now});
          if (earlier.size() > kEarlierCommitsKept) earlier.erase(earlier.begin());
        });
    for (auto entry = history.committed_earlier.begin();
         entry != history.committed_earlier.end();) {
      std::erase_if(entry->second, [&](const Standing& s) { return s.since < kept_since; });
      entry = entry->second.empty() || !committed.contains(entry->first)
                  ? history.committed_earlier.erase(entry)
                  : std::next(entry);
    }
  }

  // What the group's offsets on `tp` did before its current ones, within the keeping time.
  EarlierCommit CommittedEarlier(const std::string& kafka_cluster, const std::string& group,
                                 const kafka::TopicPartition& tp, std::int64_t offset,
                                 double now) const {
    const auto cluster = kafka.find(kafka_cluster);
    if (cluster == kafka.end()) return EarlierCommit::kNo;
    const auto history = cluster->second.groups.find(group);
    if (history == cluster->second.groups.end()) return EarlierCommit::kNo;
    const auto earlier = history->second.committed_earlier.find(tp);
    if (earlier == history->second.committed_earlier.end()) return EarlierCommit::kNo;
    const double kept_since = now - EarlierCommitsKeptFor();
    EarlierCommit found = EarlierCommit::kNo;
    for (const Standing& held : earlier->second) {
      if (held.since < kept_since) continue;
      if (held.offset == offset) return EarlierCommit::kHeldExactly;
      if (held.offset < offset) found = EarlierCommit::kPassedThrough;
    }
    return found;
  }

  KafkaFindings FindKafka(const KafkaClusterState& cluster, const kafka::KafkaSnapshot& snapshot,
                          const std::vector<GroupLag>& lags, double now) const {
    KafkaFindings findings;
    findings.cluster_mismatch = kafka::ClusterMismatch(snapshot);
    std::map<std::string, const kafka::ConsumerGroup*> group_of;
    for (const kafka::ConsumerGroup& group : snapshot.groups) group_of[group.id] = &group;
    static const LogEndHistory kNoHistory;
    findings.groups.reserve(lags.size());  // grown by doubling it held 1.5 copies at 20,000
    for (const GroupLag& lag : lags) {
      const auto history = cluster.groups.find(lag.group);
      if (history == cluster.groups.end()) continue;
      GroupFindings group;
      group.group = lag.group;
      for (const TopicLag& topic : lag.topics) {
        TopicLagSeconds topic_seconds;
        topic_seconds.topic = topic.topic;
        topic_seconds.partitions.reserve(topic.partitions.size());  // an upper bound
        TopicCursor offsets_of(snapshot.partitions, topic.topic);
        TopicCursor log_ends_of(cluster.log_ends, topic.topic);
        for (const PartitionLag& partition : topic.partitions) {
          if (!partition.committed || !partition.lag) continue;
          std::optional<LagSeconds> seconds;
          if (*partition.lag <= 0) {
            // Caught up, whatever the history says (ComputeLagSeconds): no lookup needed.
            seconds = LagSeconds{0, LagSecondsMethod::kCaughtUp};
          } else {
            const kafka::TopicPartition tp{topic.topic, partition.partition};
            std::int64_t position = *partition.committed;
            const kafka::PartitionOffsets* log = offsets_of.Find(partition.partition);
            if (log != nullptr && log->log_start && position < *log->log_start) {
              position = *log->log_start;
            }
            std::optional<kafka::RecordTimestamp> timestamp;
            if (const auto fetched =
                    snapshot.record_timestamps.find({tp, position, lag.read_committed});
                fetched != snapshot.record_timestamps.end()) {
              timestamp = fetched->second;
            }
            const PartitionLogEnds* log_ends = log_ends_of.Find(partition.partition);
            seconds = ComputeLagSeconds(position, *partition.lag, timestamp,
                                        log_ends != nullptr ? log_ends->history : kNoHistory, now);
          }
          if (!seconds) continue;
          topic_seconds.partitions.push_back({partition.partition, *seconds});
          group.max_lag_seconds = std::max(group.max_lag_seconds.value_or(0), seconds->seconds);
        }
        if (topic_seconds.partitions.empty()) continue;
        topic_seconds.partitions.shrink_to_fit();
        group.lag_seconds.push_back(std::move(topic_seconds));
      }
      const GroupHistory& h = history->second;
      group.last_commit_time = std::max(h.last_commit, h.last_active.value_or(0));
      const auto described = group_of.find(lag.group);
      const bool without_members = described != group_of.end() &&
                                   described->second->members.has_value() &&
                                   *described->second->members == 0;
      if (without_members && snapshot.offsets_retention_seconds) {
        group.offsets_expiry_seconds =
            *snapshot.offsets_retention_seconds - (now - group.last_commit_time);
      }
      group.sawtooth = DetectSawtooth(h.commits, now, UsualPollGap(h.samples));
      group.catch_up_seconds = CatchUp(
          h.samples, [](const GroupSample& s) { return s.lag_sum; },
          InputRateOf(cluster, lag, /*committed_only=*/false), now);
      group.lateness_target_seconds =
          LatenessTargetOf(config::LatenessTarget::Of::kGroups, group.group);
      findings.groups.push_back(std::move(group));
    }
    return findings;
  }

  // --- Flink history -------------------------------------------------------------------------

  // Jobs in these states are stopping or handed over: not judged, their verdict held.
  static bool Stopping(const std::string& state) {
    return state == "CANCELLING" || state == "SUSPENDED";
  }

  void RecordFlink(const std::string& flink_cluster, const flink::FlinkSnapshot& snapshot,
                   double now) {
    FlinkClusterState& cluster = flink[flink_cluster];
    const std::optional<double> previous_poll =
        cluster.polled_at > 0 ? std::optional<double>(cluster.polled_at) : std::nullopt;
    cluster.polled_at = now;
    cluster.requested_at = KnownAt(snapshot.requested_at, now);
    if (snapshot.metrics_fetch_interval_ms && *snapshot.metrics_fetch_interval_ms > 0) {
      cluster.metrics_fetch_interval = *snapshot.metrics_fetch_interval_ms / 1000;
    }
    // A value first served now was taken by the JobManager's fetcher at most one refresh ago,
    // and after the previous poll (which still served the old value).
    const double refresh = cluster.metrics_fetch_interval;
    const double taken_at_least =
        now - (previous_poll ? std::min(refresh, now - *previous_poll) : refresh);
    std::set<std::string> present;
    std::set<std::string> running_names;
    for (const flink::FlinkJob& job : snapshot.jobs) {
      present.insert(job.overview.id);
      const bool fresh = !jobs.contains(job.overview.id);
      JobHistory& history = jobs[job.overview.id];
      history.flink_cluster = flink_cluster;
      history.name = job.overview.name;
      history.state = job.overview.state;
      history.latest = &job;
      history.missing_since.reset();
      const bool running = job.overview.state == "RUNNING";
      if (running) running_names.insert(job.overview.name);
      if (fresh) {
        history.running_since = job.overview.start_time_ms
                                    ? static_cast<double>(*job.overview.start_time_ms) / 1000
                                    : now;
      }
      if (running && history.not_running_since) {
        history.running_since = now;
        history.not_running_since.reset();
      } else if (!running && !history.not_running_since) {
        history.not_running_since = now;
      }
      if (const auto& restarts = job.overview.num_restarts) {
        // A restart between two polls (the job was never seen away from RUNNING).
        if (!fresh && running && history.num_restarts && *restarts > *history.num_restarts) {
          history.running_since = now;
        }
        history.num_restarts = restarts;
      }
      // A job that is not running may have its checkpoint statistics unanswered: then the
      // counts are defaults, and the last ones known stand (zeros would read as a reset).
      JobSample sample{now, static_cast<double>(job.checkpoints.counts.completed),
                       static_cast<double>(job.checkpoints.counts.failed),
                       static_cast<double>(history.num_restarts.value_or(0)),
                       job.checkpoints.counts.in_progress > 0};
      if (!job.checkpoint_stats_reported && !history.samples.empty()) {
        sample.completed = history.samples.back().completed;
        sample.failed = history.samples.back().failed;
      }
      history.samples.Add(sample);
      const std::vector<std::string> labels = SourceLabels(job);
      for (std::size_t i = 0; i < job.sources.size(); ++i) {
        const flink::SourceReader& reader = job.sources[i];
        auto& series = history.sources[labels[i]];
        const double succeeded = reader.commits_succeeded.value_or(0);
        if (!series.empty() && succeeded > series.back().succeeded) {
          // A successful commit refreshes the group's offsets at the broker even when they did
          // not move: count it for the expiry clock of the group it is associated with.
          const auto association = history.associations.find(labels[i]);
          if (association != history.associations.end()) {
            auto kafka_cluster = kafka.find(association->second.kafka_cluster);
            if (kafka_cluster != kafka.end()) {
              auto group = kafka_cluster->second.groups.find(association->second.group);
              if (group != kafka_cluster->second.groups.end()) group->second.last_commit = now;
            }
          }
        }
        bool committed_known = false;
        for (const auto& [tp, offsets] : reader.partitions) {
          committed_known |= offsets.committed.has_value();
          if (!offsets.current) continue;
          auto [taken, inserted] = history.positions_taken.try_emplace(
              {labels[i], tp.escaped_topic, tp.partition}, *offsets.current, taken_at_least);
          if (!inserted && taken->second.first != *offsets.current) {
            taken->second = {*offsets.current, taken_at_least};
          }
        }
        const bool kafka_client_commits =
            reader.connector == flink::SourceConnector::kFlinkKafkaConsumer &&
            job.checkpoint_stats_reported && !job.checkpoints.enabled;
        series.Add({now, succeeded, reader.commits_failed.value_or(0), committed_known,
                    kafka_client_commits});
      }
    }
    // A job absent from this poll is missing, not gone: a blip must not rebuild its state. It is
    // forgotten once a running job took its name (a redeploy) or long after it became job_gone.
    const double forget_after = Seconds(config.job_gone_after) + kForgetGoneJobWindows * window();
    for (auto& [job_id, history] : jobs) {
      if (history.flink_cluster != flink_cluster || present.contains(job_id)) continue;
      if (!history.missing_since) history.missing_since = now;
      history.latest = nullptr;
    }
    std::erase_if(jobs, [&](const auto& entry) {
      const JobHistory& history = entry.second;
      return history.flink_cluster == flink_cluster && history.missing_since &&
             (running_names.contains(history.name) || now - *history.missing_since > forget_after);
    });
    // A job in CANCELLING next to its running successor of the same name is handed over.
    std::erase_if(jobs, [&](const auto& entry) {
      const JobHistory& history = entry.second;
      return history.flink_cluster == flink_cluster && Stopping(history.state) &&
             running_names.contains(history.name);
    });
    std::erase_if(associations_by_name, [&](const auto& entry) {
      return std::get<0>(entry.first) == flink_cluster &&
             entry.second.second < now - std::max(forget_after, 600.0);
    });
  }

  // "checkpoint", "auto", "none" or "unknown": see SourceFindings::commit_mode.
  static std::string CommitMode(const ThinningSeries<SourceSample>& series,
                                const ThinningSeries<JobSample>& job) {
    if (series.empty() || job.empty()) return "unknown";
    const SourceSample& latest = series.back();
    if (latest.kafka_client_commits) return "auto";
    if (latest.succeeded > 0 || latest.failed > 0 || latest.committed_known) return "checkpoint";
    // Two checkpoints completed while the source was watched: a source that commits would have
    // committed (the first commit on a fresh broker can take one checkpoint longer).
    const double first_seen = series.samples().front().time;
    double completed_at_first = 0;
    for (const JobSample& sample : job.samples()) {
      if (sample.time <= first_seen) completed_at_first = sample.completed;
    }
    return job.back().completed - completed_at_first >= 2 ? "none" : "unknown";
  }

  // Joins of one Flink cluster with the Kafka clusters that are up, associations made sticky.
  // A cluster that is down keeps its last joins, to hold its pairs' verdicts through the blip.
  void Join(const std::string& flink_cluster, const SourcesView& sources, double now) {
    const auto view = sources.flink.find(flink_cluster);
    FlinkClusterState& state = flink[flink_cluster];
    for (auto& [job_id, history] : jobs) {
      if (history.flink_cluster == flink_cluster) history.latest = nullptr;
    }
    if (view == sources.flink.end() || view->second.snapshot == nullptr) {
      if (!state.down_since) state.down_since = now;
      state.up = false;
      return;
    }
    state.up = true;
    state.down_since.reset();
    std::map<std::string, const kafka::KafkaSnapshot*> kafka_up;
    for (const auto& [name, kafka_view] : sources.kafka) {
      if (kafka_view.snapshot != nullptr) kafka_up[name] = kafka_view.snapshot.get();
    }
    // Pointers into the snapshot the app holds for as long as this call runs.
    for (const flink::FlinkJob& job : view->second.snapshot->jobs) {
      if (auto history = jobs.find(job.overview.id); history != jobs.end()) {
        history->second.latest = &job;
      }
    }
    FlinkFindings findings;
    findings.checkpoint_ages =
        CheckpointAges(*view->second.snapshot, KnownAt(view->second.snapshot->requested_at, now));
    findings.joins =
        JoinFlinkWithKafka(*view->second.config, *view->second.snapshot, kafka_up,
                           [this, now](const std::string& cluster, const std::string& group,
                                       const kafka::TopicPartition& tp, std::int64_t offset) {
                             return CommittedEarlier(cluster, group, tp, offset, now);
                           });
    std::set<std::string>& topics_read = topics_read_by_flink[flink_cluster];
    topics_read.clear();
    for (const FlinkSourceJoin& join : findings.joins) {
      for (const FlinkPartitionJoin& partition : join.partitions)
        topics_read.insert(partition.topic);
    }
    // Which sources of each job commit: a configured mapping pairs only those (when any does).
    std::map<std::string, std::set<std::string>> committing_sources;  // job id -> labels
    for (const FlinkSourceJoin& join : findings.joins) {
      const auto history = jobs.find(join.job_id);
      if (history == jobs.end()) continue;
      const auto series = history->second.sources.find(join.source);
      if (series != history->second.sources.end() &&
          CommitMode(series->second, history->second.samples) == "checkpoint") {
        committing_sources[join.job_id].insert(join.source);
      }
    }
    for (FlinkSourceJoin& join : findings.joins) {
      auto history = jobs.find(join.job_id);
      if (history == jobs.end()) continue;
      JobHistory& job = history->second;
      auto& remembered = job.associations;
      if (join.group && join.matched_by_history) {
        // Evidence from the group's past alone does not move a job off the group it matched
        // before (a plain consumer of a quiet topic can pass through the same offsets).
        if (const auto known = remembered.find(join.source);
            known != remembered.end() && known->second.group != *join.group) {
          join.group.reset();
          join.association.clear();
          join.matched_by_history = false;
        }
      }
      const NamedSource named{flink_cluster, join.job_name, join.source};
      const auto series = job.sources.find(join.source);
      const std::string mode = series != job.sources.end() ? CommitMode(series->second, job.samples)
                                                           : std::string("unknown");
      if (join.association == "configured" && mode == "none" &&
          !committing_sources[join.job_id].empty()) {
        // The mapping names the group of the job's committing sources; this one commits to none
        // (no group.id), so pairing it would report the group's partitions as its own.
        join.group.reset();
        join.association.clear();
        remembered.erase(join.source);
      }
      if (!join.group) {
        if (const auto known = remembered.find(join.source);
            known != remembered.end() && known->second.configured) {
          remembered.erase(known);  // its mapping is gone from the config
        }
      }
      if (!join.group && !remembered.contains(join.source) && join.candidate_groups.empty()) {
        // A job restarted under the same name (e.g. from a savepoint) commits to the same group;
        // its committedOffset is unset until its first commit, so matching cannot find it yet.
        if (const auto by_name = associations_by_name.find(named);
            by_name != associations_by_name.end() && !by_name->second.first.configured) {
          remembered[join.source] = by_name->second.first;
        }
      }
      if (join.group) {
        remembered[join.source] = {join.kafka_cluster, *join.group,
                                   join.association == "configured"};
        associations_by_name[named] = {remembered[join.source], now};
      } else if (const auto known = remembered.find(join.source); known != remembered.end()) {
        associations_by_name[named] = {known->second, now};
        // The job's committed offsets matched this group before; a poll that straddles a
        // commit, commits that fail, or a quiet topic where another group holds the same offsets
        // must not make the job lose its group: it sticks until another group matches alone.
        join.group = known->second.group;
        join.kafka_cluster = known->second.kafka_cluster;
        join.association = "matched";
        join.candidate_groups.clear();
      }
      AlignFlinkLag(join, job, state, sources);
      SourceFindings source;
      source.job_id = join.job_id;
      source.job_name = join.job_name;
      source.source = join.source;
      source.commit_mode = mode;
      source.catch_up_seconds = CatchUpTime(job.backlogs[join.source], join, now);
      source.lateness_target_seconds =
          LatenessTargetOf(config::LatenessTarget::Of::kJobs, join.job_name);
      if (series != job.sources.end() && !series->second.empty()) {
        const double failed = IncreaseOverWindow(
            series->second, [](const SourceSample& s) { return s.failed; }, now, window());
        const double succeeded = IncreaseOverWindow(
            series->second, [](const SourceSample& s) { return s.succeeded; }, now, window());
        if (failed + succeeded > 0) source.commit_failure_ratio = failed / (failed + succeeded);
      }
      findings.sources.push_back(std::move(source));
    }
    state.findings = std::move(findings);
  }

  std::optional<double> LatenessTargetOf(config::LatenessTarget::Of of,
                                         const std::string& name) const {
    for (const config::LatenessTarget& target : config.lateness_targets) {
      if (target.of == of && target.pattern.FullMatch(name)) return Seconds(target.target);
    }
    return std::nullopt;
  }

  // When a backlog reaches 0 at its pace over the window (CatchUpSeconds); 0 once it does not
  // matter: a consumer that keeps pace holds a few polls' worth of records, and a level backlog
  // would read as "never".
  template <typename Sample, typename Value>
  std::optional<double> CatchUp(const ThinningSeries<Sample>& series, Value value,
                                std::optional<double> input_rate, double now) const {
    if (series.empty()) return std::nullopt;
    if (!LagMatters(static_cast<double>(value(series.back())), input_rate, config)) return 0.0;
    return CatchUpSeconds(series, value, now, window());
  }

  // When the source's Flink-side backlog reaches 0; none while a partition's lag is unknown
  // (the sum would jump when it becomes known).
  std::optional<double> CatchUpTime(ThinningSeries<BacklogSample>& backlog,
                                    const FlinkSourceJoin& join, double now) const {
    std::int64_t records = 0;
    std::set<kafka::TopicPartition> partitions;
    for (const FlinkPartitionJoin& partition : join.partitions) {
      if (!partition.flink_lag) return std::nullopt;
      records += *partition.flink_lag;
      partitions.insert({partition.topic, partition.partition});
    }
    const auto cluster = kafka.find(join.kafka_cluster);
    if (partitions.empty() || cluster == kafka.end()) return std::nullopt;
    backlog.Add({now, records});
    return CatchUp(
        backlog, [](const BacklogSample& s) { return s.records; },
        InputRateOf(cluster->second, partitions, now), now);
  }

  // The Flink-side lag against the log end as it was when the job's position was taken. The
  // JobManager serves metric values refreshed at most every `metrics.fetcher.update-interval`
  // (10 s by default), so a position is up to that old: against the latest log end a healthy job
  // at 150 records/s showed more lag than its own committed offsets. The time a value was taken
  // is bounded below by when lagsight first saw it (less the refresh interval, or less the gap
  // since the previous poll, which still served the old value) and by the last refresh (a value
  // unchanged for longer than the interval is current as of one interval ago). Against the log
  // end of that time the lag is a lower bound, never inflated, and it does not rise between two
  // refreshes only to fall at the next (that would be a sawtooth of lagsight's own making).
  void AlignFlinkLag(FlinkSourceJoin& join, JobHistory& job, const FlinkClusterState& state,
                     const SourcesView& sources) const {
    const auto cluster = kafka.find(join.kafka_cluster);
    if (cluster == kafka.end() || !sources.kafka.contains(join.kafka_cluster)) return;
    const double refreshed = state.polled_at - state.metrics_fetch_interval;
    const kafka::KafkaSnapshot* snapshot = sources.kafka.at(join.kafka_cluster).snapshot.get();
    std::map<std::string, FlinkTopicJoin> topics;
    for (const FlinkTopicJoin& joined : join.topics) {
      // The sums are recomputed below; which partitions nobody reads stays as the join found.
      FlinkTopicJoin& topic = topics[joined.topic];
      topic.topic = joined.topic;
      topic.unread_partitions = joined.unread_partitions;
    }
    // Judgements of partitions the source no longer reads (a deleted topic) are dropped.
    std::erase_if(job.beyond_log_end, [&](const auto& entry) {
      const auto& [source, topic, number] = entry.first;
      return source == join.source &&
             std::none_of(join.partitions.begin(), join.partitions.end(),
                          // Init-captures: clang before 16 cannot capture a structured binding.
                          [&read_topic = topic, read_number = number](const auto& p) {
                            return p.topic == read_topic && p.partition == read_number;
                          });
    });
    for (FlinkPartitionJoin& partition : join.partitions) {
      FlinkTopicJoin& topic = topics[partition.topic];
      topic.topic = partition.topic;
      topic.checkpoint_gap_sum += partition.checkpoint_gap.value_or(0);
      const auto log_ends = cluster->second.log_ends.find({partition.topic, partition.partition});
      const LogEndHistory* history =
          log_ends != cluster->second.log_ends.end() ? &log_ends->second.history : nullptr;
      if (history != nullptr && !history->empty()) {
        JudgeBeyondLogEnd(join.source, partition, history->back().log_end,
                          cluster->second.requested_at >= state.polled_at, job);
      }
      if (partition.current && history != nullptr) {
        double taken = refreshed;
        const auto seen = job.positions_taken.find(
            {join.source, flink::MetricTopicName(partition.topic), partition.partition});
        if (seen != job.positions_taken.end() && seen->second.first == *partition.current) {
          taken = std::max(taken, seen->second.second);
        }
        if (const auto log_end = LogEndAt(*history, taken, join.read_committed)) {
          const std::int64_t position = *partition.current + 1;
          // Against the log end of when the position was taken; a transaction's marker past
          // the last record is nothing left to read (kafka::UnreadRecords).
          const auto end = static_cast<std::int64_t>(std::floor(*log_end));
          partition.flink_lag =
              snapshot != nullptr
                  ? kafka::UnreadRecords(*snapshot, {partition.topic, partition.partition},
                                         position, end, join.read_committed)
                  : std::max<std::int64_t>(0, end - position);
          // As of the same time: measured at `now`, the age would climb between two refreshes
          // of a steady job and drop at each (a sawtooth of lagsight's own making).
          std::optional<kafka::RecordTimestamp> record;
          if (snapshot != nullptr) {
            const auto fetched = snapshot->record_timestamps.find(
                {{partition.topic, partition.partition}, position, join.read_committed});
            if (fetched != snapshot->record_timestamps.end()) record = fetched->second;
          }
          partition.lag_seconds =
              ComputeLagSeconds(position, *partition.flink_lag, record, *history, taken);
        }
      }
      topic.flink_lag_sum += partition.flink_lag.value_or(0);
      if (partition.lag_seconds) {
        topic.max_lag_seconds =
            std::max(topic.max_lag_seconds.value_or(0), partition.lag_seconds->seconds);
      }
    }
    join.topics.clear();
    for (auto& [name, topic] : topics) join.topics.push_back(std::move(topic));
  }

  // A job position (currentOffset + 1) or committedOffset above the partition's log end is
  // impossible on the cluster lagsight polls: the job, or its committer, talks to another
  // cluster (a bootstrap list naming two), or the topic was recreated or truncated under it.
  // Judged only against log ends read after Flink served the values (`judgeable`: the Kafka poll
  // began after the Flink snapshot arrived), since records written meanwhile are no anomaly;
  // between such polls the last judgement stands.
  static void JudgeBeyondLogEnd(const std::string& source, FlinkPartitionJoin& partition,
                                std::int64_t log_end, bool judgeable, JobHistory& job) {
    const auto key = std::make_tuple(source, partition.topic, partition.partition);
    if (judgeable) {
      std::int64_t furthest = partition.committed.value_or(0);
      if (partition.current) furthest = std::max(furthest, *partition.current + 1);
      job.beyond_log_end[key] = std::max<std::int64_t>(0, furthest - log_end);
    }
    if (const auto judged = job.beyond_log_end.find(key);
        judged != job.beyond_log_end.end() && judged->second > 0) {
      partition.beyond_log_end = judged->second;
    }
  }

  // --- Diagnosis -----------------------------------------------------------------------------

  struct PairInputs {
    std::string job_name;
    std::vector<const FlinkSourceJoin*> joins;
  };

  // One cluster's groups by id, built once per judgement so each pair finds its own group in
  // O(log n) instead of scanning every group (which made a poll quadratic in the groups).
  struct GroupIndex {
    std::map<std::string, const kafka::ConsumerGroup*> described;
    std::map<std::string, const GroupLag*> lags;
    std::map<std::string, const GroupFindings*> findings;

    GroupIndex(const kafka::KafkaSnapshot& snapshot, const std::vector<GroupLag>& group_lags,
               const KafkaFindings& kafka_findings) {
      for (const kafka::ConsumerGroup& group : snapshot.groups) described[group.id] = &group;
      for (const GroupLag& lag : group_lags) lags[lag.group] = &lag;
      for (const GroupFindings& group : kafka_findings.groups) findings[group.group] = &group;
    }

    template <typename Map>
    static typename Map::mapped_type Find(const Map& map, const std::string& key) {
      const auto found = map.find(key);
      return found == map.end() ? nullptr : found->second;
    }
  };

  // Partitions each job reads, per group: who else writes the same partitions of a group.
  using Readers = std::map<std::string, std::map<std::string, std::set<kafka::TopicPartition>>>;

  std::vector<DiagnosisFinding> Judge(const std::string& cluster_name,
                                      const kafka::KafkaSnapshot& snapshot,
                                      const std::vector<GroupLag>& lags, double now) {
    KafkaClusterState& cluster = kafka[cluster_name];
    const GroupIndex index(snapshot, lags, *cluster.findings);
    // Pairs of this cluster from the joins of every Flink cluster that is up.
    std::map<PairKey, PairInputs> pair_inputs;
    std::set<std::string> jobs_with_inputs;
    Readers readers;
    for (const auto& [flink_name, state] : flink) {
      if (!state.up) continue;
      for (const FlinkSourceJoin& join : state.findings.joins) {
        if (join.kafka_cluster != cluster_name) continue;
        const auto job = jobs.find(join.job_id);
        if (job == jobs.end() || job->second.latest == nullptr) continue;
        PairInputs& inputs = pair_inputs[{cluster_name, join.group.value_or(""), join.job_id}];
        inputs.job_name = join.job_name;
        inputs.joins.push_back(&join);
        jobs_with_inputs.insert(join.job_id);
        if (join.group) {
          auto& read = readers[*join.group][join.job_id];
          for (const FlinkPartitionJoin& p : join.partitions) read.insert({p.topic, p.partition});
        }
      }
    }
    // Groups some job commits to, including jobs that are missing or whose Flink cluster is
    // down right now: those groups are not judged as Kafka-only while their job cannot be seen.
    std::map<std::string, std::set<std::string>> jobs_of_group;
    for (const auto& [job_id, history] : jobs) {
      for (const auto& [source, association] : history.associations) {
        if (association.kafka_cluster == cluster_name) {
          jobs_of_group[association.group].insert(job_id);
        }
      }
    }

    std::vector<DiagnosisFinding> out;
    // At most one per pair and one per group without a job; grown by doubling it held 1.5
    // copies (heaptrack, 20,000 groups: 12.6 MB).
    out.reserve(pair_inputs.size() + cluster.findings->groups.size());
    std::set<PairKey> kept;
    auto emit = [&](const PairKey& key, std::optional<DiagnosisFinding> finding) {
      kept.insert(key);
      if (finding) out.push_back(std::move(*finding));
    };
    for (const auto& [key, inputs] : pair_inputs) {
      const JobHistory& job = jobs.at(std::get<2>(key));
      PairState& pair = Pair(key, now);
      InheritVerdict(key, inputs.job_name, pair);
      std::vector<kafka::TopicPartition> stuck;
      const PairFacts facts =
          RunningPairFacts(cluster, snapshot, index, key, inputs, job, readers, pair, now, stuck);
      std::optional<DiagnosisFinding> finding =
          Decide(key, inputs.job_name, PairEvidenceFrom(facts, config), PairPrecedence(), now,
                 PairHistory(pair), facts, index, job, std::move(stuck));
      if (finding) {
        for (const FlinkSourceJoin* join : inputs.joins) {
          for (const FlinkTopicJoin& topic : join->topics) {
            if (!topic.max_lag_seconds) continue;
            finding->flink_max_lag_seconds =
                std::max(finding->flink_max_lag_seconds.value_or(0), *topic.max_lag_seconds);
          }
          for (const FlinkUnreadPartition& unread : join->unread) {
            finding->unread_partitions.push_back({unread.topic, unread.partition});
          }
          for (const FlinkPartitionJoin& partition : join->partitions) {
            if (partition.beyond_log_end) {
              finding->beyond_log_end_partitions.push_back({partition.topic, partition.partition});
            }
          }
          if (join->idle_subtasks && join->parallelism) {
            finding->idle_subtasks += *join->idle_subtasks;
            finding->source_subtasks += *join->parallelism;
          }
        }
        pair.last = finding;
      }
      emit(key, std::move(finding));
    }
    // Jobs without joins here: not running, missing, stopping, or their Flink cluster is down.
    for (auto& [job_id, job] : jobs) {
      if (jobs_with_inputs.contains(job_id)) continue;
      std::set<PairKey> keys;
      for (const auto& [source, association] : job.associations) {
        if (association.kafka_cluster == cluster_name) {
          keys.insert({cluster_name, association.group, job_id});
        }
      }
      for (const auto& [key, state] : pairs) {
        if (std::get<0>(key) == cluster_name && std::get<2>(key) == job_id) keys.insert(key);
      }
      const FlinkClusterState& flink_state = flink[job.flink_cluster];
      for (const PairKey& key : keys) {
        PairState& pair = Pair(key, now);
        const double hold_for = Seconds(config.job_gone_after);
        if (!flink_state.up) {
          // No news of the job: hold what was known through the blip, then say nothing.
          const bool blip = flink_state.down_since && now - *flink_state.down_since < hold_for;
          emit(key, blip ? pair.last : std::nullopt);
          continue;
        }
        if (Stopping(job.state) || (job.missing_since && now - *job.missing_since < hold_for)) {
          emit(key, pair.last);
          continue;
        }
        PairFacts facts;
        facts.cluster_mismatch = cluster.findings->cluster_mismatch;
        facts.restarts_in_window = IncreaseOverWindow(
            job.samples, [](const JobSample& s) { return s.restarts; }, now, window());
        if (job.missing_since) {
          facts.lifecycle = JobLifecycle::kGone;
          facts.not_running_seconds = now - *job.missing_since;
          if (const auto history = cluster.groups.find(std::get<1>(key));
              history != cluster.groups.end()) {
            facts.kafka_lag = static_cast<double>(history->second.samples.back().lag_sum);
            facts.group_lag_growing =
                TrendOverWindow(
                    history->second.samples, [](const GroupSample& s) { return s.lag_sum; }, now,
                    window(), MinimumChange()) == Trend::kGrowing;
          }
        } else if (Restarting(job)) {
          facts.lifecycle = JobLifecycle::kNotRunning;
          facts.not_running_seconds = now - job.not_running_since.value_or(now);
        } else {
          emit(key, pair.last);  // starting for the first time: nothing to judge yet
          continue;
        }
        emit(key, Decide(key, job.name, PairEvidenceFrom(facts, config), PairPrecedence(), now,
                         PairHistory(pair), facts, index, job));
      }
    }
    for (const GroupFindings& group : cluster.findings->groups) {
      if (jobs_of_group.contains(group.group)) continue;
      const PairKey key{cluster_name, group.group, ""};
      const GroupLag* lag = GroupIndex::Find(index.lags, group.group);
      const auto history = cluster.groups.find(group.group);
      if (lag == nullptr || history == cluster.groups.end()) continue;
      PairState& pair = Pair(key, now);
      const GroupFactsWithStuck facts =
          GroupFactsOf(cluster, snapshot, *lag, group, history->second, pair, now);
      std::vector<LagPoint> points;
      points.reserve(history->second.samples.size());
      for (const GroupSample& sample : history->second.samples.samples()) {
        points.push_back({sample.time, sample.lag_sum, std::nullopt});
      }
      std::optional<DiagnosisFinding> finding =
          Conclude(key, "", GroupEvidenceFrom(facts, config), GroupPrecedence(), now,
                   std::move(points), facts.stuck);
      if (finding) {
        finding->kafka_lag = history->second.samples.back().lag_sum;
        finding->catch_up_seconds = group.catch_up_seconds;
        AddMaxLagSeconds(index, *finding);
        pair.last = finding;
      }
      emit(key, std::move(finding));
    }
    std::erase_if(pairs, [&](const auto& entry) {
      return std::get<0>(entry.first) == cluster_name && !kept.contains(entry.first);
    });
    std::sort(out.begin(), out.end(), [](const DiagnosisFinding& a, const DiagnosisFinding& b) {
      return std::tie(a.group, a.job_id) < std::tie(b.group, b.job_id);
    });
    return out;
  }

  // A job redeployed or upgraded under the same name is the same job to its group: its pair
  // starts from the active verdict of its predecessor's pair (whose job is gone or handing
  // over), and changes from there as any verdict does. Without it the group had no diagnosis
  // for the two polls a new verdict takes to confirm (14-46 s at the default polls).
  void InheritVerdict(const PairKey& key, const std::string& job_name, PairState& pair) const {
    if (pair.verdict.active()) return;
    const auto& [cluster, group, job_id] = key;
    for (auto other = pairs.lower_bound({cluster, group, ""});
         other != pairs.end() && std::get<0>(other->first) == cluster &&
         std::get<1>(other->first) == group;
         ++other) {
      const std::string& other_job = std::get<2>(other->first);
      if (other_job.empty() || other_job == job_id) continue;
      const PairState& before = other->second;
      if (!before.verdict.active() || !before.last || before.last->job_name != job_name) continue;
      if (const auto known = jobs.find(other_job);
          known != jobs.end() && !known->second.missing_since && !Stopping(known->second.state)) {
        continue;  // still running: two jobs of one name, each with its own verdict
      }
      pair.verdict = before.verdict;
      return;
    }
  }

  PairState& Pair(const PairKey& key, double now) {
    auto [found, inserted] = pairs.try_emplace(key);
    if (inserted) found->second.first_seen = now;
    return found->second;
  }

  double MinimumChange() const {
    return std::max(1.0, static_cast<double>(config.lag_threshold_records) / 10);
  }

  // Checkpoint failures over the window (reset-safe, as IncreaseOverWindow) that say something
  // about the job's checkpoints. Flink 2.x counts a trigger it refuses while a (re)started job's
  // tasks are still deploying ("Checkpoint triggering task ... is not being executed") as a
  // failed checkpoint; seen as failing, that made a healthy job's slow first checkpoint (a replay
  // from earliest under backpressure took 16 s) read as checkpoints_failing. A failure is such a
  // refusal when lagsight saw it before any checkpoint of the run under way or completed, within
  // the grace after the start; any later failure counts.
  static double CheckpointFailuresInWindow(const ThinningSeries<JobSample>& samples,
                                           double running_since, double grace, double now,
                                           double window) {
    const JobSample* baseline = WindowBaseline(samples, now, window);
    if (baseline == nullptr) return 0;
    double failures = 0;
    bool attempt_seen = false;
    const JobSample* previous = nullptr;
    for (const JobSample& sample : samples.samples()) {
      const bool in_run = sample.time >= running_since;
      if (previous != nullptr && sample.time > baseline->time) {
        const double increase =
            sample.failed >= previous->failed ? sample.failed - previous->failed : sample.failed;
        const bool refused_at_start =
            in_run && !attempt_seen && sample.time - running_since <= grace;
        if (!refused_at_start) failures += increase;
      }
      if (in_run) {
        attempt_seen = attempt_seen || sample.in_progress ||
                       (previous != nullptr && previous->time >= running_since &&
                        sample.completed > previous->completed);
      }
      previous = &sample;
    }
    return failures;
  }

  static bool Restarting(const JobHistory& job) {
    if (!job.not_running_since) return false;
    // CREATED / INITIALIZING of a job never seen running is a start, not a restart.
    return job.state == "RESTARTING" || job.state == "FAILING" || job.num_restarts.value_or(0) > 0;
  }

  static std::vector<LagPoint> PairHistory(const PairState& pair) {
    std::vector<LagPoint> points;
    for (const PairSample& sample : pair.samples.samples()) {
      points.push_back({sample.time, sample.kafka_lag, sample.flink_lag});
    }
    return points;
  }

  static void AddMaxLagSeconds(const GroupIndex& index, DiagnosisFinding& finding) {
    if (const GroupFindings* group = GroupIndex::Find(index.findings, finding.group)) {
      finding.max_lag_seconds = group->max_lag_seconds;
    }
  }

  // Hysteresis over the raw winner; the finding once a cause is active.
  std::optional<DiagnosisFinding> Conclude(const PairKey& key, const std::string& job_name,
                                           const Evidence& evidence,
                                           const std::vector<Cause>& precedence, double now,
                                           std::vector<LagPoint> history,
                                           std::vector<kafka::TopicPartition> stuck) {
    PairState& pair = pairs[key];
    if (now >= settle_until) {
      pair.verdict.Update(Winner(evidence, precedence), now, config.confirm_polls);
    }
    if (!pair.verdict.active()) return std::nullopt;
    DiagnosisFinding finding;
    finding.kafka_cluster = std::get<0>(key);
    finding.group = std::get<1>(key);
    finding.job_id = std::get<2>(key);
    finding.job_name = job_name;
    finding.cause = *pair.verdict.active();
    finding.since = pair.verdict.since();
    finding.evidence = evidence.Causes();
    if (evidence.Has(Cause::kPartitionStuck)) finding.stuck_partitions = std::move(stuck);
    finding.history = std::move(history);
    return finding;
  }

  std::optional<DiagnosisFinding> Decide(const PairKey& key, const std::string& job_name,
                                         const Evidence& evidence,
                                         const std::vector<Cause>& precedence, double now,
                                         std::vector<LagPoint> history, const PairFacts& facts,
                                         const GroupIndex& index, const JobHistory& job,
                                         std::vector<kafka::TopicPartition> stuck = {}) {
    PairState& pair = pairs[key];
    std::optional<DiagnosisFinding> finding =
        Conclude(key, job_name, evidence, precedence, now, std::move(history), std::move(stuck));
    if (!finding) {
      pair.last.reset();
      return finding;
    }
    if (facts.lifecycle == JobLifecycle::kRunning) {
      if (!pair.samples.empty()) {
        finding->flink_lag = pair.samples.back().flink_lag;
        if (!std::get<1>(key).empty()) finding->kafka_lag = pair.samples.back().kafka_lag;
        // The job's own backlog decides when it is caught up (its group's lag only follows it).
        finding->catch_up_seconds = CatchUp(
            pair.samples, [](const PairSample& s) { return s.flink_lag; }, facts.input_rate, now);
      }
    } else if (!std::get<1>(key).empty() && facts.lifecycle == JobLifecycle::kGone) {
      finding->kafka_lag = static_cast<std::int64_t>(facts.kafka_lag);
    }
    if (job.latest != nullptr) {
      finding->checkpoint_interval_seconds = PeriodicIntervalSeconds(*job.latest);
      const auto& ages = flink[job.flink_cluster].findings.checkpoint_ages;
      if (const auto age = ages.find(std::get<2>(key));
          age != ages.end() && finding->checkpoint_interval_seconds) {
        finding->checkpoint_age_seconds = age->second.age_seconds;
      }
    }
    AddMaxLagSeconds(index, *finding);
    pair.last = finding;
    return finding;
  }

  // The one offsets_expiring test, for pairs and Kafka-only groups alike.
  bool ExpiringSoon(const GroupFindings* findings, const kafka::KafkaSnapshot& snapshot) const {
    return findings != nullptr && snapshot.offsets_retention_seconds &&
           findings->offsets_expiry_seconds &&
           *findings->offsets_expiry_seconds <
               config.expiry_warning_ratio * *snapshot.offsets_retention_seconds;
  }

  // Tracks since when `condition` has held; true once it held for `duration`.
  static bool HeldFor(std::optional<double>& since, bool condition, double now, double duration) {
    if (!condition) {
      since.reset();
      return false;
    }
    if (!since) since = now;
    return now - *since >= duration;
  }

  // Records/s arriving on `partitions`, none while no partition's history is long enough.
  // Measured at `now`: a Flink poll's analysis asks between two Kafka polls.
  std::optional<double> InputRateOf(const KafkaClusterState& cluster,
                                    const std::set<kafka::TopicPartition>& partitions,
                                    double now) const {
    std::optional<double> total;
    for (const kafka::TopicPartition& tp : partitions) {
      const auto log_ends = cluster.log_ends.find(tp);
      if (log_ends == cluster.log_ends.end()) continue;
      if (const auto rate = InputRate(log_ends->second.history, now, window(), window() / 4)) {
        total = total.value_or(0) + *rate;
      }
    }
    return total;
  }

  // The same over a group's partitions (with `committed_only`, those it committed on) as of the
  // Kafka poll just recorded, from the rates RecordKafka worked out: only a Kafka poll's analysis
  // asks this, at the time of that poll.
  static std::optional<double> InputRateOf(const KafkaClusterState& cluster, const GroupLag& lag,
                                           bool committed_only) {
    std::optional<double> total;
    for (const TopicLag& topic : lag.topics) {
      TopicCursor log_ends_of(cluster.log_ends, topic.topic);
      for (const PartitionLag& partition : topic.partitions) {
        if (committed_only && !partition.committed) continue;
        const PartitionLogEnds* log_ends = log_ends_of.Find(partition.partition);
        if (log_ends == nullptr || !log_ends->input_rate) continue;
        total = total.value_or(0) + *log_ends->input_rate;
      }
    }
    return total;
  }

  // The partitions that stood for `after` seconds while records waited on them (`waiting`) and
  // some other partition moved meanwhile.
  template <typename Waiting>
  static std::vector<kafka::TopicPartition> StuckPartitions(const StandingOffsets& standing,
                                                            const Waiting& waiting, double now,
                                                            double after) {
    std::vector<kafka::TopicPartition> stuck;
    const bool another_moved = std::ranges::any_of(
        standing, [&](const auto& entry) { return now - entry.second.since < after; });
    if (!another_moved) return stuck;  // nothing moves: the whole job or group is the problem
    for (const auto& [tp, stand] : standing) {
      if (now - stand.since >= after && waiting(tp)) stuck.push_back(tp);
    }
    return stuck;
  }

  PairFacts RunningPairFacts(const KafkaClusterState& cluster, const kafka::KafkaSnapshot& snapshot,
                             const GroupIndex& index, const PairKey& key, const PairInputs& inputs,
                             const JobHistory& job, const Readers& readers, PairState& pair,
                             double now, std::vector<kafka::TopicPartition>& stuck) {
    const std::string& group_id = std::get<1>(key);
    const flink::FlinkJob& flink_job = *job.latest;
    const FlinkClusterState& flink_state = flink[job.flink_cluster];
    const double window_seconds = window();
    // What the job's snapshot says (checkpoint age, how long a position stands) holds as of
    // the Flink poll that took it, not as of this Kafka poll, and as of when that poll began:
    // against `now` the snapshot would age by however late it is. A REST API that answers in
    // seconds, or a host that stalls (CI saw 12 s, after which Kafka polls ran before the next
    // Flink poll), would make a healthy job's checkpoints look overdue.
    const double flink_known_at = KnownAt(flink_state.requested_at, now);
    PairFacts f;
    f.cluster_mismatch = cluster.findings->cluster_mismatch;
    for (const config::CommitModeRule& rule : config.commit_modes) {
      if (!rule.job.FullMatch(job.name)) continue;
      f.stated_commit_mode = rule.mode;
      break;
    }
    f.restarts_in_window = IncreaseOverWindow(
        job.samples, [](const JobSample& s) { return s.restarts; }, now, window_seconds);

    const flink::CheckpointConfig& checkpoint_config = flink_job.checkpoint_config;
    const std::optional<double> periodic = PeriodicIntervalSeconds(flink_job);
    f.checkpointing = periodic.has_value();
    const double interval = periodic.value_or(0);
    // With min-pause the next checkpoint starts that long after the last one ended.
    f.expected_checkpoint_gap_seconds =
        std::max(interval, checkpoint_config.min_pause_ms.value_or(0) / 1000.0 +
                               flink_job.checkpoints.latest_duration_ms.value_or(0) / 1000.0);
    f.job_age_seconds = now - job.running_since;
    // Before a young job's offsets can be expected: its first checkpoint commits, Flink's
    // metric fetcher shows the committedOffset up to a refresh later, and a job that moves
    // meanwhile is matched to its group on the refresh after (CI: a job restarted after an offset
    // reset, window 30 s, was matched 18 s after its start, 3 s after a grace of window/2).
    f.grace_seconds =
        std::max({2 * f.expected_checkpoint_gap_seconds, window_seconds / 2,
                  f.expected_checkpoint_gap_seconds + 2 * flink_state.metrics_fetch_interval +
                      kFirstCommitSlackSeconds});

    // The pair's partitions, the Flink-side lag over them and since when each position stands.
    std::set<std::string> topics;
    std::set<kafka::TopicPartition> partitions;
    std::set<kafka::TopicPartition> waiting;
    std::map<kafka::TopicPartition, std::int64_t> positions;
    std::int64_t flink_lag = 0;
    for (const FlinkSourceJoin* join : inputs.joins) {
      for (const FlinkTopicJoin& topic : join->topics) {
        flink_lag += topic.flink_lag_sum;
        topics.insert(topic.topic);
      }
      for (const FlinkPartitionJoin& p : join->partitions) {
        partitions.insert({p.topic, p.partition});
        if (p.current) positions[{p.topic, p.partition}] = *p.current + 1;
        if (p.flink_lag.value_or(0) > 0) waiting.insert({p.topic, p.partition});
        if (p.beyond_log_end) {
          f.positions_beyond_log_end.push_back(PartitionName({p.topic, p.partition}));
        }
      }
    }
    std::int64_t kafka_lag = 0;
    if (const GroupLag* lag = GroupIndex::Find(index.lags, group_id)) {
      for (const TopicLag& topic : lag->topics) {
        if (topics.contains(topic.topic)) kafka_lag += topic.lag_sum;
      }
    }
    // Right after a (re)start the reader reports no positions yet: its lag is unknown, not 0
    // (a 0 followed by the real backlog would read as a lag that grows).
    const bool positions_known = !positions.empty();
    if (positions_known) pair.samples.Add({now, flink_lag, kafka_lag});
    f.flink_lag = static_cast<double>(flink_lag);
    f.kafka_lag = static_cast<double>(kafka_lag);
    f.input_rate = InputRateOf(cluster, partitions, now);
    f.flink_lag_trend = TrendOverWindow(
        pair.samples, [](const PairSample& s) { return s.flink_lag; }, now, window_seconds,
        MinimumChange());
    const double stuck_after =
        std::max(window_seconds / 2, kStuckFetchIntervals * flink_state.metrics_fetch_interval);
    UpdateStanding(pair.positions, positions, flink_known_at);
    stuck = StuckPartitions(
        pair.positions, [&](const kafka::TopicPartition& tp) { return waiting.contains(tp); },
        flink_known_at, stuck_after);
    for (const kafka::TopicPartition& tp : stuck) {
      f.stuck_partitions.push_back(PartitionName(tp));
    }

    if (f.checkpointing) {
      // Since the latest completed checkpoint, but never before the job last (re)started: a
      // failover that recovers slowly has had no chance to checkpoint yet.
      const double since_start = std::max(0.0, flink_known_at - job.running_since);
      const std::optional<CheckpointAge> age = CheckpointAgeOf(flink_job, flink_known_at);
      f.checkpoint_age_seconds = age ? std::min(age->age_seconds, since_start) : since_start;
      f.checkpoint_failures_in_window =
          CheckpointFailuresInWindow(job.samples, job.running_since, f.grace_seconds, now,
                                     window_seconds) > 0;
      f.checkpoint_in_progress = flink_job.checkpoints.counts.in_progress > 0;
    }
    f.checkpoints_completed_in_window =
        IncreaseOverWindow(
            job.samples, [](const JobSample& s) { return s.completed; }, now, window_seconds) > 0;

    const GroupHistory* history = nullptr;
    if (const auto found = cluster.groups.find(group_id); found != cluster.groups.end()) {
      history = &found->second;
    }
    // The counters trail under backpressure (the commit callback runs on the blocked fetcher
    // thread), so commits the broker shows since the job started count as attempts too.
    const bool broker_saw_commit = history != nullptr && history->last_commit > job.running_since &&
                                   history->last_commit > history->first_seen;
    bool all_commit_nothing = !inputs.joins.empty();
    for (const FlinkSourceJoin* join : inputs.joins) {
      const auto series = job.sources.find(join->source);
      if (series == job.sources.end() || series->second.empty()) {
        all_commit_nothing = false;
        continue;
      }
      f.commits_failed_in_window += IncreaseOverWindow(
          series->second, [](const SourceSample& s) { return s.failed; }, now, window_seconds);
      f.commits_succeeded_in_window += IncreaseOverWindow(
          series->second, [](const SourceSample& s) { return s.succeeded; }, now, window_seconds);
      const std::string mode = CommitMode(series->second, job.samples);
      all_commit_nothing &= mode == "none";
      f.kafka_client_commits |= mode == "auto";
      f.group_expected |= join->association == "configured";
      f.group_candidates |= !join->candidate_groups.empty();
    }
    // A job behind may simply not have got its commit out yet (under backpressure the commit
    // waits on the blocked fetcher thread): only a job that is caught up, in records, and
    // still never commits commits nothing. Not "a lag that matters": after a burst the
    // window's input rate is high and a restored job's backlog looks small in seconds.
    f.commits_nothing = f.checkpointing && all_commit_nothing && !broker_saw_commit &&
                        positions_known &&
                        f.flink_lag < static_cast<double>(config.lag_threshold_records);

    const kafka::ConsumerGroup* group = GroupIndex::Find(index.described, group_id);
    f.group_known = !group_id.empty();
    if (group != nullptr) {
      for (const auto& [tp, offset] : group->committed)
        f.group_has_offsets |= topics.contains(tp.topic);
    }
    // With the group there but no partitions reported by the reader yet (right after a start or
    // restore), nothing says its offsets are missing.
    if (f.group_known && group != nullptr && topics.empty()) f.group_has_offsets = true;

    // Did the job go back behind what its group had committed? Its position below the group's
    // committed offsets by more than the age of the position explains, or the group's offsets
    // going back since the job (re)started (its first commit from the older position).
    const bool lag_matters = LagMatters(f.flink_lag, f.input_rate, config);
    if (!positions_known) {
      // Nothing to compare yet.
    } else if (!lag_matters) {
      pair.moved_back = MovedBack::kNo;  // caught up
    } else if (pair.moved_back == MovedBack::kNo && history != nullptr) {
      double deficit = 0;
      for (const auto& [tp, position] : positions) {
        const auto committed = history->committed_standing.find(tp);
        if (committed != history->committed_standing.end() && committed->second.offset > position) {
          deficit += static_cast<double>(committed->second.offset - position);
        }
      }
      const double position_age = now - flink_state.polled_at + flink_state.metrics_fetch_interval;
      const double explained = f.input_rate.value_or(0) * position_age;
      bool regressed_since_start = false;
      for (double time : history->regression_times) {
        // Before the start too, for a young job: an offset reset while it was stopped.
        regressed_since_start |= time >= job.running_since || f.job_age_seconds < window_seconds;
      }
      if (LagMatters(deficit - explained, f.input_rate, config) || regressed_since_start) {
        const auto& restored_ms = flink_job.checkpoints.restored_timestamp_ms;
        const bool restored = restored_ms && static_cast<double>(*restored_ms) / 1000.0 >=
                                                 job.running_since - kRestoreSlackSeconds;
        pair.moved_back = restored ? MovedBack::kRestore : MovedBack::kReplay;
      }
    }
    f.moved_back = pair.moved_back;
    f.regressions_in_window =
        history != nullptr ? static_cast<int>(history->regression_times.size()) : 0;
    if (const auto others = readers.find(group_id); others != readers.end()) {
      const auto& mine = others->second.find(std::get<2>(key));
      for (const auto& [other_job, read] : others->second) {
        if (other_job == std::get<2>(key) || mine == others->second.end()) continue;
        for (const kafka::TopicPartition& tp : read) {
          f.other_job_on_same_partitions |= mine->second.contains(tp);
        }
      }
    }

    bool uncommitted = false;
    if (group != nullptr && f.group_has_offsets) {
      for (const std::string& topic : topics) {
        const auto count = snapshot.topic_partitions.find(topic);
        if (count == snapshot.topic_partitions.end()) continue;
        for (std::int32_t p = 0; p < count->second; ++p) {
          const kafka::TopicPartition tp{topic, p};
          uncommitted |= !group->committed.contains(tp) && HasRecords(snapshot, tp);
        }
      }
    }
    f.partitions_uncommitted = HeldFor(pair.uncommitted_since, uncommitted, now, f.grace_seconds);

    const GroupFindings* findings = GroupIndex::Find(index.findings, group_id);
    f.offsets_expiring = group != nullptr && ExpiringSoon(findings, snapshot);
    // In records: what Kafka's tools show, and what would alarm anyone reading them. Measured
    // where lagsight's polls can see the period; a checkpoint gap shorter than two Kafka polls is
    // known from Flink instead, and its sawtooth is what arrives over one gap.
    const double threshold = static_cast<double>(config.lag_threshold_records);
    const double poll_gap = history != nullptr ? UsualPollGap(history->samples) : 0;
    if (f.checkpointing && poll_gap > 0 &&
        f.expected_checkpoint_gap_seconds < kSawtoothMinPollsPerPeriod * poll_gap) {
      // ... and only where Kafka's side reached the threshold at a poll in the window: a
      // sawtooth nobody's tools can see alarms nobody.
      std::int64_t kafka_lag_seen = 0;
      for (const PairSample& sample : pair.samples.samples()) {
        if (sample.time >= now - window_seconds) {
          kafka_lag_seen = std::max(kafka_lag_seen, sample.kafka_lag);
        }
      }
      f.sawtooth_large =
          f.input_rate.value_or(0) * f.expected_checkpoint_gap_seconds >= threshold &&
          static_cast<double>(kafka_lag_seen) >= threshold;
    } else {
      f.sawtooth_large = findings != nullptr && findings->sawtooth.detected &&
                         findings->sawtooth.amplitude_records.value_or(0) >= threshold;
    }
    return f;
  }

  struct GroupFactsWithStuck : GroupFacts {
    std::vector<kafka::TopicPartition> stuck;
  };

  GroupFactsWithStuck GroupFactsOf(const KafkaClusterState& cluster,
                                   const kafka::KafkaSnapshot& snapshot, const GroupLag& lag,
                                   const GroupFindings& findings, const GroupHistory& history,
                                   PairState& pair, double now) {
    const double window_seconds = window();
    GroupFactsWithStuck f;
    f.regressions_in_window = static_cast<int>(history.regression_times.size());
    f.offsets_expiring = ExpiringSoon(&findings, snapshot);

    bool uncommitted = false;
    // Sorted as they come (topics by name, partitions by number): a set's node per partition
    // was a tenth of tests/bench/analyzer_bench.
    std::vector<kafka::TopicPartition> waiting;
    for (const TopicLag& topic : lag.topics) {
      for (const PartitionLag& partition : topic.partitions) {
        if (partition.position == CommitPosition::kNoCommit) {
          uncommitted = uncommitted || HasRecords(snapshot, {topic.topic, partition.partition});
        }
        if (partition.lag.value_or(0) > 0) waiting.push_back({topic.topic, partition.partition});
      }
    }
    f.partitions_uncommitted =
        HeldFor(pair.uncommitted_since, uncommitted, now, window_seconds / 2);

    const GroupSample* baseline = WindowBaseline(history.samples, now, window_seconds);
    const GroupSample& latest = history.samples.back();
    f.lag = static_cast<double>(latest.lag_sum);
    f.input_rate = InputRateOf(cluster, lag, /*committed_only=*/true);
    f.lag_trend = TrendOverWindow(
        history.samples, [](const GroupSample& s) { return s.lag_sum; }, now, window_seconds,
        MinimumChange());
    f.covered =
        baseline != nullptr && latest.time - baseline->time >= kLevelCoverage * window_seconds;
    f.committed_in_window =
        !history.commits.empty() && history.commits.back().time > now - window_seconds;
    f.input_arrived = baseline != nullptr && latest.log_end_sum > baseline->log_end_sum;
    f.seconds_since_commit = now - history.last_commit;
    f.commit_period_seconds = CommitPeriod(history.commits);
    // A partition whose commits stopped while the group's others go on, with records waiting.
    const double stuck_after = StalledAfterSeconds(f.commit_period_seconds, config);
    // RecordKafka keeps committed_standing up to date with this poll's offsets.
    f.stuck = StuckPartitions(
        history.committed_standing,
        [&](const kafka::TopicPartition& tp) {
          return std::binary_search(waiting.begin(), waiting.end(), tp);
        },
        now, stuck_after);
    for (const kafka::TopicPartition& tp : f.stuck) f.stuck_partitions.push_back(PartitionName(tp));
    return f;
  }

  std::shared_ptr<const Findings> Build() const {
    auto findings = std::make_shared<Findings>();
    for (const auto& [name, cluster] : kafka) {
      if (!cluster.up) continue;
      findings->kafka[name] = cluster.findings;
      findings->diagnosis.insert(findings->diagnosis.end(), cluster.diagnosis.begin(),
                                 cluster.diagnosis.end());
    }
    for (const auto& [name, cluster] : flink) {
      if (cluster.up) findings->flink[name] = cluster.findings;
    }
    return findings;
  }
};

Analyzer::Analyzer(config::DiagnosisConfig config) : state_(std::make_unique<State>()) {
  state_->config = std::move(config);
}

Analyzer::~Analyzer() = default;

void Analyzer::SetConfig(const config::DiagnosisConfig& config) { state_->config = config; }

std::shared_ptr<const Findings> Analyzer::ObserveKafka(const std::string& cluster,
                                                       const SourcesView& sources, double now) {
  state_->NoteObservation('k', cluster, now);
  KafkaClusterState& state = state_->kafka[cluster];
  const auto view = sources.kafka.find(cluster);
  if (view == sources.kafka.end() || view->second.snapshot == nullptr ||
      view->second.lags == nullptr) {
    state.up = false;
    state.findings = std::make_shared<const KafkaFindings>();
    state.diagnosis.clear();
  } else {
    const kafka::KafkaSnapshot& snapshot = *view->second.snapshot;
    const std::vector<GroupLag>& lags = *view->second.lags;
    state_->RecordKafka(state, snapshot, lags, view->second.regressions, now);
    state.findings =
        std::make_shared<const KafkaFindings>(state_->FindKafka(state, snapshot, lags, now));
    state.up = true;
  }
  // Every Flink cluster's joins read this cluster's offsets.
  for (const auto& [name, flink_view] : sources.flink) state_->Join(name, sources, now);
  if (state.up) {
    const auto& view_ok = sources.kafka.at(cluster);
    state.diagnosis = state_->Judge(cluster, *view_ok.snapshot, *view_ok.lags, now);
  }
  return state_->Build();
}

std::shared_ptr<const Findings> Analyzer::ObserveFlink(const std::string& cluster,
                                                       const SourcesView& sources, double now) {
  state_->NoteObservation('f', cluster, now);
  const auto view = sources.flink.find(cluster);
  if (view != sources.flink.end() && view->second.snapshot != nullptr) {
    state_->RecordFlink(cluster, *view->second.snapshot, now);
  }
  state_->Join(cluster, sources, now);
  return state_->Build();
}

void Analyzer::Retain(const std::set<std::string>& kafka_clusters,
                      const std::set<std::string>& flink_clusters) {
  std::erase_if(state_->kafka,
                [&](const auto& entry) { return !kafka_clusters.contains(entry.first); });
  std::erase_if(state_->flink,
                [&](const auto& entry) { return !flink_clusters.contains(entry.first); });
  std::erase_if(state_->jobs, [&](const auto& entry) {
    return !flink_clusters.contains(entry.second.flink_cluster);
  });
  std::erase_if(state_->pairs, [&](const auto& entry) {
    return !kafka_clusters.contains(std::get<0>(entry.first));
  });
  std::erase_if(state_->observation_clocks, [&](const auto& entry) {
    const auto& [kind, name] = entry.first;
    return kind == 'k' ? !kafka_clusters.contains(name) : !flink_clusters.contains(name);
  });
}

}  // namespace lagsight::analysis
