// RdKafkaAdmin's record-timestamp reads (kafka/record_timestamp_reader.h) against librdkafka's
// own mock cluster: several positions on one partition are answered in one pass from the lowest
// up, reading through close ones and seeking far ones, and a position at the log end is
// reported as having no record yet. The real-broker evidence is in
// tests/integration (lag in seconds).
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "kafka/rdkafka_admin.h"

namespace {

using namespace std::chrono_literals;
using lagsight::kafka::RecordKey;
using lagsight::kafka::RecordTimestamp;

struct Deleter {
  void operator()(rd_kafka_t* handle) const { rd_kafka_destroy(handle); }
  void operator()(rd_kafka_mock_cluster_t* cluster) const {
    rd_kafka_mock_cluster_destroy(cluster);
  }
};

// A client of `type` with `properties`, failing the test when librdkafka refuses them.
std::unique_ptr<rd_kafka_t, Deleter> Client(rd_kafka_type_t type,
                                            const std::map<std::string, std::string>& properties) {
  char error[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (const auto& [key, value] : properties) {
    REQUIRE(rd_kafka_conf_set(conf, key.c_str(), value.c_str(), error, sizeof error) ==
            RD_KAFKA_CONF_OK);
  }
  std::unique_ptr<rd_kafka_t, Deleter> handle(rd_kafka_new(type, conf, error, sizeof error));
  REQUIRE(handle);
  return handle;
}

// Writes one record with CreateTime `timestamp_ms` to orders/0 and waits until it is written.
void Produce(rd_kafka_t* producer, std::int64_t timestamp_ms) {
  REQUIRE(rd_kafka_producev(
              producer, RD_KAFKA_V_TOPIC("orders"), RD_KAFKA_V_PARTITION(0),
              RD_KAFKA_V_VALUE(const_cast<char*>("x"), 1), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
              RD_KAFKA_V_TIMESTAMP(timestamp_ms), RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR_NO_ERROR);
  REQUIRE(rd_kafka_flush(producer, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR);
}

// librdkafka's mock cluster of one broker with the topic "orders" of one partition.
struct MockOrders {
  MockOrders() {
    REQUIRE(cluster);
    REQUIRE(rd_kafka_mock_topic_create(cluster.get(), "orders", 1, 1) ==
            RD_KAFKA_RESP_ERR_NO_ERROR);
    bootstraps = rd_kafka_mock_cluster_bootstraps(cluster.get());
  }
  // The host needs no brokers of its own; quiet its warning that it has none.
  std::unique_ptr<rd_kafka_t, Deleter> host = Client(RD_KAFKA_PRODUCER, {{"log_level", "3"}});
  std::unique_ptr<rd_kafka_mock_cluster_t, Deleter> cluster{
      rd_kafka_mock_cluster_new(host.get(), 1)};
  std::string bootstraps;
};

}  // namespace

TEST_CASE("rdkafka admin: record timestamps are read at the positions asked, in one pass",
          "[kafka]") {
  const MockOrders mock;
  const std::string& bootstraps = mock.bootstraps;
  {
    auto producer = Client(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstraps}});
    for (const std::int64_t timestamp : {1'000'000, 2'000'000, 3'000'000}) {
      Produce(producer.get(), timestamp);
    }
  }

  lagsight::config::KafkaClusterConfig config;
  config.name = "mock";
  config.bootstrap_servers = {bootstraps};
  auto admin = lagsight::kafka::RdKafkaAdmin::Create(config);
  REQUIRE(admin.ok());
  const lagsight::kafka::TopicPartition orders{"orders", 0};
  const auto fetched = (*admin)->RecordTimestamps(
      {{orders, 2, false}, {orders, 0, false}, {orders, 3, false}}, 5s, 10s);
  REQUIRE(fetched.ok());
  CHECK(fetched->errors.empty());
  CHECK(fetched->timestamps ==
        std::map<RecordKey, RecordTimestamp>{{{orders, 0, false}, {1'000'000, false}},
                                             {{orders, 2, false}, {3'000'000, false}}});
  // Offset 3 is the log end: nothing written there yet, the reader stopped at 3.
  CHECK(fetched->markers_only == std::map<RecordKey, std::int64_t>{{{orders, 3, false}, 3}});

  CHECK((*admin)->RecordTimestamps({}, 1s, 1s)->timestamps.empty());
}

TEST_CASE("rdkafka admin: far positions wait for a round, close ones are read through", "[kafka]") {
  const MockOrders mock;
  const std::string& bootstraps = mock.bootstraps;
  constexpr std::int64_t kRecords = 5000;
  {
    auto producer = Client(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstraps}});
    for (std::int64_t offset = 0; offset < kRecords; ++offset) {
      REQUIRE(rd_kafka_producev(producer.get(), RD_KAFKA_V_TOPIC("orders"), RD_KAFKA_V_PARTITION(0),
                                RD_KAFKA_V_VALUE(const_cast<char*>("x"), 1),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                RD_KAFKA_V_TIMESTAMP(1'000'000 + offset),
                                RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR_NO_ERROR);
      rd_kafka_poll(producer.get(), 0);
    }
    REQUIRE(rd_kafka_flush(producer.get(), 10000) == RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  lagsight::config::KafkaClusterConfig config;
  config.name = "mock";
  config.bootstrap_servers = {bootstraps};
  auto admin = lagsight::kafka::RdKafkaAdmin::Create(config);
  REQUIRE(admin.ok());
  const lagsight::kafka::TopicPartition orders{"orders", 0};
  // 10 and 11 are read through from 3; 4,200 lies far ahead (the next round); 6,000 is beyond the
  // log end: the broker says so, and the reader (auto.offset.reset=error) reports it.
  std::vector<RecordKey> asked;
  for (const std::int64_t offset : {3, 10, 11, 4'200, 4'999, 6'000}) {
    asked.push_back({orders, offset, false});
  }
  // Timeouts generous for a loaded machine: the first fetch waits for the connection.
  const auto fetched = (*admin)->RecordTimestamps(asked, 5s, 20s);
  REQUIRE(fetched.ok());
  std::map<RecordKey, RecordTimestamp> expected;
  for (const std::int64_t offset : {3, 10, 11, 4'200, 4'999}) {
    expected[{orders, offset, false}] = {1'000'000 + offset, false};
  }
  CHECK(fetched->timestamps == expected);
  REQUIRE(fetched->errors.size() == 1);
  CHECK_THAT(fetched->errors[0],
             Catch::StartsWith("orders/0@6000: ") && Catch::Contains("Offset out of range"));

  // The next poll's read, on the same partition the last one finished (and paused): answered.
  const auto again =
      (*admin)->RecordTimestamps({{orders, 100, false}, {orders, 4'500, false}}, 5s, 20s);
  REQUIRE(again.ok());
  CHECK(again->errors.empty());
  CHECK(again->timestamps ==
        std::map<RecordKey, RecordTimestamp>{{{orders, 100, false}, {1'000'100, false}},
                                             {{orders, 4'500, false}, {1'004'500, false}}});
}
