// ReadShareGroups: the share groups (KIP-932) of one poll, into its KafkaSnapshot.
//
// Kept apart from the consumer groups' reading (collector.cpp): a share group has no committed
// offsets and no classic description, only a listing (state) and its progress per partition
// (DescribeShareGroupOffsets). The group filter and the shard choose share groups as they choose
// consumer groups, the topic filter their partitions. Nothing here fails the poll: a broker
// without share groups yields none, a failed read is a partial error.
#pragma once

#include <chrono>
#include <set>
#include <string>

#include "config/config.h"
#include "kafka/admin.h"
#include "kafka/snapshot.h"

namespace lagsight::kafka {

// Lists and describes the cluster's share groups into snapshot.share_groups (sorted by id), each
// call bounded by `request_timeout` and `total_timeout`; the topics they read go into
// `log_topics`, whose log offsets the poll then reads.
void ReadShareGroups(KafkaAdmin& admin, const config::KafkaClusterConfig& cluster,
                     std::chrono::milliseconds request_timeout,
                     std::chrono::milliseconds total_timeout, KafkaSnapshot& snapshot,
                     std::set<std::string>& log_topics);

}  // namespace lagsight::kafka
