#include "kafka/coordinator_session.h"

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <filesystem>
#include <set>
#include <unordered_map>

#include "common/tls_client.h"
#include "kafka/share_wire.h"
#include "kafka/wire_sasl.h"

namespace lagsight::kafka {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// The context for `tls`, loaded as librdkafka loads its properties.
Result<std::unique_ptr<TlsContext>> MakeTlsContext(const TlsOptions& tls) {
  auto made = std::make_unique<TlsContext>();
  asio::ssl::context& context = made->context;
  beast::error_code error;
  if (!tls.ca_pem.empty()) {
    context.add_certificate_authority(asio::buffer(tls.ca_pem), error);
    if (error) return Error{"ssl.ca.pem: " + error.message()};
  } else if (!tls.ca_location.empty()) {
    std::error_code not_a_directory;
    if (std::filesystem::is_directory(tls.ca_location, not_a_directory)) {
      context.add_verify_path(tls.ca_location, error);
    } else {
      context.load_verify_file(tls.ca_location, error);
    }
    if (error) return Error{"ssl.ca.location " + tls.ca_location + ": " + error.message()};
  } else {
    context.set_default_verify_paths(error);
    if (error) return Error{"OpenSSL's default CA paths: " + error.message()};
  }
  if (!tls.key_password.empty()) {
    context.set_password_callback(
        [password = tls.key_password](std::size_t, asio::ssl::context::password_purpose) {
          return password;
        });
  }
  if (!tls.certificate_pem.empty()) {
    context.use_certificate_chain(asio::buffer(tls.certificate_pem), error);
    if (error) return Error{"ssl.certificate.pem: " + error.message()};
  } else if (!tls.certificate_location.empty()) {
    context.use_certificate_chain_file(tls.certificate_location, error);
    if (error) {
      return Error{"ssl.certificate.location " + tls.certificate_location + ": " + error.message()};
    }
  }
  if (!tls.key_pem.empty()) {
    context.use_private_key(asio::buffer(tls.key_pem), asio::ssl::context::pem, error);
    if (error) return Error{"ssl.key.pem: " + error.message()};
  } else if (!tls.key_location.empty()) {
    context.use_private_key_file(tls.key_location, asio::ssl::context::pem, error);
    if (error) return Error{"ssl.key.location " + tls.key_location + ": " + error.message()};
  }
  context.set_verify_mode(tls.verify_certificate ? asio::ssl::verify_peer : asio::ssl::verify_none);
  return made;
}

std::unique_ptr<TlsContext> LoadTlsContext(const TlsOptions& tls, std::string& failure) {
  try {
    auto context = MakeTlsContext(tls);
    if (context) return std::move(context).value();
    failure = "TLS: " + context.error().message;
  } catch (const std::exception& error) {
    // asio's context throws when OpenSSL cannot make one (out of memory): the groups then go
    // to librdkafka, as with any other TLS failure, rather than the cluster's clients failing.
    failure = std::string("TLS: ") + error.what();
  }
  return nullptr;
}

bool Supports(const std::map<std::int16_t, wire::VersionRange>& versions, std::int16_t api,
              std::int16_t version) {
  const auto found = versions.find(api);
  return found != versions.end() && found->second.min <= version && version <= found->second.max;
}

ClientConnections::ClientConnections(BatchedOffsetFetcherOptions options)
    : options_(std::move(options)), resolved_(std::make_unique<ResolvedAddresses>()) {
  if (options_.tls) tls_ = LoadTlsContext(*options_.tls, tls_failure_);
}

ClientConnections::~ClientConnections() = default;
ClientConnections::ClientConnections(ClientConnections&&) noexcept = default;
ClientConnections& ClientConnections::operator=(ClientConnections&&) noexcept = default;

CoordinatorSession::CoordinatorSession(ClientConnections& client,
                                       std::chrono::milliseconds request_timeout,
                                       const std::vector<std::string>& ids, const char* api,
                                       VersionCheck check, BatchSender send)
    : options_(client.options()),
      tls_(client.tls()),
      request_timeout_(request_timeout),
      ids_(ids),
      resolved_(client.resolved()),
      api_(api),
      check_(std::move(check)),
      send_(std::move(send)) {}

// "host:port", "[v6]:port" or "host", after an optional "proto://" (librdkafka accepts all).
CoordinatorSession::Address CoordinatorSession::ParseAddress(std::string_view server) {
  if (const auto scheme = server.find("://"); scheme != std::string_view::npos) {
    server.remove_prefix(scheme + 3);
  }
  if (!server.empty() && server.front() == '[') {
    const auto close = server.find(']');
    if (close != std::string_view::npos) {
      const std::string_view rest = server.substr(close + 1);
      return {std::string(server.substr(1, close - 1)),
              rest.size() > 1 && rest.front() == ':' ? std::string(rest.substr(1)) : "9092"};
    }
  }
  const auto colon = server.rfind(':');
  if (colon == std::string_view::npos) return {std::string(server), "9092"};
  return {std::string(server.substr(0, colon)), std::string(server.substr(colon + 1))};
}

// Keeps the first failure: the one that explains the others.
void CoordinatorSession::Fail(std::string failure) {
  if (failure_.empty()) failure_ = std::move(failure);
}

// A coroutine's completion: one that threw (a failed allocation) is a failure like any other,
// not a silent one.
std::function<void(std::exception_ptr)> CoordinatorSession::Completion(const char* what) {
  return [this, what](std::exception_ptr thrown) {
    if (!thrown) return;
    try {
      std::rethrow_exception(thrown);
    } catch (const std::exception& e) {
      Fail(std::string(what) + ": " + e.what());
    } catch (...) {
      Fail(std::string(what) + ": unknown exception");
    }
  };
}

// An address's endpoints: an IP address as it is, a host name from the cache or resolved.
// The cache lasts across polls, as librdkafka's does: a resolver cannot be interrupted
// (getaddrinfo runs to its end, and the io_context waits for it), so resolving every poll would
// let a slow DNS server stretch every poll.
asio::awaitable<Result<tcp::resolver::results_type>> CoordinatorSession::Resolve(
    const Address& address, Clock::time_point deadline) {
  const std::string where = address.host + ":" + address.port;
  if (const auto found = resolved_.find(where); found != resolved_.end()) co_return found->second;
  beast::error_code error;
  const auto ip = asio::ip::make_address(address.host, error);
  if (!error) {
    unsigned long port = 0;
    try {
      port = std::stoul(address.port);
    } catch (const std::exception&) {
      port = 65536;
    }
    if (port > 65535) co_return Error{"bad port in " + where};
    auto endpoints = tcp::resolver::results_type::create(
        tcp::endpoint(ip, static_cast<std::uint16_t>(port)), address.host, address.port);
    co_return endpoints;
  }
  // Shared with the timer's handler, which may already be queued when the resolve ends.
  auto resolver = std::make_shared<tcp::resolver>(io_);
  asio::steady_timer resolve_timer(io_, deadline);
  resolve_timer.async_wait([resolver](beast::error_code timer_error) {
    if (!timer_error) resolver->cancel();
  });
  auto endpoints = co_await resolver->async_resolve(
      address.host, address.port, asio::redirect_error(asio::use_awaitable, error));
  resolve_timer.cancel();
  if (error) co_return Error{"resolving " + where + ": " + error.message()};
  resolved_[where] = endpoints;
  co_return endpoints;
}

asio::awaitable<Result<BrokerConnection>> CoordinatorSession::Connect(Address address) {
  const auto deadline = Clock::now() + request_timeout_;
  const std::string where = address.host + ":" + address.port;
  auto endpoints = co_await Resolve(address, deadline);
  if (!endpoints) co_return endpoints.error();
  beast::error_code error;
  auto stream = std::make_unique<PlainStream>(io_);
  stream->expires_at(deadline);
  co_await stream->async_connect(*endpoints, asio::redirect_error(asio::use_awaitable, error));
  if (error) {
    resolved_.erase(where);  // resolved afresh next time: the broker may have moved
    co_return Error{"connecting to " + where + ": " + error.message()};
  }
  stream->socket().set_option(tcp::no_delay(true), error);
  BrokerConnection connection;
  if (tls_ == nullptr) {
    connection.plain = std::move(stream);
    co_return connection;
  }
  connection.tls = std::make_unique<TlsStream>(std::move(*stream), tls_->context);
  if (auto failed =
          PrepareTlsClient(*connection.tls, address.host,
                           options_.tls->verify_certificate && options_.tls->verify_host_name)) {
    co_return *failed;
  }
  co_await connection.tls->async_handshake(asio::ssl::stream_base::client,
                                           asio::redirect_error(asio::use_awaitable, error));
  if (error) co_return Error{"TLS handshake with " + where + ": " + error.message()};
  co_return connection;
}

// Sends one request frame and reads the answer's payload.
template <typename Stream>
asio::awaitable<Result<wire::Bytes>> CoordinatorSession::ExchangeOn(Stream& stream,
                                                                    const wire::Bytes& request) {
  beast::error_code error;
  beast::get_lowest_layer(stream).expires_after(request_timeout_);
  co_await asio::async_write(stream, asio::buffer(request),
                             asio::redirect_error(asio::use_awaitable, error));
  if (error) co_return Error{"sending: " + error.message()};
  std::array<std::uint8_t, 4> prefix{};
  co_await asio::async_read(stream, asio::buffer(prefix),
                            asio::redirect_error(asio::use_awaitable, error));
  if (error) co_return Error{"reading: " + error.message()};
  const std::int32_t size = wire::FrameSize(prefix);
  if (size <= 0 || static_cast<std::size_t>(size) > options_.max_response_bytes) {
    co_return Error{"answer of " + std::to_string(size) + " bytes"};
  }
  wire::Bytes payload(static_cast<std::size_t>(size));
  co_await asio::async_read(stream, asio::buffer(payload),
                            asio::redirect_error(asio::use_awaitable, error));
  if (error) co_return Error{"reading: " + error.message()};
  co_return payload;
}

asio::awaitable<Result<wire::Bytes>> CoordinatorSession::Exchange(BrokerConnection& connection,
                                                                  const wire::Bytes& request) {
  if (connection.tls) co_return co_await ExchangeOn(*connection.tls, request);
  co_return co_await ExchangeOn(*connection.plain, request);
}

// Connects to `address` and checks the broker there speaks what the session needs.
asio::awaitable<Result<BrokerConnection>> CoordinatorSession::Open(Address address) {
  auto stream = co_await Connect(address);
  if (!stream) co_return stream.error();
  stream->where = address.host + ":" + address.port;
  const std::int32_t id = next_correlation_id_++;
  auto payload = co_await Exchange(*stream, wire::ApiVersionsRequest(id, options_.client_id));
  if (!payload) co_return Error{"ApiVersions: " + payload.error().message};
  auto versions = wire::ParseApiVersionsResponse(*payload, id);
  if (!versions) co_return versions.error();
  if (auto lacking = check_(*versions, stream->where)) {
    unsupported_ = true;
    co_return Error{*lacking};
  }
  stream->versions = std::move(versions).value();
  if (options_.sasl_plain) {
    if (auto refused = co_await AuthenticatePlain(*stream)) co_return *refused;
  }
  co_return stream;
}

// SASL/PLAIN on a connection that has only asked ApiVersions (which a SASL listener answers
// before authentication); until it succeeds the broker answers nothing else.
asio::awaitable<std::optional<Error>> CoordinatorSession::AuthenticatePlain(
    BrokerConnection& connection) {
  const std::string where = " with " + connection.where + ": ";
  if (!Supports(connection.versions, wire::kSaslHandshake, wire::kSaslHandshakeVersion) ||
      !Supports(connection.versions, wire::kSaslAuthenticate, wire::kSaslAuthenticateVersion)) {
    co_return Error{"SASL" + where + "the broker lacks SaslHandshake v1 or SaslAuthenticate v1"};
  }
  const SaslPlainCredentials& credentials = *options_.sasl_plain;
  std::int32_t id = next_correlation_id_++;
  auto payload =
      co_await Exchange(connection, wire::SaslHandshakeRequest(id, options_.client_id, "PLAIN"));
  if (!payload) co_return Error{"SaslHandshake" + where + payload.error().message};
  if (auto refused = wire::ParseSaslHandshakeResponse(*payload, id, "PLAIN")) {
    co_return Error{"SaslHandshake" + where + refused->message};
  }
  id = next_correlation_id_++;
  payload = co_await Exchange(
      connection, wire::SaslPlainAuthenticateRequest(id, options_.client_id, credentials.username,
                                                     credentials.password));
  if (!payload) co_return Error{"SaslAuthenticate" + where + payload.error().message};
  if (auto refused = wire::ParseSaslAuthenticateResponse(*payload, id)) {
    co_return Error{"SaslAuthenticate" + where + refused->message};
  }
  co_return std::nullopt;
}

// One connection to a coordinator, taking its batches until none is left.
asio::awaitable<void> CoordinatorSession::Drain(std::shared_ptr<CoordinatorWork> work) {
  auto stream = co_await Open(work->address);
  if (!stream) {  // its batches go to the coordinator's other connections, or back
    Fail(stream.error().message);
    co_return;
  }
  while (work->next < work->batches.size()) {
    const Batch& batch = work->batches[work->next++];
    if (auto failed = co_await send_(*this, *stream, batch.indices)) {
      Fail(std::move(*failed));
      co_return;
    }
  }
}

// The first bootstrap server that speaks what the session needs; nullopt (and a failure) if none.
asio::awaitable<std::optional<BrokerConnection>> CoordinatorSession::OpenBootstrap() {
  std::string failures;
  for (const std::string& server : options_.bootstrap_servers) {
    auto stream = co_await Open(ParseAddress(server));
    if (stream) co_return std::move(stream).value();
    failures += (failures.empty() ? "" : "; ") + stream.error().message;
  }
  Fail(failures.empty() ? "no bootstrap server" : failures);
  co_return std::nullopt;
}

asio::awaitable<void> CoordinatorSession::Locate() {
  // A bootstrap server that speaks the batched requests locates the coordinators.
  std::optional<BrokerConnection> bootstrap = co_await OpenBootstrap();
  if (!bootstrap) co_return;

  // node id -> the coordinator's work; groups whose coordinator is not known are left out.
  std::map<std::int32_t, std::shared_ptr<CoordinatorWork>> work;
  constexpr std::size_t kKeysPerRequest = 1000;
  std::unordered_map<std::string_view, std::size_t> index_of;
  for (std::size_t index = 0; index < ids_.size(); ++index) index_of.emplace(ids_[index], index);
  for (std::size_t begin = 0; begin < ids_.size(); begin += kKeysPerRequest) {
    std::vector<std::string_view> keys(
        ids_.begin() + static_cast<std::ptrdiff_t>(begin),
        ids_.begin() + static_cast<std::ptrdiff_t>(std::min(ids_.size(), begin + kKeysPerRequest)));
    const std::int32_t id = next_correlation_id_++;
    auto payload =
        co_await Exchange(*bootstrap, wire::FindCoordinatorRequest(id, options_.client_id, keys));
    if (!payload) {
      Fail("FindCoordinator: " + payload.error().message);
      co_return;
    }
    auto coordinators = wire::ParseFindCoordinatorResponse(*payload, id);
    if (!coordinators) {
      Fail(coordinators.error().message);
      co_return;
    }
    for (const wire::Coordinator& coordinator : *coordinators) {
      const auto found = index_of.find(coordinator.group);
      if (found == index_of.end()) continue;
      if (coordinator.error_code != 0) {
        lookup_errors_[found->second] = coordinator.error_code;
        continue;
      }
      auto& node = work[coordinator.node_id];
      if (!node) {
        node = std::make_shared<CoordinatorWork>();
        node->address = {coordinator.host, std::to_string(coordinator.port)};
      }
      if (node->batches.empty() ||
          node->batches.back().indices.size() >= options_.groups_per_request) {
        node->batches.emplace_back();
      }
      node->batches.back().indices.push_back(found->second);
    }
  }
  for (auto& [node_id, node] : work) {
    const auto connections = std::min<std::size_t>(
        node->batches.size(),
        static_cast<std::size_t>(std::max(1, options_.connections_per_coordinator)));
    for (std::size_t c = 0; c < connections; ++c) {
      asio::co_spawn(io_, Drain(node), Completion(api_));
    }
  }
}

void CoordinatorSession::Run(std::chrono::milliseconds total_timeout) {
  asio::co_spawn(io_, Locate(), Completion("FindCoordinator"));
  RunIo(total_timeout);
}

// One connection to a broker, for one exchange.
asio::awaitable<void> CoordinatorSession::Visit(Address address, BrokerSender send) {
  auto stream = co_await Open(std::move(address));
  if (!stream) {
    Fail(stream.error().message);
    co_return;
  }
  if (auto failed = co_await send(*this, *stream)) Fail(std::move(*failed));
}

asio::awaitable<void> CoordinatorSession::VisitBrokers(BrokerSender send) {
  std::optional<BrokerConnection> bootstrap = co_await OpenBootstrap();
  if (!bootstrap) co_return;
  const std::int32_t id = next_correlation_id_++;
  auto payload =
      co_await Exchange(*bootstrap, wire::DescribeClusterRequest(id, options_.client_id));
  if (!payload) {
    Fail("DescribeCluster: " + payload.error().message);
    co_return;
  }
  auto brokers = wire::ParseDescribeClusterResponse(*payload, id);
  if (!brokers) {
    Fail(brokers.error().message);
    co_return;
  }
  if (brokers->empty()) Fail("DescribeCluster named no broker");
  std::set<std::pair<std::string, std::int32_t>> visited;  // a broker named twice is asked once
  for (const wire::Broker& broker : *brokers) {
    if (!visited.emplace(broker.host, broker.port).second) continue;
    asio::co_spawn(io_, Visit({broker.host, std::to_string(broker.port)}, send), Completion(api_));
  }
}

void CoordinatorSession::RunOnEveryBroker(std::chrono::milliseconds total_timeout,
                                          BrokerSender send) {
  asio::co_spawn(io_, VisitBrokers(std::move(send)), Completion("DescribeCluster"));
  RunIo(total_timeout);
}

void CoordinatorSession::RunIo(std::chrono::milliseconds total_timeout) {
  io_.run_for(total_timeout);
  // Still running at the deadline: the pending coroutines are dropped with the io_context, and
  // whatever they had not answered stays unanswered.
  if (!io_.stopped()) {
    io_.stop();
    Fail("not all answered within " + std::to_string(total_timeout.count()) + "ms");
  }
}

}  // namespace lagsight::kafka
