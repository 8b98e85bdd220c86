#include "kafka/rdkafka_admin.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <deque>
#include <future>
#include <sstream>

#include "kafka/client_properties.h"
#include "kafka/offset_fetch_client.h"

namespace lagsight::kafka {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

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
struct MetadataDeleter {
  void operator()(const rd_kafka_metadata_t* metadata) const {
    rd_kafka_metadata_destroy(metadata);
  }
};
struct ConfigResourceDeleter {
  void operator()(rd_kafka_ConfigResource_t* resource) const {
    rd_kafka_ConfigResource_destroy(resource);
  }
};
struct MessageDeleter {
  void operator()(rd_kafka_message_t* message) const { rd_kafka_message_destroy(message); }
};
struct OffsetsRequestDeleter {
  void operator()(rd_kafka_ListConsumerGroupOffsets_t* request) const {
    rd_kafka_ListConsumerGroupOffsets_destroy(request);
  }
};
using Event = std::unique_ptr<rd_kafka_event_t, EventDeleter>;

// The record reader's group.id. It only exists because librdkafka 2.0.2's assign() demands one;
// the reader never subscribes or commits, so no such group is ever created on the broker.
constexpr const char* kRecordReaderGroup = "lagsight-record-timestamps-never-commits";
using Options = std::unique_ptr<rd_kafka_AdminOptions_t, OptionsDeleter>;

// librdkafka's names ("PreparingRebalance") in the snake case of Prometheus label values.
std::string SnakeCase(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (!out.empty()) out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

std::string StateName(rd_kafka_consumer_group_state_t state) {
  return SnakeCase(rd_kafka_consumer_group_state_name(state));
}

int ClampMillis(milliseconds timeout) {
  return static_cast<int>(std::clamp<milliseconds::rep>(timeout.count(), 1, 3'600'000));
}

// Each request carries a distinct token as its opaque, so an answer that arrives after its
// request timed out (and lands in the shared queue later) is recognised and dropped.
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

// Waits for the answer to the request tagged `token`; stale answers are discarded.
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

// librdkafka before 2.6.1 builds a SCRAM client-final message that Kafka 4 brokers refuse as
// invalid credentials (librdkafka PR #4895; seen with Debian 12's 2.0.2 against Kafka 4.1.1,
// while Kafka 3.9.1 accepts it): the one case where a right password reads as a wrong one.
bool ScramRefusedByKafka4(const std::map<std::string, std::string>& properties) {
  constexpr int kScramFixedVersion = 0x020601ff;  // 2.6.1
  if (rd_kafka_version() >= kScramFixedVersion) return false;
  for (const char* key : {"sasl.mechanism", "sasl.mechanisms"}) {
    const auto found = properties.find(key);
    if (found == properties.end()) continue;
    std::string mechanism = found->second;
    for (char& c : mechanism) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (mechanism.rfind("SCRAM-", 0) == 0) return true;
  }
  return false;
}

// A consumer-type client with `properties`; fails naming the property librdkafka rejects.
// `errors`, when given, receives the client's connection-level errors.
template <typename Deleter>
Result<std::unique_ptr<rd_kafka_t, Deleter>> NewClient(
    const std::map<std::string, std::string>& properties, const std::string& cluster_name,
    ClientErrors* errors = nullptr) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char error[512];
  for (const auto& [key, value] : properties) {
    if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), error, sizeof error) !=
        RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return Error{"kafka cluster \"" + cluster_name + "\": properties." + key + ": " + error};
    }
  }
  rd_kafka_conf_set_log_cb(conf, LogFromLibrdkafka);
  rd_kafka_conf_set_error_cb(conf, ErrorFromLibrdkafka);
  rd_kafka_conf_set_opaque(conf, errors);
  // On success rd_kafka_new owns conf; on failure it is still ours to destroy.
  std::unique_ptr<rd_kafka_t, Deleter> handle(
      rd_kafka_new(RD_KAFKA_CONSUMER, conf, error, sizeof error));
  if (!handle) {
    rd_kafka_conf_destroy(conf);
    return Error{"kafka cluster \"" + cluster_name + "\": " + error};
  }
  return handle;
}

