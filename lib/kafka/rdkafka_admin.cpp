#include "kafka/rdkafka_admin.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <future>
#include <set>
#include <sstream>

#include "kafka/client_properties.h"
#include "kafka/offset_fetch_client.h"
#include "kafka/rdkafka_client.h"

namespace lagsight::kafka {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

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

std::string StateName(rd_kafka_consumer_group_state_t state) {
  return SnakeCase(rd_kafka_consumer_group_state_name(state));
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

// librdkafka hands out null for a string the broker left unset (group.instance.id).
std::string OrEmpty(const char* text) { return text == nullptr ? std::string() : text; }

// A described member: who it is and its current assignment.
GroupMember DescribedMember(const rd_kafka_MemberDescription_t& member) {
  GroupMember named;
  named.member_id = OrEmpty(rd_kafka_MemberDescription_consumer_id(&member));
  named.client_id = OrEmpty(rd_kafka_MemberDescription_client_id(&member));
  named.host = OrEmpty(rd_kafka_MemberDescription_host(&member));
  named.group_instance_id = OrEmpty(rd_kafka_MemberDescription_group_instance_id(&member));
  const rd_kafka_MemberAssignment_t* assignment = rd_kafka_MemberDescription_assignment(&member);
  const rd_kafka_topic_partition_list_t* partitions =
      assignment == nullptr ? nullptr : rd_kafka_MemberAssignment_partitions(assignment);
  for (int p = 0; partitions != nullptr && p < partitions->cnt; ++p) {
    named.assignment.push_back({partitions->elems[p].topic, partitions->elems[p].partition});
  }
  return named;
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
  record_reader_ = std::make_unique<RecordTimestampReader>(cluster_name_, properties_);
  auto security = OwnClientSecurity(properties_);
  if (security) {
    BatchedOffsetFetcherOptions options;
    options.tls = std::move(security->tls);
    options.sasl_plain = std::move(security->sasl_plain);
    // From properties_, not the argument: that may refer into the properties just replaced.
    std::stringstream list(properties_["bootstrap.servers"]);
    for (std::string server; std::getline(list, server, ',');) {
      if (!server.empty()) options.bootstrap_servers.push_back(server);
    }
    options.client_id = properties_["client.id"];
    describer_ = std::make_unique<ConsumerGroupDescriber>(options);
    classic_describer_ = std::make_unique<ConsumerGroupDescriber>(options, ClassicDescribeApi());
    share_reader_ = std::make_unique<ShareGroupReader>(options);
    streams_lister_ = std::make_unique<StreamsGroupLister>(options);
    streams_describer_ = std::make_unique<ConsumerGroupDescriber>(options, StreamsDescribeApi());
    if (batched_offset_fetch_) {
      batched_ = std::make_unique<BatchedOffsetFetcher>(std::move(options));
    }
  } else {
    spdlog::info(
        "kafka cluster {}: lagsight's own Kafka clients do not connect ({}): KIP-848 members, "
        "share and streams groups are not read, classic groups are described through "
        "librdkafka{}",
        cluster_name_, security.error().message,
        batched_offset_fetch_ ? ", and committed offsets are read one request per group" : "");
  }
  return std::nullopt;
}

void RdKafkaAdmin::CloseClusterClients(std::string reason) {
  describer_.reset();
  classic_describer_.reset();
  share_reader_.reset();
  streams_lister_.reset();
  streams_describer_.reset();
  streams_unlisted_since_.reset();
  batched_.reset();
  record_reader_.reset();
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

std::optional<std::vector<GroupDescription>> RdKafkaAdmin::DescribeClassicGroups(
    const std::vector<std::string>& ids, milliseconds timeout) {
  DescribedGroups described = classic_describer_->Describe(ids, timeout, timeout);
  // A broker before Kafka 2.4, or TLS settings librdkafka reads and lagsight's client cannot:
  // librdkafka describes them, as it did before lagsight had its own describe.
  if (described.unsupported || described.tls_unusable) {
    if (described.failure != classic_unsupported_) {
      spdlog::info("kafka cluster {}: classic groups are described through librdkafka: {}",
                   cluster_name_, described.failure);
      classic_unsupported_ = described.failure;
    }
    return std::nullopt;
  }
  std::vector<GroupDescription> descriptions = std::move(described.groups);
  spdlog::debug(
      "kafka cluster {}: {} of {} classic groups described in {} DescribeGroups v5 "
      "requests",
      cluster_name_, descriptions.size(), ids.size(), described.requests);
  if (!described.failure.empty()) {
    std::set<std::string_view> answered;
    for (const GroupDescription& description : descriptions) answered.insert(description.id);
    for (const std::string& id : ids) {
      if (answered.contains(id)) continue;
      GroupDescription& missing = descriptions.emplace_back();
      missing.id = id;
      missing.error = "not described this poll: " + described.failure;
    }
  }
  return descriptions;
}

Result<std::vector<GroupDescription>> RdKafkaAdmin::DescribeGroups(
    const std::vector<std::string>& ids, milliseconds timeout) {
  if (ids.empty()) return std::vector<GroupDescription>{};
  if (!handle_) return Error{"describing consumer groups: " + closed_reason_};
  if (classic_describer_) {
    if (auto described = DescribeClassicGroups(ids, timeout)) return std::move(*described);
  }
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
        if (member == nullptr) continue;
        GroupMember& named = description.member_list.emplace_back(DescribedMember(*member));
        for (const TopicPartition& tp : named.assignment) {
          description.assigned_topics.insert(tp.topic);
        }
      }
    }
    descriptions.push_back(std::move(description));
  }
  return descriptions;
}

