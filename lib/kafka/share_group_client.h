// ShareGroupReader: which share groups (KIP-932, Kafka 4.2+) a cluster has, and how far each has
// acknowledged every partition it reads, over connections of its own (CoordinatorSession).
//
// Why by hand: librdkafka 2.0.2 lists groups with ListGroups v4, which a Kafka 4.3 broker answers
// without its share groups, and has no share group request. Listing asks every broker
// (DescribeCluster names them) with ListGroups v5 filtered to type "share"; progress is read with
// batched DescribeShareGroupOffsets (API key 90) sent to each group's coordinator: the
// share-partition start offset per partition and, from v1 (KIP-1226, Kafka 4.3), the lag as the
// coordinator computes it; and, on the same connection, ShareGroupDescribe (API key 77, v1) for
// the members of the groups answered, where the broker speaks it. It only reads: never joins a
// share group, fetches or acknowledges.
//
// A broker without DescribeShareGroupOffsets (before share groups) makes `unsupported` true, so
// the caller can say it once rather than fail every poll. Blocking, bounded by the timeouts it
// is given; not thread-safe: one poll at a time.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kafka/admin.h"
#include "kafka/client_connections.h"

namespace lagsight::kafka {

class ShareGroupReader {
 public:
  // The batched fetch's settings serve it too (groups per request, connections, answer size).
  explicit ShareGroupReader(BatchedOffsetFetcherOptions options);
  ~ShareGroupReader();

  // Every share group of the cluster, with its state in snake case.
  ShareGroupListings List(std::chrono::milliseconds request_timeout,
                          std::chrono::milliseconds total_timeout);
  // The progress of each of `ids` on every partition it has state on, and its members.
  ShareGroupProgress Describe(const std::vector<std::string>& ids,
                              std::chrono::milliseconds request_timeout,
                              std::chrono::milliseconds total_timeout);

 private:
  ClientConnections connections_;
};

}  // namespace lagsight::kafka
