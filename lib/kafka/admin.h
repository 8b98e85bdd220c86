// KafkaAdmin: the narrow seam between lagsight and a Kafka cluster.
//
// Every call is blocking, bounded by the timeout it is given, and reports failure as a value.
// The real implementation (RdKafkaAdmin) wraps librdkafka; unit tests substitute a fake so the
// collector's logic is testable without a broker, while integration tests use the real one.
// Implementations need not be thread-safe: one poll at a time uses an instance.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "kafka/record_runs.h"
#include "kafka/snapshot.h"

namespace lagsight::kafka {

struct GroupListing {
  std::string id;
  std::string state;     // snake case, "unknown" where the client cannot name it
  bool simple = false;   // empty protocol type: offsets committed without membership
  bool streams = false;  // a streams group (KIP-1071), listed by KafkaAdmin::ListStreamsGroups
};

struct GroupDescription {
  std::string id;
  std::string state;
  bool simple = false;
  int members = 0;
  // The broker answered "no such (classic) group": a KIP-848 group, or one deleted meanwhile.
  bool not_found = false;
  std::optional<std::string> error;
  // Topics the members' current assignments name. Kafka hides a topic the principal may not
  // Describe from metadata and from the group's committed offsets, but not from these.
  std::set<std::string> assigned_topics;
  // Its members with their assignments (every topic, before the filter), as the answer lists
  // them (the collector sorts them and drops what is named twice).
  std::vector<GroupMember> member_list;
};

// What ConsumerGroupDescribe said of KIP-848 ("consumer" protocol) groups.
struct ConsumerGroupDescriptions {
  // One per group answered, in any order, as DescribeGroups' are; member_list holds each
  // member's current assignment. not_found: the broker does not know it as a KIP-848 group.
  std::vector<GroupDescription> groups;
  // Why some groups went unanswered (a connection failed, the time ran out); empty when every
  // group was answered, and when the client or the broker cannot describe such groups at all.
  std::string failure;
};

// The share groups (KIP-932) lagsight's own ListGroups v5 found: state in snake case, never simple.
struct ShareGroupListings {
  std::vector<GroupListing> groups;
  // Why some broker did not answer (its share groups are missing); empty when all answered, and
  // when the client or the brokers cannot list share groups at all.
  std::string failure;
  bool unsupported = false;  // a broker predates share groups (`failure` names it)
};

// What DescribeShareGroupOffsets said of share groups: one per group answered, in any order
// (state left empty: the listing has it); a group deleted meanwhile is left out.
struct ShareGroupProgress {
  std::vector<ShareGroup> groups;
  std::vector<std::string> errors;  // groups and partitions answered with an error
  std::string failure;              // as ShareGroupListings'
  bool unsupported = false;
  int requests = 0;  // DescribeShareGroupOffsets requests answered
};

// The streams groups (KIP-1071) of a cluster.
struct StreamsGroupListings {
  std::vector<GroupListing> groups;  // each with `streams` set
  // Why some brokers' groups are missing; empty when every broker answered, and when the client
  // or the cluster cannot list streams groups at all.
  std::string failure;
};

// Log start; log end (high watermark, as read_uncommitted readers and Kafka's tools see it);
// last stable offset (the log end of read_committed readers).
enum class OffsetSpec { kEarliest, kLatest, kLastStable };

struct ListedOffsets {
  std::map<TopicPartition, std::int64_t> offsets;
  std::vector<std::string> errors;  // partitions that could not be read, and why
};

struct FetchedTimestamps {
  std::map<RecordKey, RecordTimestamp> timestamps;
  // Positions with no record up to the end of the log: position -> the offset the reader reached
  // there (the log end as of the fetch, for a read_committed position the last stable offset).
  // Everything in between is transaction markers, or records a read_committed reader never gets.
  std::map<RecordKey, std::int64_t> markers_only;
  // Positions that could not be read, and why.
  std::vector<std::string> errors;
  // The records read on the way, in passes (record_runs.h): they answer later positions among
  // them without another read.
  std::vector<RecordRun> runs;
};

class KafkaAdmin {
 public:
  virtual ~KafkaAdmin() = default;

  virtual Result<std::vector<GroupListing>> ListGroups(std::chrono::milliseconds timeout) = 0;

