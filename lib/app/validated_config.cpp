#include "app/validated_config.h"

#include <boost/asio/io_context.hpp>

#include "flink/client_options.h"
#include "flink/http_client.h"

namespace lagsight::app {

Result<ValidatedConfig> Validate(const std::string& text, const std::string& path,
                                 const config::Shard& shard, const IsRunning& is_running) {
  auto parsed = config::ParseConfig(text, path, config::ProcessEnvironment());
  if (!parsed) return parsed.error();
  config::ApplyShard(shard, *parsed);
  ValidatedConfig validated{std::move(parsed).value(), {}};
  for (const config::KafkaClusterConfig& cluster : validated.config.kafka) {
    if (is_running(cluster)) continue;
    auto admin = kafka::RdKafkaAdmin::Create(cluster);
    if (!admin) return Error{path + ": " + admin.error().message};
    validated.admins[cluster.name] = std::move(admin).value();
  }
  // The TLS files are loaded here, so --config.check reports an unreadable CA or key.
  boost::asio::io_context scratch;
  for (const config::FlinkClusterConfig& cluster : validated.config.flink) {
    auto client = flink::HttpClient::Create(scratch.get_executor(), flink::ClientOptions(cluster));
    if (!client)
      return Error{path + ": flink cluster \"" + cluster.name + "\": " + client.error().message};
  }
  return validated;
}

}  // namespace lagsight::app
