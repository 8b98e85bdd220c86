#include "kafka/collector.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kafka/accepted_members.h"
#include "kafka/log_offsets_poll.h"
#include "kafka/poll_timing.h"
#include "kafka/share_group_poll.h"

namespace lagsight::kafka {

std::string UnifyCollisionChars(std::string_view topic) {
  std::string unified(topic);
  std::replace(unified.begin(), unified.end(), '.', '_');
  return unified;
}
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// DescribeGroups carries many groups per request; batches keep one answer's size bounded.
constexpr std::size_t kDescribeBatch = 256;

// Kafka 4 lists KIP-848 ("consumer" protocol) groups through ListGroups with their real state,
// but the classic DescribeGroups (lagsight's v5, or librdkafka 2.0.2's) answers for them with
// state Dead and an empty protocol type, which would read as a dead simple group (verified on
// Kafka 4.1.1).
// A group listed alive and described dead is therefore a KIP-848 group; its members are read with
// ConsumerGroupDescribe (KafkaAdmin::DescribeConsumerGroups; librdkafka has it only since 2.4).
bool DescribedAsKip848(const GroupListing& listing, const GroupDescription* description) {
  if (description == nullptr) return false;
  if (description->not_found) return true;
  return !description->error && description->state == "dead" && listing.state != "dead";
}

GroupKind KindOf(const GroupListing& listing, const GroupDescription* description) {
  if (listing.streams) return GroupKind::kStreams;
  if (DescribedAsKip848(listing, description)) return GroupKind::kConsumer;
  if (listing.simple || (description != nullptr && description->simple)) return GroupKind::kSimple;
  return GroupKind::kClassic;
}

// The listed groups the group filter accepts and this shard owns, sorted by id.
std::vector<GroupListing> AcceptedGroups(std::vector<GroupListing> listed,
                                         const config::KafkaClusterConfig& cluster) {
  std::vector<GroupListing> listings;
  for (GroupListing& listing : listed) {
    // Another shard's group is not read at all: its offsets are that shard's work.
    if (cluster.groups.Accepts(listing.id) && cluster.shard.Owns(listing.id)) {
      listings.push_back(std::move(listing));
    }
  }
  std::sort(listings.begin(), listings.end(),
            [](const GroupListing& a, const GroupListing& b) { return a.id < b.id; });
  return listings;
}

// The descriptions of the groups worth describing, by id, in batches; failures of a batch or a
// group are reported in `snapshot`.
std::map<std::string, GroupDescription> DescribeGroups(const std::vector<GroupListing>& listings,
                                                       const Deadline& deadline, KafkaAdmin& admin,
                                                       KafkaSnapshot& snapshot) {
  // A simple group (offsets committed without a protocol: every Flink KafkaSource's) has no
  // members and no assignments: describing it says nothing the listing did not, unless the
  // broker is too old (before ListGroups v4, Kafka 2.6) to list states. It took 2 s of a 4.5 s
  // poll at 20,000 such groups.
  std::vector<std::string> described_ids;
  for (const GroupListing& listing : listings) {
    if (listing.streams) continue;  // the classic describe would call it dead
    if (!listing.simple || listing.state == "unknown") described_ids.push_back(listing.id);
  }
  std::map<std::string, GroupDescription> descriptions;
  for (std::size_t begin = 0; begin < described_ids.size(); begin += kDescribeBatch) {
    const std::vector<std::string> batch(
        described_ids.begin() + static_cast<std::ptrdiff_t>(begin),
        described_ids.begin() +
            static_cast<std::ptrdiff_t>(std::min(described_ids.size(), begin + kDescribeBatch)));
    auto described = admin.DescribeGroups(batch, deadline.NextRequest());
    if (!described) {
      snapshot.partial_errors.push_back(described.error().message);
      continue;
    }
    for (GroupDescription& description : *described) {
      if (description.error && !description.not_found) {
        snapshot.partial_errors.push_back("describing group \"" + description.id +
                                          "\": " + *description.error);
      }
      descriptions[description.id] = std::move(description);
    }
  }
  return descriptions;
}

// The groups `answer` describes, by id (the answer of DescribeConsumerGroups or
// DescribeStreamsGroups); a group answered with an error, and requests that failed, are reported
// in `snapshot`.
std::map<std::string, GroupDescription> TakeDescribed(ConsumerGroupDescriptions answer,
                                                      const char* kinds, KafkaSnapshot& snapshot) {
  std::map<std::string, GroupDescription> described;
  if (!answer.failure.empty()) {
    snapshot.partial_errors.push_back(std::string("describing ") + kinds + ": " + answer.failure);
  }
  for (GroupDescription& description : answer.groups) {
    if (description.not_found) continue;  // deleted meanwhile: its listing says all there is
    if (description.error) {
      snapshot.partial_errors.push_back("describing group \"" + description.id +
                                        "\": " + *description.error);
      continue;
    }
    described[description.id] = std::move(description);
  }
  return described;
}

// The descriptions of the KIP-848 groups among `listings` (ConsumerGroupDescribe) and of the
// streams groups (StreamsGroupDescribe), by id.
std::map<std::string, GroupDescription> DescribeMemberGroups(
    const std::vector<GroupListing>& listings,
    const std::map<std::string, GroupDescription>& descriptions, const Deadline& deadline,
    KafkaAdmin& admin, KafkaSnapshot& snapshot) {
  std::vector<std::string> ids;
  std::vector<std::string> streams_ids;
  for (const GroupListing& listing : listings) {
    const auto found = descriptions.find(listing.id);
    if (listing.streams) {
      streams_ids.push_back(listing.id);
    } else if (found != descriptions.end() && DescribedAsKip848(listing, &found->second)) {
      ids.push_back(listing.id);
    }
  }
  std::map<std::string, GroupDescription> described;
  if (!ids.empty()) {
    described = TakeDescribed(
        admin.DescribeConsumerGroups(ids, deadline.NextRequest(), deadline.NextRequest()),
        "KIP-848 groups", snapshot);
  }
  if (!streams_ids.empty()) {
    described.merge(TakeDescribed(
        admin.DescribeStreamsGroups(streams_ids, deadline.NextRequest(), deadline.NextRequest()),
        "streams groups", snapshot));
  }
  return described;
}

// The streams groups (KIP-1071), which the listing leaves out, added to `listed` (a group listed
// already, by a broker that does list them, is marked a streams group).
void AddStreamsGroups(const Deadline& deadline, KafkaAdmin& admin,
                      std::vector<GroupListing>& listed, KafkaSnapshot& snapshot) {
  StreamsGroupListings streams =
      admin.ListStreamsGroups(deadline.NextRequest(), deadline.NextRequest());
  if (!streams.failure.empty()) {
    snapshot.partial_errors.push_back("listing streams groups: " + streams.failure);
  }
  if (streams.groups.empty()) return;
  std::map<std::string, std::size_t> known;  // id -> its index in `listed`
  for (std::size_t i = 0; i < listed.size(); ++i) known.emplace(listed[i].id, i);
  for (GroupListing& group : streams.groups) {
    const auto found = known.find(group.id);
    if (found != known.end()) {
      listed[found->second].streams = true;
    } else {
      listed.push_back(std::move(group));
    }
  }
}

// A listed group as the poll reports it, before its committed offsets: kind, state and members
// from its description where that can be trusted (for a KIP-848 group, from `consumer`, its
// ConsumerGroupDescribe answer, for a streams group its StreamsGroupDescribe answer, when there is
// one), from the listing otherwise.
ConsumerGroup GroupOf(const GroupListing& listing, const GroupDescription* description,
                      const GroupDescription* consumer, const config::KafkaClusterConfig& cluster) {
  const bool described_ok =
      description != nullptr && !description->error && !DescribedAsKip848(listing, description);
  ConsumerGroup group;
  group.id = listing.id;
  group.read_committed =
      std::any_of(cluster.read_committed_groups.begin(), cluster.read_committed_groups.end(),
                  [&](const config::Pattern& pattern) { return pattern.FullMatch(group.id); });
  group.kind = KindOf(listing, description);
  group.state = described_ok ? description->state : listing.state;
  if (described_ok) {
    group.members = description->members;
    group.member_list = AcceptedMembers(description->member_list, cluster.topics);
  }
  if ((group.kind == GroupKind::kConsumer || group.kind == GroupKind::kStreams) &&
      consumer != nullptr) {
    if (!consumer->state.empty()) group.state = consumer->state;
    group.members = consumer->members;
    group.member_list = AcceptedMembers(consumer->member_list, cluster.topics);
  }
  if (listing.simple && description == nullptr) group.members = 0;  // not described
  return group;
}

// The listed groups, with their committed offsets on the topics the filter accepts, into
// `snapshot`; the topics they committed on into `topics`. offsets[i] is listings[i]'s.
void AddGroups(const std::vector<GroupListing>& listings,
               const std::map<std::string, GroupDescription>& descriptions,
               const std::map<std::string, GroupDescription>& consumer_descriptions,
               std::vector<Result<CommittedOffsets>>& offsets,
               const config::KafkaClusterConfig& cluster, KafkaSnapshot& snapshot,
               LogTopics& topics) {
  for (std::size_t i = 0; i < listings.size(); ++i) {
    const GroupListing& listing = listings[i];
    const auto found = descriptions.find(listing.id);
    const GroupDescription* description = found == descriptions.end() ? nullptr : &found->second;
    const auto consumer = consumer_descriptions.find(listing.id);
    ConsumerGroup group =
        GroupOf(listing, description,
                consumer == consumer_descriptions.end() ? nullptr : &consumer->second, cluster);
    if (offsets[i]) {
      // Moved, not copied: the poll held every group-partition twice (8 MB at 100,000).
      CommittedOffsets::sequence_type entries = offsets[i]->extract_sequence();
      entries.erase(std::remove_if(entries.begin(), entries.end(),
                                   [&](const auto& entry) {
                                     return !cluster.topics.Accepts(entry.first.topic);
                                   }),
                    entries.end());
      group.committed.adopt_sequence(boost::container::ordered_unique_range, std::move(entries));
      for (const auto& [tp, offset] : group.committed) {
        topics.all.insert(tp.topic);
        if (group.read_committed) topics.read_committed.insert(tp.topic);
      }
    } else {
      group.offsets_known = false;
      snapshot.partial_errors.push_back("reading committed offsets of group \"" + listing.id +
                                        "\": " + offsets[i].error().message);
    }
    snapshot.groups.push_back(std::move(group));
  }
}

// Kafka drops a topic the principal may not Describe from metadata and, silently, from a group's
// committed offsets: its lag would be a hole nobody sees. Members' assignments still name it, so
// for groups with members the hole is reported; for member-less (simple) groups nothing tells.
void ReportHiddenTopics(const std::map<std::string, GroupDescription>& descriptions,
                        const std::map<std::string, std::int32_t>& counts,
                        const config::NameFilter& topic_filter, KafkaSnapshot& snapshot) {
  for (const auto& [id, description] : descriptions) {
    for (const std::string& topic : description.assigned_topics) {
      if (counts.contains(topic) || !topic_filter.Accepts(topic)) continue;
      snapshot.partial_errors.push_back(
          "group \"" + id + "\" is assigned topic \"" + topic +
          "\", which the cluster's metadata does not show to lagsight (no Describe permission on "
          "it, or being created or deleted): the group's lag on it is not reported");
    }
  }
}

}  // namespace

