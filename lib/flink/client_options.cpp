#include "flink/client_options.h"

namespace lagsight::flink {

std::string Base64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned n = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += {kAlphabet[n >> 18], kAlphabet[(n >> 12) & 63], kAlphabet[(n >> 6) & 63],
            kAlphabet[n & 63]};
  }
  if (i + 1 == in.size()) {
    const unsigned n = static_cast<unsigned char>(in[i]) << 16;
    out += {kAlphabet[n >> 18], kAlphabet[(n >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const unsigned n =
        (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += {kAlphabet[n >> 18], kAlphabet[(n >> 12) & 63], kAlphabet[(n >> 6) & 63], '='};
  }
  return out;
}

HttpClientOptions ClientOptions(const config::FlinkClusterConfig& cluster) {
  HttpClientOptions options;
  options.base_url = cluster.rest_url;
  options.timeout = cluster.request_timeout;
  options.max_body_bytes = cluster.max_response_bytes;
  options.max_in_flight = cluster.max_concurrent_requests;
  options.ca_file = cluster.tls_ca_file;
  options.cert_file = cluster.tls_cert_file;
  options.key_file = cluster.tls_key_file;
  options.insecure_skip_verify = cluster.tls_insecure_skip_verify;
  if (!cluster.bearer_token.empty()) {
    options.authorization = "Bearer " + cluster.bearer_token;
  } else if (!cluster.username.empty()) {
    options.authorization = "Basic " + Base64(cluster.username + ":" + cluster.password);
  }
  return options;
}

}  // namespace lagsight::flink
