// flink::HttpClient against a hostile HTTP server on 127.0.0.1 in the same io_context: a huge
// declared Content-Length, an endless chunked body, a body trickling in byte by byte. Each must
// end in an Error, within the cap and by the deadline, never in an exception or a big allocation.
// clang-format off
#include "common/awaitable.h"
// clang-format on
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <functional>
#include <optional>

#include "flink/http_client.h"

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace lagsight;
using namespace lagsight::flink;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Writes `text`; false once the client has gone.
asio::awaitable<bool> Send(tcp::socket& socket, std::string text) {
  boost::system::error_code error;
  co_await asio::async_write(socket, asio::buffer(text),
                             asio::redirect_error(asio::use_awaitable, error));
  co_return !error;
}

asio::awaitable<void> Pause(milliseconds how_long) {
  asio::steady_timer timer(co_await asio::this_coro::executor, how_long);
  co_await timer.async_wait(asio::use_awaitable);
}

using Behaviour = std::function<asio::awaitable<void>(tcp::socket&)>;

// Serves one connection with `behaviour` after reading the request header.
asio::awaitable<void> ServeOne(tcp::acceptor& acceptor, Behaviour behaviour) {
  tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
  std::string request;
  co_await asio::async_read_until(socket, asio::dynamic_buffer(request), "\r\n\r\n",
                                  asio::use_awaitable);
  co_await behaviour(socket);
}

struct Outcome {
  std::optional<Result<HttpResponse>> response;
  milliseconds took{0};
};

Outcome Exchange(Behaviour behaviour, milliseconds timeout, std::size_t cap,
                 Clock::time_point deadline = Clock::time_point::max()) {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  asio::co_spawn(io, ServeOne(acceptor, std::move(behaviour)), [](std::exception_ptr) {});
  HttpClientOptions options;
  options.base_url = "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port());
  options.timeout = timeout;
  options.max_body_bytes = cap;
  auto client = HttpClient::Create(io.get_executor(), options);
  REQUIRE(client.ok());
  Outcome outcome;
  const auto started = Clock::now();
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        outcome.response = co_await (*client)->Get("/jobs/overview", deadline);
        outcome.took = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
        acceptor.close();
        io.stop();  // the hostile server may still be writing
      },
      asio::detached);
  io.run();
  REQUIRE(outcome.response.has_value());
  return outcome;
}

std::string MessageOf(const Outcome& outcome) {
  return outcome.response->ok() ? "ok" : outcome.response->error().message;
}

}  // namespace

TEST_CASE("a healthy answer within the cap comes back whole", "[flink]") {
  const auto outcome = Exchange(
      [](tcp::socket& socket) -> asio::awaitable<void> {
        co_await Send(socket, "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"jobs\":[]}");
      },
      milliseconds(2000), 1024);
  REQUIRE(outcome.response->ok());
  CHECK((*outcome.response)->status == 200);
  CHECK((*outcome.response)->body == "{\"jobs\":[]}");
}

TEST_CASE("a declared Content-Length over the cap is refused before anything is allocated",
          "[flink]") {
  // 100 GB: Boost 1.74's string_body would reserve it and throw std::bad_alloc.
  const auto outcome = Exchange(
      [](tcp::socket& socket) -> asio::awaitable<void> {
        co_await Send(socket, "HTTP/1.1 200 OK\r\nContent-Length: 100000000000\r\n\r\n{");
        co_await Pause(milliseconds(3000));
      },
      milliseconds(2000), 65536);
  INFO(MessageOf(outcome));
  REQUIRE_FALSE(outcome.response->ok());
  CHECK(MessageOf(outcome).find("larger than 65536 bytes (max_response_bytes)") !=
        std::string::npos);
  CHECK(outcome.took < milliseconds(1000));
}

