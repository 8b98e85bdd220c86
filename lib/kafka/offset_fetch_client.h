// BatchedOffsetFetcher: reads the committed offsets of many groups with a few OffsetFetch v8
// requests (KIP-709, Kafka 3.0+) over connections of its own, where librdkafka 2.0.2 sends one
// request per group.
//
// Why by hand: librdkafka is the Kafka client of the stack, but its ListConsumerGroupOffsets takes
// one group per call. At 2,000 groups on one broker those calls cost ~0.25 s of CPU a poll in
// librdkafka's threads (perf, README "Measured"), half of lagsight's idle cost; a handful of
// batched requests cost a few milliseconds. Everything else still goes through librdkafka.
//
// It answers only what it can answer exactly and leaves the rest to librdkafka's per-group path
// (RdKafkaAdmin::ListCommittedOffsets): a group comes back nullopt when the broker predates
// OffsetFetch v8, its coordinator is moving or loading, the group or one of its partitions
// carries an error code, a connection fails or the time runs out. So error messages, retries and
// anything unusual stay librdkafka's. Only for clusters reached over PLAINTEXT or TLS (SSL, mTLS)
// with the settings TlsOptions holds (see Security); SASL clusters and unusual TLS settings keep
// the per-group path.
//
// Blocking, bounded by the timeouts it is given (but for resolving a host name it has not
// resolved before: getaddrinfo cannot be interrupted); runs its own io_context on the calling
// thread. Connections last one Fetch, resolved host names until connecting to them fails. Not
// thread-safe: one poll at a time.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "kafka/snapshot.h"

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

struct BatchedOffsetFetcherOptions {
  std::vector<std::string> bootstrap_servers;  // host:port, [v6]:port, optionally proto://
  std::optional<TlsOptions> tls;               // nullopt: PLAINTEXT
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

struct BatchedOffsets {
  // One per requested id, in the same order; nullopt: not answered here.
  std::vector<std::optional<CommittedOffsets>> offsets;
  // The first failure met (the broker is too old, a connection failed, an answer could not be
  // decoded, the time ran out); empty when every request was answered.
  std::string failure;
  int requests = 0;  // OffsetFetch requests answered
};

class BatchedOffsetFetcher {
 public:
  // How the client `properties` (librdkafka's) reach the cluster: nullopt for PLAINTEXT, the
  // TLS options for SSL; an error saying why when this fetcher does not speak it (SASL, a PKCS#12
  // keystore, cipher or curve lists, a CRL, an engine: anything it would not do as librdkafka
  // does).
  static Result<std::optional<TlsOptions>> Security(
      const std::map<std::string, std::string>& properties);

  explicit BatchedOffsetFetcher(BatchedOffsetFetcherOptions options);
  ~BatchedOffsetFetcher();

  BatchedOffsets Fetch(const std::vector<std::string>& ids,
                       std::chrono::milliseconds request_timeout,
                       std::chrono::milliseconds total_timeout);

 private:
  BatchedOffsetFetcherOptions options_;
  std::unique_ptr<ResolvedAddresses> resolved_;  // host names resolved by earlier calls
  // With options_.tls: the OpenSSL context built from it, or why it could not be (a file that
  // cannot be read, a wrong key password): then every Fetch answers nothing and says so.
  std::unique_ptr<TlsContext> tls_;
  std::string tls_failure_;
};

}  // namespace lagsight::kafka
