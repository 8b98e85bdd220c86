// app::ValidatedConfig: a configuration that parsed and that the clients accepted, with the
// Kafka clients that checking it created (creating a librdkafka client is where librdkafka checks
// the properties), so the reload that validated them uses them instead of connecting twice.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/result.h"
#include "config/config.h"
#include "kafka/rdkafka_admin.h"

namespace lagsight::app {

struct ValidatedConfig {
  config::Config config;
  // One per Kafka cluster that `is_running` did not already run with the same settings.
  std::map<std::string, std::unique_ptr<kafka::RdKafkaAdmin>> admins;
};

using IsRunning = std::function<bool(const config::KafkaClusterConfig&)>;

// Parses `text` (read from `path`), creates the Kafka clients and loads the Flink TLS files, so
// --config.check reports what the daemon would refuse. Every cluster gets `shard`.
Result<ValidatedConfig> Validate(
    const std::string& text, const std::string& path, const config::Shard& shard = {},
    const IsRunning& is_running = [](const config::KafkaClusterConfig&) { return false; });

}  // namespace lagsight::app