// Partition count of every topic, from a metadata request of `handle`.
Result<std::map<std::string, std::int32_t>> PartitionCounts(rd_kafka_t* handle,
                                                            milliseconds timeout) {
  const rd_kafka_metadata_t* raw = nullptr;
  const rd_kafka_resp_err_t error =
      rd_kafka_metadata(handle, 1 /* all topics */, nullptr, &raw, ClampMillis(timeout));
  if (error != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Error{std::string("reading topic metadata: ") + rd_kafka_err2str(error)};
  }
  std::unique_ptr<const rd_kafka_metadata_t, MetadataDeleter> metadata(raw);
  std::map<std::string, std::int32_t> counts;
  for (int i = 0; i < metadata->topic_cnt; ++i) {
    const rd_kafka_metadata_topic_t& topic = metadata->topics[i];
    if (topic.err != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
    counts[topic.topic] = topic.partition_cnt;
  }
  return counts;
}

// The cluster id `handle` learnt from its latest metadata answer, without waiting for one.
std::optional<std::string> CachedClusterId(rd_kafka_t* handle) {
  char* id = rd_kafka_clusterid(handle, 0);
  if (id == nullptr) return std::nullopt;
  std::string copy(id);
  rd_kafka_mem_free(handle, id);
  return copy;
}

}  // namespace

Result<std::unique_ptr<RdKafkaAdmin>> RdKafkaAdmin::Create(
    const config::KafkaClusterConfig& cluster) {
  std::map<std::string, std::string> properties = ClientProperties(cluster);
  std::vector<BootstrapClient> bootstrap_clients;
  if (cluster.bootstrap_servers.size() > 1) {
    for (const std::string& address : cluster.bootstrap_servers) {
      std::map<std::string, std::string> alone = properties;
      alone["bootstrap.servers"] = address;
      auto errors = std::make_unique<ClientErrors>();
      auto client = NewClient<RdKafkaDeleter>(alone, cluster.name, errors.get());
      if (!client) return client.error();
      bootstrap_clients.push_back({address, std::move(errors), std::move(client).value()});
    }
  }
  std::unique_ptr<RdKafkaAdmin> admin(
      new RdKafkaAdmin(cluster.name, std::move(properties), std::move(bootstrap_clients)));
  admin->batched_offset_fetch_ = cluster.batched_offset_fetch;
  if (admin->bootstrap_clients_.empty()) {
    // One address: nothing to tell apart, the main client is the only one.
    if (auto failed = admin->OpenClusterClients(admin->properties_["bootstrap.servers"])) {
      return *failed;
    }
  }
  return admin;
}

RdKafkaAdmin::RdKafkaAdmin(std::string cluster_name, std::map<std::string, std::string> properties,
                           std::vector<BootstrapClient> bootstrap_clients)
    : cluster_name_(std::move(cluster_name)),
      properties_(std::move(properties)),
      client_errors_(std::make_unique<ClientErrors>()),
      closed_reason_("the bootstrap addresses have not been asked which cluster they belong to"),
      bootstrap_clients_(std::move(bootstrap_clients)) {}

RdKafkaAdmin::~RdKafkaAdmin() = default;

std::optional<Error> RdKafkaAdmin::OpenClusterClients(const std::string& bootstrap_servers) {
  std::map<std::string, std::string> properties = properties_;
  properties["bootstrap.servers"] = bootstrap_servers;
  auto handle = NewClient<RdKafkaDeleter>(properties, cluster_name_, client_errors_.get());
  if (!handle) return handle.error();
  properties_ = std::move(properties);
  handle_ = std::move(handle).value();
  queue_.reset(rd_kafka_queue_new(handle_.get()));
  closed_reason_.clear();
  if (batched_offset_fetch_) {
    auto security = BatchedOffsetFetcher::Security(properties_);
    if (!security) {
      spdlog::info("kafka cluster {}: committed offsets read one request per group: {}",
                   cluster_name_, security.error().message);
    } else {
      BatchedOffsetFetcherOptions options;
      options.tls = std::move(security).value();
      // From properties_, not the argument: that may refer into the properties just replaced.
      std::stringstream list(properties_["bootstrap.servers"]);
      for (std::string server; std::getline(list, server, ',');) {
        if (!server.empty()) options.bootstrap_servers.push_back(server);
      }
      options.client_id = properties_["client.id"];
      batched_ = std::make_unique<BatchedOffsetFetcher>(std::move(options));
    }
  }
  return std::nullopt;
}

void RdKafkaAdmin::CloseClusterClients(std::string reason) {
  batched_.reset();
  record_reader_.reset();
  committed_reader_.reset();
  queue_.reset();
  handle_.reset();
  opened_for_cluster_id_.reset();
  closed_reason_ = std::move(reason);
}