  // One description per requested id, in any order.
  virtual Result<std::vector<GroupDescription>> DescribeGroups(
      const std::vector<std::string>& ids, std::chrono::milliseconds timeout) = 0;

  // Members and assignments of KIP-848 groups, which DescribeGroups cannot read. Each request
  // is bounded by `request_timeout`, all of them by `total_timeout`. By default none is
  // described: a client without ConsumerGroupDescribe leaves such groups without members.
  virtual ConsumerGroupDescriptions DescribeConsumerGroups(
      const std::vector<std::string>& /*ids*/, std::chrono::milliseconds /*request_timeout*/,
      std::chrono::milliseconds /*total_timeout*/) {
    return {};
  }

  // Share groups (KIP-932) and their progress per partition, which librdkafka 2.0.2 can neither
  // list nor describe. Bounded as DescribeConsumerGroups; by default there are none.
  virtual ShareGroupListings ListShareGroups(std::chrono::milliseconds /*request_timeout*/,
                                             std::chrono::milliseconds /*total_timeout*/) {
    return {};
  }
  virtual ShareGroupProgress DescribeShareGroupOffsets(
      const std::vector<std::string>& /*ids*/, std::chrono::milliseconds /*request_timeout*/,
      std::chrono::milliseconds /*total_timeout*/) {
    return {};
  }
  // Streams groups (KIP-1071: Kafka Streams with group.protocol=streams), which ListGroups leaves
  // out, and their members and the partitions of their active tasks, as DescribeConsumerGroups
  // answers for KIP-848 groups. By default none: a client without them sees no streams group.
  virtual StreamsGroupListings ListStreamsGroups(std::chrono::milliseconds /*request_timeout*/,
                                                 std::chrono::milliseconds /*total_timeout*/) {
    return {};
  }
  virtual ConsumerGroupDescriptions DescribeStreamsGroups(
      const std::vector<std::string>& /*ids*/, std::chrono::milliseconds /*request_timeout*/,
      std::chrono::milliseconds /*total_timeout*/) {
    return {};
  }

  // Committed offsets of all partitions of each group; one result per id, in the same order.
  // At most `max_in_flight` requests are outstanding at once; each is bounded by
  // `request_timeout`, all of them together by `total_timeout`.
  virtual std::vector<Result<CommittedOffsets>> ListCommittedOffsets(
      const std::vector<std::string>& ids, int max_in_flight,
      std::chrono::milliseconds request_timeout, std::chrono::milliseconds total_timeout) = 0;

  // Partition count of every topic in the cluster.
  virtual Result<std::map<std::string, std::int32_t>> TopicPartitionCounts(
      std::chrono::milliseconds timeout) = 0;

  // Log-start, log-end or last stable offsets; a partition missing from `offsets` could not be
  // read.
  virtual Result<ListedOffsets> ListOffsets(const std::vector<TopicPartition>& partitions,
                                            OffsetSpec spec, std::chrono::milliseconds timeout) = 0;

  // The id of the cluster the main client reached, as its last metadata said; nullopt while no
  // metadata has been read.
  virtual std::optional<std::string> ClusterId() = 0;

  // Each configured bootstrap address asked through a client of its own (bootstrap.servers =
  // that address alone), in config order: the cluster id and partition counts it answers with
  // (unfiltered). The addresses are asked at the same time, each bounded by `timeout`. With
  // several addresses the other requests work only after an answer in which the addresses that
  // answered agree on one cluster id, and reach the cluster through those addresses alone; after
  // an answer with two ids they fail, naming them.
  virtual std::vector<BootstrapIdentity> IdentifyBootstraps(std::chrono::milliseconds timeout) = 0;

  // The value of a broker configuration entry (e.g. "offsets.retention.minutes") as one of the
  // cluster's brokers reports it.
  virtual Result<std::string> BrokerConfig(const std::string& name,
                                           std::chrono::milliseconds timeout) = 0;

  // The timestamp of the first record at or after each position that a reader of the position's
  // isolation receives, read without joining or committing for any group. Each fetch round is
  // bounded by `request_timeout`, all of them by `total_timeout`.
  virtual Result<FetchedTimestamps> RecordTimestamps(const std::vector<RecordKey>& positions,
                                                     std::chrono::milliseconds request_timeout,
                                                     std::chrono::milliseconds total_timeout) = 0;
};

}  // namespace lagsight::kafka
