// http::Server: the exporter's HTTP/1.1 server on Boost.Beast, on the daemon's io_context.
//
// Every connection is its own object (read -> route -> write -> read or close); every read and
// write is armed with a deadline, request headers and bodies have hard limits, and the number of
// open connections is capped, so one slow or broken client never affects the others. Accept
// errors are logged and retried after a pause instead of stopping the listener.
//
// Slow or idle clients cannot lock scrapers out: a connection must deliver its whole request
// (TLS handshake included) within `request_timeout` of its accept, or of its first byte after a
// keep-alive pause; a kept-alive connection waiting for its next request is closed after
// `idle_timeout`. A new connection is never turned away silently: when its client address
// already holds `max_connections_per_client`, or the server `max_connections`, the oldest
// connection that is not being answered is closed to make room for it — first those that never
// completed a request, then idle kept-alive ones — so a flood from one address only ever
// displaces its own connections, and a scraper's request, sent at once, is served. Only when
// every connection is busy answering does the new one get a 503 saying so (plain HTTP) or a
// close (TLS listener: the client could not read a plain answer).
//
// With a --web.config.file (server_security.h) the one listener serves TLS or plain HTTP as the
// file says, and basic auth guards every path, as exporter-toolkit does (/healthz and /readyz
// too: a probe must then send credentials). bcrypt checks run on a thread of their own, so a
// flood of wrong passwords slows other logins but never the event loop. A plain-HTTP request to
// a TLS listener gets a 400 that says so, as Go's servers answer.
// All methods must be called on the io_context's thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "http/router.h"

namespace lagsight::http {

struct ServerLimits {
  std::uint32_t header_bytes = 8 * 1024;
  std::uint64_t body_bytes = 64 * 1024;
  // A real client sends its request at once; 10 s also covers a TLS handshake over a slow link
  // and matches Prometheus's default scrape timeout.
  std::chrono::milliseconds request_timeout{std::chrono::seconds(10)};
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(30)};
  std::chrono::milliseconds write_timeout{std::chrono::seconds(60)};
  std::size_t max_connections = 256;
  std::size_t max_connections_per_client = 64;
};

// What the server did to keep room for new clients, since it started.
struct ConnectionCounts {
  std::uint64_t shed_for_same_client = 0;  // a client's own oldest, at its per-client cap
  std::uint64_t shed_for_any_client = 0;   // the server's oldest, at max_connections
  std::uint64_t refused = 0;               // every connection busy answering: 503 or close
};

class Server {
 public:
  // `web_config_file`: the exporter-toolkit web config; empty means plain HTTP, no auth.
  Server(boost::asio::io_context& context, Endpoints endpoints, ServerLimits limits = {},
         std::string web_config_file = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Loads the web config file, binds and starts accepting; the error says why the web config
  // or the address cannot be used.
  std::optional<Error> Listen(const boost::asio::ip::tcp::endpoint& endpoint);
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  // Stops accepting; open connections finish their current exchange.
  void Stop();
  ConnectionCounts connection_counts() const;

  struct State;  // shared with the connections, outlives the Server while they run

 private:
  std::shared_ptr<State> state_;
};

}  // namespace lagsight::http
