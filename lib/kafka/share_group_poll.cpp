#include "kafka/share_group_poll.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "kafka/accepted_members.h"

namespace lagsight::kafka {

void ReadShareGroups(KafkaAdmin& admin, const config::KafkaClusterConfig& cluster,
                     std::chrono::milliseconds request_timeout,
                     std::chrono::milliseconds total_timeout, KafkaSnapshot& snapshot,
                     std::set<std::string>& log_topics) {
  ShareGroupListings listed = admin.ListShareGroups(request_timeout, total_timeout);
  if (!listed.failure.empty()) {
    snapshot.partial_errors.push_back("listing share groups: " + listed.failure);
  }
  std::map<std::string, ShareGroup> groups;  // by id: sorted
  std::vector<std::string> ids;
  for (GroupListing& listing : listed.groups) {
    // Another shard's group is not read at all, as with consumer groups.
    if (!cluster.groups.Accepts(listing.id) || !cluster.shard.Owns(listing.id)) continue;
    ShareGroup& group = groups[listing.id];
    if (!group.id.empty()) continue;  // listed twice
    group.id = listing.id;
    group.state = std::move(listing.state);
    group.offsets_known = false;  // until its progress is answered
  }
  for (const auto& [id, group] : groups) ids.push_back(id);
  if (!ids.empty()) {
    ShareGroupProgress progress =
        admin.DescribeShareGroupOffsets(ids, request_timeout, total_timeout);
    if (!progress.failure.empty()) {
      snapshot.partial_errors.push_back("reading share group offsets: " + progress.failure);
    }
    for (std::string& error : progress.errors) snapshot.partial_errors.push_back(std::move(error));
    for (ShareGroup& answered : progress.groups) {
      const auto found = groups.find(answered.id);
      if (found == groups.end() || found->second.offsets_known) continue;  // not asked, or twice
      ShareGroup& group = found->second;
      group.offsets_known = true;
      group.partitions = std::move(answered.partitions);
      std::erase_if(group.partitions, [&](const SharePartition& partition) {
        return !cluster.topics.Accepts(partition.partition.topic);
      });
      for (const SharePartition& partition : group.partitions) {
        log_topics.insert(partition.partition.topic);
      }
      group.members = answered.members;
      group.member_list = AcceptedMembers(std::move(answered.member_list), cluster.topics);
    }
  }
  snapshot.share_groups.reserve(groups.size());
  for (auto& [id, group] : groups) snapshot.share_groups.push_back(std::move(group));
}

}  // namespace lagsight::kafka