void RdKafkaAdmin::FollowBootstraps(const std::vector<BootstrapIdentity>& identities) {
  std::optional<std::string> agreed;
  std::string answered;  // the addresses that answered, comma-separated
  std::string not_answered;
  for (const BootstrapIdentity& identity : identities) {
    if (!identity.cluster_id) {
      not_answered += (not_answered.empty() ? "" : "; ") + identity.address + ": " + identity.error;
      continue;
    }
    if (agreed && *agreed != *identity.cluster_id) {
      const std::string ids = AnsweredClusterIds(identities);
      if (handle_) {
        spdlog::warn(
            "kafka cluster \"{}\": the bootstrap addresses name different clusters ({}); "
            "closing the client that read through all of them",
            cluster_name_, ids);
      }
      CloseClusterClients("not read: the bootstrap addresses name different clusters (" + ids +
                          "), and one client must not talk to two clusters");
      return;
    }
    agreed = identity.cluster_id;
    answered += (answered.empty() ? "" : ",") + identity.address;
  }
  if (!agreed) {
    // Nothing is known to agree; an open client stays, so an outage is reported as one.
    if (!handle_) closed_reason_ = "no bootstrap address answered (" + not_answered + ")";
    return;
  }
  if (handle_ && opened_for_cluster_id_ == agreed) return;
  if (handle_) CloseClusterClients("the cluster behind the bootstrap addresses changed");
  if (auto failed = OpenClusterClients(answered)) {
    closed_reason_ = failed->message;
    return;
  }
  opened_for_cluster_id_ = agreed;
}

std::string RdKafkaAdmin::WithClientError(std::string message) {
  rd_kafka_poll(handle_.get(), 0);  // run the error callbacks queued while the request waited
  std::lock_guard lock(client_errors_->mutex);
  if (client_errors_->reason.empty()) return message;
  message += " (the client's last error: " + client_errors_->reason + ")";
  if (client_errors_->code == RD_KAFKA_RESP_ERR__AUTHENTICATION &&
      ScramRefusedByKafka4(properties_)) {
    message += std::string("; if the credentials are right: librdkafka ") + rd_kafka_version_str() +
               ", which lagsight runs with, cannot authenticate with SCRAM to Kafka 4 brokers "
               "(fixed in librdkafka 2.6.1): use Kafka 3.x, SASL PLAIN over TLS or mTLS";
  }
  return message;
}

Result<std::vector<GroupListing>> RdKafkaAdmin::ListGroups(milliseconds timeout) {
  if (!handle_) return Error{"listing consumer groups: " + closed_reason_};
  rd_kafka_poll(handle_.get(), 0);  // serve error callbacks so their events do not pile up
  void* token = NextToken();
  auto options = MakeOptions(handle_.get(), RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS, timeout, token);
  if (!options) return options.error();
  // Verified against Kafka 4.1: librdkafka 2.0.2 sends ListGroups v4 (no state filter set) and
  // the broker answers it correctly, KIP-848 groups included.
  rd_kafka_ListConsumerGroups(handle_.get(), options->get(), queue_.get());
  auto event = AwaitEvent(queue_.get(), token, timeout);
  if (!event) return Error{WithClientError("listing consumer groups: " + event.error().message)};

  const auto* result = rd_kafka_event_ListConsumerGroups_result(event->get());
  std::size_t error_count = 0;
  const rd_kafka_error_t** errors = rd_kafka_ListConsumerGroups_result_errors(result, &error_count);
  if (error_count > 0) {
    // A broker that did not answer would make its groups vanish: report the poll as failed
    // rather than export a partial list as if it were complete.
    return Error{WithClientError("listing consumer groups: " +
                                 std::string(rd_kafka_error_string(errors[0])))};
  }
  {
    // The cluster answered: an earlier connection error says nothing about the next failure.
    std::lock_guard lock(client_errors_->mutex);
    client_errors_->code = RD_KAFKA_RESP_ERR_NO_ERROR;
    client_errors_->reason.clear();
  }
  std::size_t count = 0;
  const rd_kafka_ConsumerGroupListing_t** listings =
      rd_kafka_ListConsumerGroups_result_valid(result, &count);
  std::vector<GroupListing> groups;
  groups.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    groups.push_back({rd_kafka_ConsumerGroupListing_group_id(listings[i]),
                      StateName(rd_kafka_ConsumerGroupListing_state(listings[i])),
                      rd_kafka_ConsumerGroupListing_is_simple_consumer_group(listings[i]) != 0});
  }
  return groups;
}

