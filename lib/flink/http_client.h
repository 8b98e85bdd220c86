// flink::HttpClient: an async HTTP/1.1 client (Boost.Beast, optional TLS) for one REST base URL.
//
// Every exchange (resolve, connect, TLS handshake, write, read) runs under one deadline; response
// bodies are capped; idle keep-alive connections are reused; at most `max_in_flight` requests
// are under way at once (the rest wait their turn), so a large Flink cluster is never flooded.
// Runs on, and must be used from, one io_context thread. HttpFetch is the seam tests fake.
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
  // `target` is the path and query below the base URL, e.g. "/jobs/overview".
  virtual boost::asio::awaitable<Result<HttpResponse>> Get(std::string target) = 0;
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

  boost::asio::awaitable<Result<HttpResponse>> Get(std::string target) override;

  struct Impl;

 private:
  explicit HttpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace lagsight::flink
