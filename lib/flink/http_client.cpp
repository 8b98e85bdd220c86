#include "flink/http_client.h"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <deque>
#include <variant>

#include "common/tls_client.h"

namespace lagsight::flink {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace beast_http = boost::beast::http;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

struct Connection {
  std::variant<std::unique_ptr<PlainStream>, std::unique_ptr<TlsStream>> stream;
  beast::flat_buffer buffer;
};

constexpr std::uint32_t kMaxHeaderBytes = 64 * 1024;

template <typename Stream>
beast::tcp_stream& Lowest(Stream& stream) {
  return beast::get_lowest_layer(stream);
}

}  // namespace

struct HttpClient::Impl {
  asio::any_io_executor executor;
  HttpClientOptions options;
  bool tls = false;
  std::string host;
  std::string port;
  std::string path_prefix;
  std::unique_ptr<asio::ssl::context> tls_context;
  std::vector<std::shared_ptr<Connection>> idle;
  int in_flight = 0;
  // Requests waiting for a slot, oldest first. Shared with the waiting coroutine, so releasing a
  // slot never touches a timer whose coroutine is already gone (e.g. during shutdown).
  std::deque<std::shared_ptr<asio::steady_timer>> waiting;

  asio::awaitable<Result<std::shared_ptr<Connection>>> Connect(Clock::time_point deadline) {
    beast::error_code error;
    auto resolver = std::make_shared<tcp::resolver>(executor);
    asio::steady_timer resolve_timer(executor, deadline);
    resolve_timer.async_wait([resolver](beast::error_code timer_error) {
      if (!timer_error) resolver->cancel();
    });
    const auto endpoints = co_await resolver->async_resolve(
        host, port, asio::redirect_error(asio::use_awaitable, error));
    resolve_timer.cancel();
    if (error) co_return Error{"resolving " + host + ": " + error.message()};

    auto connection = std::make_shared<Connection>();
    if (!tls) {
      auto stream = std::make_unique<PlainStream>(executor);
      stream->expires_at(deadline);
      co_await stream->async_connect(endpoints, asio::redirect_error(asio::use_awaitable, error));
      if (error) co_return Error{"connecting to " + host + ":" + port + ": " + error.message()};
      connection->stream = std::move(stream);
      co_return connection;
    }
    auto stream = std::make_unique<TlsStream>(executor, *tls_context);
    Lowest(*stream).expires_at(deadline);
    co_await Lowest(*stream).async_connect(endpoints,
                                           asio::redirect_error(asio::use_awaitable, error));
    if (error) co_return Error{"connecting to " + host + ":" + port + ": " + error.message()};
    if (auto failed = PrepareTlsClient(*stream, host, !options.insecure_skip_verify)) {
      co_return *failed;
    }
    co_await stream->async_handshake(asio::ssl::stream_base::client,
                                     asio::redirect_error(asio::use_awaitable, error));
    if (error) co_return Error{"TLS handshake with " + host + ": " + error.message()};
    connection->stream = std::move(stream);
    co_return connection;
  }

