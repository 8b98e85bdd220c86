#include "kafka/client_properties.h"

namespace lagsight::kafka {

std::map<std::string, std::string> ClientProperties(const config::KafkaClusterConfig& cluster) {
  std::map<std::string, std::string> properties = {
      {"client.id", "lagsight"},
      // Failing fast on a dead broker keeps polls within their deadline.
      {"socket.connection.setup.timeout.ms", std::to_string(cluster.request_timeout.count())},
      {"topic.metadata.refresh.interval.ms", "60000"},
      {"log.connection.close", "false"},
      // librdkafka 2.0.2 with sparse connections (its default) reconnects to a broker that went
      // down in a tight loop while a request waits for it, without reconnect.backoff.ms:
      // measured ~4,000 connect() calls and 97 % of a core per client until the broker is back.
      // Connected to every broker up front (lagsight talks to all of them each poll anyway), the
      // client backs off as configured: 0 % measured.
      {"enable.sparse.connections", "false"},
  };
  for (const auto& [key, value] : cluster.properties) properties[key] = value;

  std::string servers;
  for (const std::string& server : cluster.bootstrap_servers) {
    servers += (servers.empty() ? "" : ",") + server;
  }
  properties["bootstrap.servers"] = servers;
  // librdkafka 2.0.2 crashes (SIGSEGV in its main thread) when a ListConsumerGroupOffsets answer
  // says NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE, as every answer does while a group's
  // coordinator moves (a broker stopping, a rolling restart): rd_kafka_handle_OffsetFetch asks the
  // client's own consumer group handle to look its coordinator up again, and a client without a
  // group.id has none, a NULL it writes through (librdkafka issue #5040, still open in 2.4.0).
  // With a group.id the client has one, and that lookup is of a group nobody uses (see
  // kClientGroupId). Reproduced on librdkafka's mock cluster: tests/unit/rdkafka_admin_test.cpp.
  properties["group.id"] = kClientGroupId;
  properties["enable.auto.commit"] = "false";
  properties["enable.auto.offset.store"] = "false";
  // Log end = high watermark, as Kafka's own consumer-groups tool reports it.
  properties["isolation.level"] = "read_uncommitted";
  return properties;
}

}  // namespace lagsight::kafka
