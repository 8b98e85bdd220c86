// The librdkafka client settings lagsight uses for a cluster: its own defaults, then the user's
// `properties`, then the settings lagsight must own (it observes groups, never joins them).
#pragma once

#include <map>
#include <string>

#include "config/config.h"

namespace lagsight::kafka {

// The group.id every librdkafka client of lagsight carries: librdkafka 2.0.2 needs one for
// assign() (the record reader) and, without one, crashes on a coordinator that moves
// (client_properties.cpp). No client of lagsight subscribes, fetches its offsets or commits, so no
// group of this name is ever created on the broker.
inline constexpr const char* kClientGroupId = "lagsight-never-commits";

std::map<std::string, std::string> ClientProperties(const config::KafkaClusterConfig& cluster);

}  // namespace lagsight::kafka
