// Kafka wire protocol for SASL/PLAIN (RFC 4616), as lagsight's own clients authenticate on a
// SASL_PLAINTEXT or SASL_SSL listener: SaslHandshake v1 (API key 17) names the mechanism, then
// SaslAuthenticate v1 (API key 36) carries the credentials as Kafka frames (KIP-152), right after
// ApiVersions, which a SASL listener answers before authentication. Both versions are served by
// every broker from Kafka 1.0 to 4.x. Same promises as wire.h: frames in, payloads out, no read
// past the payload. Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/result.h"
#include "kafka/wire.h"

namespace lagsight::kafka::wire {

constexpr std::int16_t kSaslHandshake = 17;
constexpr std::int16_t kSaslAuthenticate = 36;
constexpr std::int16_t kSaslHandshakeVersion = 1;     // v1: SaslAuthenticate frames follow
constexpr std::int16_t kSaslAuthenticateVersion = 1;  // v1: the answer adds the session lifetime

Bytes SaslHandshakeRequest(std::int32_t correlation_id, std::string_view client_id,
                           std::string_view mechanism);
// Nothing when the broker enables `mechanism`; else why not, with the mechanisms it offers.
std::optional<Error> ParseSaslHandshakeResponse(std::span<const std::uint8_t> payload,
                                                std::int32_t correlation_id,
                                                std::string_view mechanism);

// PLAIN's one message: authorization id (empty: the user's own), user name and password, each
// separated by a NUL byte.
Bytes SaslPlainAuthenticateRequest(std::int32_t correlation_id, std::string_view client_id,
                                   std::string_view username, std::string_view password);
// Nothing when the broker accepted the credentials; else the broker's own words.
std::optional<Error> ParseSaslAuthenticateResponse(std::span<const std::uint8_t> payload,
                                                   std::int32_t correlation_id);

}  // namespace lagsight::kafka::wire
