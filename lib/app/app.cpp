#include "app/app.h"

#include <spdlog/spdlog.h>

#include "app/daemon.h"
#include "app/validated_config.h"
#include "http/listen_address.h"

namespace lagsight::app {

const char* const kVersion = LAGSIGHT_VERSION;
const char* const kRevision = LAGSIGHT_REVISION;

Result<config::Config> LoadAndValidateConfig(const std::string& path) {
  auto text = config::ReadConfigFile(path);
  if (!text) return text.error();
  auto validated = Validate(*text, path);
  if (!validated) return validated.error();
  return std::move(validated).value().config;
}

int Run(const Options& options) {
  auto endpoint = http::ParseListenAddress(options.listen_address);
  if (!endpoint) {
    spdlog::error("--web.listen-address: {}", endpoint.error().message);
    return 2;
  }
  auto text = config::ReadConfigFile(options.config_file);
  if (!text) {
    spdlog::error("{}", text.error().message);
    return 1;
  }
  auto validated = Validate(*text, options.config_file, options.shard);
  if (!validated) {
    spdlog::error("invalid configuration: {}", validated.error().message);
    return 1;
  }
  if (options.shard.sharded()) {
    spdlog::info("shard {} of {}: reading only the consumer groups and Flink jobs that hash to it",
                 options.shard.index, options.shard.total);
  }
  return RunDaemon(options, *endpoint, std::move(text).value(), std::move(validated).value());
}

}  // namespace lagsight::app