Collector::Collector(config::KafkaClusterConfig cluster, std::unique_ptr<KafkaAdmin> admin,
                     Clock clock)
    : cluster_(std::move(cluster)), admin_(std::move(admin)), clock_(std::move(clock)) {}

Result<KafkaSnapshot> Collector::Poll(const ExtraReads& extra_reads) {
  const Deadline deadline(cluster_.poll_timeout, cluster_.request_timeout);
  KafkaSnapshot snapshot;
  if (cluster_.bootstrap_servers.size() > 1 &&
      !IdentifyBootstraps(deadline.NextRequest(), snapshot)) {
    return snapshot;
  }

  PhaseTimes phases;
  auto listed = admin_->ListGroups(deadline.NextRequest());
  phases.Done("list");
  if (!listed) return listed.error();
  AddStreamsGroups(deadline, *admin_, *listed, snapshot);
  const std::vector<GroupListing> listings = AcceptedGroups(std::move(listed).value(), cluster_);
  std::vector<std::string> ids;
  ids.reserve(listings.size());
  for (const GroupListing& listing : listings) ids.push_back(listing.id);
  const auto descriptions = DescribeGroups(listings, deadline, *admin_, snapshot);
  const auto consumer_descriptions =
      DescribeMemberGroups(listings, descriptions, deadline, *admin_, snapshot);
  phases.Done("describe");
  auto offsets = admin_->ListCommittedOffsets(ids, cluster_.max_concurrent_requests,
                                              deadline.NextRequest(), deadline.Left());
  phases.Done("committed offsets");
  LogTopics topics;
  AddGroups(listings, descriptions, consumer_descriptions, offsets, cluster_, snapshot, topics);
  ReadShareGroups(*admin_, cluster_, deadline.NextRequest(), deadline.NextRequest(), snapshot,
                  topics.all);
  phases.Done("share groups");

  auto counts = admin_->TopicPartitionCounts(deadline.NextRequest());
  if (!counts) return counts.error();
  ReportHiddenTopics(descriptions, *counts, cluster_.topics, snapshot);
  ReportHiddenTopics(consumer_descriptions, *counts, cluster_.topics, snapshot);
  AddClusterTopics(*counts, extra_reads, cluster_.topics, snapshot, topics);
  if (auto failed = ReadLogOffsets(topics, *counts, deadline, *admin_, snapshot)) return *failed;
  phases.Done("log offsets");

  snapshot.cluster_id = admin_->ClusterId();
  if (cluster_.bootstrap_servers.size() <= 1) {
    snapshot.bootstraps.push_back(OnlyBootstrap(snapshot.cluster_id, *counts));
  }
  ReadRetention(deadline.NextRequest(), snapshot);
  // Lag in seconds is a refinement: it may take at most half of what is left of the poll, so a
  // slow fetch never makes the poll itself overrun.
  std::map<RecordKey, std::int64_t> wanted;
  if (cluster_.lag_seconds_fetch_budget > 0) {
    wanted = OldestUnconsumedPositions(snapshot);
    AddExtraPositions(extra_reads, snapshot, wanted);
  }
  ReadRecordTimestamps(wanted, cluster_.request_timeout, deadline.Left() / 2, snapshot);
  phases.Done("record timestamps");
  phases.Log(cluster_.name, ids.size());
  if (deadline.Expired()) {
    return Error{"the poll took longer than poll_timeout (" +
                 std::to_string(cluster_.poll_timeout.count()) + "ms)"};
  }
  return snapshot;
}

