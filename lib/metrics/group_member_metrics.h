// Who holds what: the lagsight_kafka_group_member_* series of one Kafka cluster, and the holder
// of each partition of a group-topic pair for lagsight_kafka_group_partition_owner.
//
// Pure rendering of what the poll's group descriptions named: the members of classic, KIP-848,
// share and streams groups (member id, client id, host, group.instance.id) and their current
// assignments (for a streams member, the partitions of its active tasks). Simple groups have
// none, nor KIP-848, share or streams groups that could not be described (SASL, brokers before
// 4.0 / 4.1).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kafka/snapshot.h"
#include "metrics/exposition.h"

namespace lagsight::metrics {

// lagsight_kafka_group_member_info and lagsight_kafka_group_member_assigned_partitions of every
// described member (consumer groups', then share groups'): one info series a member, one count a
// member and topic it holds.
void AppendGroupMemberSeries(const std::string& cluster, const kafka::KafkaSnapshot& snapshot,
                             FamilyBuilder& out);

// A partition of one topic and the member id holding it, ascending by partition; the strings
// are the group's (valid while the snapshot lives).
using PartitionOwners = std::vector<std::pair<std::int32_t, const std::string*>>;

// The holders of `topic`'s partitions in `group`'s current assignments.
PartitionOwners OwnersOf(const kafka::ConsumerGroup& group, const std::string& topic);

// The family of the per-partition holder series (kafka_metrics.cpp renders them with the pair).
extern const MetricDef kPartitionOwner;

}  // namespace lagsight::metrics