Result<std::vector<GroupDescription>> RdKafkaAdmin::DescribeGroups(
    const std::vector<std::string>& ids, milliseconds timeout) {
  if (ids.empty()) return std::vector<GroupDescription>{};
  if (!handle_) return Error{"describing consumer groups: " + closed_reason_};
  void* token = NextToken();
  auto options =
      MakeOptions(handle_.get(), RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS, timeout, token);
  if (!options) return options.error();
  std::vector<const char*> names;
  names.reserve(ids.size());
  for (const std::string& id : ids) names.push_back(id.c_str());
  rd_kafka_DescribeConsumerGroups(handle_.get(), names.data(), names.size(), options->get(),
                                  queue_.get());
  auto event = AwaitEvent(queue_.get(), token, timeout);
  if (!event) return Error{"describing consumer groups: " + event.error().message};

  const auto* result = rd_kafka_event_DescribeConsumerGroups_result(event->get());
  std::size_t count = 0;
  const rd_kafka_ConsumerGroupDescription_t** described =
      rd_kafka_DescribeConsumerGroups_result_groups(result, &count);
  std::vector<GroupDescription> descriptions;
  descriptions.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    GroupDescription description;
    description.id = rd_kafka_ConsumerGroupDescription_group_id(described[i]);
    if (const rd_kafka_error_t* error = rd_kafka_ConsumerGroupDescription_error(described[i])) {
      description.not_found = rd_kafka_error_code(error) == RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND;
      description.error = rd_kafka_error_string(error);
    } else {
      description.state = StateName(rd_kafka_ConsumerGroupDescription_state(described[i]));
      description.simple =
          rd_kafka_ConsumerGroupDescription_is_simple_consumer_group(described[i]) != 0;
      description.members =
          static_cast<int>(rd_kafka_ConsumerGroupDescription_member_count(described[i]));
      for (int m = 0; m < description.members; ++m) {
        const rd_kafka_MemberDescription_t* member =
            rd_kafka_ConsumerGroupDescription_member(described[i], static_cast<std::size_t>(m));
        const rd_kafka_MemberAssignment_t* assignment =
            member == nullptr ? nullptr : rd_kafka_MemberDescription_assignment(member);
        const rd_kafka_topic_partition_list_t* partitions =
            assignment == nullptr ? nullptr : rd_kafka_MemberAssignment_partitions(assignment);
        for (int p = 0; partitions != nullptr && p < partitions->cnt; ++p) {
          description.assigned_topics.insert(partitions->elems[p].topic);
        }
      }
    }
    descriptions.push_back(std::move(description));
  }
  return descriptions;
}

