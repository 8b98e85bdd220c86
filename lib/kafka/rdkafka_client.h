// The librdkafka plumbing lagsight's Kafka clients share (RdKafkaAdmin and its
// RecordTimestampReader): RAII owners of librdkafka objects, creating a consumer-type client whose
// log and error callbacks report through lagsight, and sending an admin request and waiting for
// its answer on a queue.
//
// Internal to lib/kafka: nothing outside the librdkafka adapters needs librdkafka types. Every
// wait is bounded by the timeout it is given; no function here keeps state beyond the objects it
// returns, except the request tokens, which are unique across threads.
#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/result.h"

namespace lagsight::kafka {

struct RdKafkaDeleter {
  void operator()(rd_kafka_t* handle) const { rd_kafka_destroy(handle); }
  void operator()(rd_kafka_queue_t* queue) const { rd_kafka_queue_destroy(queue); }
};

struct EventDeleter {
  void operator()(rd_kafka_event_t* event) const { rd_kafka_event_destroy(event); }
};
struct OptionsDeleter {
  void operator()(rd_kafka_AdminOptions_t* options) const {
    rd_kafka_AdminOptions_destroy(options);
  }
};
struct PartitionListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* list) const {
    rd_kafka_topic_partition_list_destroy(list);
  }
};
struct ConfDeleter {
  void operator()(rd_kafka_conf_t* conf) const { rd_kafka_conf_destroy(conf); }
};
using Event = std::unique_ptr<rd_kafka_event_t, EventDeleter>;
using Options = std::unique_ptr<rd_kafka_AdminOptions_t, OptionsDeleter>;
using PartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionListDeleter>;

// The latest connection-level error librdkafka reported for a client (a wrong password, an
// untrusted certificate), kept until a poll succeeds: a failed request itself only says
// "timed out". Written by the error callback, which librdkafka runs inside rd_kafka_poll.
struct ClientErrors {
  std::mutex mutex;
  rd_kafka_resp_err_t code = RD_KAFKA_RESP_ERR_NO_ERROR;
  std::string reason;
};

// `timeout` as the int milliseconds librdkafka takes: at least 1 (0 would not wait, a negative
// value would wait forever), at most an hour.
int ClampMillis(std::chrono::milliseconds timeout);

// A client configuration with `properties` and lagsight's log and error callbacks; fails naming
// the property librdkafka rejects. `errors`, when given, receives the client's connection-level
// errors.
Result<std::unique_ptr<rd_kafka_conf_t, ConfDeleter>> NewClientConf(
    const std::map<std::string, std::string>& properties, const std::string& cluster_name,
    ClientErrors* errors);

// A consumer-type client with `properties`; fails naming the property librdkafka rejects.
// `errors`, when given, receives the client's connection-level errors. `Deleter` says how the
// client is destroyed.
template <typename Deleter>
Result<std::unique_ptr<rd_kafka_t, Deleter>> NewClient(
    const std::map<std::string, std::string>& properties, const std::string& cluster_name,
    ClientErrors* errors = nullptr) {
  auto conf = NewClientConf(properties, cluster_name, errors);
  if (!conf) return conf.error();
  char error[512];
  std::unique_ptr<rd_kafka_t, Deleter> handle(
      rd_kafka_new(RD_KAFKA_CONSUMER, conf->get(), error, sizeof error));
  if (!handle) return Error{"kafka cluster \"" + cluster_name + "\": " + error};
  // On success rd_kafka_new owns conf; on failure it is still ours to destroy.
  static_cast<void>(conf->release());
  return handle;
}

// Each request carries a distinct token as its opaque, so an answer that arrives after its
// request timed out (and lands in the shared queue later) is recognised and dropped.
void* NextToken();

// Options for an admin request of kind `op`, bounded by `timeout` and tagged with `token`.
Result<Options> MakeOptions(rd_kafka_t* handle, rd_kafka_admin_op_t op,
                            std::chrono::milliseconds timeout, void* token);

// Waits for the answer to the request tagged `token`; stale answers are discarded.
Result<Event> AwaitEvent(rd_kafka_queue_t* queue, void* token, std::chrono::milliseconds timeout);

}  // namespace lagsight::kafka
