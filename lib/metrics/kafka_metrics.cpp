#include "metrics/kafka_metrics.h"

#include <sched.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <future>
#include <iterator>
#include <set>
#include <string_view>
#include <system_error>
#include <unordered_map>

#include "metrics/group_member_metrics.h"
#include "metrics/share_group_metrics.h"

namespace lagsight::metrics {
namespace {

using prometheus::MetricType;

// A partition number as label text, without a string of its own; valid until the next call.
class PartitionNumber {
 public:
  std::string_view operator()(std::int32_t partition) {
    const auto [end, error] =
        std::to_chars(buffer_.data(), buffer_.data() + buffer_.size(), partition);
    return {buffer_.data(), static_cast<std::size_t>(end - buffer_.data())};
  }

 private:
  std::array<char, 12> buffer_{};
};

constexpr PollStatusMetrics kHealth{
    {"lagsight_kafka_up", "1 if the latest poll of the Kafka cluster succeeded, else 0.",
     MetricType::Gauge},
    {"lagsight_kafka_poll_duration_seconds", "How long the latest poll of the Kafka cluster took.",
     MetricType::Gauge},
    {"lagsight_kafka_last_poll_timestamp_seconds",
     "Unix time at which the latest successful poll of the Kafka cluster completed.",
     MetricType::Gauge},
    {"lagsight_kafka_polls_total", "Polls of the Kafka cluster.", MetricType::Counter},
    {"lagsight_kafka_poll_failures_total", "Polls of the Kafka cluster that failed.",
     MetricType::Counter}};

constexpr MetricDef kPartialErrors{
    "lagsight_kafka_poll_partial_errors",
    "Groups or partitions the latest poll could not read (the rest of the poll succeeded).",
    MetricType::Gauge};
constexpr MetricDef kLatestOffset{"lagsight_kafka_partition_latest_offset",
                                  "Log-end offset (high watermark) of the partition.",
                                  MetricType::Gauge};
constexpr MetricDef kLastStableOffset{
    "lagsight_kafka_partition_last_stable_offset",
    "Last stable offset of the partition (first offset of its oldest open transaction, else the "
    "high watermark): where read_committed readers' lag ends. Read only for partitions such a "
    "reader reads.",
    MetricType::Gauge};
constexpr MetricDef kEarliestOffset{"lagsight_kafka_partition_earliest_offset",
                                    "Log-start offset of the partition.", MetricType::Gauge};
constexpr MetricDef kGroupInfo{
    "lagsight_kafka_group_info",
    "A consumer group (always 1) with its state and kind (classic, simple, consumer).",
    MetricType::Gauge};
constexpr MetricDef kGroupMembers{"lagsight_kafka_group_members",
                                  "Members of the consumer group (0 for simple and empty groups).",
                                  MetricType::Gauge};
constexpr MetricDef kCommitted{"lagsight_kafka_group_committed_offset",
                               "Committed offset of the group: the next offset it would read.",
                               MetricType::Gauge};
constexpr MetricDef kLag{"lagsight_kafka_group_lag_records",
                         "Kafka-side lag: max(0, log-end offset - committed offset).",
                         MetricType::Gauge};
constexpr MetricDef kTopicLag{"lagsight_kafka_group_topic_lag_records",
                              "Kafka-side lag of the group summed over the topic's partitions.",
                              MetricType::Gauge};
constexpr MetricDef kTopicCommitted{
    "lagsight_kafka_group_topic_committed_offsets",
    "Committed offsets of the group summed over the topic's partitions it committed on: with "
    "lagsight_kafka_group_topic_lag_records, its progress against the log end.",
    MetricType::Gauge};
constexpr MetricDef kMaxLag{"lagsight_kafka_group_max_lag_records",
                            "Largest Kafka-side lag of any partition the group committed on.",
                            MetricType::Gauge};
constexpr MetricDef kUncommitted{
    "lagsight_kafka_group_partition_uncommitted",
    "1 for a partition of a topic the group consumes that has no committed offset of the group.",
    MetricType::Gauge};
constexpr MetricDef kTopicUncommitted{
    "lagsight_kafka_group_topic_uncommitted_partitions",
    "Partitions of a topic the group consumes that have no committed offset of the group.",
    MetricType::Gauge};
constexpr MetricDef kOutOfRange{
    "lagsight_kafka_group_offset_out_of_range",
    "1 when the committed offset lies beyond the log end or before the log start.",
    MetricType::Gauge};

constexpr MetricDef kRegressions{
    "lagsight_kafka_group_offset_regressions_total",
    "Times the group's committed offset moved backwards between two polls (restore from an old "
    "savepoint, shared group id, offset reset). Exported once it happened.",
    MetricType::Counter};

constexpr MetricDef kRetention{
    "lagsight_kafka_offsets_retention_seconds",
    "The brokers' offsets.retention.minutes in seconds: how long an empty group keeps its "
    "committed offsets after its last commit.",
    MetricType::Gauge};
constexpr MetricDef kBootstrapClusterInfo{
    "lagsight_kafka_bootstrap_cluster_info",
    "A configured bootstrap address that answered (always 1), with the cluster id it answered "
    "with.",
    MetricType::Gauge};
constexpr MetricDef kClusterMismatch{
    "lagsight_kafka_cluster_mismatch",
    "1 when the configured bootstrap addresses answer with different cluster ids (lagsight then "
    "reads no group or offset through them), else 0.",
    MetricType::Gauge};
constexpr MetricDef kTimestampFetches{
    "lagsight_kafka_record_timestamp_fetches_total",
    "Records read to learn the timestamp of a group's oldest unconsumed record (cache misses).",
    MetricType::Counter};
constexpr MetricDef kTimestampCacheEntries{
    "lagsight_kafka_record_timestamp_cache_entries",
    "Record timestamps cached by position for the lag in seconds.", MetricType::Gauge};

constexpr MetricDef kSumLag{
    "lagsight_kafka_group_sum_lag_records",
    "Kafka-side lag of the group summed over every partition it committed on with a known lag.",
    MetricType::Gauge};
constexpr MetricDef kLagSeconds{
    "lagsight_kafka_group_lag_seconds",
    "Age of the oldest record the group has not consumed; method says how it was measured "
    "(record_timestamp, interpolated, lower_bound, caught_up, or interpolated/lower_bound with "
    "_implausible_timestamp: the record's CreateTime was not believable).",
    MetricType::Gauge};
constexpr MetricDef kTopicMaxLagSeconds{"lagsight_kafka_group_topic_max_lag_seconds",
                                        "Largest lag in seconds of the group's partitions of the "
                                        "topic (lagsight_kafka_group_lag_seconds "
                                        "per partition, where exported).",
                                        MetricType::Gauge};
constexpr MetricDef kDetailSeries{
    "lagsight_kafka_group_detail_series",
    "Per-topic and per-partition group series of the cluster in this exposition, after "
    "series.granularity and series.budget.",
    MetricType::Gauge};
constexpr MetricDef kSeriesBudget{
    "lagsight_kafka_series_budget",
    "The configured series.budget: most per-topic and per-partition group series the cluster "
    "exports.",
    MetricType::Gauge};
constexpr MetricDef kBudgetCoarsened{
    "lagsight_kafka_series_budget_coarsened_pairs",
    "Group-topic pairs the series budget exports at a coarser level than configured (level: "
    "topic or group); 0 within the budget.",
    MetricType::Gauge};

const char* PositionName(analysis::CommitPosition position) {
  switch (position) {
    case analysis::CommitPosition::kBeyondLogEnd:
      return "beyond_log_end";
    case analysis::CommitPosition::kBeforeLogStart:
      return "before_log_start";
    default:
      return nullptr;
  }
}

// Series every group-topic pair has at topic level: its lag sum and its uncommitted partitions
// (the sum of its committed offsets and its largest lag in seconds come where there are some).
constexpr std::size_t kTopicSeries = 2;

config::SeriesLevel ConfiguredLevel(const config::KafkaSeriesConfig& series,
                                    const std::string& group, const std::string& topic) {
  for (const config::SeriesGranularityRule& rule : series.granularity) {
    if (rule.group && !rule.group->FullMatch(group)) continue;
    if (rule.topic && !rule.topic->FullMatch(topic)) continue;
    return rule.level;
  }
  return config::SeriesLevel::kPartition;
}

using GroupLags = std::vector<analysis::GroupLag>;

// One group-topic pair of the poll, in the order it is rendered.
struct PairPlan {
  const analysis::TopicLag* topic = nullptr;
  // The lags in seconds of its partitions (the largest goes per topic, each one per partition
  // with series.partition_lag_seconds); none when no partition of the pair has one.
  const std::vector<analysis::PartitionLagSeconds>* lag_seconds = nullptr;
  // Who holds each of its partitions (series.partition_owners; classic groups).
  PartitionOwners owners;
  config::SeriesLevel level = config::SeriesLevel::kPartition;
  std::size_t topic_series = kTopicSeries;  // what topic level exports
  std::size_t partition_series = 0;         // what partition level adds to topic level
};

std::size_t SeriesAt(const PairPlan& pair) {
  switch (pair.level) {
    case config::SeriesLevel::kPartition:
      return pair.partition_series + pair.topic_series;
    case config::SeriesLevel::kTopic:
      return pair.topic_series;
    case config::SeriesLevel::kGroup:
      return 0;
  }
  return 0;
}

// Levels for every pair: the configured ones, then, over the budget, the pairs with the most
// partition series go to topic level, and then (still over) pairs to group level, until the
// detail series fit. The group-level series (sum, max, info, ...) stay whatever the budget.
std::vector<PairPlan> PlanPairs(const std::vector<analysis::GroupLag>& lags,
                                const kafka::KafkaSnapshot& snapshot,
                                const analysis::KafkaFindings* findings,
                                const config::KafkaSeriesConfig& series, KafkaSeriesUse& use) {
  std::unordered_map<std::string_view, const analysis::GroupFindings*> group_findings;
  if (findings != nullptr) {
    for (const analysis::GroupFindings& group : findings->groups) {
      group_findings.emplace(group.group, &group);
    }
  }
  std::unordered_map<std::string_view, const kafka::ConsumerGroup*> with_members;
  if (series.partition_owners) {
    for (const kafka::ConsumerGroup& group : snapshot.groups) {
      if (!group.member_list.empty()) with_members.emplace(group.id, &group);
    }
  }
  std::vector<PairPlan> plan;
  for (const analysis::GroupLag& group : lags) {
    const auto found = group_findings.find(group.group);
    const auto described = with_members.find(group.group);
    for (const analysis::TopicLag& topic : group.topics) {
      PairPlan pair;
      pair.topic = &topic;
      if (described != with_members.end()) {
        pair.owners = OwnersOf(*described->second, topic.topic);
        pair.partition_series += pair.owners.size();
      }
      pair.level = series.granularity.empty() ? config::SeriesLevel::kPartition
                                              : ConfiguredLevel(series, group.group, topic.topic);
      if (found != group_findings.end()) {
        for (const analysis::TopicLagSeconds& seconds : found->second->lag_seconds) {
          if (seconds.topic == topic.topic) pair.lag_seconds = &seconds.partitions;
        }
      }
      if (pair.lag_seconds != nullptr && !pair.lag_seconds->empty()) ++pair.topic_series;
      if (pair.lag_seconds != nullptr && series.partition_lag_seconds) {
        pair.partition_series = pair.lag_seconds->size();
      }
      bool committed = false;
      for (const analysis::PartitionLag& partition : topic.partitions) {
        if (partition.position == analysis::CommitPosition::kNoCommit) {
          ++pair.partition_series;  // lagsight_kafka_group_partition_uncommitted
          continue;
        }
        committed = committed || partition.committed.has_value();
        if (series.partition_committed_offsets) ++pair.partition_series;
        if (partition.lag) ++pair.partition_series;
      }
      if (committed) ++pair.topic_series;
      use.wanted_series += SeriesAt(pair);
      plan.push_back(std::move(pair));
    }
  }
  use.detail_series = use.wanted_series;
  if (series.budget == 0 || use.detail_series <= series.budget) return plan;
  std::vector<PairPlan*> order;
  for (PairPlan& pair : plan) {
    if (pair.level == config::SeriesLevel::kPartition) order.push_back(&pair);
  }
  std::stable_sort(order.begin(), order.end(), [](const PairPlan* a, const PairPlan* b) {
    return a->partition_series > b->partition_series;
  });
  for (PairPlan* pair : order) {
    if (use.detail_series <= series.budget) break;
    use.detail_series -= pair->partition_series;
    pair->level = config::SeriesLevel::kTopic;
    ++use.pairs_to_topic;
  }
  for (PairPlan& pair : plan) {
    if (use.detail_series <= series.budget) break;
    if (pair.level != config::SeriesLevel::kTopic) continue;
    use.detail_series -= pair.topic_series;
    pair.level = config::SeriesLevel::kGroup;
    ++use.pairs_to_group;
  }
  return plan;
}

// A group-topic pair's own series: what its partitions add up to.
void AppendTopicSeries(const analysis::TopicLag& topic,
                       const std::vector<analysis::PartitionLagSeconds>* lag_seconds,
                       const Labels& topic_labels, FamilyBuilder& out) {
  out.Add(kTopicLag, topic_labels, static_cast<double>(topic.lag_sum));
  out.Add(kTopicUncommitted, topic_labels, topic.uncommitted_partitions);
  std::optional<double> committed_sum;
  for (const analysis::PartitionLag& partition : topic.partitions) {
    if (partition.position == analysis::CommitPosition::kNoCommit || !partition.committed) {
      continue;
    }
    committed_sum = committed_sum.value_or(0) + static_cast<double>(*partition.committed);
  }
  if (committed_sum) out.Add(kTopicCommitted, topic_labels, *committed_sum);
  if (lag_seconds == nullptr || lag_seconds->empty()) return;
  double most = lag_seconds->front().value.seconds;
  for (const analysis::PartitionLagSeconds& seconds : *lag_seconds) {
    most = std::max(most, seconds.value.seconds);
  }
  out.Add(kTopicMaxLagSeconds, topic_labels, most);
}

// The group series of the groups in [begin, end), whose pairs' plan starts at `pair`.
void AppendGroupSeries(const std::string& cluster, GroupLags::const_iterator begin,
                       GroupLags::const_iterator end, std::vector<PairPlan>::const_iterator pair,
                       const config::KafkaSeriesConfig& series, FamilyBuilder& out) {
  for (auto group_at = begin; group_at != end; ++group_at) {
    const analysis::GroupLag& group = *group_at;
    const Labels group_labels = {{"kafka_cluster", cluster}, {"group", group.group}};
    if (group.max_lag) out.Add(kMaxLag, group_labels, static_cast<double>(*group.max_lag));
    std::int64_t lag_sum = 0;
    for (const analysis::TopicLag& topic : group.topics) lag_sum += topic.lag_sum;
    if (group.max_lag) out.Add(kSumLag, group_labels, static_cast<double>(lag_sum));
    for (const analysis::TopicLag& topic : group.topics) {
      const PairPlan& planned = *pair++;
      const config::SeriesLevel level = planned.level;
      const std::vector<analysis::PartitionLagSeconds>* lag_seconds = planned.lag_seconds;
      Labels topic_labels = group_labels;
      topic_labels.emplace_back("topic", topic.topic);
      if (level != config::SeriesLevel::kGroup) {
        AppendTopicSeries(topic, lag_seconds, topic_labels, out);
      }
      const bool per_partition = level == config::SeriesLevel::kPartition;
      // A million of these series at issue 14's S3: the topic's labels are escaped once, and a
      // partition adds its number without a Labels vector of its own.
      LabelText shared;
      shared.Add("kafka_cluster", cluster).Add("group", group.group).Add("topic", topic.topic);
      // ...and the start of their lines up to the partition, written once per topic.
      const SeriesPrefix committed(kCommitted, shared, "partition");
      const SeriesPrefix lag(kLag, shared, "partition");
      PartitionNumber number;
      for (const analysis::PartitionLag& partition : topic.partitions) {
        const char* position = PositionName(partition.position);
        if (!per_partition && position == nullptr) continue;
        const std::string_view partition_label = number(partition.partition);
        if (partition.position == analysis::CommitPosition::kNoCommit) {
          out.Add(kUncommitted, shared, {{"partition", partition_label}}, 1);
          continue;
        }
        if (per_partition) {
          if (series.partition_committed_offsets) {
            out.Add(committed, partition_label, {}, static_cast<double>(*partition.committed));
          }
          if (partition.lag) out.Add(lag, partition_label, {}, static_cast<double>(*partition.lag));
        }
        // A committed offset out of range is kept at every level: it is rare, and it is the
        // one series that says which partition is broken.
        if (position != nullptr) {
          out.Add(kOutOfRange, shared, {{"partition", partition_label}, {"position", position}}, 1);
        }
      }
      if (per_partition && !planned.owners.empty()) {
        const SeriesPrefix owner(kPartitionOwner, shared, "partition");
        for (const auto& [partition, member_id] : planned.owners) {
          out.Add(owner, number(partition), {{"member_id", *member_id}}, 1);
        }
      }
      if (!per_partition || lag_seconds == nullptr || !series.partition_lag_seconds) continue;
      const SeriesPrefix seconds_prefix(kLagSeconds, shared, "partition");
      for (const analysis::PartitionLagSeconds& seconds : *lag_seconds) {
        out.Add(seconds_prefix, number(seconds.partition),
                {{"method", analysis::LagSecondsMethodName(seconds.value.method)}},
                seconds.value.seconds);
      }
    }
  }
}

// The holders of assigned partitions on topics the group has not committed on, which have no
// group-topic pair (and so no plan): a member stuck before its first commit is one the on-call
// engineer looks for. At the configured level, counted as detail series, never coarsened.
void AppendOwnersWithoutPairs(const std::string& cluster, const kafka::KafkaSnapshot& snapshot,
                              const GroupLags& lags, const config::KafkaSeriesConfig& series,
                              KafkaSeriesUse& use, FamilyBuilder& out) {
  if (!series.partition_owners) return;
  std::unordered_map<std::string_view, const analysis::GroupLag*> paired;
  for (const analysis::GroupLag& group : lags) paired.emplace(group.group, &group);
  for (const kafka::ConsumerGroup& group : snapshot.groups) {
    std::set<std::string_view> topics;
    for (const kafka::GroupMember& member : group.member_list) {
      for (const kafka::TopicPartition& tp : member.assignment) topics.insert(tp.topic);
    }
    const auto lag = paired.find(group.id);
    for (const std::string_view topic : topics) {
      const bool has_pair =
          lag != paired.end() &&
          std::any_of(lag->second->topics.begin(), lag->second->topics.end(),
                      [&](const analysis::TopicLag& t) { return t.topic == topic; });
      const std::string name(topic);
      if (has_pair || ConfiguredLevel(series, group.id, name) != config::SeriesLevel::kPartition) {
        continue;
      }
      for (const auto& [partition, member_id] : OwnersOf(group, name)) {
        out.Add(kPartitionOwner,
                {{"kafka_cluster", cluster},
                 {"group", group.id},
                 {"topic", name},
                 {"partition", std::to_string(partition)},
                 {"member_id", *member_id}},
                1);
        ++use.detail_series;
        ++use.wanted_series;
      }
    }
  }
}

// Renders at a million group-partitions took a second or more of one core
// (docs/benchmarks.md#measured), most of it deflate, while the other cores idled. With this many
// series or more, the groups are split among threads, each rendering its share into a builder of
// its own, joined in order.
constexpr std::size_t kSeriesPerThread = 250'000;
constexpr int kMostThreads = 4;

int ThreadsFor(std::size_t series) {
  cpu_set_t cpus;
  const int available = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  return static_cast<int>(std::clamp<std::size_t>(
      std::min<std::size_t>(series / kSeriesPerThread, static_cast<std::size_t>(available)), 1,
      kMostThreads));
}

void AppendGroupSeriesOnThreads(const std::string& cluster, const GroupLags& lags,
                                const std::vector<PairPlan>& plan,
                                const config::KafkaSeriesConfig& series, int threads,
                                FamilyBuilder& out) {
  const std::size_t slices = std::min(lags.size(), static_cast<std::size_t>(std::max(threads, 1)));
  if (slices <= 1) {
    AppendGroupSeries(cluster, lags.begin(), lags.end(), plan.begin(), series, out);
    return;
  }
  // Contiguous slices of groups in their order, so the joined families hold their samples in the
  // order one builder would have; each slice's plan starts after the pairs of those before.
  const auto boundary = [&](std::size_t slice) {
    return lags.begin() + static_cast<std::ptrdiff_t>(lags.size() * slice / slices);
  };
  // Declared before the futures: an exception below waits for every thread (a future of
  // std::async waits when destroyed) before their builders go.
  std::vector<FamilyBuilder> builders(slices - 1);
  std::vector<std::future<void>> rendering;
  auto pair = plan.begin();
  for (std::size_t slice = 0; slice < slices; ++slice) {
    const auto begin = boundary(slice);
    const auto end = boundary(slice + 1);
    if (slice > 0) {
      const auto render = [&cluster, &series, &builders, begin, end, pair, slice] {
        AppendGroupSeries(cluster, begin, end, pair, series, builders[slice - 1]);
      };
      try {
        rendering.push_back(std::async(std::launch::async, render));
      } catch (const std::system_error&) {
        render();  // no thread to be had: this one renders the slice
      }
    }
    for (auto group = begin; group != end; ++group) {
      pair += static_cast<std::ptrdiff_t>(group->topics.size());
    }
  }
  AppendGroupSeries(cluster, boundary(0), boundary(1), plan.begin(), series, out);
  for (std::future<void>& slice : rendering) slice.wait();
  for (std::future<void>& slice : rendering) slice.get();  // the first failure, rethrown
  for (FamilyBuilder& builder : builders) out.Append(std::move(builder));
}

}  // namespace

KafkaSeriesUse AppendKafkaMetrics(const std::string& cluster, const PollStatus& status,
                                  const analysis::KafkaPoll& poll,
                                  const analysis::KafkaFindings* findings,
                                  const config::KafkaSeriesConfig& series, FamilyBuilder& out,
                                  int threads) {
  KafkaSeriesUse use;
  const Labels cluster_labels = {{"kafka_cluster", cluster}};
  AppendPollStatus(kHealth, cluster_labels, status, out);
  if (poll.snapshot == nullptr || poll.lags == nullptr) return use;
  const kafka::KafkaSnapshot* snapshot = poll.snapshot.get();
  const std::vector<analysis::GroupLag>* lags = poll.lags.get();
  const analysis::OffsetRegressionCounts* regressions = poll.regression_counts.get();

  out.Add(kPartialErrors, cluster_labels, static_cast<double>(snapshot->partial_errors.size()));
  if (snapshot->offsets_retention_seconds) {
    out.Add(kRetention, cluster_labels, *snapshot->offsets_retention_seconds);
  }
  for (const kafka::BootstrapIdentity& bootstrap : snapshot->bootstraps) {
    if (!bootstrap.cluster_id) continue;
    out.Add(kBootstrapClusterInfo,
            {{"kafka_cluster", cluster},
             {"bootstrap", bootstrap.address},
             {"cluster_id", *bootstrap.cluster_id}},
            1);
  }
  out.Add(kClusterMismatch, cluster_labels, kafka::ClusterMismatch(*snapshot) ? 1 : 0);
  out.Add(kTimestampFetches, cluster_labels,
          static_cast<double>(snapshot->record_timestamp_fetches_total));
  out.Add(kTimestampCacheEntries, cluster_labels,
          static_cast<double>(snapshot->record_timestamp_cache_entries));
  for (const auto& [tp, offsets] : snapshot->partitions) {
    const Labels labels = {{"kafka_cluster", cluster},
                           {"topic", tp.topic},
                           {"partition", std::to_string(tp.partition)}};
    if (offsets.log_end) out.Add(kLatestOffset, labels, static_cast<double>(*offsets.log_end));
    if (offsets.log_start)
      out.Add(kEarliestOffset, labels, static_cast<double>(*offsets.log_start));
    if (offsets.last_stable) {
      out.Add(kLastStableOffset, labels, static_cast<double>(*offsets.last_stable));
    }
  }
  for (const kafka::ConsumerGroup& group : snapshot->groups) {
    out.Add(kGroupInfo,
            {{"kafka_cluster", cluster},
             {"group", group.id},
             {"state", group.state},
             {"kind", kafka::GroupKindName(group.kind)}},
            1);
    if (group.members) {
      out.Add(kGroupMembers, {{"kafka_cluster", cluster}, {"group", group.id}}, *group.members);
    }
  }
  // Share groups in the same info and members families, with their own progress families.
  AppendShareGroupSeries(cluster, *snapshot, kGroupInfo, kGroupMembers, out);
  AppendGroupMemberSeries(cluster, *snapshot, out);
  const std::vector<PairPlan> plan = PlanPairs(*lags, *snapshot, findings, series, use);
  AppendGroupSeriesOnThreads(cluster, *lags, plan, series,
                             threads > 0 ? threads : ThreadsFor(use.wanted_series), out);
  AppendOwnersWithoutPairs(cluster, *snapshot, *lags, series, use, out);
  out.Add(kDetailSeries, cluster_labels, static_cast<double>(use.detail_series));
  if (series.budget > 0) {
    out.Add(kSeriesBudget, cluster_labels, static_cast<double>(series.budget));
    out.Add(kBudgetCoarsened, {{"kafka_cluster", cluster}, {"level", "topic"}},
            static_cast<double>(use.pairs_to_topic));
    out.Add(kBudgetCoarsened, {{"kafka_cluster", cluster}, {"level", "group"}},
            static_cast<double>(use.pairs_to_group));
  }
  // Counts of an event, kept at every level: one partition's count cannot be summed back.
  if (regressions == nullptr) return use;
  for (const auto& [key, count] : *regressions) {
    out.Add(kRegressions,
            {{"kafka_cluster", cluster},
             {"group", key.first},
             {"topic", key.second.topic},
             {"partition", std::to_string(key.second.partition)}},
            static_cast<double>(count));
  }
  return use;
}

}  // namespace lagsight::metrics
