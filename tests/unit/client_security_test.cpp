// How lagsight's own Kafka clients take librdkafka's security properties (OwnClientSecurity),
// and the SASL/PLAIN frames they send (wire_sasl.h) against frames assembled by hand from Kafka's
// message schemas (SaslHandshake v1, SaslAuthenticate v1). That a real SASL_PLAINTEXT broker
// accepts them is tests/integration/test_kafka_security.py.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "kafka/client_connections.h"
#include "kafka/wire_sasl.h"
#include "wire_bytes.h"

namespace {

using lagsight::kafka::OwnClientSecurity;
using Properties = std::map<std::string, std::string>;
namespace wire = lagsight::kafka::wire;
using lagsight::test::wire_bytes::Bytes;
using lagsight::test::wire_bytes::Concat;
using lagsight::test::wire_bytes::Int16;
using lagsight::test::wire_bytes::Int32;
using lagsight::test::wire_bytes::Int64;

// A non-flexible STRING: int16 length, then the text.
Bytes String(const std::string& text) {
  return Concat({Int16(static_cast<std::uint16_t>(text.size())), Bytes(text.begin(), text.end())});
}

std::string Tail(const Bytes& bytes, std::size_t from) {
  return std::string(bytes.begin() + static_cast<long>(from), bytes.end());
}

}  // namespace

TEST_CASE("own clients: PLAINTEXT and TLS as librdkafka sets them up", "[kafka][security]") {
  for (const Properties& plaintext :
       {Properties{}, Properties{{"security.protocol", "PLAINTEXT"}},
        // TLS settings of a PLAINTEXT cluster are not used, by librdkafka either.
        Properties{{"security.protocol", "plaintext"}, {"ssl.keystore.location", "/k.p12"}}}) {
    const auto found = OwnClientSecurity(plaintext);
    REQUIRE(found.ok());
    CHECK_FALSE(found->tls.has_value());
    CHECK_FALSE(found->sasl_plain.has_value());
  }

  const auto tls = OwnClientSecurity({{"security.protocol", "SSL"},
                                      {"ssl.ca.location", "/etc/kafka/ca.pem"},
                                      {"ssl.certificate.location", "/etc/kafka/client.pem"},
                                      {"ssl.key.location", "/etc/kafka/client.key"},
                                      {"ssl.key.password", "secret"},
                                      {"client.id", "lagsight"}});
  REQUIRE(tls.ok());
  REQUIRE(tls->tls.has_value());
  CHECK_FALSE(tls->sasl_plain.has_value());
  CHECK(tls->tls->ca_location == "/etc/kafka/ca.pem");
  CHECK(tls->tls->certificate_location == "/etc/kafka/client.pem");
  CHECK(tls->tls->key_location == "/etc/kafka/client.key");
  CHECK(tls->tls->key_password == "secret");
  // librdkafka 2.0.2's defaults: the certificate verified, the host name checked.
  CHECK(tls->tls->verify_certificate);
  CHECK(tls->tls->verify_host_name);

  const auto relaxed = OwnClientSecurity({{"security.protocol", "ssl"},
                                          {"ssl.ca.pem", "-----BEGIN CERTIFICATE-----"},
                                          {"enable.ssl.certificate.verification", "false"},
                                          {"ssl.endpoint.identification.algorithm", "none"}});
  REQUIRE(relaxed.ok());
  REQUIRE(relaxed->tls.has_value());
  CHECK(relaxed->tls->ca_pem == "-----BEGIN CERTIFICATE-----");
  CHECK_FALSE(relaxed->tls->verify_certificate);
  CHECK_FALSE(relaxed->tls->verify_host_name);
}

TEST_CASE("own clients: SASL/PLAIN over plaintext and over TLS", "[kafka][security]") {
  const auto plain = OwnClientSecurity({{"security.protocol", "SASL_PLAINTEXT"},
                                        {"sasl.mechanisms", "PLAIN"},
                                        {"sasl.username", "lagsight"},
                                        {"sasl.password", "s3cret"}});
  REQUIRE(plain.ok());
  CHECK_FALSE(plain->tls.has_value());
  REQUIRE(plain->sasl_plain.has_value());
  CHECK(plain->sasl_plain->username == "lagsight");
  CHECK(plain->sasl_plain->password == "s3cret");

  // Confluent Cloud's shape: SASL_SSL with PLAIN (sasl.mechanism, the alias), the CA by default.
  const auto over_tls = OwnClientSecurity({{"security.protocol", "sasl_ssl"},
                                           {"sasl.mechanism", "plain"},
                                           {"sasl.username", "KEY"},
                                           {"sasl.password", "SECRET"},
                                           {"sasl.oauthbearer.config", "unused with PLAIN"}});
  REQUIRE(over_tls.ok());
  REQUIRE(over_tls->tls.has_value());
  CHECK(over_tls->tls->verify_certificate);
  REQUIRE(over_tls->sasl_plain.has_value());
  CHECK(over_tls->sasl_plain->username == "KEY");
}

