#include "analysis/flink_join.h"

#include <algorithm>
#include <set>

namespace lagsight::analysis {

std::string FlinkSourceName(const std::string& vertex_name) {
  constexpr std::string_view kPrefix = "Source: ";
  std::string name =
      vertex_name.rfind(kPrefix, 0) == 0 ? vertex_name.substr(kPrefix.size()) : vertex_name;
  // A chained vertex is named "Source: x -> Map -> ..."; the source is the first operator.
  if (const std::size_t arrow = name.find(" -> "); arrow != std::string::npos) name.resize(arrow);
  return name;
}

std::vector<std::string> SourceLabels(const flink::FlinkJob& job) {
  std::vector<std::string> labels;
  std::map<std::string, int> uses;
  for (const flink::SourceReader& source : job.sources) {
    labels.push_back(FlinkSourceName(source.name));
    ++uses[labels.back()];
  }
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (uses[labels[i]] > 1) labels[i] += " (" + job.sources[i].vertex_id + ")";
  }
  return labels;
}

namespace {

// escaped topic -> real topics with that escaped name
using EscapedTopicMap = std::map<std::string, std::vector<std::string>>;
EscapedTopicMap EscapedTopics(const kafka::KafkaSnapshot& kafka) {
  std::map<std::string, std::vector<std::string>> out;
  for (const std::string& topic : kafka.all_topics)
    out[flink::MetricTopicName(topic)].push_back(topic);
  return out;
}

// Committed offsets of the source, by real topic, where known.
using Resolved = std::map<kafka::TopicPartition, flink::SourceOffsets>;

// Counts into `topic` and lists in `unread` the partitions of `topic` that the cluster has and
// the source does not read; nothing while the cluster's partition count of it is not known.
void AddUnreadPartitions(const kafka::KafkaSnapshot& snapshot, const Resolved& resolved,
                         FlinkTopicJoin& topic, std::vector<FlinkUnreadPartition>& unread) {
  const auto count = snapshot.topic_partitions.find(topic.topic);
  if (count == snapshot.topic_partitions.end()) return;
  topic.unread_partitions = 0;
  for (std::int32_t p = 0; p < count->second; ++p) {
    const kafka::TopicPartition tp{topic.topic, p};
    if (resolved.contains(tp)) continue;
    ++*topic.unread_partitions;
    FlinkUnreadPartition partition{topic.topic, p, {}};
    if (const auto log = snapshot.partitions.find(tp);
        log != snapshot.partitions.end() && log->second.log_end && log->second.log_start) {
      partition.backlog = std::max<std::int64_t>(0, *log->second.log_end - *log->second.log_start);
    }
    unread.push_back(std::move(partition));
  }
}

// How well a group's committed offsets fit the job's own offsets, on every partition where the
// job has a committedOffset (the weakest partition decides):
//  1. now: equal to it, or between it and the job's position (currentOffset + 1). The range
//     matters: Flink updates committedOffset in the commit callback, which runs on the fetcher
//     thread, so under backpressure the gauge trails what the broker already holds;
//  2. at or above it now, and exactly it a moment ago;
//  3. at or above it now, and below it a moment ago (a Kafka poll slower than the job's commits
//     may never have seen the exact value).
// 0: does not fit.
int FitOf(const Resolved& resolved, const std::string& cluster, const kafka::ConsumerGroup& group,
          const CommittedEarlier& committed_earlier) {
  int fit = 1;
  for (const auto& [tp, offsets] : resolved) {
    if (!offsets.committed) continue;
    const auto committed = group.committed.find(tp);
    if (committed == group.committed.end() || committed->second < *offsets.committed) return 0;
    const std::int64_t position =
        offsets.current ? std::max(*offsets.current + 1, *offsets.committed) : *offsets.committed;
    if (committed->second <= position) continue;
    const EarlierCommit earlier = committed_earlier
                                      ? committed_earlier(cluster, group.id, tp, *offsets.committed)
                                      : EarlierCommit::kNo;
    if (earlier == EarlierCommit::kHeldExactly) {
      fit = std::max(fit, 2);
    } else if (earlier == EarlierCommit::kPassedThrough) {
      fit = 3;
    } else {
      return 0;
    }
  }
  return fit;
}

struct GroupMatch {
  std::vector<std::string> groups;  // one: the match; more: candidates at the same strength
  int fit = 0;
};

GroupMatch MatchGroups(const Resolved& resolved, const std::string& cluster,
                       const kafka::KafkaSnapshot& kafka,
                       const CommittedEarlier& committed_earlier) {
  std::size_t known = 0;
  for (const auto& [tp, offsets] : resolved) known += offsets.committed.has_value();
  if (known == 0) return {};
  std::map<int, std::vector<std::string>> by_fit;
  for (const kafka::ConsumerGroup& group : kafka.groups) {
    if (const int fit = FitOf(resolved, cluster, group, committed_earlier); fit > 0) {
      by_fit[fit].push_back(group.id);
    }
  }
  if (by_fit.empty()) return {};
  return {by_fit.begin()->second, by_fit.begin()->first};
}

// The source's parallelism and its subtasks without a split. Subtask indexes at or above the
// parallelism (metrics Flink still serves from before a rescale) are not among its subtasks.
void CountIdleSubtasks(const flink::FlinkJob& job, const flink::SourceReader& source,
                       FlinkSourceJoin& join) {
  const auto vertex =
      std::find_if(job.vertices.begin(), job.vertices.end(),
                   [&](const flink::Vertex& v) { return v.id == source.vertex_id; });
  if (vertex == job.vertices.end() || vertex->parallelism <= 0) return;
  join.parallelism = vertex->parallelism;
  const auto reading =
      std::count_if(source.subtasks_with_splits.begin(), source.subtasks_with_splits.end(),
                    [&](int subtask) { return subtask >= 0 && subtask < vertex->parallelism; });
  if (reading > 0) join.idle_subtasks = vertex->parallelism - static_cast<int>(reading);
}

// The source's offsets by real topic of `snapshot`; escaped names that fit no topic, or several,
// are left out and listed in `unresolved` (when given).
Resolved Resolve(const flink::SourceReader& source, const EscapedTopicMap& escaped_topics,
                 std::vector<UnresolvedTopic>* unresolved) {
  Resolved resolved;
  std::map<std::string, std::string> real_topic_of;
  for (const auto& [tp, offsets] : source.partitions) {
    if (!real_topic_of.contains(tp.escaped_topic)) {
      const auto candidates = escaped_topics.find(tp.escaped_topic);
      std::string real;
      if (candidates == escaped_topics.end() || candidates->second.empty()) {
        if (unresolved != nullptr) unresolved->push_back({tp.escaped_topic, "unknown"});
      } else if (candidates->second.size() > 1) {
        if (unresolved != nullptr) unresolved->push_back({tp.escaped_topic, "ambiguous"});
      } else {
        real = candidates->second.front();
      }
      real_topic_of[tp.escaped_topic] = std::move(real);
    }
    const std::string& topic = real_topic_of[tp.escaped_topic];
    if (!topic.empty()) resolved[{topic, tp.partition}] = offsets;
  }
  return resolved;
}

// With no cluster configured for a source: the only Kafka cluster there is; else the one cluster
// that has every topic the source reads; else, among those, the one where a single group holds
// the source's committed offsets. Empty when nothing tells them apart (a topic name that exists
// on two clusters, read by a job that commits nothing): guessing would pair it with the wrong
// cluster's lag.
std::string ChooseCluster(const flink::SourceReader& source,
                          const std::map<std::string, const kafka::KafkaSnapshot*>& kafka,
                          const std::map<std::string, EscapedTopicMap>& escaped_by_cluster,
                          const CommittedEarlier& committed_earlier) {
  if (kafka.size() == 1) return kafka.begin()->first;
  std::set<std::string> escaped;
  for (const auto& [tp, offsets] : source.partitions) escaped.insert(tp.escaped_topic);
  if (escaped.empty()) return {};
  std::vector<std::pair<std::string, Resolved>> having_all;
  for (const auto& [name, snapshot] : kafka) {
    if (snapshot == nullptr) continue;
    Resolved resolved = Resolve(source, escaped_by_cluster.at(name), nullptr);
    std::set<std::string> found;
    for (const auto& [tp, offsets] : resolved) found.insert(flink::MetricTopicName(tp.topic));
    if (found == escaped) having_all.emplace_back(name, std::move(resolved));
  }
  if (having_all.size() == 1) return having_all.front().first;
  std::string matched;
  for (const auto& [name, resolved] : having_all) {
    if (MatchGroups(resolved, name, *kafka.at(name), committed_earlier).groups.size() != 1)
      continue;
    if (!matched.empty()) return {};  // a group on each: still ambiguous
    matched = name;
  }
  return matched;
}

// The first mapping for the job and this source: two sources of one job may read two
// clusters, or commit to two groups.
const config::FlinkGroupMapping* MappingOf(const config::FlinkClusterConfig& flink_config,
                                           const flink::FlinkJob& job, const std::string& source) {
  for (const auto& candidate : flink_config.groups) {
    if (candidate.job.FullMatch(job.overview.name) &&
        (!candidate.source || candidate.source->FullMatch(source))) {
      return &candidate;
    }
  }
  return nullptr;
}

// The source's partitions and topics with their Flink-side lag and checkpoint gap against
// `snapshot` (null: the Kafka cluster is unknown or down), and the partitions nobody reads.
void JoinPartitions(const Resolved& resolved, const kafka::KafkaSnapshot* snapshot,
                    bool read_committed, FlinkSourceJoin& join) {
  std::map<std::string, FlinkTopicJoin> topics;
  for (const auto& [tp, offsets] : resolved) {
    FlinkPartitionJoin partition;
    partition.topic = tp.topic;
    partition.partition = tp.partition;
    partition.current = offsets.current;
    partition.committed = offsets.committed;
    if (snapshot != nullptr) {
      const auto log = snapshot->partitions.find(tp);
      if (log != snapshot->partitions.end()) partition.log_end = log->second.log_end;
    }
    // The next record the job will read: after the last one read, else where it committed.
    std::optional<std::int64_t> position;
    if (offsets.current)
      position = *offsets.current + 1;
    else if (offsets.committed)
      position = offsets.committed;
    if (position && partition.log_end) {
      const kafka::PartitionOffsets& log = snapshot->partitions.at(tp);
      partition.flink_lag = kafka::UnreadRecords(
          *snapshot, tp, *position, *kafka::ReadableEnd(log, read_committed), read_committed);
    }
    if (position && offsets.committed) partition.checkpoint_gap = *position - *offsets.committed;
    FlinkTopicJoin& topic = topics[tp.topic];
    topic.topic = tp.topic;
    topic.flink_lag_sum += partition.flink_lag.value_or(0);
    topic.checkpoint_gap_sum += partition.checkpoint_gap.value_or(0);
    join.partitions.push_back(std::move(partition));
  }
  for (auto& [name, topic] : topics) {
    if (snapshot != nullptr) AddUnreadPartitions(*snapshot, resolved, topic, join.unread);
    join.topics.push_back(std::move(topic));
  }
}

}  // namespace