std::vector<Result<CommittedOffsets>> RdKafkaAdmin::ListCommittedOffsets(
    const std::vector<std::string>& ids, int max_in_flight, milliseconds request_timeout,
    milliseconds total_timeout) {
  std::vector<Result<CommittedOffsets>> results(ids.size(), Error{"not requested"});
  if (!handle_) {
    for (auto& result : results) result = Error{closed_reason_};
    return results;
  }
  const auto deadline = SteadyClock::now() + total_timeout + milliseconds(500);
  // Groups left to librdkafka's per-group path: all of them, or those the batched fetch could
  // not answer exactly.
  std::vector<std::size_t> per_group;
  if (batched_) {
    // At most half the time: what it leaves (a broker answering slowly) still gets its turn.
    BatchedOffsets batched = batched_->Fetch(ids, request_timeout, total_timeout / 2);
    for (std::size_t index = 0; index < ids.size(); ++index) {
      if (batched.offsets[index]) {
        results[index] = std::move(*batched.offsets[index]);
      } else {
        per_group.push_back(index);
      }
    }
    // Logged when it changes, not every poll. A group the broker answered with an error is no
    // failure of the fetch: librdkafka's answer for it carries the error.
    const std::size_t answered = ids.size() - per_group.size();
    std::string state;
    if (answered == 0 && !ids.empty()) {
      state = "read one request per group: the batched fetch answered none: " +
              (batched.failure.empty() ? "each group with an error" : batched.failure);
    } else if (!batched.failure.empty()) {
      state = "read with batched OffsetFetch requests (KIP-709), some one request per group: " +
              batched.failure;
    } else if (!ids.empty()) {
      state = "read with batched OffsetFetch requests (KIP-709)";
    }
    if (!state.empty() && state != batched_state_) {
      if (batched.failure.empty()) {
        spdlog::info("kafka cluster {}: committed offsets {}", cluster_name_, state);
      } else {
        spdlog::warn("kafka cluster {}: committed offsets {}", cluster_name_, state);
      }
      batched_state_ = std::move(state);
    }
    spdlog::debug("kafka cluster {}: {} of {} groups' committed offsets in {} batched requests",
                  cluster_name_, answered, ids.size(), batched.requests);
  } else {
    per_group.resize(ids.size());
    for (std::size_t index = 0; index < ids.size(); ++index) per_group[index] = index;
  }

  // librdkafka 2.0.2 takes one group per ListConsumerGroupOffsets call; keeping a window of
  // calls in flight avoids both serializing thousands of groups and flooding the coordinators.
  std::map<void*, std::size_t> in_flight;  // token -> index into ids
  std::size_t next = 0;                    // into per_group

  const auto send_next = [&] {
    const std::size_t index = per_group[next++];
    void* token = NextToken();
    auto options = MakeOptions(handle_.get(), RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS,
                               request_timeout, token);
    if (!options) {
      results[index] = options.error();
      return;
    }
    std::unique_ptr<rd_kafka_ListConsumerGroupOffsets_t, OffsetsRequestDeleter> request(
        rd_kafka_ListConsumerGroupOffsets_new(ids[index].c_str(),
                                              nullptr));  // nullptr: all partitions
    rd_kafka_ListConsumerGroupOffsets_t* requests[] = {request.get()};
    rd_kafka_ListConsumerGroupOffsets(handle_.get(), requests, 1, options->get(), queue_.get());
    in_flight.emplace(token, index);
  };

  while (next < per_group.size() || !in_flight.empty()) {
    while (next < per_group.size() && in_flight.size() < static_cast<std::size_t>(max_in_flight)) {
      send_next();
    }
    if (in_flight.empty()) continue;
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) break;
    Event event(rd_kafka_queue_poll(queue_.get(), ClampMillis(left)));
    if (!event) continue;
    const auto found = in_flight.find(rd_kafka_event_opaque(event.get()));
    if (found == in_flight.end()) continue;  // a stale answer to an earlier poll
    const std::size_t index = found->second;
    in_flight.erase(found);
    if (rd_kafka_event_error(event.get()) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      results[index] = Error{rd_kafka_event_error_string(event.get())};
      continue;
    }
    const auto* result = rd_kafka_event_ListConsumerGroupOffsets_result(event.get());
    std::size_t group_count = 0;
    const rd_kafka_group_result_t** groups =
        rd_kafka_ListConsumerGroupOffsets_result_groups(result, &group_count);
    if (group_count != 1) {
      results[index] = Error{"unexpected answer with " + std::to_string(group_count) + " groups"};
      continue;
    }
    if (const rd_kafka_error_t* error = rd_kafka_group_result_error(groups[0])) {
      results[index] = Error{rd_kafka_error_string(error)};
      continue;
    }
    CommittedOffsets::sequence_type entries;
    std::string partition_errors;
    const rd_kafka_topic_partition_list_t* partitions = rd_kafka_group_result_partitions(groups[0]);
    if (partitions != nullptr) entries.reserve(static_cast<std::size_t>(partitions->cnt));
    for (int i = 0; partitions != nullptr && i < partitions->cnt; ++i) {
      const rd_kafka_topic_partition_t& p = partitions->elems[i];
      if (p.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        partition_errors += std::string(p.topic) + "/" + std::to_string(p.partition) + ": " +
                            rd_kafka_err2str(p.err) + "; ";
        continue;
      }
      // RD_KAFKA_OFFSET_INVALID (-1): no commit for this partition; leave it out.
      if (p.offset >= 0) entries.emplace_back(TopicPartition{p.topic, p.partition}, p.offset);
    }
    if (!partition_errors.empty()) {
      results[index] = Error{"partition errors: " + partition_errors};
    } else {
      CommittedOffsets offsets;
      offsets.adopt_sequence(std::move(entries));  // sorts; Kafka names each partition once
      results[index] = std::move(offsets);
    }
  }
  for (const auto& [token, index] : in_flight) {
    results[index] = Error{"no answer within " + std::to_string(total_timeout.count()) + "ms"};
  }
  for (std::size_t left = next; left < per_group.size(); ++left) {
    results[per_group[left]] = Error{"not requested: the poll ran out of time"};
  }
  return results;
}

