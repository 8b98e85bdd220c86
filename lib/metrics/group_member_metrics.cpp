#include "metrics/group_member_metrics.h"

#include <algorithm>
#include <map>

namespace lagsight::metrics {
namespace {

using prometheus::MetricType;

constexpr MetricDef kMemberInfo{
    "lagsight_kafka_group_member_info",
    "1 for each member of a classic or KIP-848 consumer group or of a streams group, as its "
    "description names it: member id, client id, host and group.instance.id (empty when unset).",
    MetricType::Gauge};
constexpr MetricDef kMemberAssigned{"lagsight_kafka_group_member_assigned_partitions",
                                    "Partitions of the topic in the member's current assignment.",
                                    MetricType::Gauge};

}  // namespace

const MetricDef kPartitionOwner{
    "lagsight_kafka_group_partition_owner",
    "1 for the member that holds the partition in the group's current assignment (join "
    "lagsight_kafka_group_member_info on member_id for its client id and host). Opt-in: "
    "series.partition_owners.",
    MetricType::Gauge};

namespace {

// One group's members: an info series each, a count each member and topic it holds.
void AppendMembers(const std::string& cluster, const std::string& group,
                   const std::vector<kafka::GroupMember>& members, FamilyBuilder& out) {
  for (const kafka::GroupMember& member : members) {
    out.Add(kMemberInfo,
            {{"kafka_cluster", cluster},
             {"group", group},
             {"member_id", member.member_id},
             {"client_id", member.client_id},
             {"host", member.host},
             {"group_instance_id", member.group_instance_id}},
            1);
    std::map<std::string_view, int> per_topic;
    for (const kafka::TopicPartition& tp : member.assignment) ++per_topic[tp.topic];
    for (const auto& [topic, count] : per_topic) {
      out.Add(kMemberAssigned,
              {{"kafka_cluster", cluster},
               {"group", group},
               {"member_id", member.member_id},
               {"topic", std::string(topic)}},
              count);
    }
  }
}

}  // namespace

void AppendGroupMemberSeries(const std::string& cluster, const kafka::KafkaSnapshot& snapshot,
                             FamilyBuilder& out) {
  for (const kafka::ConsumerGroup& group : snapshot.groups) {
    AppendMembers(cluster, group.id, group.member_list, out);
  }
  // Share groups' members likewise (ShareGroupDescribe): several may hold one partition.
  for (const kafka::ShareGroup& group : snapshot.share_groups) {
    AppendMembers(cluster, group.id, group.member_list, out);
  }
}

PartitionOwners OwnersOf(const kafka::ConsumerGroup& group, const std::string& topic) {
  PartitionOwners owners;
  for (const kafka::GroupMember& member : group.member_list) {
    for (const kafka::TopicPartition& tp : member.assignment) {
      if (tp.topic == topic) owners.emplace_back(tp.partition, &member.member_id);
    }
  }
  std::sort(owners.begin(), owners.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return owners;
}

}  // namespace lagsight::metrics