TEST_CASE("an endless chunked body is cut off at the cap", "[flink]") {
  const auto outcome = Exchange(
      [](tcp::socket& socket) -> asio::awaitable<void> {
        if (!co_await Send(socket, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"))
          co_return;
        const std::string chunk = "1000\r\n" + std::string(4096, 'x') + "\r\n";
        for (int i = 0; i < 100000; ++i) {
          if (!co_await Send(socket, chunk)) co_return;
        }
      },
      milliseconds(5000), 65536);
  INFO(MessageOf(outcome));
  REQUIRE_FALSE(outcome.response->ok());
  CHECK(MessageOf(outcome).find("larger than 65536 bytes (max_response_bytes)") !=
        std::string::npos);
  CHECK(outcome.took < milliseconds(2000));
}

TEST_CASE("a body without length read to the close is cut off at the cap", "[flink]") {
  const auto outcome = Exchange(
      [](tcp::socket& socket) -> asio::awaitable<void> {
        if (!co_await Send(socket, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")) co_return;
        for (int i = 0; i < 100000; ++i) {
          if (!co_await Send(socket, std::string(4096, 'x'))) co_return;
        }
      },
      milliseconds(5000), 65536);
  INFO(MessageOf(outcome));
  REQUIRE_FALSE(outcome.response->ok());
  CHECK(MessageOf(outcome).find("bytes (max_response_bytes)") != std::string::npos);
}

TEST_CASE("a body trickling in one byte at a time ends at the deadline, not per read", "[flink]") {
  const auto outcome = Exchange(
      [](tcp::socket& socket) -> asio::awaitable<void> {
        if (!co_await Send(socket, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")) co_return;
        for (int i = 0; i < 1000; ++i) {
          if (!co_await Send(socket, "x")) co_return;
          co_await Pause(milliseconds(50));
        }
      },
      milliseconds(600), 65536);
  INFO(MessageOf(outcome));
  REQUIRE_FALSE(outcome.response->ok());
  CHECK(MessageOf(outcome).find("no complete response within the deadline") != std::string::npos);
  CHECK(outcome.took >= milliseconds(550));
  CHECK(outcome.took < milliseconds(1200));
}

TEST_CASE("the caller's deadline ends a request before the client's own timeout", "[flink]") {
  const auto outcome =
      Exchange([](tcp::socket&) -> asio::awaitable<void> { co_await Pause(milliseconds(3000)); },
               milliseconds(5000), 65536, Clock::now() + milliseconds(300));
  REQUIRE_FALSE(outcome.response->ok());
  CHECK(outcome.took >= milliseconds(250));
  CHECK(outcome.took < milliseconds(1000));
}

TEST_CASE("a request still under way when the client is destroyed releases its slot safely",
          "[flink]") {
  // The io_context destroys suspended coroutine frames after the client is gone, as the daemon
  // does at shutdown; run under AddressSanitizer this is a use-after-free without the fix.
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  HttpClientOptions options;
  options.base_url = "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port());
  options.max_in_flight = 2;
  auto client = HttpClient::Create(io.get_executor(), options);
  REQUIRE(client.ok());
  std::unique_ptr<HttpClient> owned = std::move(client).value();
  int started = 0;
  for (int i = 0; i < 5; ++i) {
    asio::co_spawn(
        io,
        [&, http = owned.get()]() -> asio::awaitable<void> {
          ++started;
          (void)co_await http->Get("/jobs/overview", Clock::time_point::max());
        },
        asio::detached);
  }
  io.run_for(milliseconds(200));
  CHECK(started == 5);
  owned.reset();
}

TEST_CASE("base URLs: parts read, anything else refused, a megabyte-long one in linear time",
          "[flink]") {
  boost::asio::io_context io;
  const auto create = [&](std::string url) {
    flink::HttpClientOptions options;
    options.base_url = std::move(url);
    return flink::HttpClient::Create(io.get_executor(), options);
  };
  CHECK(create("http://127.0.0.1:8081"));
  CHECK(create("http://[::1]:8081/flink/"));
  CHECK(create("https://flink.example:443/a/b"));
  CHECK_FALSE(create("ftp://flink:8081"));
  CHECK_FALSE(create("http://flink:8081\r\nX-Injected: 1"));
  CHECK_FALSE(create("http://flink:123456"));
  CHECK_FALSE(create("http://flink:8081/a\rb"));
  CHECK_FALSE(create("http://user@flink:8081"));
  CHECK_FALSE(create("http://fl ink:8081"));
  // std::regex recursed once per character here.
  const auto huge =
      create("http://" + std::string(1 << 20, 'a') + ":80" + std::string(1 << 20, '/'));
  CHECK(huge);
  const auto not_url = create(std::string(1 << 20, 'h'));
  REQUIRE_FALSE(not_url);
  CHECK(not_url.error().message.find("hhhh") != std::string::npos);  // names it, shortened
  CHECK(not_url.error().message.size() < 300);
}