Result<std::map<std::string, std::int32_t>> RdKafkaAdmin::TopicPartitionCounts(
    milliseconds timeout) {
  if (!handle_) return Error{"reading topic metadata: " + closed_reason_};
  auto counts = PartitionCounts(handle_.get(), timeout);
  if (!counts) return Error{WithClientError(counts.error().message)};
  return counts;
}

Result<ListedOffsets> RdKafkaAdmin::ListOffsets(const std::vector<TopicPartition>& partitions,
                                                OffsetSpec spec, milliseconds timeout) {
  ListedOffsets answer;
  if (partitions.empty()) return answer;
  if (!handle_) return Error{"listing offsets: " + closed_reason_};
  // The last stable offset is the log end a read_committed client's ListOffsets answers.
  rd_kafka_t* client = handle_.get();
  if (spec == OffsetSpec::kLastStable) {
    auto reader = RecordReader(true);
    if (!reader) return reader.error();
    client = *reader;
  }
  std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionListDeleter> list(
      rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
  const std::int64_t query =
      spec == OffsetSpec::kEarliest ? RD_KAFKA_OFFSET_BEGINNING : RD_KAFKA_OFFSET_END;
  for (const TopicPartition& tp : partitions) {
    rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition)->offset = query;
  }
  // offsets_for_times batches the partitions per leader; -1/-2 ask for log end/log start.
  const rd_kafka_resp_err_t error =
      rd_kafka_offsets_for_times(client, list.get(), ClampMillis(timeout));
  for (int i = 0; i < list->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = list->elems[i];
    if (p.err != RD_KAFKA_RESP_ERR_NO_ERROR || p.offset < 0) {
      answer.errors.push_back(std::string(p.topic) + "/" + std::to_string(p.partition) + ": " +
                              (p.err ? rd_kafka_err2str(p.err) : "no offset returned"));
      continue;
    }
    answer.offsets[{p.topic, p.partition}] = p.offset;
  }
  // The call's own error repeats one partition's error when others succeeded; only when nothing
  // was read is it the answer (e.g. all brokers down).
  if (answer.offsets.empty() && error != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Error{std::string("listing offsets: ") + rd_kafka_err2str(error)};
  }
  return answer;
}

std::optional<std::string> RdKafkaAdmin::ClusterId() {
  if (!handle_) return std::nullopt;
  return CachedClusterId(handle_.get());
}

std::vector<BootstrapIdentity> RdKafkaAdmin::IdentifyBootstraps(milliseconds timeout) {
  // Asked at the same time: an address that does not answer costs one timeout, not one each.
  std::vector<std::future<BootstrapIdentity>> answers;
  answers.reserve(bootstrap_clients_.size());
  for (const BootstrapClient& client : bootstrap_clients_) {
    answers.push_back(std::async(std::launch::async, [&client, timeout] {
      rd_kafka_t* handle = client.handle.get();
      rd_kafka_poll(handle, 0);  // run the error callbacks, so the latest error is known
      BootstrapIdentity identity;
      identity.address = client.address;
      // A fresh metadata answer first: the cached cluster id would outlive the address going
      // away.
      auto counts = PartitionCounts(handle, timeout);
      rd_kafka_poll(handle, 0);
      std::lock_guard lock(client.errors->mutex);
      if (!counts) {
        identity.error = counts.error().message;
        if (!client.errors->reason.empty()) {
          identity.error += " (the client's last error: " + client.errors->reason + ")";
        }
        return identity;
      }
      client.errors->code = RD_KAFKA_RESP_ERR_NO_ERROR;
      client.errors->reason.clear();
      identity.topic_partitions = std::move(counts).value();
      identity.cluster_id = CachedClusterId(handle);
      if (!identity.cluster_id) identity.error = "the broker reported no cluster id";
      return identity;
    }));
  }
  std::vector<BootstrapIdentity> identities;
  identities.reserve(answers.size());
  for (auto& answer : answers) identities.push_back(answer.get());
  FollowBootstraps(identities);
  return identities;
}

