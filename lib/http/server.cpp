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
#include <list>
#include <map>
#include <type_traits>

#include "http/basic_auth.h"
#include "http/server_security.h"

namespace lagsight::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace beast_http = boost::beast::http;
using asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;

struct OpenEntry;

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
  // Every open connection, oldest first, and how many each client address holds.
  std::list<std::shared_ptr<OpenEntry>> open;
  std::map<asio::ip::address, std::size_t> open_per_client;
  ConnectionCounts counts;
  bool stopped = false;
};

namespace {

// A connection object the server can close early to make room for a new one.
class Sheddable {
 public:
  virtual void Shed() = 0;

 protected:
  ~Sheddable() = default;
};

}  // namespace

// What the server knows of one open connection when it picks one to shed.
struct OpenEntry {
  asio::ip::address client;
  bool answering = false;  // a complete request is being answered: never shed
  bool served = false;     // answered a request before: shed after those that never did
  bool listed = true;
  std::weak_ptr<Sheddable> owner;  // the object holding the socket right now
  std::list<std::shared_ptr<OpenEntry>>::iterator position;
};

namespace {

void Unlist(Server::State& state, OpenEntry& entry) {
  if (!entry.listed) return;
  entry.listed = false;
  state.open.erase(entry.position);
  const auto count = state.open_per_client.find(entry.client);
  if (--count->second == 0) state.open_per_client.erase(count);
}

// Lists a connection from accept to close, through TLS detection and handshake.
class OpenConnection {
 public:
  OpenConnection(std::shared_ptr<Server::State> state, const asio::ip::address& client)
      : state_(std::move(state)), entry_(std::make_shared<OpenEntry>()) {
    entry_->client = client;
    entry_->position = state_->open.insert(state_->open.end(), entry_);
    ++state_->open_per_client[client];
  }
  OpenConnection(OpenConnection&& other) noexcept = default;
  OpenConnection& operator=(OpenConnection&&) = delete;
  ~OpenConnection() {
    if (state_) Unlist(*state_, *entry_);
  }
  Server::State& state() const { return *state_; }
  const std::shared_ptr<Server::State>& shared_state() const { return state_; }
  void HeldBy(std::weak_ptr<Sheddable> owner) { entry_->owner = std::move(owner); }
  void Answering(bool answering) {
    entry_->answering = answering;
    if (!answering) entry_->served = true;
  }

 private:
  std::shared_ptr<Server::State> state_;
  std::shared_ptr<OpenEntry> entry_;
};

// Closes the oldest connection that `matches` and is not being answered, those that never
// completed a request first; false when there is none.
template <class Matches>
bool ShedOldest(Server::State& state, const Matches& matches) {
  for (const bool served : {false, true}) {
    for (const std::shared_ptr<OpenEntry>& entry : state.open) {
      if (entry->answering || entry->served != served || !matches(*entry)) continue;
      const std::shared_ptr<OpenEntry> shed = entry;  // Unlist erases the list's reference
      Unlist(state, *shed);
      spdlog::debug("http: closing the oldest {} connection from {} to make room",
                    served ? "idle" : "unfinished", shed->client.to_string());
      if (auto owner = shed->owner.lock()) owner->Shed();
      return true;
    }
  }
  return false;
}

// One HTTP/1.1 connection over `Stream`: beast::tcp_stream, or an ssl_stream on top of it.
template <class Stream>
class Connection : public std::enable_shared_from_this<Connection<Stream>>, public Sheddable {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  // `buffer` holds bytes already read from the socket (the start of a TLS handshake);
  // `request_deadline` is when the first request must have arrived in full.
  Connection(Stream stream, beast::flat_buffer buffer, OpenConnection slot,
             std::shared_ptr<const BasicAuth> auth, SteadyClock::time_point request_deadline)
      : stream_(std::move(stream)),
        buffer_(std::move(buffer)),
        slot_(std::move(slot)),
        auth_(std::move(auth)),
        request_deadline_(request_deadline) {}

