// flink::HttpClient: an async HTTP/1.1 client (Boost.Beast, optional TLS) for one REST base URL.
//
// Every exchange (waiting for a slot, resolve, connect, TLS handshake, write, read) ends by one
// wall-clock deadline, whatever the server sends meanwhile; a response body over the cap is
// refused before any memory is taken for it (a declared Content-Length is checked against the cap
// as soon as the header is in; a chunked or read-to-close body is counted as it arrives). Idle
// keep-alive connections are reused; at most `max_in_flight` requests are under way at once (the
// rest wait their turn), so a large Flink cluster is never flooded. Runs on, and must be used
// from, one io_context thread. A request under way keeps the client's state alive, so destroying
// the client (or the io_context, at shutdown) before its coroutines is safe. HttpFetch is the
// seam tests fake.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/awaitable.h"
#include "common/result.h"

namespace lagsight::flink {

struct HttpResponse {
  unsigned status = 0;
  std::string body;
};

class HttpFetch {
 public:
  virtual ~HttpFetch() = default;
  // `target` is the path and query below the base URL, e.g. "/jobs/overview", its parts already
  // percent-encoded. The request ends (with an Error) by `deadline` or after the client's own
  // timeout, whichever comes first.
  virtual boost::asio::awaitable<Result<HttpResponse>> Get(
      std::string target, std::chrono::steady_clock::time_point deadline) = 0;
};

struct HttpClientOptions {
  std::string base_url;  // http://host:port or https://host:port, optionally with a path prefix
  std::chrono::milliseconds timeout{10'000};
  std::size_t max_body_bytes = 32 * 1024 * 1024;
  int max_in_flight = 4;
  std::string authorization;  // the Authorization header's value, or empty
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  bool insecure_skip_verify = false;
};

class HttpClient final : public HttpFetch {
 public:
  // Fails on a malformed URL or unusable TLS files, with a message saying which.
  static Result<std::unique_ptr<HttpClient>> Create(boost::asio::any_io_executor executor,
                                                    HttpClientOptions options);
  ~HttpClient() override;

  boost::asio::awaitable<Result<HttpResponse>> Get(
      std::string target, std::chrono::steady_clock::time_point deadline) override;

  struct Impl;

 private:
  explicit HttpClient(std::shared_ptr<Impl> impl);
  // Shared with every request under way: a coroutine frame destroyed after the client (as the
  // io_context does with suspended ones at shutdown) still releases its slot into live memory.
  std::shared_ptr<Impl> impl_;
};

}  // namespace lagsight::flink