bool Collector::IdentifyBootstraps(milliseconds timeout, KafkaSnapshot& snapshot) {
  // First, each through a client of its own: whether the addresses name one cluster decides
  // whether anything is read through them (KafkaAdmin::IdentifyBootstraps).
  snapshot.bootstraps = admin_->IdentifyBootstraps(timeout);
  for (BootstrapIdentity& bootstrap : snapshot.bootstraps) {
    bootstrap.topic_partitions = AcceptedTopics(bootstrap.topic_partitions);
  }
  if (!ClusterMismatch(snapshot)) return true;
  // Reported, not failed: the mismatch itself is what the poll has to say.
  snapshot.partial_errors.push_back(
      "no group or offset is read: the bootstrap addresses name different clusters (" +
      AnsweredClusterIds(snapshot.bootstraps) +
      "); list the addresses of one cluster in bootstrap_servers");
  // A counter goes on, not back to 0, through polls that read nothing.
  snapshot.record_timestamp_fetches_total = timestamp_fetches_total_;
  return false;
}

BootstrapIdentity Collector::OnlyBootstrap(
    const std::optional<std::string>& cluster_id,
    const std::map<std::string, std::int32_t>& counts) const {
  // One address: the main client reached the cluster through it, so its answer is that
  // address's.
  BootstrapIdentity only;
  if (!cluster_.bootstrap_servers.empty()) only.address = cluster_.bootstrap_servers.front();
  only.cluster_id = cluster_id;
  if (!only.cluster_id) only.error = "the cluster reported no cluster id";
  only.topic_partitions = AcceptedTopics(counts);
  return only;
}

