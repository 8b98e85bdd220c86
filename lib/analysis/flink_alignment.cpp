#include "analysis/flink_alignment.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "analysis/analysis_time.h"
#include "analysis/history.h"

namespace lagsight::analysis {
namespace {

// A job position (currentOffset + 1) or committedOffset above the partition's log end is
// impossible on the cluster lagsight polls: the job, or its committer, talks to another
// cluster (a bootstrap list naming two), or the topic was recreated or truncated under it.
// Judged by BeyondLogEnd (analysis_time.h): beyond only against a log end read after Flink
// served the values (the Kafka poll began after the Flink snapshot arrived), since records
// written meanwhile are no anomaly; while that is unknown the last judgement stands.
void JudgeBeyondLogEnd(const std::string& source, FlinkPartitionJoin& partition,
                       std::int64_t log_end, double served_until, double log_end_read_from,
                       JobHistory& job) {
  const auto key = std::make_tuple(source, partition.topic, partition.partition);
  std::int64_t furthest = partition.committed.value_or(0);
  if (partition.current) furthest = std::max(furthest, *partition.current + 1);
  if (const auto beyond = BeyondLogEnd(furthest, served_until, log_end, log_end_read_from)) {
    job.beyond_log_end[key] = *beyond ? furthest - log_end : 0;
  }
  if (const auto judged = job.beyond_log_end.find(key);
      judged != job.beyond_log_end.end() && judged->second > 0) {
    partition.beyond_log_end = judged->second;
  }
}

// Judgements of partitions the source no longer reads (a deleted topic) are dropped.
void ForgetUnreadJudgements(const FlinkSourceJoin& join, JobHistory& job) {
  std::erase_if(job.beyond_log_end, [&](const auto& entry) {
    const auto& [source, topic, number] = entry.first;
    return source == join.source &&
           std::none_of(join.partitions.begin(), join.partitions.end(),
                        // Init-captures: clang before 16 cannot capture a structured binding.
                        [&read_topic = topic, read_number = number](const auto& p) {
                          return p.topic == read_topic && p.partition == read_number;
                        });
  });
}

// The partition's lag against the log end of `taken`, when its position was taken.
void AlignPartition(FlinkPartitionJoin& partition, const FlinkSourceJoin& join,
                    const LogEndHistory& history, double taken,
                    const kafka::KafkaSnapshot* snapshot) {
  const auto log_end = LogEndAt(history, taken, join.read_committed);
  if (!log_end) return;
  const std::int64_t position = *partition.current + 1;
  // Against the log end of when the position was taken; a transaction's marker past
  // the last record is nothing left to read (kafka::UnreadRecords).
  const auto end = static_cast<std::int64_t>(std::floor(*log_end));
  partition.flink_lag =
      snapshot != nullptr ? kafka::UnreadRecords(*snapshot, {partition.topic, partition.partition},
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
  partition.lag_seconds = ComputeLagSeconds(position, *partition.flink_lag, record, history, taken);
}

}  // namespace

void AlignFlinkLag(FlinkSourceJoin& join, JobHistory& job, const FlinkPollTiming& timing,
                   const KafkaHistory& cluster, const kafka::KafkaSnapshot* snapshot) {
  const double refreshed = timing.polled_at - timing.metrics_fetch_interval;
  std::map<std::string, FlinkTopicJoin> topics;
  for (const FlinkTopicJoin& joined : join.topics) {
    // The sums are recomputed below; which partitions nobody reads stays as the join found.
    FlinkTopicJoin& topic = topics[joined.topic];
    topic.topic = joined.topic;
    topic.unread_partitions = joined.unread_partitions;
  }
  ForgetUnreadJudgements(join, job);
  for (FlinkPartitionJoin& partition : join.partitions) {
    FlinkTopicJoin& topic = topics[partition.topic];
    topic.topic = partition.topic;
    topic.checkpoint_gap_sum += partition.checkpoint_gap.value_or(0);
    const auto log_ends = cluster.log_ends().find({partition.topic, partition.partition});
    const LogEndHistory* history =
        log_ends != cluster.log_ends().end() ? &log_ends->second.history : nullptr;
    if (history != nullptr && !history->empty()) {
      JudgeBeyondLogEnd(join.source, partition, history->back().log_end, timing.polled_at,
                        cluster.requested_at(), job);
    }
    if (partition.current && history != nullptr) {
      double taken = refreshed;
      const auto seen = job.positions_taken.find(
          {join.source, flink::MetricTopicName(partition.topic), partition.partition});
      if (seen != job.positions_taken.end() && seen->second.first == *partition.current) {
        taken = std::max(taken, seen->second.second);
      }
      AlignPartition(partition, join, *history, taken, snapshot);
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

}  // namespace lagsight::analysis
