// StreamsGroupLister: the streams groups (KIP-1071) of a cluster, listed with ListGroups v5
// filtered to the type "streams" (typed_group_listing.h), sent to every broker (each lists the
// groups it coordinates) over connections of its own (CoordinatorSession), PLAINTEXT or TLS as
// the batched offset fetch.
//
// Why by hand: librdkafka 2.0.2 sends ListGroups v4, which Kafka 4.3.2 answers without any
// streams group (docs/facts.md). A broker without ListGroups v5 (before Kafka 4.0) has no
// streams groups: `unsupported` says so, for the caller to say once. Blocking, bounded by the
// timeouts it is given; not thread-safe: one poll at a time.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kafka/admin.h"
#include "kafka/client_connections.h"

namespace lagsight::kafka {

struct ListedStreamsGroups {
  // Every streams group the brokers that answered coordinate, state in snake case.
  std::vector<GroupListing> groups;
  // The first failure met; empty when every broker answered. A broker that did not answer
  // leaves its groups out.
  std::string failure;
  bool unsupported = false;  // a broker predates ListGroups v5 (`failure` names it)
};

class StreamsGroupLister {
 public:
  explicit StreamsGroupLister(BatchedOffsetFetcherOptions options);
  ~StreamsGroupLister();

  // Every broker DescribeCluster names is asked.
  ListedStreamsGroups List(std::chrono::milliseconds request_timeout,
                           std::chrono::milliseconds total_timeout);

 private:
  ClientConnections connections_;
};

}  // namespace lagsight::kafka
