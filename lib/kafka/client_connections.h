// ClientConnections: what one of lagsight's own Kafka clients keeps from call to call, the same
// for the four of them (the batched OffsetFetch, the group describes, the share group reader,
// the streams group listing): its options (with the security they speak: TLS, SASL/PLAIN), the
// host names it resolved (until connecting to one fails), and the TLS context built once from the
// options, or why it could not be (a file that cannot be read, a wrong key password): every call
// then answers nothing and says so.
// Not thread-safe: one call at a time, as each client.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace lagsight::kafka {

struct ResolvedAddresses;
struct TlsContext;

// TLS as librdkafka's properties set it up for security.protocol SSL, and as librdkafka 2.0.2
// does it: the broker's certificate verified against the CA (OpenSSL's default paths when none is
// given) and its host name checked (RFC 2818), each unless turned off.
struct TlsOptions {
  std::string ca_location;  // ssl.ca.location: a file or a directory of CA certificates
  std::string ca_pem;       // ssl.ca.pem
  std::string certificate_location, certificate_pem;  // ssl.certificate.*: mTLS
  std::string key_location, key_pem, key_password;    // ssl.key.*
  bool verify_certificate = true;                     // enable.ssl.certificate.verification
  bool verify_host_name = true;  // ssl.endpoint.identification.algorithm: https (or none)
};

// SASL/PLAIN as librdkafka's properties set it up (security.protocol SASL_PLAINTEXT or SASL_SSL,
// sasl.mechanism PLAIN): sent on every connection right after ApiVersions (wire_sasl.h).
struct SaslPlainCredentials {
  std::string username;
  std::string password;
};

// How lagsight's own clients reach the cluster, from its librdkafka properties.
struct ClientSecurity {
  std::optional<TlsOptions> tls;                   // nullopt: no TLS
  std::optional<SaslPlainCredentials> sasl_plain;  // nullopt: no SASL
};

// The security of the client `properties` (librdkafka's) as these clients apply it: PLAINTEXT,
// SSL, SASL_PLAINTEXT and SASL_SSL with the PLAIN mechanism; an error saying why when they would
// not do as librdkafka does (another SASL mechanism, a PKCS#12 keystore, cipher or curve lists, a
// CRL, an engine): the cluster is then read by librdkafka alone.
Result<ClientSecurity> OwnClientSecurity(const std::map<std::string, std::string>& properties);

struct BatchedOffsetFetcherOptions {
  std::vector<std::string> bootstrap_servers;  // host:port, [v6]:port, optionally proto://
  std::optional<TlsOptions> tls;               // nullopt: PLAINTEXT
  std::optional<SaslPlainCredentials> sasl_plain;
  std::string client_id = "lagsight";
  // Connections per coordinator, each with one request in flight (a broker answers a
  // connection's requests one at a time).
  int connections_per_coordinator = 4;
  // Groups per OffsetFetch: 200 groups of 50 partitions answer in ~220 KB.
  std::size_t groups_per_request = 200;
  // Larger answers fail (their groups go to the per-group path): 16 MiB is ~3,800 committed
  // partitions for each of 200 groups, and bounds what a decoded answer may take.
  std::size_t max_response_bytes = 16u << 20;
};

class ClientConnections {
 public:
  explicit ClientConnections(BatchedOffsetFetcherOptions options);
  ~ClientConnections();
  ClientConnections(ClientConnections&&) noexcept;
  ClientConnections& operator=(ClientConnections&&) noexcept;

  const BatchedOffsetFetcherOptions& options() const { return options_; }
  // With options().tls: the OpenSSL context, or null and tls_failure() says why.
  TlsContext* tls() const { return tls_.get(); }
  const std::string& tls_failure() const { return tls_failure_; }
  ResolvedAddresses& resolved() { return *resolved_; }

 private:
  BatchedOffsetFetcherOptions options_;
  std::unique_ptr<ResolvedAddresses> resolved_;
  std::unique_ptr<TlsContext> tls_;
  std::string tls_failure_;
};

}  // namespace lagsight::kafka