  template <typename Stream>
  asio::awaitable<Result<HttpResponse>> Exchange(Stream& stream, beast::flat_buffer& buffer,
                                                 const std::string& target, bool& keep_alive) {
    beast::error_code error;
    beast_http::request<beast_http::empty_body> request(beast_http::verb::get, path_prefix + target,
                                                        11);
    request.set(beast_http::field::host, host);
    request.set(beast_http::field::user_agent, "lagsight");
    request.set(beast_http::field::accept, "application/json");
    if (!options.authorization.empty())
      request.set(beast_http::field::authorization, options.authorization);
    request.keep_alive(true);
    co_await beast_http::async_write(stream, request,
                                     asio::redirect_error(asio::use_awaitable, error));
    if (error) co_return Error{"sending " + target + ": " + error.message()};

    // The header first, so a declared length is checked before anything is allocated for it
    // (Boost 1.74's string_body reserves the declared length whatever the body limit says).
    const std::uint64_t cap = options.max_body_bytes;
    const auto too_large = [&] {
      return Error{target + ": response larger than " + std::to_string(cap) +
                   " bytes (max_response_bytes)"};
    };
    beast_http::response_parser<beast_http::buffer_body> parser;
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(cap);
    co_await beast_http::async_read_header(stream, buffer, parser,
                                           asio::redirect_error(asio::use_awaitable, error));
    if (error == beast_http::error::body_limit) co_return too_large();
    if (error) co_return Error{"reading " + target + ": " + error.message()};
    const auto declared = parser.content_length();
    if (declared && *declared > cap) {
      co_return Error{target + ": response declares Content-Length " + std::to_string(*declared) +
                      ", larger than " + std::to_string(cap) + " bytes (max_response_bytes)"};
    }
    std::string body;
    if (declared) body.reserve(*declared);
    // Chunked and read-to-close bodies have no declared length: count them as they arrive.
    std::array<char, 16 * 1024> piece;
    while (!parser.is_done()) {
      parser.get().body().data = piece.data();
      parser.get().body().size = piece.size();
      co_await beast_http::async_read_some(stream, buffer, parser,
                                           asio::redirect_error(asio::use_awaitable, error));
      if (error == beast_http::error::need_buffer) error = {};
      if (error == beast_http::error::body_limit) co_return too_large();
      if (error) co_return Error{"reading " + target + ": " + error.message()};
      const std::size_t received = piece.size() - parser.get().body().size;
      if (body.size() + received > cap) co_return too_large();
      body.append(piece.data(), received);
    }
    keep_alive = parser.get().keep_alive();
    co_return HttpResponse{parser.get().result_int(), std::move(body)};
  }

  template <typename Stream>
  static void Close(Stream& stream) {
    beast::error_code ignored;
    Lowest(stream).socket().close(ignored);
  }

  asio::awaitable<Result<HttpResponse>> Attempt(const std::string& target,
                                                Clock::time_point deadline, bool allow_reuse,
                                                bool& reused) {
    std::shared_ptr<Connection> connection;
    reused = allow_reuse && !idle.empty();
    if (reused) {
      connection = std::move(idle.back());
      idle.pop_back();
    } else {
      auto connected = co_await Connect(deadline);
      if (!connected) co_return connected.error();
      connection = std::move(connected).value();
    }
    // One watchdog over the whole exchange: closing the socket at the deadline ends the write or
    // read under way, however slowly the server keeps sending.
    std::visit([&](auto& stream) { Lowest(*stream).expires_at(deadline); }, connection->stream);
    asio::steady_timer watchdog(executor, deadline);
    watchdog.async_wait([weak = std::weak_ptr<Connection>(connection)](beast::error_code error) {
      if (error) return;
      if (const auto alive = weak.lock()) std::visit([](auto& s) { Close(*s); }, alive->stream);
    });
    bool keep_alive = false;
    Result<HttpResponse> response = Error{"no response"};
    if (connection->stream.index() == 0) {
      response = co_await Exchange(*std::get<0>(connection->stream), connection->buffer, target,
                                   keep_alive);
    } else {
      response = co_await Exchange(*std::get<1>(connection->stream), connection->buffer, target,
                                   keep_alive);
    }
    watchdog.cancel();
    if (response && keep_alive && Clock::now() < deadline &&
        idle.size() < static_cast<std::size_t>(options.max_in_flight)) {
      idle.push_back(std::move(connection));
    }
    co_return response;
  }

  // Releases the slot taken by a request and lets the next waiting one go.
  struct Slot {
    std::shared_ptr<Impl> impl;
    ~Slot() {
      --impl->in_flight;
      if (!impl->waiting.empty()) {
        impl->waiting.front()->cancel();
        impl->waiting.pop_front();
      }
    }
  };
};

