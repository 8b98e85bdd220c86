#include "http/router.h"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include "http/gzip.h"

namespace lagsight::http {
namespace {

namespace beast_http = boost::beast::http;

constexpr const char* kLandingPage = R"(<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>lagsight</title></head>
<body>
<h1>lagsight</h1>
<p>Kafka and Flink consumer lag, joined: is the job really behind, or does Kafka only look that way?</p>
<ul>
<li><a href="metrics">/metrics</a> &mdash; Prometheus metrics</li>
<li><a href="healthz">/healthz</a> &mdash; liveness</li>
<li><a href="readyz">/readyz</a> &mdash; readiness (every source polled once)</li>
</ul>
</body>
</html>
)";

constexpr const char* kStatusPagePolicy =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

Response MakeResponse(const Request& request, beast_http::status status, std::string content_type,
                      SharedTextBody::value_type body) {
  Response response(status, request.version());
  response.set(beast_http::field::server, "lagsight");
  response.set(beast_http::field::content_type, std::move(content_type));
  response.keep_alive(request.keep_alive());
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

Response Text(const Request& request, beast_http::status status, std::string body) {
  return MakeResponse(request, status, "text/plain; charset=utf-8",
                      SharedText(std::move(body) + "\n"));
}

// A published gzip member: its bytes for a client that accepts gzip, else inflated while they
// are sent. The bytes are shared with what was published (the aliasing constructor): no copy.
Response Gzipped(const Request& request, std::string content_type,
                 const std::shared_ptr<const GzippedText>& published) {
  std::shared_ptr<const std::string> bytes(published, &published->bytes);
  const auto accept_encoding = request.find(beast_http::field::accept_encoding);
  const bool gzip = accept_encoding != request.end() &&
                    AcceptsGzip(std::string_view(accept_encoding->value().data(),
                                                 accept_encoding->value().size()));
  Response response = MakeResponse(
      request, beast_http::status::ok, std::move(content_type),
      gzip ? SharedTextBody::value_type(std::move(bytes))
           : SharedTextBody::value_type::Gunzipped(std::move(bytes), published->text_size));
  if (gzip) response.set(beast_http::field::content_encoding, "gzip");
  response.set(beast_http::field::vary, "Accept-Encoding");
  return response;
}

Response RouteBody(const Request& request, const Endpoints& endpoints) {
  const std::string_view full_target(request.target().data(), request.target().size());
  const std::string_view path = full_target.substr(0, full_target.find('?'));
  const bool is_get =
      request.method() == beast_http::verb::get || request.method() == beast_http::verb::head;

  if (path == "/-/reload") {
    if (request.method() != beast_http::verb::post) {
      Response response = Text(request, beast_http::status::method_not_allowed, "use POST");
      response.set(beast_http::field::allow, "POST");
      return response;
    }
    if (const auto failure = endpoints.reload()) {
      return Text(request, beast_http::status::internal_server_error, "reload failed: " + *failure);
    }
    return Text(request, beast_http::status::ok, "configuration reloaded");
  }
  if (path != "/" && path != "/metrics" && path != "/healthz" && path != "/readyz") {
    return Text(request, beast_http::status::not_found, "not found; see /");
  }
  if (!is_get) {
    Response response = Text(request, beast_http::status::method_not_allowed, "use GET");
    response.set(beast_http::field::allow, "GET, HEAD");
    return response;
  }
  if (path == "/") {
    const std::shared_ptr<const GzippedText> page =
        endpoints.status_page ? endpoints.status_page() : nullptr;
    Response response = page ? Gzipped(request, "text/html; charset=utf-8", page)
                             : MakeResponse(request, beast_http::status::ok,
                                            "text/html; charset=utf-8", SharedText(kLandingPage));
    // The page shows names from Kafka and Flink: even if one slipped through unescaped, the
    // browser runs no script and loads nothing from elsewhere.
    response.set("Content-Security-Policy", kStatusPagePolicy);
    return response;
  }
  if (path == "/healthz") return Text(request, beast_http::status::ok, "ok");
  if (path == "/readyz") {
    const Readiness readiness = endpoints.readiness();
    return Text(request,
                readiness.ready ? beast_http::status::ok : beast_http::status::service_unavailable,
                readiness.ready ? "ready" : "not ready: " + readiness.detail);
  }
  constexpr const char* kExpositionType = "text/plain; version=0.0.4; charset=utf-8";
  const std::shared_ptr<const GzippedText> exposition = endpoints.exposition();
  if (!exposition) return MakeResponse(request, beast_http::status::ok, kExpositionType, nullptr);
  return Gzipped(request, kExpositionType, exposition);
}

}  // namespace

Response Route(const Request& request, const Endpoints& endpoints) {
  Response response = RouteBody(request, endpoints);
  if (request.method() == beast_http::verb::head) {
    // HEAD answers with the length GET would send, and no body.
    const std::uint64_t length = SharedTextBody::size(response.body());
    response.body() = nullptr;
    response.content_length(length);
  }
  return response;
}

}  // namespace lagsight::http
