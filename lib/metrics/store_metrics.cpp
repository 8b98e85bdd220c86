#include "metrics/store_metrics.h"

namespace lagsight::metrics {
namespace {

using prometheus::MetricType;

constexpr PollStatusMetrics kHealth{
    {"lagsight_store_up", "1 if the latest poll of the position store succeeded, else 0.",
     MetricType::Gauge},
    {"lagsight_store_poll_duration_seconds", "How long the latest poll of the position store took.",
     MetricType::Gauge},
    {"lagsight_store_last_poll_timestamp_seconds",
     "Unix time at which the latest successful poll of the position store completed.",
     MetricType::Gauge},
    {"lagsight_store_polls_total", "Polls of the position store.", MetricType::Counter},
    {"lagsight_store_poll_failures_total", "Polls of the position store that failed.",
     MetricType::Counter}};

constexpr MetricDef kPartialErrors{
    "lagsight_store_poll_partial_errors",
    "Keys or values the latest poll of the position store could not read or use (missing keys, "
    "values that are not offsets); the rest of the poll succeeded.",
    MetricType::Gauge};
constexpr MetricDef kOffset{
    "lagsight_store_offset",
    "The next offset the external store holds for the job's partition: where a restart that "
    "reads the store would start.",
    MetricType::Gauge};
constexpr MetricDef kLag{"lagsight_store_lag_records",
                         "max(0, log-end offset - stored offset): what a restart from the store "
                         "would have to read.",
                         MetricType::Gauge};
constexpr MetricDef kDrift{
    "lagsight_store_drift_records",
    "The job's position (currentOffset + 1) - the stored offset. >= 0 and about one write-back "
    "period of input when healthy; negative: the store is ahead of what the job read (a restart "
    "would skip records), or only Flink's metric is older than the store (down to -(input rate x "
    "metrics.fetcher.update-interval) for a busy job).",
    MetricType::Gauge};
constexpr MetricDef kMissing{
    "lagsight_store_missing_partitions",
    "Partitions of a topic the job reads that have no entry in the store (a restart starts them "
    "from the job's default).",
    MetricType::Gauge};
constexpr MetricDef kUnknown{
    "lagsight_store_unknown_partitions",
    "Store entries for partitions the topic does not have (a leftover of another topic or "
    "cluster).",
    MetricType::Gauge};
constexpr MetricDef kBeyondLogEnd{
    "lagsight_store_partitions_beyond_log_end",
    "Store entries above the partition's log end on the Kafka cluster lagsight polls: the store "
    "was written for another cluster, or the topic was recreated.",
    MetricType::Gauge};
constexpr MetricDef kUpdated{
    "lagsight_store_updated_timestamp_seconds",
    "Unix time of the job's latest write to the store, as its updated_at field records.",
    MetricType::Gauge};
constexpr MetricDef kAge{"lagsight_store_age_seconds",
                         "Seconds since the job's latest write to the store (updated_at field).",
                         MetricType::Gauge};

}  // namespace

void AppendStoreMetrics(const std::string& store, const PollStatus& status,
                        const stores::StoreSnapshot* snapshot,
                        const std::vector<analysis::StoredJobPositions>* joined,
                        double now_unix_seconds, FamilyBuilder& out) {
  const Labels store_labels = {{"store", store}};
  AppendPollStatus(kHealth, store_labels, status, out);
  if (snapshot == nullptr || joined == nullptr) return;
  out.Add(kPartialErrors, store_labels, static_cast<double>(snapshot->partial_errors.size()));
  for (const analysis::StoredJobPositions& job : *joined) {
    const Labels job_labels = {{"store", store},
                               {"flink_cluster", job.flink_cluster},
                               {"job_id", job.job_id},
                               {"job_name", job.job_name}};
    if (job.updated_at_unix_seconds) {
      out.Add(kUpdated, job_labels, *job.updated_at_unix_seconds);
      out.Add(kAge, job_labels, std::max(0.0, now_unix_seconds - *job.updated_at_unix_seconds));
    }
    for (const analysis::StoredPartition& partition : job.partitions) {
      Labels labels = job_labels;
      labels.emplace_back("topic", partition.topic);
      labels.emplace_back("partition", std::to_string(partition.partition));
      out.Add(kOffset, labels, static_cast<double>(partition.stored));
      if (partition.lag) out.Add(kLag, labels, static_cast<double>(*partition.lag));
      if (partition.drift) out.Add(kDrift, labels, static_cast<double>(*partition.drift));
    }
    for (const analysis::StoredTopic& topic : job.topics) {
      Labels labels = job_labels;
      labels.emplace_back("topic", topic.topic);
      out.Add(kMissing, labels, static_cast<double>(topic.missing_partitions.size()));
      out.Add(kUnknown, labels, static_cast<double>(topic.unknown_partitions.size()));
      out.Add(kBeyondLogEnd, labels, static_cast<double>(topic.beyond_log_end));
    }
  }
}

}  // namespace lagsight::metrics
