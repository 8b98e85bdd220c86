#include "http/server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/detect_ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <type_traits>

#include "http/basic_auth.h"
#include "http/server_security.h"

namespace lagsight::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace beast_http = boost::beast::http;
using asio::ip::tcp;

struct Server::State {
  State(asio::io_context& io, Endpoints e, ServerLimits l, std::string web_config_file)
      : context(io),
        acceptor(io),
        retry_timer(io),
        endpoints(std::move(e)),
        limits(l),
        web_config_path(std::move(web_config_file)) {}

  asio::io_context& context;
  tcp::acceptor acceptor;
  asio::steady_timer retry_timer;
  Endpoints endpoints;
  ServerLimits limits;
  std::string web_config_path;
  std::optional<WebConfigFile> web_config;  // loaded by Listen() when a path is given
  // Runs the bcrypt checks off the event loop; one thread, so password guessing is also slow.
  std::unique_ptr<asio::thread_pool> verifier;
  std::size_t open_connections = 0;
  bool stopped = false;
};

namespace {

// Counts a connection from accept to close, through TLS detection and handshake.
class OpenConnection {
 public:
  explicit OpenConnection(std::shared_ptr<Server::State> state) : state_(std::move(state)) {
    ++state_->open_connections;
  }
  OpenConnection(OpenConnection&& other) noexcept = default;
  OpenConnection& operator=(OpenConnection&&) = delete;
  ~OpenConnection() {
    if (state_) --state_->open_connections;
  }
  Server::State& state() const { return *state_; }
  const std::shared_ptr<Server::State>& shared_state() const { return state_; }

 private:
  std::shared_ptr<Server::State> state_;
};

// One HTTP/1.1 connection over `Stream`: beast::tcp_stream, or an ssl_stream on top of it.
template <class Stream>
class Connection : public std::enable_shared_from_this<Connection<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  // `buffer` holds bytes already read from the socket (the start of a TLS handshake).
  Connection(Stream stream, beast::flat_buffer buffer, OpenConnection slot,
             std::shared_ptr<const BasicAuth> auth)
      : stream_(std::move(stream)),
        buffer_(std::move(buffer)),
        slot_(std::move(slot)),
        auth_(std::move(auth)) {}

  void Start() {
    if constexpr (kTls) {
      Handshake();
    } else {
      ReadRequest();
    }
  }

 private:
  const ServerLimits& limits() const { return slot_.state().limits; }
  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }

  void Handshake() {
    tcp().expires_after(limits().read_timeout);
    stream_.async_handshake(
        asio::ssl::stream_base::server, buffer_.data(),
        [self = this->shared_from_this()](beast::error_code error, std::size_t used) {
          self->OnHandshake(error, used);
        });
  }

  void OnHandshake(beast::error_code error, std::size_t used) {
    if (error) {
      // Wrong CA, no client certificate, protocol too old: the client's log says which.
      spdlog::debug("http: TLS handshake failed: {}", error.message());
      return;
    }
    buffer_.consume(used);
    ReadRequest();
  }

  void ReadRequest() {
    parser_.emplace();
    parser_->header_limit(limits().header_bytes);
    parser_->body_limit(limits().body_bytes);
    tcp().expires_after(limits().read_timeout);
    beast_http::async_read(stream_, buffer_, *parser_,
                           [self = this->shared_from_this()](beast::error_code error, std::size_t) {
                             self->OnRead(error);
                           });
  }

  void OnRead(beast::error_code error) {
    if (error == beast_http::error::end_of_stream) return Close();
    if (error) {
      if (error == beast_http::error::header_limit || error == beast_http::error::body_limit) {
        return RespondAndClose(beast_http::status::payload_too_large, "request too large");
      }
      if (error.category() ==
          beast_http::make_error_code(beast_http::error::bad_method).category()) {
        return RespondAndClose(beast_http::status::bad_request, "malformed HTTP request");
      }
      if (error != beast::error::timeout && error != asio::error::operation_aborted) {
        spdlog::debug("http: dropping connection: {}", error.message());
      }
      return;  // the socket closes with this object
    }
    if (!auth_) return Respond();
    const auto authorization = parser_->get()[beast_http::field::authorization];
    auto credentials = ParseBasicAuthorization({authorization.data(), authorization.size()});
    if (!credentials) return Unauthorized();
    if (auth_->VerifiedBefore(*credentials)) return Respond();
    // The slow path: bcrypt on the verifier thread, the answer back on the event loop. The
    // connection's handlers are moved along so its last reference never dies on that thread.
    asio::post(*slot_.state().verifier,
               [auth = auth_, credentials = std::move(*credentials),
                executor = stream_.get_executor(), self = this->shared_from_this()]() mutable {
                 const bool verified = auth->Verify(credentials);
                 asio::post(executor, [self = std::move(self), verified] {
                   verified ? self->Respond() : self->Unauthorized();
                 });
               });
  }

  void Respond() {
    response_ = Route(parser_->get(), slot_.state().endpoints);
    Write();
  }

  void Unauthorized() {
    response_ = Response(beast_http::status::unauthorized, parser_->get().version());
    response_.set(beast_http::field::www_authenticate, R"(Basic realm="lagsight")");
    response_.set(beast_http::field::content_type, "text/plain; charset=utf-8");
    response_.body() = "Unauthorized\n";
    response_.keep_alive(parser_->get().keep_alive());
    response_.prepare_payload();
    Write();
  }

  void RespondAndClose(beast_http::status status, std::string body) {
    response_ = Response(status, 11);
    response_.set(beast_http::field::content_type, "text/plain; charset=utf-8");
    response_.body() = std::move(body) + "\n";
    response_.keep_alive(false);
    response_.prepare_payload();
    Write();
  }

  void Write() {
    tcp().expires_after(limits().write_timeout);
    beast_http::async_write(stream_, response_,
                            [self = this->shared_from_this()](
                                beast::error_code error, std::size_t) { self->OnWrite(error); });
  }

  void OnWrite(beast::error_code error) {
    if (error) return;
    if (!response_.keep_alive() || slot_.state().stopped) return Close();
    response_ = {};
    ReadRequest();
  }

  void Close() {
    if constexpr (kTls) {
      // close_notify, bounded: a peer that never answers it does not keep the connection.
      tcp().expires_after(std::chrono::seconds(5));
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {});
    } else {
      beast::error_code ignored;
      tcp().socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  OpenConnection slot_;
  std::shared_ptr<const BasicAuth> auth_;
  std::optional<beast_http::request_parser<beast_http::string_body>> parser_;
  Response response_;
};

