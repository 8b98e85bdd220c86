#include "kafka/rdkafka_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace lagsight::kafka {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

void LogFromLibrdkafka(const rd_kafka_t* handle, int level, const char* facility,
                       const char* message) {
  // Syslog levels: 0-3 errors, 4 warning, 5-6 notice/info, 7 debug. Connection failures are
  // reported through lagsight_kafka_up; at warn they would flood the log during an outage.
  const auto spd_level = level <= 3   ? spdlog::level::debug
                         : level == 4 ? spdlog::level::debug
                                      : spdlog::level::trace;
  spdlog::log(spd_level, "librdkafka {} {}: {}", rd_kafka_name(handle), facility, message);
}

// librdkafka ends connection errors with " (after 312ms in state AUTH_REQ, 1 identical error(s)
// suppressed)". Dropped: the poll error would differ at every poll, and a poll error that
// changes is logged again at warn, so an outage would log a warning per poll.
std::string WithoutTiming(std::string reason) {
  const std::size_t timing = reason.rfind(" (after ");
  if (timing != std::string::npos && reason.back() == ')') reason.resize(timing);
  return reason;
}

void ErrorFromLibrdkafka(rd_kafka_t* /*handle*/, int error, const char* reason, void* opaque) {
  const auto code = static_cast<rd_kafka_resp_err_t>(error);
  spdlog::debug("librdkafka error {}: {}", rd_kafka_err2name(code), reason);
  // "1/1 brokers are down" follows the error that says why; keep the why.
  if (opaque == nullptr || code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) return;
  auto& errors = *static_cast<ClientErrors*>(opaque);
  std::lock_guard lock(errors.mutex);
  errors.code = code;
  errors.reason = WithoutTiming(reason);
}

}  // namespace

int ClampMillis(milliseconds timeout) {
  return static_cast<int>(std::clamp<milliseconds::rep>(timeout.count(), 1, 3'600'000));
}

Result<std::unique_ptr<rd_kafka_conf_t, ConfDeleter>> NewClientConf(
    const std::map<std::string, std::string>& properties, const std::string& cluster_name,
    ClientErrors* errors) {
  std::unique_ptr<rd_kafka_conf_t, ConfDeleter> conf(rd_kafka_conf_new());
  char error[512];
  for (const auto& [key, value] : properties) {
    if (rd_kafka_conf_set(conf.get(), key.c_str(), value.c_str(), error, sizeof error) !=
        RD_KAFKA_CONF_OK) {
      return Error{"kafka cluster \"" + cluster_name + "\": properties." + key + ": " + error};
    }
  }
  rd_kafka_conf_set_log_cb(conf.get(), LogFromLibrdkafka);
  rd_kafka_conf_set_error_cb(conf.get(), ErrorFromLibrdkafka);
  rd_kafka_conf_set_opaque(conf.get(), errors);
  return conf;
}

void* NextToken() {
  static std::atomic<std::uintptr_t> counter{1};
  return reinterpret_cast<void*>(counter.fetch_add(1));
}

Result<Options> MakeOptions(rd_kafka_t* handle, rd_kafka_admin_op_t op, milliseconds timeout,
                            void* token) {
  Options options(rd_kafka_AdminOptions_new(handle, op));
  char error[512];
  if (rd_kafka_AdminOptions_set_request_timeout(options.get(), ClampMillis(timeout), error,
                                                sizeof error) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Error{std::string("setting the request timeout: ") + error};
  }
  rd_kafka_AdminOptions_set_opaque(options.get(), token);
  return options;
}

Result<Event> AwaitEvent(rd_kafka_queue_t* queue, void* token, milliseconds timeout) {
  // librdkafka enforces the request timeout itself; the margin lets its own (more precise)
  // timeout error arrive before ours.
  const auto deadline = SteadyClock::now() + timeout + milliseconds(500);
  while (true) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0)
      return Error{"no answer within " + std::to_string(timeout.count()) + "ms"};
    Event event(rd_kafka_queue_poll(queue, ClampMillis(left)));
    if (!event) continue;
    if (rd_kafka_event_opaque(event.get()) != token) continue;
    if (rd_kafka_event_error(event.get()) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Error{rd_kafka_event_error_string(event.get())};
    }
    return event;
  }
}

}  // namespace lagsight::kafka
