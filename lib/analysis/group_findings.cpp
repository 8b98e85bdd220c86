#include "analysis/group_findings.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "analysis/catch_up.h"
#include "analysis/record_timestamp_index.h"
#include "kafka/topic_cursor.h"

namespace lagsight::analysis {
namespace {

// The lags in seconds of one topic's partitions the group committed on; raises
// `max_lag_seconds` to the largest.
TopicLagSeconds TopicLagSecondsOf(const KafkaHistory& history, const kafka::KafkaSnapshot& snapshot,
                                  const RecordTimestampIndex& records, const GroupLag& lag,
                                  const TopicLag& topic, double now,
                                  std::optional<double>& max_lag_seconds) {
  static const LogEndHistory kNoHistory;
  TopicLagSeconds topic_seconds;
  topic_seconds.topic = topic.topic;
  topic_seconds.partitions.reserve(topic.partitions.size());  // an upper bound
  kafka::TopicCursor offsets_of(snapshot.partitions, topic.topic);
  kafka::TopicCursor log_ends_of(history.log_ends(), topic.topic);
  const RecordTimestampIndex::Topic* records_of = records.Of(topic.topic);
  for (const PartitionLag& partition : topic.partitions) {
    if (!partition.committed || !partition.lag) continue;
    std::optional<LagSeconds> seconds;
    if (*partition.lag <= 0) {
      // Caught up, whatever the history says (ComputeLagSeconds): no lookup needed.
      seconds = LagSeconds{0, LagSecondsMethod::kCaughtUp};
    } else {
      std::int64_t position = *partition.committed;
      const kafka::PartitionOffsets* log = offsets_of.Find(partition.partition);
      if (log != nullptr && log->log_start && position < *log->log_start) {
        position = *log->log_start;
      }
      const std::optional<kafka::RecordTimestamp> timestamp =
          records_of != nullptr
              ? records_of->Find(partition.partition, position, lag.read_committed)
              : std::nullopt;
      const PartitionLogEnds* log_ends = log_ends_of.Find(partition.partition);
      seconds = ComputeLagSeconds(position, *partition.lag, timestamp,
                                  log_ends != nullptr ? log_ends->history : kNoHistory, now);
    }
    if (!seconds) continue;
    topic_seconds.partitions.push_back({partition.partition, *seconds});
    max_lag_seconds = std::max(max_lag_seconds.value_or(0), seconds->seconds);
  }
  return topic_seconds;
}

GroupFindings FindGroup(const KafkaHistory& history, const GroupHistory& h,
                        const kafka::ConsumerGroup* described, const kafka::KafkaSnapshot& snapshot,
                        const RecordTimestampIndex& records, const GroupLag& lag,
                        const config::DiagnosisConfig& config, double now) {
  GroupFindings group;
  group.group = lag.group;
  for (const TopicLag& topic : lag.topics) {
    TopicLagSeconds topic_seconds =
        TopicLagSecondsOf(history, snapshot, records, lag, topic, now, group.max_lag_seconds);
    if (topic_seconds.partitions.empty()) continue;
    topic_seconds.partitions.shrink_to_fit();
    group.lag_seconds.push_back(std::move(topic_seconds));
  }
  group.last_commit_time = std::max(h.last_commit, h.last_active.value_or(0));
  const bool without_members =
      described != nullptr && described->members.has_value() && *described->members == 0;
  if (without_members && snapshot.offsets_retention_seconds) {
    group.offsets_expiry_seconds =
        *snapshot.offsets_retention_seconds - (now - group.last_commit_time);
  }
  group.sawtooth = DetectSawtooth(h.commits, now, UsualPollGap(h.samples));
  group.catch_up_seconds = CatchUp(
      h.samples, [](const GroupSample& s) { return s.lag_sum; },
      history.InputRateOf(lag, /*committed_only=*/false), now, config);
  group.lateness_target_seconds =
      LatenessTargetOf(config, config::LatenessTarget::Of::kGroups, group.group);
  return group;
}

}  // namespace

KafkaFindings FindKafka(const KafkaHistory& history, const kafka::KafkaSnapshot& snapshot,
                        const std::vector<GroupLag>& lags, const config::DiagnosisConfig& config,
                        double now) {
  KafkaFindings findings;
  findings.cluster_mismatch = kafka::ClusterMismatch(snapshot);
  std::map<std::string, const kafka::ConsumerGroup*> group_of;
  for (const kafka::ConsumerGroup& group : snapshot.groups) group_of[group.id] = &group;
  const RecordTimestampIndex records(snapshot.record_timestamps);
  findings.groups.reserve(lags.size());  // grown by doubling it held 1.5 copies at 20,000
  for (const GroupLag& lag : lags) {
    const GroupHistory* h = history.Group(lag.group);
    if (h == nullptr) continue;
    const auto described = group_of.find(lag.group);
    findings.groups.push_back(FindGroup(history, *h,
                                        described != group_of.end() ? described->second : nullptr,
                                        snapshot, records, lag, config, now));
  }
  return findings;
}

}  // namespace lagsight::analysis
