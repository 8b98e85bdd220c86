#include "http/server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace lagsight::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace beast_http = boost::beast::http;
using asio::ip::tcp;

struct Server::State {
  State(asio::io_context& io, Endpoints e, ServerLimits l)
      : context(io), acceptor(io), retry_timer(io), endpoints(std::move(e)), limits(l) {}

  asio::io_context& context;
  tcp::acceptor acceptor;
  asio::steady_timer retry_timer;
  Endpoints endpoints;
  ServerLimits limits;
  std::size_t open_connections = 0;
  bool stopped = false;
};

namespace {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, std::shared_ptr<Server::State> state)
      : stream_(std::move(socket)), state_(std::move(state)) {
    ++state_->open_connections;
  }
  ~Connection() { --state_->open_connections; }

  void Start() { ReadRequest(); }

 private:
  void ReadRequest() {
    parser_.emplace();
    parser_->header_limit(state_->limits.header_bytes);
    parser_->body_limit(state_->limits.body_bytes);
    stream_.expires_after(state_->limits.read_timeout);
    beast_http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code error, std::size_t) { self->OnRead(error); });
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
    response_ = Route(parser_->get(), state_->endpoints);
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
    stream_.expires_after(state_->limits.write_timeout);
    beast_http::async_write(stream_, response_,
                            [self = shared_from_this()](beast::error_code error, std::size_t) {
                              self->OnWrite(error);
                            });
  }

  void OnWrite(beast::error_code error) {
    if (error) return;
    if (!response_.keep_alive() || state_->stopped) return Close();
    response_ = {};
    ReadRequest();
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<beast_http::request_parser<beast_http::string_body>> parser_;
  Response response_;
  std::shared_ptr<Server::State> state_;
};

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
          std::make_shared<Connection>(std::move(socket), state)->Start();
        }
        Accept(state);
      });
}

}  // namespace

Server::Server(asio::io_context& context, Endpoints endpoints, ServerLimits limits)
    : state_(std::make_shared<State>(context, std::move(endpoints), limits)) {}

Server::~Server() { Stop(); }

std::optional<Error> Server::Listen(const tcp::endpoint& endpoint) {
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
