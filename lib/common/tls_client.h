// The client's part of a TLS handshake, as every lagsight client does it (the Flink REST client,
// the batched Kafka OffsetFetch client): the server name sent (SNI) for a host name but never
// for an IP address (RFC 6066 3), and the server's certificate checked against the host, an IP
// address too (RFC 2818), unless the caller turned verification off. Header-only: a template
// over Beast's ssl_stream; its users link OpenSSL.
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <optional>
#include <string>

#include "common/result.h"

namespace lagsight {

// Call on a connected stream before its async_handshake.
template <typename TlsStream>
std::optional<Error> PrepareTlsClient(TlsStream& stream, const std::string& host,
                                      bool verify_host) {
  boost::system::error_code not_an_ip;
  boost::asio::ip::make_address(host, not_an_ip);
  if (not_an_ip && !SSL_set_tlsext_host_name(stream.native_handle(), host.c_str())) {
    return Error{"TLS: cannot set the server name " + host};
  }
  if (verify_host) stream.set_verify_callback(boost::asio::ssl::host_name_verification(host));
  return std::nullopt;
}

}  // namespace lagsight
