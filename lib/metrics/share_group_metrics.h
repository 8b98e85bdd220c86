// The lagsight_kafka_share_group_* series of one Kafka cluster: how far each share group (KIP-932)
// has acknowledged every partition it reads.
//
// Pure rendering of the poll's share groups. A share group has no committed position, so none of
// the consumer groups' offset and lag families speak of it: its start offset (the first record not
// yet acknowledged) and its lag, the coordinator's count of records not yet acknowledged where
// the broker computes it (source="coordinator", Kafka 4.3+), else log end - start offset
// (source="upper_bound": records past the start offset may be acknowledged already).
#pragma once

#include <string>

#include "kafka/snapshot.h"
#include "metrics/exposition.h"

namespace lagsight::metrics {

// The share groups of `snapshot`: each in `group_info` (kind "share", its state) and, where it
// was described, in `group_members`, the consumer groups' families (kafka_metrics.cpp); then the
// per-partition share group series (every partition, no series budget: share groups are few and
// their partitions are what an operator asks about).
void AppendShareGroupSeries(const std::string& cluster, const kafka::KafkaSnapshot& snapshot,
                            const MetricDef& group_info, const MetricDef& group_members,
                            FamilyBuilder& out);

}  // namespace lagsight::metrics