std::map<std::string, std::int32_t> Collector::AcceptedTopics(
    const std::map<std::string, std::int32_t>& counts) const {
  std::map<std::string, std::int32_t> accepted;
  for (const auto& [topic, count] : counts) {
    if (cluster_.topics.Accepts(topic)) accepted.emplace(topic, count);
  }
  return accepted;
}

void Collector::ReadRetention(milliseconds timeout, KafkaSnapshot& snapshot) {
  static constexpr const char* kKey = "offsets.retention.minutes";
  const auto now = clock_();
  if (!retention_read_at_ || now - *retention_read_at_ >= kRetentionRefresh) {
    auto value = admin_->BrokerConfig(kKey, timeout);
    std::int64_t minutes = 0;
    const char* end = value ? value->data() + value->size() : nullptr;
    if (!value) {
      snapshot.partial_errors.push_back(std::string("reading broker config ") + kKey + ": " +
                                        value.error().message);
    } else if (std::from_chars(value->data(), end, minutes).ptr != end || value->empty() ||
               minutes <= 0) {
      snapshot.partial_errors.push_back(std::string("broker config ") + kKey + " is \"" + *value +
                                        "\", not a positive number of minutes");
    } else {
      retention_seconds_ = static_cast<double>(minutes) * 60.0;
      retention_read_at_ = now;
    }
  }
  // After a failed read the last good value is carried, and the read is retried next poll.
  snapshot.offsets_retention_seconds = retention_seconds_;
}

