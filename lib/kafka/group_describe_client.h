// ConsumerGroupDescriber: who the members of KIP-848 ("consumer" protocol) groups are and which
// partitions each holds, read with batched ConsumerGroupDescribe requests (API key 69, Kafka 4.0)
// sent to each group's coordinator over connections of its own (CoordinatorSession). Given
// StreamsDescribeApi(), the same for streams groups (KIP-1071) with StreamsGroupDescribe (API
// key 89, Kafka 4.1), whose answer decodes into the same shape (wire_streams.h); given
// ClassicDescribeApi(), classic and simple groups with DescribeGroups v5 (wire_classic.h), which
// keeps librdkafka's admin worker, and its abort when a connection drops, out of the poll.
//
// Why by hand: librdkafka 2.0.2 speaks only the classic DescribeGroups, which answers a KIP-848
// group as dead with no members; ConsumerGroupDescribe came with librdkafka 2.4. It only reads
// (never joins a group or commits), over PLAINTEXT or TLS as the batched offset fetch does
// (BatchedOffsetFetcher::Security decides; SASL clusters go without it).
//
// A broker without ConsumerGroupDescribe (before Kafka 4.0) answers nothing, and `unsupported`
// says so, so the caller can say it once rather than fail every poll. Blocking, bounded by the
// timeouts it is given; not thread-safe: one poll at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kafka/admin.h"
#include "kafka/offset_fetch_client.h"
#include "kafka/wire.h"

namespace lagsight::kafka {

// The batched fetch's settings serve it too: connections per coordinator, groups per request
// (200: a request of 200 groups of 10 members on 100 partitions answers in ~100 KB), answer size.
using ConsumerGroupDescriberOptions = BatchedOffsetFetcherOptions;

// What one describe request is: its API, the highest version lagsight speaks, how a request is
// encoded and an answer decoded, and since when Kafka has it (said when a broker lacks it).
struct DescribeApi {
  const char* name;        // "ConsumerGroupDescribe"
  const char* introduced;  // "Kafka 4.0, KIP-848"
  std::int16_t key;
  std::int16_t min_version;  // a broker whose highest version is below it lacks the API
  std::int16_t max_version;
  wire::Bytes (*request)(std::int32_t correlation_id, std::string_view client_id,
                         std::int16_t version, const std::vector<std::string_view>& groups);
  Result<std::vector<wire::DescribedConsumerGroup>> (*parse)(std::span<const std::uint8_t> payload,
                                                             std::int32_t correlation_id,
                                                             std::int16_t version,
                                                             std::size_t max_groups,
                                                             std::size_t max_decoded_bytes);
};
const DescribeApi& ConsumerDescribeApi();
const DescribeApi& StreamsDescribeApi();
// The classic DescribeGroups at v5 (wire_classic.h): classic and simple groups, with their members
// and assignments, without librdkafka's admin worker.
const DescribeApi& ClassicDescribeApi();

struct DescribedGroups {
  // One per group the coordinators answered, in any order: state in snake case, members sorted by
  // id with their current assignments, assigned_topics. A group the broker does not know as a
  // KIP-848 group (GROUP_ID_NOT_FOUND: deleted, or a classic group) is not_found; any other
  // error code is its `error`.
  std::vector<GroupDescription> groups;
  // The first failure met (a connection, an answer that could not be decoded, the time ran out);
  // empty when every request was answered.
  std::string failure;
  bool unsupported = false;   // a broker predates the describe API (`failure` names it)
  bool tls_unusable = false;  // the TLS settings did not load (`failure` says why): nothing sent
  int requests = 0;           // describe requests answered
};

class ConsumerGroupDescriber {
 public:
  explicit ConsumerGroupDescriber(ConsumerGroupDescriberOptions options,
                                  const DescribeApi& api = ConsumerDescribeApi());
  ~ConsumerGroupDescriber();

  DescribedGroups Describe(const std::vector<std::string>& ids,
                           std::chrono::milliseconds request_timeout,
                           std::chrono::milliseconds total_timeout);

 private:
  ClientConnections connections_;
  const DescribeApi& api_;
};

}  // namespace lagsight::kafka
