#include "kafka/wire_sasl.h"

#include <string>

#include "kafka/wire_codec.h"

namespace lagsight::kafka::wire {
namespace {

using detail::Header;
using detail::Reader;
using detail::ReadHeader;
using detail::Truncated;
using detail::Writer;

constexpr std::int16_t kUnsupportedSaslMechanism = 33;
constexpr std::size_t kMechanismBytes = 2;  // an empty STRING
// What of the broker's own words goes into an error (and so the log): a broker may send up to
// max_response_bytes of them.
constexpr std::size_t kBrokerWordsKept = 256;

std::string Clipped(std::string_view words) {
  if (words.size() <= kBrokerWordsKept) return std::string(words);
  return std::string(words.substr(0, kBrokerWordsKept)) + "...";
}

}  // namespace

Bytes SaslHandshakeRequest(std::int32_t correlation_id, std::string_view client_id,
                           std::string_view mechanism) {
  Writer writer = Header(kSaslHandshake, kSaslHandshakeVersion, correlation_id, client_id, false);
  writer.String(mechanism);
  return std::move(writer).Frame();
}

std::optional<Error> ParseSaslHandshakeResponse(std::span<const std::uint8_t> payload,
                                                std::int32_t correlation_id,
                                                std::string_view mechanism) {
  Reader reader(payload);
  if (auto error = ReadHeader(reader, correlation_id, false, "SaslHandshake")) return *error;
  const std::int16_t error_code = reader.Int16();
  const std::int64_t count = reader.ArrayLength(kMechanismBytes);
  std::string offered;
  for (std::int64_t i = 0; reader.ok() && i < count; ++i) {
    offered += (offered.empty() ? "" : ", ") + std::string(reader.String());
  }
  if (!reader.ok()) return Truncated("SaslHandshake");
  if (error_code == kUnsupportedSaslMechanism) {
    return Error{"the broker does not enable SASL mechanism " + std::string(mechanism) +
                 " (it enables: " + (offered.empty() ? "none" : Clipped(offered)) + ")"};
  }
  if (error_code != 0) {
    return Error{"SaslHandshake answered error code " + std::to_string(error_code)};
  }
  return std::nullopt;
}

Bytes SaslPlainAuthenticateRequest(std::int32_t correlation_id, std::string_view client_id,
                                   std::string_view username, std::string_view password) {
  Writer writer =
      Header(kSaslAuthenticate, kSaslAuthenticateVersion, correlation_id, client_id, false);
  std::string message;
  message.reserve(2 + username.size() + password.size());
  message += '\0';
  message += username;
  message += '\0';
  message += password;
  writer.ByteString(message);
  return std::move(writer).Frame();
}

std::optional<Error> ParseSaslAuthenticateResponse(std::span<const std::uint8_t> payload,
                                                   std::int32_t correlation_id) {
  Reader reader(payload);
  if (auto error = ReadHeader(reader, correlation_id, false, "SaslAuthenticate")) return *error;
  const std::int16_t error_code = reader.Int16();
  const std::string message = Clipped(reader.String());
  reader.ByteString();  // auth_bytes: PLAIN's answer is empty
  reader.Int64();       // session_lifetime_ms: a connection lives for one poll
  if (!reader.ok()) return Truncated("SaslAuthenticate");
  if (error_code != 0) {
    return Error{"SASL/PLAIN authentication failed (error code " + std::to_string(error_code) +
                 (message.empty() ? ")" : "): " + message)};
  }
  return std::nullopt;
}

}  // namespace lagsight::kafka::wire
