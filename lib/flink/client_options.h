// The HTTP client settings lagsight uses for a Flink cluster's REST API: base URL, deadlines,
// body cap, concurrency, TLS files and the Authorization header (a bearer token, else HTTP basic
// auth from the username and password), all from the cluster's configuration.
#pragma once

#include <string>
#include <string_view>

#include "config/config.h"
#include "flink/http_client.h"

namespace lagsight::flink {

HttpClientOptions ClientOptions(const config::FlinkClusterConfig& cluster);

// RFC 4648 Base64 with padding, for the basic-auth header.
std::string Base64(std::string_view in);

}  // namespace lagsight::flink
