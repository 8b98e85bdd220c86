// The librdkafka client settings lagsight uses for a cluster: its own defaults, then the user's
// `properties`, then the settings lagsight must own (it observes groups, never joins them).
#pragma once

#include <map>
#include <string>

#include "config/config.h"

namespace lagsight::kafka {

std::map<std::string, std::string> ClientProperties(const config::KafkaClusterConfig& cluster);

}  // namespace lagsight::kafka
