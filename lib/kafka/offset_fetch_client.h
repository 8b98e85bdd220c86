// BatchedOffsetFetcher: reads the committed offsets of many groups with a few OffsetFetch v8
// requests (KIP-709, Kafka 3.0+) over connections of its own, where librdkafka 2.0.2 sends one
// request per group.
//
// Why by hand: librdkafka is the Kafka client of the stack, but its ListConsumerGroupOffsets takes
// one group per call. At 2,000 groups on one broker those calls cost ~0.25 s of CPU a poll in
// librdkafka's threads (perf, README "Measured"), half of lagsight's idle cost; a handful of
// batched requests cost a few milliseconds. Everything else still goes through librdkafka.
//
// It answers only what it can answer exactly: a group comes back nullopt when the broker predates
// OffsetFetch v8 (`unsupported`: librdkafka's per-group path reads those,
// RdKafkaAdmin::ListCommittedOffsets), its coordinator is moving or loading, the group or one of
// its partitions carries an error code (`errors` names it), a connection fails or the time runs
// out. Only for clusters reached over PLAINTEXT or TLS (SSL, mTLS)
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
#include "kafka/client_connections.h"
#include "kafka/snapshot.h"

namespace lagsight::kafka {

struct BatchedOffsets {
  // One per requested id, in the same order; nullopt: not answered here.
  std::vector<std::optional<CommittedOffsets>> offsets;
  // One per requested id: for a group not answered, what the broker answered it with, if it did
  // ("OffsetFetch answered NOT_COORDINATOR (error code 16)"); else empty.
  std::vector<std::string> errors;
  // A broker lacks the requests (before Kafka 3.0), or the TLS settings could not be loaded: the
  // fetch cannot serve this cluster.
  bool unsupported = false;
  // The first failure met (the broker is too old, a connection failed, an answer could not be
  // decoded, the time ran out); empty when every request was answered.
  std::string failure;
  int requests = 0;  // OffsetFetch requests answered
};

class BatchedOffsetFetcher {
 public:
  explicit BatchedOffsetFetcher(BatchedOffsetFetcherOptions options);
  ~BatchedOffsetFetcher();

  BatchedOffsets Fetch(const std::vector<std::string>& ids,
                       std::chrono::milliseconds request_timeout,
                       std::chrono::milliseconds total_timeout);

 private:
  ClientConnections connections_;
};

}  // namespace lagsight::kafka