std::vector<FlinkSourceJoin> JoinFlinkWithKafka(
    const config::FlinkClusterConfig& flink_config, const flink::FlinkSnapshot& flink,
    const std::map<std::string, const kafka::KafkaSnapshot*>& kafka,
    const CommittedEarlier& committed_earlier) {
  std::vector<FlinkSourceJoin> joins;
  // Built once per cluster, not per source: a poll joins every source of every job.
  std::map<std::string, EscapedTopicMap> escaped_by_cluster;
  for (const auto& [name, snapshot] : kafka) {
    if (snapshot != nullptr) escaped_by_cluster.emplace(name, EscapedTopics(*snapshot));
  }
  for (const flink::FlinkJob& job : flink.jobs) {
    const std::vector<std::string> labels = SourceLabels(job);
    for (std::size_t index = 0; index < job.sources.size(); ++index) {
      const flink::SourceReader& source = job.sources[index];
      FlinkSourceJoin join;
      join.job_id = job.overview.id;
      join.job_name = job.overview.name;
      join.read_committed = job.read_committed;
      join.source = labels[index];
      CountIdleSubtasks(job, source, join);
      const config::FlinkGroupMapping* mapping = MappingOf(flink_config, job, join.source);

      // Which Kafka cluster: the mapping's, the Flink cluster's, else the one the source's
      // topics and offsets point to (see ChooseCluster).
      std::string cluster = mapping != nullptr && !mapping->kafka_cluster.empty()
                                ? mapping->kafka_cluster
                                : flink_config.kafka_cluster;
      if (cluster.empty()) {
        cluster = ChooseCluster(source, kafka, escaped_by_cluster, committed_earlier);
      }
      const auto found_kafka = kafka.find(cluster);
      const kafka::KafkaSnapshot* snapshot =
          found_kafka == kafka.end() ? nullptr : found_kafka->second;
      join.kafka_cluster = cluster;

      // Without the Kafka cluster's topic list nothing can be mapped, and nothing is "unknown".
      const Resolved resolved =
          snapshot != nullptr ? Resolve(source, escaped_by_cluster.at(cluster), &join.unresolved)
                              : Resolved{};

      if (mapping != nullptr) {
        join.group = mapping->group;
        join.association = "configured";
      } else if (snapshot != nullptr) {
        GroupMatch match = MatchGroups(resolved, cluster, *snapshot, committed_earlier);
        if (match.groups.size() == 1) {
          join.group = match.groups.front();
          join.association = "matched";
          join.matched_by_history = match.fit > 1;
        } else {
          join.candidate_groups = std::move(match.groups);  // two or more fit: do not guess
        }
      }

      JoinPartitions(resolved, snapshot, job.read_committed, join);
      joins.push_back(std::move(join));
    }
  }
  return joins;
}

}  // namespace lagsight::analysis