  void Start() {
    slot_.HeldBy(this->weak_from_this());
    if constexpr (kTls) {
      Handshake();
    } else {
      ReadRequest();
    }
  }

  void Shed() override { tcp().close(); }

 private:
  const ServerLimits& limits() const { return slot_.state().limits; }
  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }

  void Handshake() {
    tcp().expires_at(request_deadline_);
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

  // A kept-alive connection with nothing pending waits up to idle_timeout for a first byte;
  // from then on the request must arrive within request_timeout.
  void AwaitNextRequest() {
    slot_.Answering(false);
    if (buffer_.size() > 0) {  // pipelined: the next request has started already
      request_deadline_ = SteadyClock::now() + limits().request_timeout;
      return ReadRequest();
    }
    tcp().expires_after(limits().idle_timeout);
    stream_.async_read_some(
        buffer_.prepare(kIdleReadBytes),
        [self = this->shared_from_this()](beast::error_code error, std::size_t bytes) {
          self->OnFirstBytes(error, bytes);
        });
  }

  void OnFirstBytes(beast::error_code error, std::size_t bytes) {
    if (error) return;  // idle timeout, peer gone or shed: the socket closes with this object
    buffer_.commit(bytes);
    request_deadline_ = SteadyClock::now() + limits().request_timeout;
    ReadRequest();
  }

  void ReadRequest() {
    parser_.emplace();
    parser_->header_limit(limits().header_bytes);
    parser_->body_limit(limits().body_bytes);
    tcp().expires_at(request_deadline_);
    beast_http::async_read(stream_, buffer_, *parser_,
                           [self = this->shared_from_this()](beast::error_code error, std::size_t) {
                             self->OnRead(error);
                           });
  }

  void OnRead(beast::error_code error) {
    if (error == beast_http::error::end_of_stream) return Close();
    if (error) {
      if (error == beast_http::error::header_limit || error == beast_http::error::body_limit) {
        slot_.Answering(true);
        return RespondAndClose(beast_http::status::payload_too_large, "request too large");
      }
      if (error.category() ==
          beast_http::make_error_code(beast_http::error::bad_method).category()) {
        slot_.Answering(true);
        return RespondAndClose(beast_http::status::bad_request, "malformed HTTP request");
      }
      if (error != beast::error::timeout && error != asio::error::operation_aborted &&
          error != asio::error::bad_descriptor) {
        spdlog::debug("http: dropping connection: {}", error.message());
      }
      return;  // the socket closes with this object
    }
    slot_.Answering(true);
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
    response_.body() = SharedText("Unauthorized\n");
    response_.keep_alive(parser_->get().keep_alive());
    response_.prepare_payload();
    Write();
  }

  void RespondAndClose(beast_http::status status, std::string body) {
    response_ = Response(status, 11);
    response_.set(beast_http::field::content_type, "text/plain; charset=utf-8");
    response_.body() = SharedText(std::move(body) + "\n");
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
    AwaitNextRequest();
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

  static constexpr std::size_t kIdleReadBytes = 1024;

  Stream stream_;
  beast::flat_buffer buffer_;
  OpenConnection slot_;
  std::shared_ptr<const BasicAuth> auth_;
  SteadyClock::time_point request_deadline_;
  std::optional<beast_http::request_parser<beast_http::string_body>> parser_;
  Response response_;
};

// The first bytes on a TLS listener: a TLS handshake goes on to a TLS connection; anything else
// (plain HTTP, most likely) gets a 400 that says what went wrong instead of a dropped socket.
class TlsDetector : public std::enable_shared_from_this<TlsDetector>, public Sheddable {
 public:
  TlsDetector(tcp::socket socket, OpenConnection slot, ServerSecurity security)
      : stream_(std::move(socket)),
        slot_(std::move(slot)),
        security_(std::move(security)),
        request_deadline_(SteadyClock::now() + slot_.state().limits.request_timeout) {}

  void Start() {
    slot_.HeldBy(weak_from_this());
    stream_.expires_at(request_deadline_);
    beast::async_detect_ssl(stream_, buffer_,
                            [self = shared_from_this()](beast::error_code error, bool is_tls) {
                              self->OnDetect(error, is_tls);
                            });
  }

  void Shed() override { stream_.close(); }

 private:
  void OnDetect(beast::error_code error, bool is_tls) {
    if (error) return;
    if (is_tls) {
      using TlsStream = beast::ssl_stream<beast::tcp_stream>;
      std::make_shared<Connection<TlsStream>>(TlsStream(std::move(stream_), *security_.tls),
                                              std::move(buffer_), std::move(slot_),
                                              std::move(security_.auth), request_deadline_)
          ->Start();
      return;
    }
    static const std::string kAnswer = [] {
      const std::string body = "Client sent an HTTP request to an HTTPS server.\n";
      return "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
             "Connection: close\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body;
    }();
    slot_.Answering(true);
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
  SteadyClock::time_point request_deadline_;
};

// The answer to a connection that finds every slot busy answering: a 503 that says so, where a
// silent close would look like a network fault to the scraper.
class Refusal : public std::enable_shared_from_this<Refusal> {
 public:
  explicit Refusal(tcp::socket socket) : stream_(std::move(socket)) {}

  void Start(std::chrono::milliseconds timeout) {
    static const std::string kAnswer = [] {
      const std::string body = "lagsight: too many connections being answered; retry shortly\n";
      return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
             "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body;
    }();
    stream_.expires_after(timeout);
    asio::async_write(stream_, asio::buffer(kAnswer),
                      [self = shared_from_this()](beast::error_code, std::size_t) {
                        beast::error_code ignored;
                        self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                      });
  }

 private:
  beast::tcp_stream stream_;
};

// Makes room for a connection from `client`: within its address's share first, then within
// the server's cap. False when every candidate is busy answering.
bool MakeRoom(Server::State& state, const asio::ip::address& client) {
  const auto held = state.open_per_client.find(client);
  if (held != state.open_per_client.end() &&
      held->second >= state.limits.max_connections_per_client) {
    if (!ShedOldest(state, [&client](const OpenEntry& entry) { return entry.client == client; })) {
      return false;
    }
    ++state.counts.shed_for_same_client;
  }
  if (state.open.size() >= state.limits.max_connections) {
    if (!ShedOldest(state, [](const OpenEntry&) { return true; })) return false;
    ++state.counts.shed_for_any_client;
  }
  return true;
}

void StartConnection(tcp::socket socket, const std::shared_ptr<Server::State>& state) {
  ServerSecurity security;
  if (state->web_config) security = state->web_config->Current();
  beast::error_code error;
  const tcp::endpoint peer = socket.remote_endpoint(error);
  if (error) return;  // already gone
  if (!MakeRoom(*state, peer.address())) {
    ++state->counts.refused;
    spdlog::warn("http: refusing a connection from {}: all {} open connections are busy",
                 peer.address().to_string(), state->open.size());
    // A TLS client could not read a plain answer; it sees the close.
    if (!security.tls) std::make_shared<Refusal>(std::move(socket))->Start(std::chrono::seconds(5));
    return;
  }
  if (security.auth && !state->verifier) state->verifier = std::make_unique<asio::thread_pool>(1);
  OpenConnection slot(state, peer.address());
  if (security.tls) {
    std::make_shared<TlsDetector>(std::move(socket), std::move(slot), std::move(security))->Start();
    return;
  }
  std::make_shared<Connection<beast::tcp_stream>>(
      beast::tcp_stream(std::move(socket)), beast::flat_buffer(), std::move(slot),
      std::move(security.auth), SteadyClock::now() + state->limits.request_timeout)
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
        StartConnection(std::move(socket), state);
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

ConnectionCounts Server::connection_counts() const { return state_->counts; }

}  // namespace lagsight::http