void Collector::ReadRecordTimestamps(const std::map<RecordKey, std::int64_t>& wanted,
                                     milliseconds request_timeout, milliseconds total_timeout,
                                     KafkaSnapshot& snapshot) {
  // Entries no group waits at any more are dropped: the cache never outgrows one poll's wants.
  std::erase_if(timestamp_cache_, [&](const auto& entry) { return !wanted.contains(entry.first); });
  record_runs_.Retain(wanted);

  std::vector<std::pair<RecordKey, std::int64_t>> uncached;  // position, largest lag there
  for (const auto& [key, lag] : wanted) {
    if (timestamp_cache_.contains(key)) continue;
    if (const auto passed = record_runs_.Find(key)) {
      timestamp_cache_[key] = *passed;  // read on the way to other positions: no read
    } else {
      uncached.emplace_back(key, lag);
    }
  }
  // The budget goes to the largest lags first: they matter most for "how far behind".
  std::stable_sort(uncached.begin(), uncached.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (uncached.size() > static_cast<std::size_t>(cluster_.lag_seconds_fetch_budget)) {
    uncached.resize(static_cast<std::size_t>(cluster_.lag_seconds_fetch_budget));
  }
  if (!uncached.empty()) {
    std::vector<RecordKey> positions;
    positions.reserve(uncached.size());
    for (const auto& [key, lag] : uncached) positions.push_back(key);
    timestamp_fetches_total_ += positions.size();
    auto fetched = admin_->RecordTimestamps(positions, std::min(request_timeout, total_timeout),
                                            total_timeout);
    if (fetched) {
      for (const auto& [key, timestamp] : fetched->timestamps) {
        if (wanted.contains(key)) timestamp_cache_[key] = timestamp;
      }
      for (RecordRun& run : fetched->runs) record_runs_.Add(std::move(run));
      // Positions past the budget that this read passed on its way are answered now too.
      for (const auto& [key, lag] : wanted) {
        if (timestamp_cache_.contains(key)) continue;
        if (const auto passed = record_runs_.Find(key)) timestamp_cache_[key] = *passed;
      }
      // Not cached: the next record written makes it false, and a position there is fetched
      // again each poll anyway (it has no timestamp to keep).
      for (const auto& [key, end] : fetched->markers_only) {
        if (wanted.contains(key)) snapshot.markers_only[key] = end;
      }
      for (const std::string& error : fetched->errors) {
        snapshot.partial_errors.push_back("record timestamp at " + error);
      }
    } else {
      snapshot.partial_errors.push_back("reading record timestamps: " + fetched.error().message);
    }
  }
  snapshot.record_timestamps = timestamp_cache_;
  snapshot.record_timestamp_fetches_total = timestamp_fetches_total_;
  snapshot.record_timestamp_cache_entries = timestamp_cache_.size();
}

}  // namespace lagsight::kafka
