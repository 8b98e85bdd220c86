#include "kafka/offset_fetch_client.h"

// clang-format off
// First: Boost 1.74's awaitable.hpp needs <utility> before it.
#include "common/awaitable.h"
// clang-format on

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <cctype>
#include <filesystem>
#include <memory>
#include <set>
#include <unordered_map>

#include "common/tls_client.h"
#include "kafka/wire.h"

namespace lagsight::kafka {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

struct Address {
  std::string host;
  std::string port;
};

}  // namespace

// Host:port -> its endpoints, kept across Fetch calls.
struct ResolvedAddresses : std::map<std::string, tcp::resolver::results_type> {};

struct TlsContext {
  asio::ssl::context context{asio::ssl::context::tls_client};
};

namespace {

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One connection to a broker: TCP, or TLS over it.
struct BrokerConnection {
  std::unique_ptr<PlainStream> plain;
  std::unique_ptr<TlsStream> tls;
};

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

std::string Lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

namespace {

// "host:port", "[v6]:port" or "host", after an optional "proto://" (librdkafka accepts all).
Address ParseAddress(std::string_view server) {
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

bool Supports(const std::map<std::int16_t, wire::VersionRange>& versions, std::int16_t api,
              std::int16_t version) {
  const auto found = versions.find(api);
  return found != versions.end() && found->second.min <= version && version <= found->second.max;
}

// One Fetch: its io_context, the answers, and the work left. Declared so that the io_context
// (and with it every coroutine frame still pending at a timeout) goes before what they refer to.
struct Session {
  const BatchedOffsetFetcherOptions& options;
  TlsContext* tls;  // null: PLAINTEXT
  std::chrono::milliseconds request_timeout;
  const std::vector<std::string>& ids;
  ResolvedAddresses& resolved;
  BatchedOffsets answer;
  std::int32_t next_correlation_id = 1;
  asio::io_context io{1};

  struct Batch {
    std::vector<std::size_t> indices;  // into ids
  };
  // The batches of one coordinator, taken in turn by its connections.
  struct CoordinatorWork {
    Address address;
    std::vector<Batch> batches;
    std::size_t next = 0;
  };

  // Keeps the first failure: the one that explains the others.
  void Fail(std::string failure) {
    if (answer.failure.empty()) answer.failure = std::move(failure);
  }

  // A coroutine's completion: one that threw (a failed allocation) is a failure like any other,
  // not a silent one.
  auto Completion(const char* what) {
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
  asio::awaitable<Result<tcp::resolver::results_type>> Resolve(const Address& address,
                                                               Clock::time_point deadline) {
    const std::string where = address.host + ":" + address.port;
    if (const auto found = resolved.find(where); found != resolved.end()) co_return found->second;
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
    auto resolver = std::make_shared<tcp::resolver>(io);
    asio::steady_timer resolve_timer(io, deadline);
    resolve_timer.async_wait([resolver](beast::error_code timer_error) {
      if (!timer_error) resolver->cancel();
    });
    auto endpoints = co_await resolver->async_resolve(
        address.host, address.port, asio::redirect_error(asio::use_awaitable, error));
    resolve_timer.cancel();
    if (error) co_return Error{"resolving " + where + ": " + error.message()};
    resolved[where] = endpoints;
    co_return endpoints;
  }

  asio::awaitable<Result<BrokerConnection>> Connect(Address address) {
    const auto deadline = Clock::now() + request_timeout;
    const std::string where = address.host + ":" + address.port;
    auto endpoints = co_await Resolve(address, deadline);
    if (!endpoints) co_return endpoints.error();
    beast::error_code error;
    auto stream = std::make_unique<PlainStream>(io);
    stream->expires_at(deadline);
    co_await stream->async_connect(*endpoints, asio::redirect_error(asio::use_awaitable, error));
    if (error) {
      resolved.erase(where);  // resolved afresh next time: the broker may have moved
      co_return Error{"connecting to " + where + ": " + error.message()};
    }
    stream->socket().set_option(tcp::no_delay(true), error);
    BrokerConnection connection;
    if (tls == nullptr) {
      connection.plain = std::move(stream);
      co_return connection;
    }
    connection.tls = std::make_unique<TlsStream>(std::move(*stream), tls->context);
    if (auto failed =
            PrepareTlsClient(*connection.tls, address.host,
                             options.tls->verify_certificate && options.tls->verify_host_name)) {
      co_return *failed;
    }
    co_await connection.tls->async_handshake(asio::ssl::stream_base::client,
                                             asio::redirect_error(asio::use_awaitable, error));
    if (error) co_return Error{"TLS handshake with " + where + ": " + error.message()};
    co_return connection;
  }

  // Sends one request frame and reads the answer's payload.
  template <typename Stream>
  asio::awaitable<Result<wire::Bytes>> ExchangeOn(Stream& stream, const wire::Bytes& request) {
    beast::error_code error;
    beast::get_lowest_layer(stream).expires_after(request_timeout);
    co_await asio::async_write(stream, asio::buffer(request),
                               asio::redirect_error(asio::use_awaitable, error));
    if (error) co_return Error{"sending: " + error.message()};
    std::array<std::uint8_t, 4> prefix{};
    co_await asio::async_read(stream, asio::buffer(prefix),
                              asio::redirect_error(asio::use_awaitable, error));
    if (error) co_return Error{"reading: " + error.message()};
    const std::int32_t size = wire::FrameSize(prefix);
    if (size <= 0 || static_cast<std::size_t>(size) > options.max_response_bytes) {
      co_return Error{"answer of " + std::to_string(size) + " bytes"};
    }
    wire::Bytes payload(static_cast<std::size_t>(size));
    co_await asio::async_read(stream, asio::buffer(payload),
                              asio::redirect_error(asio::use_awaitable, error));
    if (error) co_return Error{"reading: " + error.message()};
    co_return payload;
  }

  asio::awaitable<Result<wire::Bytes>> Exchange(BrokerConnection& connection,
                                                const wire::Bytes& request) {
    if (connection.tls) co_return co_await ExchangeOn(*connection.tls, request);
    co_return co_await ExchangeOn(*connection.plain, request);
  }

  // Connects to `address` and checks the broker there speaks the batched requests.
  asio::awaitable<Result<BrokerConnection>> Open(Address address) {
    auto stream = co_await Connect(address);
    if (!stream) co_return stream.error();
    const std::int32_t id = next_correlation_id++;
    auto payload = co_await Exchange(*stream, wire::ApiVersionsRequest(id, options.client_id));
    if (!payload) co_return Error{"ApiVersions: " + payload.error().message};
    auto versions = wire::ParseApiVersionsResponse(*payload, id);
    if (!versions) co_return versions.error();
    if (!Supports(*versions, wire::kFindCoordinator, wire::kFindCoordinatorVersion) ||
        !Supports(*versions, wire::kOffsetFetch, wire::kOffsetFetchVersion)) {
      co_return Error{"the broker at " + address.host + ":" + address.port +
                      " predates OffsetFetch v8 and FindCoordinator v4 (Kafka 3.0, KIP-709)"};
    }
    co_return stream;
  }

  // One connection to a coordinator, taking its batches until none is left.
  asio::awaitable<void> Drain(std::shared_ptr<CoordinatorWork> work) {
    const std::string where = work->address.host + ":" + work->address.port;
    auto stream = co_await Open(work->address);
    if (!stream) {  // its batches go to the coordinator's other connections, or back
      Fail(stream.error().message);
      co_return;
    }
    while (work->next < work->batches.size()) {
      const Batch& batch = work->batches[work->next++];
      std::vector<std::string_view> groups;
      std::unordered_map<std::string_view, std::size_t> index_of;
      for (std::size_t index : batch.indices) {
        groups.push_back(ids[index]);
        index_of.emplace(ids[index], index);
      }
      const std::int32_t id = next_correlation_id++;
      auto payload =
          co_await Exchange(*stream, wire::OffsetFetchRequest(id, options.client_id, groups));
      if (!payload) {
        Fail("OffsetFetch to " + where + ": " + payload.error().message);
        co_return;
      }
      auto fetched = wire::ParseOffsetFetchResponse(*payload, id, groups.size());
      if (!fetched) {
        Fail("OffsetFetch to " + where + ": " + fetched.error().message);
        co_return;
      }
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
    }
  }

  asio::awaitable<void> Run() {
    // A bootstrap server that speaks the batched requests locates the coordinators.
    std::optional<BrokerConnection> bootstrap;
    std::string failures;
    for (const std::string& server : options.bootstrap_servers) {
      auto stream = co_await Open(ParseAddress(server));
      if (stream) {
        bootstrap = std::move(stream).value();
        break;
      }
      failures += (failures.empty() ? "" : "; ") + stream.error().message;
    }
    if (!bootstrap) {
      Fail(failures.empty() ? "no bootstrap server" : failures);
      co_return;
    }

    // node id -> the coordinator's work; groups whose coordinator is not known are left out.
    std::map<std::int32_t, std::shared_ptr<CoordinatorWork>> work;
    constexpr std::size_t kKeysPerRequest = 1000;
    std::unordered_map<std::string_view, std::size_t> index_of;
    for (std::size_t index = 0; index < ids.size(); ++index) index_of.emplace(ids[index], index);
    for (std::size_t begin = 0; begin < ids.size(); begin += kKeysPerRequest) {
      std::vector<std::string_view> keys(
          ids.begin() + static_cast<std::ptrdiff_t>(begin),
          ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), begin + kKeysPerRequest)));
      const std::int32_t id = next_correlation_id++;
      auto payload =
          co_await Exchange(*bootstrap, wire::FindCoordinatorRequest(id, options.client_id, keys));
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
        if (found == index_of.end() || coordinator.error_code != 0) continue;
        auto& node = work[coordinator.node_id];
        if (!node) {
          node = std::make_shared<CoordinatorWork>();
          node->address = {coordinator.host, std::to_string(coordinator.port)};
        }
        if (node->batches.empty() ||
            node->batches.back().indices.size() >= options.groups_per_request) {
          node->batches.emplace_back();
        }
        node->batches.back().indices.push_back(found->second);
      }
    }
    for (auto& [node_id, node] : work) {
      const auto connections = std::min<std::size_t>(
          node->batches.size(),
          static_cast<std::size_t>(std::max(1, options.connections_per_coordinator)));
      for (std::size_t c = 0; c < connections; ++c) {
        asio::co_spawn(io, Drain(node), Completion("OffsetFetch"));
      }
    }
  }
};

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
    : options_(std::move(options)), resolved_(std::make_unique<ResolvedAddresses>()) {
  if (!options_.tls) return;
  try {
    auto context = MakeTlsContext(*options_.tls);
    if (context) {
      tls_ = std::move(context).value();
    } else {
      tls_failure_ = "TLS: " + context.error().message;
    }
  } catch (const std::exception& error) {
    // asio's context throws when OpenSSL cannot make one (out of memory): the groups then go
    // to librdkafka, as with any other TLS failure, rather than the cluster's clients failing.
    tls_failure_ = std::string("TLS: ") + error.what();
  }
}

BatchedOffsetFetcher::~BatchedOffsetFetcher() = default;

BatchedOffsets BatchedOffsetFetcher::Fetch(const std::vector<std::string>& ids,
                                           std::chrono::milliseconds request_timeout,
                                           std::chrono::milliseconds total_timeout) {
  Session session{options_, tls_.get(), request_timeout, ids, *resolved_, {}};
  session.answer.offsets.resize(ids.size());
  if (ids.empty()) return std::move(session.answer);
  if (!tls_failure_.empty()) {
    session.Fail(tls_failure_);
    return std::move(session.answer);
  }
  asio::co_spawn(session.io, session.Run(), session.Completion("FindCoordinator"));
  session.io.run_for(total_timeout);
  // Still running at the deadline: the pending coroutines are dropped with the io_context, and
  // whatever they had not answered goes to the per-group path.
  if (!session.io.stopped()) {
    session.io.stop();
    session.Fail("not all answered within " + std::to_string(total_timeout.count()) + "ms");
  }
  return std::move(session.answer);
}

}  // namespace lagsight::kafka
