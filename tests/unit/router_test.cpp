// The HTTP routes as a pure function: no sockets.
#include "http/router.h"

#include <catch2/catch.hpp>

#include "common/gzip_stream.h"
#include "http/gzip.h"
#include "http/listen_address.h"

namespace {

namespace beast_http = boost::beast::http;
using lagsight::http::Endpoints;
using lagsight::http::Readiness;
using lagsight::http::Request;
using lagsight::http::Route;

// What a client receives: the body as Beast's serializer takes it from the body's writer, piece
// by piece (a gunzipped body comes in many).
std::string Body(const lagsight::http::Response& response) {
  lagsight::http::SharedTextBody::writer writer(response.base(), response.body());
  boost::beast::error_code error;
  writer.init(error);
  REQUIRE(!error);
  std::string out;
  while (const auto piece = writer.get(error)) {
    out.append(static_cast<const char*>(piece->first.data()), piece->first.size());
    if (!piece->second) break;
  }
  REQUIRE(!error);
  return out;
}

std::shared_ptr<const lagsight::GzippedText> Published(const std::string& text) {
  return std::make_shared<const lagsight::GzippedText>(lagsight::Gzip(text));
}

struct Fixture {
  bool ready = false;
  int reloads = 0;
  std::optional<std::string> reload_failure;
  std::shared_ptr<const lagsight::GzippedText> status_page;  // none rendered yet
  std::shared_ptr<const lagsight::GzippedText> exposition = Published("lagsight_up 1\n");
  Endpoints endpoints{[this] { return exposition; },
                      [this] {
                        return Readiness{ready, "waiting for kafka cluster(s) prod"};
                      },
                      [this] {
                        ++reloads;
                        return reload_failure;
                      },
                      [this] { return status_page; }};

  lagsight::http::Response Call(beast_http::verb verb, const std::string& target,
                                const std::string& accept_encoding = "") {
    Request request(verb, target, 11);
    if (!accept_encoding.empty()) request.set(beast_http::field::accept_encoding, accept_encoding);
    return Route(request, endpoints);
  }
};

}  // namespace

TEST_CASE("/metrics serves the published exposition as Prometheus text", "[http]") {
  Fixture f;
  const auto response = f.Call(beast_http::verb::get, "/metrics");
  CHECK(response.result() == beast_http::status::ok);
  CHECK(Body(response) == "lagsight_up 1\n");
  CHECK(response[beast_http::field::content_type] == "text/plain; version=0.0.4; charset=utf-8");
}

TEST_CASE("/metrics is gzipped for a client that accepts gzip, as Prometheus does", "[http]") {
  Fixture f;
  // What Prometheus 2.x sends with every scrape.
  const auto gzipped = f.Call(beast_http::verb::get, "/metrics", "gzip");
  CHECK(gzipped.result() == beast_http::status::ok);
  CHECK(gzipped[beast_http::field::content_encoding] == "gzip");
  CHECK(gzipped[beast_http::field::vary] == "Accept-Encoding");
  CHECK(Body(gzipped) == f.exposition->bytes);
  // The published buffer itself, not a copy: a scrape of a million series copies nothing.
  CHECK(gzipped.body().bytes.get() == &f.exposition->bytes);
  CHECK(gzipped[beast_http::field::content_type] == "text/plain; version=0.0.4; charset=utf-8");

  for (const char* refused : {"identity", "gzip;q=0", "br, deflate"}) {
    const auto plain = f.Call(beast_http::verb::get, "/metrics", refused);
    CHECK(plain[beast_http::field::content_encoding].empty());
    CHECK(plain[beast_http::field::vary] == "Accept-Encoding");
    CHECK(Body(plain) == "lagsight_up 1\n");
  }

  // HEAD: the length of the gzipped body GET would send.
  const auto head = f.Call(beast_http::verb::head, "/metrics", "gzip");
  CHECK(Body(head).empty());
  CHECK(head[beast_http::field::content_length] == std::to_string(f.exposition->bytes.size()));

  // Nothing published yet: an empty answer, whatever the client accepts.
  f.exposition = nullptr;
  for (const char* accepted : {"gzip", ""}) {
    const auto none = f.Call(beast_http::verb::get, "/metrics", accepted);
    CHECK(none.result() == beast_http::status::ok);
    CHECK(none[beast_http::field::content_encoding].empty());
    CHECK(Body(none).empty());
    CHECK(none[beast_http::field::content_length] == "0");
  }
}

TEST_CASE("/metrics inflates the published gzip piece by piece for a client without gzip",
          "[http]") {
  Fixture f;
  // Several of the body's buffers long, and not a multiple of one.
  std::string text;
  for (int i = 0; text.size() < 5 * lagsight::http::SharedTextBody::kGunzipBufferBytes + 77; ++i) {
    text += "lagsight_kafka_group_lag_records{group=\"g" + std::to_string(i % 97) +
            "\",partition=\"" + std::to_string(i) + "\"} " + std::to_string(i * 31 % 1009) + "\n";
  }
  f.exposition = Published(text);
  const auto plain = f.Call(beast_http::verb::get, "/metrics");
  CHECK(plain[beast_http::field::content_length] == std::to_string(text.size()));
  CHECK(Body(plain) == text);
  const auto head = f.Call(beast_http::verb::head, "/metrics");
  CHECK(head[beast_http::field::content_length] == std::to_string(text.size()));

  // A member cut short ends the answer with an error instead of sending garbage.
  auto cut = std::make_shared<lagsight::GzippedText>(*f.exposition);
  cut->bytes.resize(cut->bytes.size() / 2);
  f.exposition = cut;
  const auto response = f.Call(beast_http::verb::get, "/metrics");
  lagsight::http::SharedTextBody::writer writer(response.base(), response.body());
  boost::beast::error_code error;
  writer.init(error);
  REQUIRE(!error);
  std::size_t received = 0;
  while (const auto piece = writer.get(error)) received += piece->first.size();
  CHECK(error);
  CHECK(received < text.size());
}

