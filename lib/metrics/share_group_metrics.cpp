#include "metrics/share_group_metrics.h"

#include <algorithm>
#include <optional>

namespace lagsight::metrics {
namespace {

using prometheus::MetricType;

constexpr MetricDef kStartOffset{
    "lagsight_kafka_share_group_start_offset",
    "Share-partition start offset of the share group: the first record it has not yet "
    "acknowledged (records past it may be acknowledged already).",
    MetricType::Gauge};
constexpr MetricDef kShareLag{
    "lagsight_kafka_share_group_lag_records",
    "Records of the partition the share group has not yet acknowledged: the coordinator's count "
    "(source=\"coordinator\", Kafka 4.3+), else log-end offset - start offset "
    "(source=\"upper_bound\").",
    MetricType::Gauge};

}  // namespace

void AppendShareGroupSeries(const std::string& cluster, const kafka::KafkaSnapshot& snapshot,
                            const MetricDef& group_info, const MetricDef& group_members,
                            FamilyBuilder& out) {
  for (const kafka::ShareGroup& group : snapshot.share_groups) {
    out.Add(group_info,
            {{"kafka_cluster", cluster},
             {"group", group.id},
             {"state", group.state},
             {"kind", "share"}},
            1);
    if (group.members) {
      out.Add(group_members, {{"kafka_cluster", cluster}, {"group", group.id}}, *group.members);
    }
    for (const kafka::SharePartition& partition : group.partitions) {
      const std::string number = std::to_string(partition.partition.partition);
      if (partition.start_offset >= 0) {
        out.Add(kStartOffset,
                {{"kafka_cluster", cluster},
                 {"group", group.id},
                 {"topic", partition.partition.topic},
                 {"partition", number}},
                static_cast<double>(partition.start_offset));
      }
      if (const auto lag = kafka::ShareLagOf(partition, snapshot)) {
        out.Add(kShareLag,
                {{"kafka_cluster", cluster},
                 {"group", group.id},
                 {"topic", partition.partition.topic},
                 {"partition", number},
                 {"source", lag->upper_bound ? "upper_bound" : "coordinator"}},
                static_cast<double>(lag->records));
      }
    }
  }
}

}  // namespace lagsight::metrics
