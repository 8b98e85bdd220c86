#include "analysis/stored_positions.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace lagsight::analysis {

namespace {

// The Kafka snapshot that knows `topic`: the Flink cluster's own Kafka cluster when configured,
// else the first one that has the topic.
const kafka::KafkaSnapshot* KafkaFor(const std::string& topic, const SourcesView& sources,
                                     const std::string& preferred_cluster) {
  if (!preferred_cluster.empty()) {
    const auto cluster = sources.kafka.find(preferred_cluster);
    if (cluster == sources.kafka.end() || !cluster->second.snapshot) return nullptr;
    return cluster->second.snapshot->topic_partitions.contains(topic)
               ? cluster->second.snapshot.get()
               : nullptr;
  }
  for (const auto& [name, poll] : sources.kafka) {
    if (poll.snapshot && poll.snapshot->topic_partitions.contains(topic))
      return poll.snapshot.get();
  }
  return nullptr;
}

// An earlier reading of the store with its jobs by (Flink cluster, job id): looked up for each
// stored partition. A scan of every job instead would be quadratic in the jobs: at the read
// budget's 2,000 jobs of 10 partitions and 8 readings, 320 M comparisons a poll (arithmetic).
struct EarlierReading {
  double read_until = 0;
  std::map<std::pair<std::string, std::string>, const stores::StoredJob*> jobs;
};

std::vector<EarlierReading> IndexReadings(
    const std::vector<const stores::StoreSnapshot*>& earlier) {
  std::vector<EarlierReading> readings;
  for (const stores::StoreSnapshot* reading : earlier) {
    if (reading == nullptr) continue;
    EarlierReading& indexed = readings.emplace_back();
    indexed.read_until = reading->read_until;
    for (const stores::StoredJob& job : reading->jobs) {
      indexed.jobs.emplace(std::make_pair(job.flink_cluster, job.job_id), &job);
    }
  }
  return readings;
}

// The offset `job` held for `tp` in the newest of `earlier` (newest first) read before
// `log_end_read_from`, with when that reading ended.
std::optional<std::pair<std::int64_t, double>> StoredBefore(
    const std::vector<EarlierReading>& earlier, const stores::StoredJob& job,
    const kafka::TopicPartition& tp, double log_end_read_from) {
  for (const EarlierReading& reading : earlier) {
    if (!ReadBefore(reading.read_until, log_end_read_from)) continue;
    const auto then = reading.jobs.find({job.flink_cluster, job.job_id});
    if (then == reading.jobs.end()) return std::nullopt;
    const auto offset = then->second->offsets.find(tp);
    if (offset == then->second->offsets.end()) return std::nullopt;
    return std::make_pair(offset->second, reading.read_until);
  }
  return std::nullopt;  // no reading was taken before the log end
}

// The positions the job's Flink snapshot reports (currentOffset + 1), by escaped topic; sets
// `preferred_cluster` to the Flink cluster's own Kafka cluster, if configured.
std::map<flink::MetricTopicPartition, std::int64_t> JobPositions(const SourcesView& sources,
                                                                 const stores::StoredJob& stored,
                                                                 std::string& preferred_cluster) {
  std::map<flink::MetricTopicPartition, std::int64_t> positions;
  if (const auto flink = sources.flink.find(stored.flink_cluster); flink != sources.flink.end()) {
    if (flink->second.config) preferred_cluster = flink->second.config->kafka_cluster;
    if (flink->second.snapshot) {
      for (const flink::FlinkJob& running : flink->second.snapshot->jobs) {
        if (running.overview.id != stored.job_id) continue;
        for (const flink::SourceReader& reader : running.sources) {
          for (const auto& [tp, offsets] : reader.partitions) {
            if (offsets.current && *offsets.current >= 0 &&
                *offsets.current < std::numeric_limits<std::int64_t>::max()) {
              positions[tp] = *offsets.current + 1;
            }
          }
        }
      }
    }
  }
  return positions;
}

// The entry's lag and whether it lies beyond the log end, from `kafka`'s log end: judged on the
// entry now when the log end was read after it, else on the newest earlier reading that was.
void AgainstTheLog(StoredPartition& partition, const kafka::KafkaSnapshot& kafka,
                   const stores::StoreSnapshot& store, const std::vector<EarlierReading>& earlier,
                   const stores::StoredJob& stored) {
  const kafka::TopicPartition tp{partition.topic, partition.partition};
  const auto log = kafka.partitions.find(tp);
  if (log == kafka.partitions.end() || !log->second.log_end) return;
  const std::int64_t log_end = *log->second.log_end;
  partition.lag = std::max<std::int64_t>(0, log_end - partition.stored);
  partition.beyond_log_end =
      BeyondLogEnd(partition.stored, store.read_until, log_end, kafka.requested_at);
  if (partition.beyond_log_end) return;
  if (const auto before = StoredBefore(earlier, stored, tp, kafka.requested_at)) {
    // Beyond then is beyond now; within it then says nothing of the entry now.
    if (BeyondLogEnd(before->first, before->second, log_end, kafka.requested_at) == true) {
      partition.beyond_log_end = true;
    }
  }
}

}  // namespace

