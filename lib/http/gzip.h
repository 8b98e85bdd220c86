// Reading whether an HTTP client accepts gzip.
//
// Prometheus asks for gzip on every scrape (Accept-Encoding: gzip); the exposition is published
// only gzipped (common/gzip_stream.h), sent as it is to such a client and inflated while it is
// sent to any other. Pure; no state.
#pragma once

#include <string_view>

namespace lagsight::http {

// Whether an Accept-Encoding header value admits gzip: "gzip" (or "x-gzip", or "*") listed
// without q=0. Absent or empty: no.
bool AcceptsGzip(std::string_view accept_encoding);

}  // namespace lagsight::http