Result<std::string> RdKafkaAdmin::BrokerConfig(const std::string& name, milliseconds timeout) {
  if (!handle_) return Error{"reading broker metadata: " + closed_reason_};
  const auto deadline = SteadyClock::now() + timeout;
  const rd_kafka_metadata_t* raw = nullptr;
  // Brokers only: no topic is asked for.
  rd_kafka_resp_err_t error =
      rd_kafka_metadata(handle_.get(), 0, nullptr, &raw, ClampMillis(timeout));
  if (error != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Error{std::string("reading broker metadata: ") + rd_kafka_err2str(error)};
  }
  std::unique_ptr<const rd_kafka_metadata_t, MetadataDeleter> metadata(raw);
  if (metadata->broker_cnt == 0) return Error{"the cluster named no broker"};
  const std::string broker_id = std::to_string(metadata->brokers[0].id);

  const auto left = std::max(
      milliseconds(1), std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now()));
  void* token = NextToken();
  auto options = MakeOptions(handle_.get(), RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, left, token);
  if (!options) return options.error();
  std::unique_ptr<rd_kafka_ConfigResource_t, ConfigResourceDeleter> resource(
      rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_BROKER, broker_id.c_str()));
  rd_kafka_ConfigResource_t* resources[] = {resource.get()};
  rd_kafka_DescribeConfigs(handle_.get(), resources, 1, options->get(), queue_.get());
  auto event = AwaitEvent(queue_.get(), token, left);
  if (!event) return Error{"describing broker " + broker_id + ": " + event.error().message};

  const auto* result = rd_kafka_event_DescribeConfigs_result(event->get());
  std::size_t count = 0;
  const rd_kafka_ConfigResource_t** described =
      rd_kafka_DescribeConfigs_result_resources(result, &count);
  if (count != 1) return Error{"describing broker " + broker_id + ": no answer for it"};
  if (rd_kafka_ConfigResource_error(described[0]) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Error{"describing broker " + broker_id + ": " +
                 rd_kafka_ConfigResource_error_string(described[0])};
  }
  std::size_t entry_count = 0;
  const rd_kafka_ConfigEntry_t** entries =
      rd_kafka_ConfigResource_configs(described[0], &entry_count);
  for (std::size_t i = 0; i < entry_count; ++i) {
    if (name != rd_kafka_ConfigEntry_name(entries[i])) continue;
    const char* value = rd_kafka_ConfigEntry_value(entries[i]);
    if (value == nullptr) return Error{"broker " + broker_id + " does not show " + name};
    return std::string(value);
  }
  return Error{"broker " + broker_id + " has no config " + name};
}

Result<rd_kafka_t*> RdKafkaAdmin::RecordReader(bool read_committed) {
  auto& reader = read_committed ? committed_reader_ : record_reader_;
  if (!reader) {
    std::map<std::string, std::string> properties = properties_;
    properties["group.id"] = kRecordReaderGroup;
    // A read_committed reader reads as a read_committed consumer does: up to the last stable
    // offset, skipping aborted records; its ListOffsets answer the last stable offset as the log
    // end (librdkafka sends the handle's isolation level).
    properties["isolation.level"] = read_committed ? "read_committed" : "read_uncommitted";
    // Report "no record up to the log end" and a position deleted meanwhile, instead of
    // waiting, or silently jumping to another offset.
    properties["enable.partition.eof"] = "true";
    properties["auto.offset.reset"] = "error";
    // One record per partition is wanted: keep what is fetched and buffered ahead small.
    properties["max.partition.fetch.bytes"] = "65536";
    properties["queued.max.messages.kbytes"] = "4096";
    properties["fetch.wait.max.ms"] = "100";
    auto created = NewClient<RecordReaderDeleter>(properties, cluster_name_);
    if (!created) return created.error();
    reader = std::move(created).value();
    rd_kafka_poll_set_consumer(reader.get());
  }
  return reader.get();
}

Result<FetchedTimestamps> RdKafkaAdmin::RecordTimestamps(const std::vector<RecordKey>& positions,
                                                         milliseconds request_timeout,
                                                         milliseconds total_timeout) {
  FetchedTimestamps answer;
  if (positions.empty()) return answer;
  if (!handle_) return Error{"reading record timestamps: " + closed_reason_};
  const auto total_deadline = SteadyClock::now() + total_timeout;
  for (const bool read_committed : {false, true}) {
    std::vector<RecordKey> wanted;
    for (const RecordKey& key : positions) {
      if (key.read_committed == read_committed) wanted.push_back(key);
    }
    if (wanted.empty()) continue;
    auto reader = RecordReader(read_committed);
    if (!reader) return reader.error();
    if (auto failed =
            ReadRecords(*reader, read_committed, wanted, request_timeout, total_deadline, answer)) {
      return *failed;
    }
  }
  return answer;
}

