#include "kafka/collector.h"

#include "flink/snapshot.h"

#include <algorithm>
#include <set>

namespace lagsight::kafka {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// DescribeGroups carries many groups per request; batches keep one answer's size bounded.
constexpr std::size_t kDescribeBatch = 256;

class Deadline {
 public:
  Deadline(milliseconds poll_timeout, milliseconds request_timeout)
      : end_(SteadyClock::now() + poll_timeout), request_timeout_(request_timeout) {}

  milliseconds Left() const {
    return std::max(milliseconds(1),
                    std::chrono::duration_cast<milliseconds>(end_ - SteadyClock::now()));
  }
  milliseconds NextRequest() const { return std::min(request_timeout_, Left()); }
  bool Expired() const { return SteadyClock::now() >= end_; }

 private:
  SteadyClock::time_point end_;
  milliseconds request_timeout_;
};

// Kafka 4 lists KIP-848 ("consumer" protocol) groups through ListGroups with their real state,
// but the classic DescribeGroups that librdkafka 2.0.2 speaks answers for them with state Dead and
// an empty protocol type, which would read as a dead simple group (verified on Kafka 4.1.1).
// A group listed alive and described dead is therefore a KIP-848 group; its members cannot be
// counted with this client (no ConsumerGroupDescribe before librdkafka 2.4).
bool DescribedAsKip848(const GroupListing& listing, const GroupDescription* description) {
  if (description == nullptr) return false;
  if (description->not_found) return true;
  return !description->error && description->state == "dead" && listing.state != "dead";
}

GroupKind KindOf(const GroupListing& listing, const GroupDescription* description) {
  if (DescribedAsKip848(listing, description)) return GroupKind::kConsumer;
  if (listing.simple || (description != nullptr && description->simple)) return GroupKind::kSimple;
  return GroupKind::kClassic;
}

}  // namespace

Collector::Collector(config::KafkaClusterConfig cluster, std::unique_ptr<KafkaAdmin> admin)
    : cluster_(std::move(cluster)), admin_(std::move(admin)) {}

Result<KafkaSnapshot> Collector::Poll(const std::set<std::string>& flink_topics) {
  const Deadline deadline(cluster_.poll_timeout, cluster_.request_timeout);
  KafkaSnapshot snapshot;

  auto listed = admin_->ListGroups(deadline.NextRequest());
  if (!listed) return listed.error();
  std::vector<GroupListing> listings;
  for (GroupListing& listing : *listed) {
    if (cluster_.groups.Accepts(listing.id)) listings.push_back(std::move(listing));
  }
  std::sort(listings.begin(), listings.end(),
            [](const GroupListing& a, const GroupListing& b) { return a.id < b.id; });
  std::vector<std::string> ids;
  ids.reserve(listings.size());
  for (const GroupListing& listing : listings) ids.push_back(listing.id);

  std::map<std::string, GroupDescription> descriptions;
  for (std::size_t begin = 0; begin < ids.size(); begin += kDescribeBatch) {
    const std::vector<std::string> batch(
        ids.begin() + static_cast<std::ptrdiff_t>(begin),
        ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), begin + kDescribeBatch)));
    auto described = admin_->DescribeGroups(batch, deadline.NextRequest());
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

  auto offsets = admin_->ListCommittedOffsets(ids, cluster_.max_concurrent_requests,
                                              deadline.NextRequest(), deadline.Left());
  std::set<std::string> topics;
  for (std::size_t i = 0; i < listings.size(); ++i) {
    const GroupListing& listing = listings[i];
    const auto found = descriptions.find(listing.id);
    const GroupDescription* description = found == descriptions.end() ? nullptr : &found->second;
    const bool described_ok =
        description != nullptr && !description->error && !DescribedAsKip848(listing, description);

    ConsumerGroup group;
    group.id = listing.id;
    group.kind = KindOf(listing, description);
    group.state = described_ok ? description->state : listing.state;
    if (described_ok) group.members = description->members;
    if (offsets[i]) {
      for (const auto& [tp, offset] : *offsets[i]) {
        if (!cluster_.topics.Accepts(tp.topic)) continue;
        group.committed.emplace(tp, offset);
        topics.insert(tp.topic);
      }
    } else {
      group.offsets_known = false;
      snapshot.partial_errors.push_back("reading committed offsets of group \"" + listing.id +
                                        "\": " + offsets[i].error().message);
    }
    snapshot.groups.push_back(std::move(group));
  }

  auto counts = admin_->TopicPartitionCounts(deadline.NextRequest());
  if (!counts) return counts.error();
  for (const auto& [topic, count] : *counts) {
    if (!cluster_.topics.Accepts(topic)) continue;
    snapshot.all_topics.push_back(topic);
    if (flink_topics.contains(flink::MetricTopicName(topic))) topics.insert(topic);
  }
  if (topics.empty()) return snapshot;
  std::vector<TopicPartition> partitions;
  for (const std::string& topic : topics) {
    const auto count = counts->find(topic);
    if (count == counts->end()) {
      snapshot.partial_errors.push_back("topic \"" + topic +
                                        "\" has committed offsets but does not exist");
      continue;
    }
    snapshot.topic_partitions[topic] = count->second;
    for (std::int32_t p = 0; p < count->second; ++p) {
      partitions.push_back({topic, p});
      snapshot.partitions[{topic, p}] = {};
    }
  }

  auto log_end = admin_->ListOffsets(partitions, OffsetSpec::kLatest, deadline.NextRequest());
  // Without log-end offsets there is no lag to report: the poll failed.
  if (!log_end) return log_end.error();
  for (const auto& [tp, offset] : log_end->offsets) snapshot.partitions[tp].log_end = offset;
  for (const std::string& error : log_end->errors) {
    snapshot.partial_errors.push_back("log-end offset of " + error);
  }

  auto log_start = admin_->ListOffsets(partitions, OffsetSpec::kEarliest, deadline.NextRequest());
  if (log_start) {
    for (const auto& [tp, offset] : log_start->offsets) snapshot.partitions[tp].log_start = offset;
    for (const std::string& error : log_start->errors) {
      snapshot.partial_errors.push_back("log-start offset of " + error);
    }
  } else {
    snapshot.partial_errors.push_back(log_start.error().message);
  }
  if (deadline.Expired()) {
    return Error{"the poll took longer than poll_timeout (" +
                 std::to_string(cluster_.poll_timeout.count()) + "ms)"};
  }
  return snapshot;
}

}  // namespace lagsight::kafka
