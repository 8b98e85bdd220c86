// AcceptedMembers: a group's members as a poll keeps them, whichever describe named them (the
// classic DescribeGroups, ConsumerGroupDescribe, StreamsGroupDescribe, ShareGroupDescribe).
//
// By member id, each once; their assignments sorted, each partition once, narrowed to the topics
// the filter accepts. A member or partition an answer names twice would otherwise be a duplicate
// series, and Prometheus rejects a whole scrape for one.
#pragma once

#include <vector>

#include "config/config.h"
#include "kafka/snapshot.h"

namespace lagsight::kafka {

std::vector<GroupMember> AcceptedMembers(std::vector<GroupMember> members,
                                         const config::NameFilter& topics);

}  // namespace lagsight::kafka