HttpClient::HttpClient(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpClient::~HttpClient() = default;

Result<std::unique_ptr<HttpClient>> HttpClient::Create(asio::any_io_executor executor,
                                                       HttpClientOptions options) {
  // RE2: linear in the URL's length (std::regex recursed once per character).
  // Host: a name, IPv4 or bracketed IPv6; path: printable ASCII only (no CR, LF or spaces).
  static const RE2 kUrl(
      R"((https?)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~%-]+)(?::([0-9]{1,5}))?(/[\x21-\x7e]*)?)",
      RE2::Latin1);
  std::string scheme, host, port, path;
  if (!RE2::FullMatch(options.base_url, kUrl, &scheme, &host, &port, &path)) {
    constexpr std::size_t kShown = 200;  // a megabyte of URL would not help the log
    const std::string shown = options.base_url.size() > kShown
                                  ? options.base_url.substr(0, kShown) + "..."
                                  : options.base_url;
    return Error{"\"" + shown + "\" is not an http:// or https:// URL"};
  }
  auto impl = std::make_shared<Impl>();
  impl->tls = scheme == "https";
  impl->host = host;
  if (impl->host.front() == '[') impl->host = impl->host.substr(1, impl->host.size() - 2);
  // Neither group can match empty text: empty means absent.
  impl->port = !port.empty() ? port : (impl->tls ? "443" : "80");
  impl->path_prefix = path;
  while (!impl->path_prefix.empty() && impl->path_prefix.back() == '/')
    impl->path_prefix.pop_back();
  if (impl->tls) {
    impl->tls_context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
    beast::error_code error;
    if (options.ca_file.empty()) {
      impl->tls_context->set_default_verify_paths(error);
    } else {
      impl->tls_context->load_verify_file(options.ca_file, error);
    }
    if (error) return Error{"TLS CA \"" + options.ca_file + "\": " + error.message()};
    if (!options.cert_file.empty()) {
      impl->tls_context->use_certificate_chain_file(options.cert_file, error);
      if (error) return Error{"TLS certificate \"" + options.cert_file + "\": " + error.message()};
      impl->tls_context->use_private_key_file(options.key_file, asio::ssl::context::pem, error);
      if (error) return Error{"TLS key \"" + options.key_file + "\": " + error.message()};
    }
    impl->tls_context->set_verify_mode(options.insecure_skip_verify ? asio::ssl::verify_none
                                                                    : asio::ssl::verify_peer);
  }
  impl->executor = std::move(executor);
  impl->options = std::move(options);
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(impl)));
}

asio::awaitable<Result<HttpResponse>> HttpClient::Get(std::string target,
                                                      Clock::time_point deadline) {
  const std::shared_ptr<Impl> impl = impl_;  // outlives the client if the frame does
  const Clock::time_point started = Clock::now();
  deadline = std::min(deadline, started + impl->options.timeout);
  const auto timed_out = [&] {
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count();
    return Error{"GET " + target + ": no complete response within the deadline (" +
                 std::to_string(waited) + " ms)"};
  };
  while (impl->in_flight >= impl->options.max_in_flight) {
    if (Clock::now() >= deadline) co_return timed_out();
    auto turn = std::make_shared<asio::steady_timer>(impl->executor, deadline);
    impl->waiting.push_back(turn);
    beast::error_code ignored;
    co_await turn->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    // Woken by the deadline rather than a released slot: leave the queue, so the next release
    // wakes a request that still waits.
    std::erase(impl->waiting, turn);
  }
  ++impl->in_flight;
  const Impl::Slot slot{impl};

  // A reused keep-alive connection may have been closed by the server meanwhile: on failure,
  // try once more on a fresh one. (Two plain calls rather than a loop: GCC 12 miscompiles some
  // co_await-in-loop shapes.)
  bool reused = false;
  Result<HttpResponse> response =
      co_await impl->Attempt(target, deadline, /*allow_reuse=*/true, reused);
  if (!response && reused && Clock::now() < deadline) {
    response = co_await impl->Attempt(target, deadline, /*allow_reuse=*/false, reused);
  }
  if (!response && Clock::now() >= deadline) co_return timed_out();
  co_return response;
}

}  // namespace lagsight::flink
