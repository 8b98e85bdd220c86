// Parsing of --web.listen-address values: ":9713", "127.0.0.1:9713", "[::1]:9713", "host:9713".
// An empty host means every IPv4 interface, as with Prometheus's exporters.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <string_view>

#include "common/result.h"

namespace lagsight::http {

Result<boost::asio::ip::tcp::endpoint> ParseListenAddress(std::string_view address);

}  // namespace lagsight::http