std::optional<Error> RdKafkaAdmin::ReadRecords(rd_kafka_t* reader, bool read_committed,
                                               const std::vector<RecordKey>& positions,
                                               milliseconds request_timeout,
                                               SteadyClock::time_point total_deadline,
                                               FetchedTimestamps& answer) {
  // assign() takes one start offset per partition: several positions on one partition are read
  // in successive rounds, lowest first.
  std::map<TopicPartition, std::deque<std::int64_t>> pending;
  for (const RecordKey& key : positions) pending[key.partition].push_back(key.offset);
  for (auto& [tp, offsets] : pending) {
    std::sort(offsets.begin(), offsets.end());
    offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
  }
  const auto describe = [read_committed](const TopicPartition& tp, std::int64_t offset) {
    return tp.topic + "/" + std::to_string(tp.partition) + "@" + std::to_string(offset) +
           (read_committed ? " (read_committed)" : "");
  };
  while (!pending.empty() && SteadyClock::now() < total_deadline) {
    std::map<TopicPartition, std::int64_t> round;
    std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionListDeleter> list(
        rd_kafka_topic_partition_list_new(static_cast<int>(pending.size())));
    for (const auto& [tp, offsets] : pending) {
      round.emplace(tp, offsets.front());
      rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition)->offset =
          offsets.front();
    }
    const auto finish = [&](const TopicPartition& tp) {
      std::deque<std::int64_t>& offsets = pending.at(tp);
      offsets.pop_front();
      if (offsets.empty()) pending.erase(tp);
      round.erase(tp);
    };
    if (const rd_kafka_resp_err_t error = rd_kafka_assign(reader, list.get())) {
      return Error{std::string("assigning partitions to the record reader: ") +
                   rd_kafka_err2str(error)};
    }
    const auto round_deadline = std::min(total_deadline, SteadyClock::now() + request_timeout);
    std::string client_error;  // not tied to a partition, e.g. the brokers are unreachable
    while (!round.empty()) {
      const auto left =
          std::chrono::duration_cast<milliseconds>(round_deadline - SteadyClock::now());
      if (left.count() <= 0) break;
      std::unique_ptr<rd_kafka_message_t, MessageDeleter> message(
          rd_kafka_consumer_poll(reader, ClampMillis(left)));
      if (!message) continue;
      if (message->rkt == nullptr) {
        if (message->err) client_error = rd_kafka_message_errstr(message.get());
        continue;
      }
      const TopicPartition tp{rd_kafka_topic_name(message->rkt), message->partition};
      const auto wanted = round.find(tp);
      if (wanted == round.end()) continue;
      const std::int64_t offset = wanted->second;
      if (message->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        // Only transaction markers between the position and the log end: no record to date.
        // The EOF carries the offset the reader stopped at, the log end as it fetched.
        if (message->offset >= offset)
          answer.markers_only[{tp, offset, read_committed}] = message->offset;
      } else if (message->err) {
        answer.errors.push_back(describe(tp, offset) + ": " +
                                rd_kafka_message_errstr(message.get()));
      } else if (message->offset < offset) {
        continue;  // left from an earlier assignment
      } else {
        rd_kafka_timestamp_type_t type;
        const std::int64_t timestamp = rd_kafka_message_timestamp(message.get(), &type);
        if (timestamp < 0) {
          answer.errors.push_back(describe(tp, offset) + ": the record has no timestamp");
        } else {
          answer.timestamps[{tp, offset, read_committed}] = {
              timestamp, type == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME};
        }
      }
      finish(tp);
    }
    for (const auto& [tp, offset] : std::map(round)) {
      answer.errors.push_back(describe(tp, offset) + ": no record within " +
                              std::to_string(request_timeout.count()) + "ms" +
                              (client_error.empty() ? "" : " (" + client_error + ")"));
      finish(tp);
    }
  }
  rd_kafka_assign(reader, nullptr);  // stop fetching until the next poll
  for (const auto& [tp, offsets] : pending) {
    for (const std::int64_t offset : offsets) {
      answer.errors.push_back(describe(tp, offset) + ": not read, the poll ran out of time");
    }
  }
  return std::nullopt;
}

}  // namespace lagsight::kafka