TEST_CASE("own clients: what they would not do as librdkafka does is left to it, said why",
          "[kafka][security]") {
  const auto refused = [](const Properties& properties, const std::string& reason) {
    const auto found = OwnClientSecurity(properties);
    REQUIRE_FALSE(found.ok());
    CHECK_THAT(found.error().message, Catch::Contains(reason));
  };
  // librdkafka's default mechanism is GSSAPI (Kerberos).
  refused({{"security.protocol", "SASL_SSL"}}, "GSSAPI");
  refused({{"security.protocol", "sasl_plaintext"}, {"sasl.mechanisms", "SCRAM-SHA-512"}},
          "SCRAM-SHA-512");
  refused({{"security.protocol", "SASL_PLAINTEXT"}, {"sasl.mechanism", "OAUTHBEARER"}},
          "OAUTHBEARER");
  refused({{"security.protocol", "SASL_PLAINTEXT"}, {"sasl.mechanism", "PLAIN"}}, "sasl.username");
  refused({{"security.protocol", "SASL_SSL"},
           {"sasl.mechanism", "PLAIN"},
           {"sasl.username", "u"},
           {"sasl.password", "p"},
           {"ssl.keystore.location", "/k.p12"}},
          "ssl.keystore.location");
  refused({{"security.protocol", "SSL"}, {"ssl.keystore.location", "/k.p12"}},
          "ssl.keystore.location");
  refused({{"security.protocol", "SSL"}, {"ssl.cipher.suites", "ECDHE-RSA-AES128-GCM-SHA256"}},
          "ssl.cipher.suites");
  refused({{"security.protocol", "SSL"}, {"ssl.crl.location", "/crl.pem"}}, "ssl.crl.location");
  refused({{"security.protocol", "SSL"}, {"ssl.ca.location", "probe"}}, "probe");
  refused({{"security.protocol", "SSL"}, {"ssl.endpoint.identification.algorithm", "ldap"}},
          "ldap");
  refused({{"security.protocol", "carrier-pigeon"}}, "carrier-pigeon");
}

TEST_CASE("SASL/PLAIN frames: SaslHandshake v1 and SaslAuthenticate v1", "[kafka][security]") {
  // Request header v1: api key, version, correlation id, client id; then the mechanism.
  CHECK(wire::SaslHandshakeRequest(7, "lagsight", "PLAIN") ==
        Concat({Int32(2 + 2 + 4 + 10 + 7), Int16(17), Int16(1), Int32(7), String("lagsight"),
                String("PLAIN")}));
  // The message: empty authorization id, NUL, user, NUL, password (RFC 4616), as BYTES.
  const std::string message = std::string("\0", 1) + "user" + std::string("\0", 1) + "pw";
  const Bytes request = wire::SaslPlainAuthenticateRequest(8, "lagsight", "user", "pw");
  CHECK(request == Concat({Int32(2 + 2 + 4 + 10 + 4 + 8), Int16(36), Int16(1), Int32(8),
                           String("lagsight"), Int32(8), Bytes(message.begin(), message.end())}));
  CHECK(Tail(request, request.size() - 8) == message);
}

TEST_CASE("SASL/PLAIN answers: accepted, refused in the broker's words, truncated",
          "[kafka][security]") {
  // SaslHandshake: error code, the mechanisms enabled.
  CHECK_FALSE(wire::ParseSaslHandshakeResponse(
                  Concat({Int32(3), Int16(0), Int32(1), String("PLAIN")}), 3, "PLAIN")
                  .has_value());
  const auto unsupported = wire::ParseSaslHandshakeResponse(
      Concat({Int32(3), Int16(33), Int32(2), String("SCRAM-SHA-256"), String("SCRAM-SHA-512")}), 3,
      "PLAIN");
  REQUIRE(unsupported.has_value());
  CHECK_THAT(unsupported->message, Catch::Contains("does not enable SASL mechanism PLAIN") &&
                                       Catch::Contains("SCRAM-SHA-256, SCRAM-SHA-512"));
  CHECK(wire::ParseSaslHandshakeResponse(Concat({Int32(4), Int16(0), Int32(0)}), 3, "PLAIN")
            .has_value());  // another request's answer
  // An array count that cannot fit in what is left.
  CHECK_THAT(wire::ParseSaslHandshakeResponse(Concat({Int32(3), Int16(0), Int32(1000)}), 3, "PLAIN")
                 ->message,
             Catch::Contains("truncated"));

  // SaslAuthenticate v1: error code, message (nullable), auth bytes, session lifetime.
  CHECK_FALSE(wire::ParseSaslAuthenticateResponse(
                  Concat({Int32(5), Int16(0), Int16(0xffff), Int32(0), Int64(0)}), 5)
                  .has_value());
  const auto refused = wire::ParseSaslAuthenticateResponse(
      Concat({Int32(5), Int16(58), String("Authentication failed: Invalid username or password"),
              Int32(0), Int64(0)}),
      5);
  REQUIRE(refused.has_value());
  CHECK_THAT(refused->message,
             Catch::Contains("error code 58") && Catch::Contains("Invalid username or password"));
  CHECK_THAT(
      wire::ParseSaslAuthenticateResponse(Concat({Int32(5), Int16(0), Int16(40)}), 5)->message,
      Catch::Contains("truncated"));
  // A broker's words are kept short, whatever it sends.
  const auto wordy = wire::ParseSaslAuthenticateResponse(
      Concat({Int32(5), Int16(58), String(std::string(30000, 'x')), Int32(0), Int64(0)}), 5);
  REQUIRE(wordy.has_value());
  CHECK(wordy->message.size() < 400);
}
