// CoordinatorSession: what lagsight's own Kafka clients (the batched OffsetFetch of
// offset_fetch_client.h, the ConsumerGroupDescribe and StreamsGroupDescribe of
// group_describe_client.h, the share group reader of share_group_client.h, the streams group
// listing of streams_group_lister.h) share: connections
// of their own over PLAINTEXT or TLS, each checked with ApiVersions and, with SASL/PLAIN
// configured, authenticated right after (wire_sasl.h); the groups' coordinators
// located with batched FindCoordinator v4 (KIP-699); each coordinator's groups cut into batches,
// taken in turn by a few connections to it, one request in flight on each. Or, for what every
// broker must be asked (ListGroups of share and of streams groups), one request to each broker
// DescribeCluster names.
//
// What a batch's request is, and what its answer means, is the caller's (a BatchSender); the
// session only moves bytes, bounded: every exchange by the request timeout and the answer's size
// by max_response_bytes, the whole session by the total timeout given to Run (or RunOnEveryBroker,
// which sends one request to each broker named instead). Internal to those clients; one session per
// call, on the calling thread.
#pragma once

// clang-format off
// First: Boost 1.74's awaitable.hpp needs <utility> before it.
#include "common/awaitable.h"
// clang-format on

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "kafka/client_connections.h"
#include "kafka/wire.h"

namespace lagsight::kafka {

// Host:port -> its endpoints, kept across calls.
struct ResolvedAddresses : std::map<std::string, boost::asio::ip::tcp::resolver::results_type> {};

struct TlsContext {
  boost::asio::ssl::context context{boost::asio::ssl::context::tls_client};
};

// The context for `tls`, loaded as librdkafka loads its properties.
Result<std::unique_ptr<TlsContext>> MakeTlsContext(const TlsOptions& tls);
// MakeTlsContext, or null with `failure` saying why ("TLS: ...").
std::unique_ptr<TlsContext> LoadTlsContext(const TlsOptions& tls, std::string& failure);

// One connection to a broker: TCP, or TLS over it; with the API versions the broker answered.
struct BrokerConnection {
  std::unique_ptr<boost::beast::tcp_stream> plain;
  std::unique_ptr<boost::beast::ssl_stream<boost::beast::tcp_stream>> tls;
  std::string where;  // host:port
  std::map<std::int16_t, wire::VersionRange> versions;
};

// True when the broker supports `version` of `api`.
bool Supports(const std::map<std::int16_t, wire::VersionRange>& versions, std::int16_t api,
              std::int16_t version);

class CoordinatorSession {
 public:
  // Why a broker cannot serve the session (it lacks an API version), or nullopt.
  using VersionCheck = std::function<std::optional<std::string>(
      const std::map<std::int16_t, wire::VersionRange>& versions, const std::string& where)>;
  // Sends the batch of groups ids[indices] on `connection` and takes its answer; a failure (said
  // in full, as the session's failure reads) ends that connection.
  using BatchSender = std::function<boost::asio::awaitable<std::optional<std::string>>(
      CoordinatorSession& session, BrokerConnection& connection,
      const std::vector<std::size_t>& indices)>;

  // On `client`'s connections (its options, TLS, resolved host names). `api` names the batches'
  // request in failures. Everything referred to outlives the session.
  CoordinatorSession(ClientConnections& client, std::chrono::milliseconds request_timeout,
                     const std::vector<std::string>& ids, const char* api, VersionCheck check,
                     BatchSender send);

  // Locates the coordinators of `ids` and sends every batch, within `total_timeout`.
  void Run(std::chrono::milliseconds total_timeout);

  // Sends what every broker is asked (ListGroups: each broker lists the groups it coordinates)
  // on `connection`, and takes its answer; a failure (said in full) ends that connection.
  using BrokerSender = std::function<boost::asio::awaitable<std::optional<std::string>>(
      CoordinatorSession& session, BrokerConnection& connection)>;
  // Asks a bootstrap server for the cluster's brokers (DescribeCluster) and runs `send` once on a
  // connection to each, within `total_timeout`. The session's ids and BatchSender are unused.
  void RunOnEveryBroker(std::chrono::milliseconds total_timeout, BrokerSender send);

  // Keeps the first failure: the one that explains the others.
  void Fail(std::string failure);
  // The first failure met; empty when every request was answered.
  const std::string& failure() const { return failure_; }
  // Whether some broker lacked what the VersionCheck asks for (its failure says which).
  bool unsupported() const { return unsupported_; }
  // The error code FindCoordinator answered a group with, by index into the session's ids (such a
  // group is in no batch).
  const std::map<std::size_t, std::int16_t>& lookup_errors() const { return lookup_errors_; }

  const std::string& client_id() const { return options_.client_id; }
  std::int32_t NextCorrelationId() { return next_correlation_id_++; }
  // Sends one request frame and reads the answer's payload.
  boost::asio::awaitable<Result<wire::Bytes>> Exchange(BrokerConnection& connection,
                                                       const wire::Bytes& request);

 private:
  struct Address {
    std::string host;
    std::string port;
  };
  struct Batch {
    std::vector<std::size_t> indices;  // into ids
  };
  // The batches of one coordinator, taken in turn by its connections.
  struct CoordinatorWork {
    Address address;
    std::vector<Batch> batches;
    std::size_t next = 0;
  };

  static Address ParseAddress(std::string_view server);
  std::function<void(std::exception_ptr)> Completion(const char* what);
  boost::asio::awaitable<Result<boost::asio::ip::tcp::resolver::results_type>> Resolve(
      const Address& address, std::chrono::steady_clock::time_point deadline);
  boost::asio::awaitable<Result<BrokerConnection>> Connect(Address address);
  template <typename Stream>
  boost::asio::awaitable<Result<wire::Bytes>> ExchangeOn(Stream& stream,
                                                         const wire::Bytes& request);
  boost::asio::awaitable<Result<BrokerConnection>> Open(Address address);
  boost::asio::awaitable<std::optional<Error>> AuthenticatePlain(BrokerConnection& connection);
  boost::asio::awaitable<void> Drain(std::shared_ptr<CoordinatorWork> work);
  boost::asio::awaitable<std::optional<BrokerConnection>> OpenBootstrap();
  boost::asio::awaitable<void> Locate();
  boost::asio::awaitable<void> VisitBrokers(BrokerSender send);
  boost::asio::awaitable<void> Visit(Address address, BrokerSender send);
  void RunIo(std::chrono::milliseconds total_timeout);

  const BatchedOffsetFetcherOptions& options_;
  TlsContext* tls_;  // null: PLAINTEXT
  std::chrono::milliseconds request_timeout_;
  const std::vector<std::string>& ids_;
  ResolvedAddresses& resolved_;
  const char* api_;
  VersionCheck check_;
  BatchSender send_;
  std::string failure_;
  bool unsupported_ = false;
  std::map<std::size_t, std::int16_t> lookup_errors_;
  std::int32_t next_correlation_id_ = 1;
  // Last: destroyed first, and with it every coroutine frame still pending at a timeout, before
  // what they refer to.
  boost::asio::io_context io_{1};
};

}  // namespace lagsight::kafka