ConsumerGroupDescriptions RdKafkaAdmin::Unsupported(DescribedGroups described, const char* kinds,
                                                    std::string& said) {
  ConsumerGroupDescriptions descriptions{std::move(described.groups), std::move(described.failure)};
  if (described.unsupported) {
    // A broker that predates the API: said once (again only when it changes), not failed each
    // poll.
    if (descriptions.failure != said) {
      spdlog::info("kafka cluster {}: {} are listed without members: {}", cluster_name_, kinds,
                   descriptions.failure);
      said = descriptions.failure;
    }
    descriptions.failure.clear();
  }
  return descriptions;
}

ConsumerGroupDescriptions RdKafkaAdmin::DescribeConsumerGroups(const std::vector<std::string>& ids,
                                                               milliseconds request_timeout,
                                                               milliseconds total_timeout) {
  if (!describer_) return {};
  DescribedGroups described = describer_->Describe(ids, request_timeout, total_timeout);
  const int requests = described.requests;
  ConsumerGroupDescriptions descriptions =
      Unsupported(std::move(described), "KIP-848 groups", describer_unsupported_);
  spdlog::debug("kafka cluster {}: {} of {} KIP-848 groups described in {} requests", cluster_name_,
                descriptions.groups.size(), ids.size(), requests);
  return descriptions;
}

StreamsGroupListings RdKafkaAdmin::ListStreamsGroups(milliseconds request_timeout,
                                                     milliseconds total_timeout) {
  if (!streams_lister_) return {};
  constexpr auto kRecheckUnsupported = std::chrono::minutes(10);
  if (streams_unlisted_since_ &&
      SteadyClock::now() - *streams_unlisted_since_ < kRecheckUnsupported) {
    return {};
  }
  ListedStreamsGroups listed = streams_lister_->List(request_timeout, total_timeout);
  StreamsGroupListings listings{std::move(listed.groups), std::move(listed.failure)};
  streams_unlisted_since_.reset();
  if (listed.unsupported) {
    // Backed off only while nothing is listed: a streams group never flickers in and out.
    if (listings.groups.empty()) streams_unlisted_since_ = SteadyClock::now();
    if (listings.failure != streams_unsupported_) {
      spdlog::info("kafka cluster {}: streams groups are not listed: {}", cluster_name_,
                   listings.failure);
      streams_unsupported_ = listings.failure;
    }
    listings.failure.clear();
  }
  return listings;
}

ConsumerGroupDescriptions RdKafkaAdmin::DescribeStreamsGroups(const std::vector<std::string>& ids,
                                                              milliseconds request_timeout,
                                                              milliseconds total_timeout) {
  if (!streams_describer_) return {};
  DescribedGroups described = streams_describer_->Describe(ids, request_timeout, total_timeout);
  const int requests = described.requests;
  ConsumerGroupDescriptions descriptions =
      Unsupported(std::move(described), "streams groups", streams_unsupported_);
  spdlog::debug("kafka cluster {}: {} of {} streams groups described in {} requests", cluster_name_,
                descriptions.groups.size(), ids.size(), requests);
  return descriptions;
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
    auto reader = record_reader_->Consumer(true);
    if (!reader) return reader.error();
    client = *reader;
  }
  PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
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

Result<FetchedTimestamps> RdKafkaAdmin::RecordTimestamps(const std::vector<RecordKey>& positions,
                                                         milliseconds request_timeout,
                                                         milliseconds total_timeout) {
  if (positions.empty()) return FetchedTimestamps{};
  if (!handle_) return Error{"reading record timestamps: " + closed_reason_};
  return record_reader_->Read(positions, request_timeout, total_timeout);
}

}  // namespace lagsight::kafka