// The first bytes on a TLS listener: a TLS handshake goes on to a TLS connection; anything else
// (plain HTTP, most likely) gets a 400 that says what went wrong instead of a dropped socket.
class TlsDetector : public std::enable_shared_from_this<TlsDetector> {
 public:
  TlsDetector(tcp::socket socket, OpenConnection slot, ServerSecurity security)
      : stream_(std::move(socket)), slot_(std::move(slot)), security_(std::move(security)) {}

  void Start() {
    stream_.expires_after(slot_.state().limits.read_timeout);
    beast::async_detect_ssl(stream_, buffer_,
                            [self = shared_from_this()](beast::error_code error, bool is_tls) {
                              self->OnDetect(error, is_tls);
                            });
  }

 private:
  void OnDetect(beast::error_code error, bool is_tls) {
    if (error) return;
    if (is_tls) {
      using TlsStream = beast::ssl_stream<beast::tcp_stream>;
      std::make_shared<Connection<TlsStream>>(TlsStream(std::move(stream_), *security_.tls),
                                              std::move(buffer_), std::move(slot_),
                                              std::move(security_.auth))
          ->Start();
      return;
    }
    static const std::string kAnswer = [] {
      const std::string body = "Client sent an HTTP request to an HTTPS server.\n";
      return "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
             "Connection: close\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body;
    }();
    stream_.expires_after(slot_.state().limits.write_timeout);
    asio::async_write(stream_, asio::buffer(kAnswer),
                      [self = shared_from_this()](beast::error_code, std::size_t) {
                        beast::error_code ignored;
                        self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                      });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  OpenConnection slot_;
  ServerSecurity security_;  // the TLS context stays alive as long as the connection
};

void StartConnection(tcp::socket socket, const std::shared_ptr<Server::State>& state) {
  ServerSecurity security;
  if (state->web_config) security = state->web_config->Current();
  if (security.auth && !state->verifier) state->verifier = std::make_unique<asio::thread_pool>(1);
  OpenConnection slot(state);
  if (security.tls) {
    std::make_shared<TlsDetector>(std::move(socket), std::move(slot), std::move(security))->Start();
    return;
  }
  std::make_shared<Connection<beast::tcp_stream>>(beast::tcp_stream(std::move(socket)),
                                                  beast::flat_buffer(), std::move(slot),
                                                  std::move(security.auth))
      ->Start();
}

void Accept(const std::shared_ptr<Server::State>& state) {
  if (state->stopped) return;
  state->acceptor.async_accept(
      state->context, [state](beast::error_code error, tcp::socket socket) {
        if (state->stopped) return;
        if (error) {
          // Out of file descriptors and similar: log, pause, keep accepting.
          spdlog::warn("http: accept failed: {}; retrying in 100ms", error.message());
          state->retry_timer.expires_after(std::chrono::milliseconds(100));
          state->retry_timer.async_wait([state](beast::error_code) { Accept(state); });
          return;
        }
        if (state->open_connections >= state->limits.max_connections) {
          spdlog::warn("http: refusing a connection: {} already open", state->open_connections);
        } else {
          StartConnection(std::move(socket), state);
        }
        Accept(state);
      });
}

}  // namespace

Server::Server(asio::io_context& context, Endpoints endpoints, ServerLimits limits,
               std::string web_config_file)
    : state_(std::make_shared<State>(context, std::move(endpoints), limits,
                                     std::move(web_config_file))) {}

Server::~Server() {
  Stop();
  // Checks still running post their answers to the io_context, which outlives this Server.
  if (state_->verifier) state_->verifier->join();
}

std::optional<Error> Server::Listen(const tcp::endpoint& endpoint) {
  if (!state_->web_config_path.empty()) {
    auto web_config = WebConfigFile::Load(state_->web_config_path);
    if (!web_config) return web_config.error();
    state_->web_config = std::move(web_config).value();
  }
  beast::error_code error;
  const auto fail = [&](const char* step) {
    return Error{std::string("cannot listen on ") + endpoint.address().to_string() + ":" +
                 std::to_string(endpoint.port()) + ": " + step + ": " + error.message()};
  };
  state_->acceptor.open(endpoint.protocol(), error);
  if (error) return fail("open");
  state_->acceptor.set_option(asio::socket_base::reuse_address(true), error);
  if (error) return fail("set SO_REUSEADDR");
  state_->acceptor.bind(endpoint, error);
  if (error) return fail("bind");
  state_->acceptor.listen(asio::socket_base::max_listen_connections, error);
  if (error) return fail("listen");
  Accept(state_);
  return std::nullopt;
}

tcp::endpoint Server::local_endpoint() const {
  beast::error_code ignored;
  return state_->acceptor.local_endpoint(ignored);
}

void Server::Stop() {
  if (state_->stopped) return;
  state_->stopped = true;
  beast::error_code ignored;
  state_->acceptor.close(ignored);
  state_->retry_timer.cancel();
}

}  // namespace lagsight::http
