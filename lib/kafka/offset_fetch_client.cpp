#include "kafka/offset_fetch_client.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_map>

#include "kafka/coordinator_session.h"
#include "kafka/wire.h"

namespace lagsight::kafka {

namespace asio = boost::asio;

namespace {

std::string Lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Sends one OffsetFetch for the groups ids[indices] and takes the offsets of those answered
// exactly into `answer` (a group or partition with an error code is left to the per-group path).
asio::awaitable<std::optional<std::string>> FetchBatch(const std::vector<std::string>& ids,
                                                       BatchedOffsets& answer,
                                                       CoordinatorSession& session,
                                                       BrokerConnection& connection,
                                                       const std::vector<std::size_t>& indices) {
  std::vector<std::string_view> groups;
  std::unordered_map<std::string_view, std::size_t> index_of;
  for (std::size_t index : indices) {
    groups.push_back(ids[index]);
    index_of.emplace(ids[index], index);
  }
  const std::string client_id = session.client_id();
  const std::int32_t id = session.NextCorrelationId();
  auto payload =
      co_await session.Exchange(connection, wire::OffsetFetchRequest(id, client_id, groups));
  if (!payload) co_return "OffsetFetch to " + connection.where + ": " + payload.error().message;
  auto fetched = wire::ParseOffsetFetchResponse(*payload, id, groups.size());
  if (!fetched) co_return "OffsetFetch to " + connection.where + ": " + fetched.error().message;
  ++answer.requests;
  for (wire::FetchedGroup& group : *fetched) {
    const auto found = index_of.find(group.group);
    if (found == index_of.end()) continue;
    if (group.error_code != 0 || group.partition_error_code != 0) continue;
    CommittedOffsets::sequence_type entries;
    for (const wire::FetchedTopic& topic : group.topics) {
      for (const auto& [partition, offset] : topic.partitions) {
        // -1: no commit for this partition; leave it out, as the per-group path does.
        if (offset >= 0) entries.emplace_back(TopicPartition{topic.name, partition}, offset);
      }
    }
    CommittedOffsets offsets;
    offsets.adopt_sequence(std::move(entries));  // sorts; Kafka names each partition once
    answer.offsets[found->second] = std::move(offsets);
  }
  co_return std::nullopt;
}

std::optional<std::string> LacksBatchedOffsetFetch(
    const std::map<std::int16_t, wire::VersionRange>& versions, const std::string& where) {
  if (Supports(versions, wire::kFindCoordinator, wire::kFindCoordinatorVersion) &&
      Supports(versions, wire::kOffsetFetch, wire::kOffsetFetchVersion)) {
    return std::nullopt;
  }
  return "the broker at " + where +
         " predates OffsetFetch v8 and FindCoordinator v4 (Kafka 3.0, KIP-709)";
}

}  // namespace

Result<std::optional<TlsOptions>> BatchedOffsetFetcher::Security(
    const std::map<std::string, std::string>& properties) {
  const auto protocol = properties.find("security.protocol");
  const std::string name = protocol == properties.end() ? "plaintext" : Lowercase(protocol->second);
  if (name == "plaintext") return std::optional<TlsOptions>();
  if (name != "ssl") {
    return Error{"security.protocol " + protocol->second +
                 " (the batched fetch speaks PLAINTEXT and SSL, not SASL)"};
  }
  // The TLS settings it applies as librdkafka does; any other (a PKCS#12 keystore, cipher, curve
  // or signature lists, a CRL, an engine or provider) leaves the cluster to librdkafka.
  static const std::set<std::string> kApplied = {"ssl.ca.location",
                                                 "ssl.ca.pem",
                                                 "ssl.certificate.location",
                                                 "ssl.certificate.pem",
                                                 "ssl.key.location",
                                                 "ssl.key.pem",
                                                 "ssl.key.password",
                                                 "enable.ssl.certificate.verification",
                                                 "ssl.endpoint.identification.algorithm"};
  TlsOptions tls;
  for (const auto& [key, value] : properties) {
    const bool tls_setting = key.rfind("ssl.", 0) == 0 || key.rfind("ssl_", 0) == 0 ||
                             key == "enable.ssl.certificate.verification";
    if (!tls_setting) continue;
    if (kApplied.count(key) == 0) return Error{key + " (not applied by the batched fetch)"};
    if (key == "ssl.ca.location") {
      if (Lowercase(value) == "probe") return Error{"ssl.ca.location probe"};
      tls.ca_location = value;
    } else if (key == "ssl.ca.pem") {
      tls.ca_pem = value;
    } else if (key == "ssl.certificate.location") {
      tls.certificate_location = value;
    } else if (key == "ssl.certificate.pem") {
      tls.certificate_pem = value;
    } else if (key == "ssl.key.location") {
      tls.key_location = value;
    } else if (key == "ssl.key.pem") {
      tls.key_pem = value;
    } else if (key == "ssl.key.password") {
      tls.key_password = value;
    } else if (key == "enable.ssl.certificate.verification") {
      const std::string flag = Lowercase(value);
      if (flag != "true" && flag != "false") return Error{key + " " + value};
      tls.verify_certificate = flag == "true";
    } else {  // ssl.endpoint.identification.algorithm
      const std::string algorithm = Lowercase(value);
      if (algorithm != "https" && algorithm != "none") return Error{key + " " + value};
      tls.verify_host_name = algorithm == "https";
    }
  }
  return std::optional<TlsOptions>(std::move(tls));
}

BatchedOffsetFetcher::BatchedOffsetFetcher(BatchedOffsetFetcherOptions options)
    : connections_(std::move(options)) {}

BatchedOffsetFetcher::~BatchedOffsetFetcher() = default;

BatchedOffsets BatchedOffsetFetcher::Fetch(const std::vector<std::string>& ids,
                                           std::chrono::milliseconds request_timeout,
                                           std::chrono::milliseconds total_timeout) {
  BatchedOffsets answer;
  answer.offsets.resize(ids.size());
  if (ids.empty()) return answer;
  if (!connections_.tls_failure().empty()) {
    answer.failure = connections_.tls_failure();
    return answer;
  }
  {
    // Whatever it had not answered at the deadline goes to the per-group path.
    CoordinatorSession session(
        connections_, request_timeout, ids, "OffsetFetch", LacksBatchedOffsetFetch,
        [&ids, &answer](CoordinatorSession& running, BrokerConnection& connection,
                        const std::vector<std::size_t>& indices) {
          return FetchBatch(ids, answer, running, connection, indices);
        });
    session.Run(total_timeout);
    answer.failure = session.failure();
  }
  return answer;
}

}  // namespace lagsight::kafka
