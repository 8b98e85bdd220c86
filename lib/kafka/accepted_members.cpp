#include "kafka/accepted_members.h"

#include <algorithm>

namespace lagsight::kafka {

std::vector<GroupMember> AcceptedMembers(std::vector<GroupMember> members,
                                         const config::NameFilter& topics) {
  // Stable: of a member named twice, the first answer's stays.
  std::stable_sort(members.begin(), members.end(), [](const GroupMember& a, const GroupMember& b) {
    return a.member_id < b.member_id;
  });
  members.erase(std::unique(members.begin(), members.end(),
                            [](const GroupMember& a, const GroupMember& b) {
                              return a.member_id == b.member_id;
                            }),
                members.end());
  for (GroupMember& member : members) {
    std::erase_if(member.assignment,
                  [&](const TopicPartition& tp) { return !topics.Accepts(tp.topic); });
    std::sort(member.assignment.begin(), member.assignment.end());
    member.assignment.erase(std::unique(member.assignment.begin(), member.assignment.end()),
                            member.assignment.end());
  }
  return members;
}

}  // namespace lagsight::kafka
