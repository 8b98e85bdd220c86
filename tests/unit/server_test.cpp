// The HTTP server against hostile clients, over real loopback sockets: slow-loris and idle
// connections must not lock a scraper out, and a refusal must be an answer, not a silent close.
#include "http/server.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "common/gzip_stream.h"

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;

// A Server on 127.0.0.1:<any port> with its event loop on a thread of its own.
class RunningServer {
 public:
  RunningServer(lagsight::http::ServerLimits limits, std::size_t exposition_bytes = 16)
      : exposition_(std::make_shared<const lagsight::GzippedText>(
            lagsight::Gzip(std::string(exposition_bytes, 'x')))),
        server_(context_,
                lagsight::http::Endpoints{[this] { return exposition_; },
                                          [] {
                                            return lagsight::http::Readiness{true, ""};
                                          },
                                          [] { return std::optional<std::string>(); },
                                          {}},
                limits) {
    const auto error = server_.Listen({asio::ip::make_address("127.0.0.1"), 0});
    REQUIRE_FALSE(error);
    endpoint_ = server_.local_endpoint();
    loop_ = std::thread([this] { context_.run(); });
  }
  ~RunningServer() {
    asio::post(context_, [this] {
      server_.Stop();
      context_.stop();
    });
    loop_.join();
  }

  // A connected socket whose blocking reads give up after `read_timeout`.
  tcp::socket Connect(std::chrono::milliseconds read_timeout = 5s) {
    tcp::socket socket(client_context_);
    socket.connect(endpoint_);
    timeval tv{static_cast<time_t>(read_timeout.count() / 1000),
               static_cast<suseconds_t>((read_timeout.count() % 1000) * 1000)};
    setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return socket;
  }

 private:
  asio::io_context context_;
  asio::io_context client_context_;
  std::shared_ptr<const lagsight::GzippedText> exposition_;
  lagsight::http::Server server_;
  tcp::endpoint endpoint_;
  std::thread loop_;
};

// Everything the peer sends until it closes or a read times out; `closed` says which. Plain
// recv(), as asio's blocking reads would wait past SO_RCVTIMEO.
std::string ReadAll(tcp::socket& socket, bool* closed = nullptr) {
  std::string received;
  char chunk[4096];
  ssize_t n = 0;
  while ((n = ::recv(socket.native_handle(), chunk, sizeof chunk, 0)) > 0) {
    received.append(chunk, static_cast<std::size_t>(n));
  }
  if (closed) *closed = n == 0 || errno == ECONNRESET;
  return received;
}

std::string Scrape(RunningServer& server) {
  tcp::socket socket = server.Connect();
  asio::write(
      socket,
      asio::buffer(std::string("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")));
  return ReadAll(socket);
}

void SendPartialRequest(tcp::socket& socket) {
  asio::write(socket, asio::buffer(std::string("GET /metrics HTTP/1.1\r\nX-Slow: a")));
}

bool Answered200(const std::string& response) { return response.rfind("HTTP/1.1 200 OK", 0) == 0; }

}  // namespace

TEST_CASE("slow-loris connections beyond the cap do not lock a scraper out", "[http]") {
  lagsight::http::ServerLimits limits;
  limits.max_connections = 8;
  limits.max_connections_per_client = 4;
  RunningServer server(limits);
  std::vector<tcp::socket> slow;
  for (int i = 0; i < 40; ++i) {
    slow.push_back(server.Connect());
    SendPartialRequest(slow.back());
  }
  for (int i = 0; i < 10; ++i) CHECK(Answered200(Scrape(server)));
}

TEST_CASE("idle connections beyond the cap do not lock a scraper out", "[http]") {
  lagsight::http::ServerLimits limits;
  limits.max_connections = 8;
  limits.max_connections_per_client = 8;  // the server-wide cap is the one reached here
  RunningServer server(limits);
  std::vector<tcp::socket> idle;
  for (int i = 0; i < 40; ++i) idle.push_back(server.Connect());
  for (int i = 0; i < 10; ++i) CHECK(Answered200(Scrape(server)));
}

TEST_CASE("a client's oldest unfinished connection is shed for its new one", "[http]") {
  lagsight::http::ServerLimits limits;
  limits.max_connections = 8;
  limits.max_connections_per_client = 2;
  RunningServer server(limits);
  tcp::socket oldest = server.Connect(2s);
  SendPartialRequest(oldest);
  tcp::socket second = server.Connect(2s);
  SendPartialRequest(second);
  CHECK(Answered200(Scrape(server)));
  bool closed = false;
  CHECK(ReadAll(oldest, &closed).empty());
  CHECK(closed);
}

TEST_CASE("a request not complete within request_timeout is cut off", "[http]") {
  lagsight::http::ServerLimits limits;
  limits.request_timeout = 300ms;
  RunningServer server(limits);
  tcp::socket slow = server.Connect(3s);
  const auto started = std::chrono::steady_clock::now();
  SendPartialRequest(slow);
  // Trickling bytes does not extend the deadline: it runs from the accept.
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(100ms);
    boost::system::error_code ignored;
    asio::write(slow, asio::buffer(std::string("a")), ignored);
  }
  bool closed = false;
  ReadAll(slow, &closed);
  CHECK(closed);
  CHECK(std::chrono::steady_clock::now() - started < 2s);
}

TEST_CASE("a kept-alive connection is closed after idle_timeout, and served until then", "[http]") {
  lagsight::http::ServerLimits limits;
  limits.request_timeout = 300ms;
  limits.idle_timeout = 800ms;
  RunningServer server(limits);
  tcp::socket client = server.Connect(3s);
  const std::string request = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  // A pause longer than request_timeout between requests is fine: only idle_timeout applies.
  for (int i = 0; i < 2; ++i) {
    asio::write(client, asio::buffer(request));
    char chunk[1024];
    const ssize_t n = ::recv(client.native_handle(), chunk, sizeof chunk, 0);
    REQUIRE(n > 0);
    CHECK(Answered200(std::string(chunk, static_cast<std::size_t>(n))));
    std::this_thread::sleep_for(500ms);
  }
  const auto started = std::chrono::steady_clock::now();
  bool closed = false;
  ReadAll(client, &closed);
  CHECK(closed);
  CHECK(std::chrono::steady_clock::now() - started < 2s);
}

TEST_CASE("when every connection is busy answering, a new one gets a 503 that says so", "[http]") {
  lagsight::http::ServerLimits limits;
  limits.max_connections = 2;
  limits.write_timeout = 3s;
  // Larger than what loopback socket buffers take, so unread answers keep their writes pending.
  RunningServer server(limits, 32 * 1024 * 1024);
  std::vector<tcp::socket> readers_that_never_read;
  for (int i = 0; i < 2; ++i) {
    readers_that_never_read.push_back(server.Connect());
    int small = 4096;
    setsockopt(readers_that_never_read.back().native_handle(), SOL_SOCKET, SO_RCVBUF, &small,
               sizeof small);
    asio::write(readers_that_never_read.back(),
                asio::buffer(std::string("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")));
  }
  std::this_thread::sleep_for(300ms);  // both requests read and being answered
  const std::string refused = Scrape(server);
  CHECK(refused.rfind("HTTP/1.1 503 Service Unavailable", 0) == 0);
  CHECK(refused.find("too many connections") != std::string::npos);
}