TEST_CASE("HEAD answers with the length and no body", "[http]") {
  Fixture f;
  const auto response = f.Call(beast_http::verb::head, "/metrics");
  CHECK(response.result() == beast_http::status::ok);
  CHECK(Body(response).empty());
  CHECK(response[beast_http::field::content_length] == "14");
}

constexpr const char* kNoExternalLoads =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

TEST_CASE("before the first status page is rendered, / is the landing page linking /metrics",
          "[http]") {
  Fixture f;
  const auto response = f.Call(beast_http::verb::get, "/");
  CHECK(response.result() == beast_http::status::ok);
  CHECK(Body(response).find("href=\"metrics\"") != std::string::npos);
  CHECK(response[beast_http::field::content_type] == "text/html; charset=utf-8");
  CHECK(response["Content-Security-Policy"] == kNoExternalLoads);
}

TEST_CASE("/ serves the published status page as HTML that may load nothing from elsewhere",
          "[http]") {
  Fixture f;
  f.status_page = Published("<!DOCTYPE html><title>status</title>");
  const auto response = f.Call(beast_http::verb::get, "/");
  CHECK(response.result() == beast_http::status::ok);
  CHECK(Body(response) == "<!DOCTYPE html><title>status</title>");
  CHECK(response[beast_http::field::content_type] == "text/html; charset=utf-8");
  CHECK(response["Content-Security-Policy"] == kNoExternalLoads);

  const auto head = f.Call(beast_http::verb::head, "/");
  CHECK(head.result() == beast_http::status::ok);
  CHECK(Body(head).empty());
  CHECK(head[beast_http::field::content_length] == "36");
  CHECK(head["Content-Security-Policy"] == kNoExternalLoads);
  CHECK(f.Call(beast_http::verb::post, "/").result() == beast_http::status::method_not_allowed);
  CHECK(Body(f.Call(beast_http::verb::get, "/?refresh=1")) ==
        "<!DOCTYPE html><title>status</title>");
  // Gzipped for a browser that accepts it (they all do), the published bytes themselves.
  const auto gzipped = f.Call(beast_http::verb::get, "/", "gzip, deflate, br");
  CHECK(gzipped[beast_http::field::content_encoding] == "gzip");
  CHECK(gzipped.body().bytes.get() == &f.status_page->bytes);
  CHECK(gzipped["Content-Security-Policy"] == kNoExternalLoads);
}

TEST_CASE("/metrics carries no status page policy and is unchanged by a status page", "[http]") {
  Fixture f;
  f.status_page = Published("<p>page</p>");
  const auto response = f.Call(beast_http::verb::get, "/metrics");
  CHECK(Body(response) == "lagsight_up 1\n");
  CHECK(response.find("Content-Security-Policy") == response.end());
}

TEST_CASE("/healthz and /readyz", "[http]") {
  Fixture f;
  CHECK(f.Call(beast_http::verb::get, "/healthz").result() == beast_http::status::ok);
  const auto not_ready = f.Call(beast_http::verb::get, "/readyz");
  CHECK(not_ready.result() == beast_http::status::service_unavailable);
  CHECK(Body(not_ready) == "not ready: waiting for kafka cluster(s) prod\n");
  f.ready = true;
  CHECK(f.Call(beast_http::verb::get, "/readyz").result() == beast_http::status::ok);
}

TEST_CASE("/-/reload only on POST, and says why it failed", "[http]") {
  Fixture f;
  CHECK(f.Call(beast_http::verb::get, "/-/reload").result() ==
        beast_http::status::method_not_allowed);
  CHECK(f.reloads == 0);
  CHECK(f.Call(beast_http::verb::post, "/-/reload").result() == beast_http::status::ok);
  f.reload_failure = "lagsight.yaml:3: kafka[0].name: missing";
  const auto failed = f.Call(beast_http::verb::post, "/-/reload");
  CHECK(failed.result() == beast_http::status::internal_server_error);
  CHECK(Body(failed) == "reload failed: lagsight.yaml:3: kafka[0].name: missing\n");
  CHECK(f.reloads == 2);
}

TEST_CASE("unknown paths and methods", "[http]") {
  Fixture f;
  CHECK(f.Call(beast_http::verb::get, "/nope").result() == beast_http::status::not_found);
  CHECK(f.Call(beast_http::verb::post, "/metrics").result() ==
        beast_http::status::method_not_allowed);
  CHECK(f.Call(beast_http::verb::get, "/metrics?x=1").result() == beast_http::status::ok);
}

TEST_CASE("listen addresses", "[http]") {
  using lagsight::http::ParseListenAddress;
  CHECK(ParseListenAddress(":9713")->port() == 9713);
  CHECK(ParseListenAddress(":9713")->address().to_string() == "0.0.0.0");
  CHECK(ParseListenAddress("127.0.0.1:80")->address().to_string() == "127.0.0.1");
  CHECK(ParseListenAddress("[::1]:9713")->address().to_string() == "::1");
  CHECK_FALSE(ParseListenAddress("9713").ok());
  CHECK_FALSE(ParseListenAddress(":99999").ok());
  CHECK_FALSE(ParseListenAddress(":").ok());
}
