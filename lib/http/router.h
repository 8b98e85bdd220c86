// The exporter's HTTP routes, as a pure function from request to response.
//
//   GET  /          the status page (text/html, loads nothing from anywhere: a CSP says so);
//                   the landing page linking /metrics until the first page is rendered
//   GET  /metrics   the latest published exposition (never waits on a source), gzipped when
//                   the client accepts gzip, else inflated while it is sent
//   GET  /healthz   200 while the process serves requests
//   GET  /readyz    200 once every source completed its first poll, else 503
//   POST /-/reload  re-read the configuration file
// No sockets here, so every route is unit-tested directly.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "http/shared_text_body.h"

namespace lagsight::http {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
// Responses share their body: /metrics sends the published exposition itself, not a copy.
using Response = boost::beast::http::response<SharedTextBody>;

struct Readiness {
  bool ready = false;
  std::string detail;  // what is still missing, for humans
};

// What the routes read from the rest of the daemon. All are called on the server's thread.
struct Endpoints {
  // The latest exposition as one gzip member with the length of its text; null before the first
  // render (an empty answer). Sent as it is to a client that takes gzip, inflated while it is
  // sent to any other.
  std::function<std::shared_ptr<const GzippedText>()> exposition;
  std::function<Readiness()> readiness;
  // Returns std::nullopt on success, else why the reload failed.
  std::function<std::optional<std::string>()> reload;
  // The latest rendered status page, gzipped like the exposition (at 2,000 groups it is 5 MB of
  // HTML); null (or no function) before the first render.
  std::function<std::shared_ptr<const GzippedText>()> status_page;
};

Response Route(const Request& request, const Endpoints& endpoints);

}  // namespace lagsight::http