std::vector<StoredJobPositions> JoinStoredPositions(
    const stores::StoreSnapshot& store, const std::vector<const stores::StoreSnapshot*>& earlier,
    const SourcesView& sources) {
  std::vector<StoredJobPositions> out;
  const std::vector<EarlierReading> readings = IndexReadings(earlier);
  for (const stores::StoredJob& stored : store.jobs) {
    StoredJobPositions job{stored.flink_cluster,
                           stored.job_id,
                           stored.job_name,
                           stored.updated_at_unix_seconds,
                           {},
                           {}};
    // The job's own positions now (next offset = currentOffset + 1), by escaped topic.
    std::string preferred_cluster;
    const auto positions = JobPositions(sources, stored, preferred_cluster);
    std::map<std::string, std::set<std::int32_t>> stored_by_topic;
    for (const std::string& topic : stored.topics) stored_by_topic[topic];
    for (const auto& [tp, offset] : stored.offsets) {
      stored_by_topic[tp.topic].insert(tp.partition);
      StoredPartition partition{tp.topic, tp.partition, offset, {}, {}, std::nullopt};
      if (const kafka::KafkaSnapshot* kafka = KafkaFor(tp.topic, sources, preferred_cluster)) {
        AgainstTheLog(partition, *kafka, store, readings, stored);
      }
      const auto position = positions.find({flink::MetricTopicName(tp.topic), tp.partition});
      if (position != positions.end()) partition.drift = position->second - offset;
      job.partitions.push_back(std::move(partition));
    }
    for (const auto& [topic, partitions] : stored_by_topic) {
      const kafka::KafkaSnapshot* kafka = KafkaFor(topic, sources, preferred_cluster);
      if (!kafka) continue;
      const std::int32_t count = kafka->topic_partitions.at(topic);
      StoredTopic coverage{topic, {}, {}};
      coverage.unread = std::find(stored.unread_topics.begin(), stored.unread_topics.end(),
                                  topic) != stored.unread_topics.end();
      for (std::int32_t p = 0; p < count && !coverage.unread; ++p) {
        if (!partitions.contains(p)) coverage.missing_partitions.push_back(p);
      }
      for (std::int32_t p : partitions) {
        if (p >= count) coverage.unknown_partitions.push_back(p);
      }
      for (const StoredPartition& partition : job.partitions) {
        if (partition.topic == topic && partition.beyond_log_end == true) ++coverage.beyond_log_end;
      }
      job.topics.push_back(std::move(coverage));
    }
    out.push_back(std::move(job));
  }
  return out;
}

void StoreReadings::Keep(Reading reading) {
  if (latest_) {
    earlier_.insert(earlier_.begin(), latest_);
    if (earlier_.size() > kEarlierReadingsKept) earlier_.pop_back();
  }
  latest_ = std::move(reading);
}

std::vector<StoredJobPositions> StoreReadings::Join(const SourcesView& sources) const {
  if (!latest_) return {};
  std::vector<const stores::StoreSnapshot*> readings;
  for (const Reading& reading : earlier_) readings.push_back(reading.get());
  return JoinStoredPositions(*latest_, readings, sources);
}

}  // namespace lagsight::analysis
