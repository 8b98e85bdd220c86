// RdKafkaAdmin's share groups (KIP-932): listed and described through ShareGroupReader
// (kafka/share_group_client.h), since librdkafka 2.0.2 can do neither. The rest of RdKafkaAdmin is
// in rdkafka_admin.cpp.
#include <spdlog/spdlog.h>

#include <string>
#include <vector>

#include "kafka/rdkafka_admin.h"

namespace lagsight::kafka {

using std::chrono::milliseconds;

namespace {

// How long a broker without share groups is believed: an upgrade shows within this, and until
// then a poll costs no connection for an answer that does not change.
constexpr std::chrono::minutes kShareRecheck{5};

}  // namespace

void RdKafkaAdmin::SayShareGroupsUnsupported(bool unsupported, std::string& failure) {
  if (!unsupported) return;
  share_unsupported_at_ = std::chrono::steady_clock::now();
  if (failure != share_unsupported_) {
    spdlog::info("kafka cluster {}: share groups are not read: {}", cluster_name_, failure);
    share_unsupported_ = failure;
  }
  failure.clear();
}

ShareGroupListings RdKafkaAdmin::ListShareGroups(milliseconds request_timeout,
                                                 milliseconds total_timeout) {
  if (!share_reader_) return {};
  if (share_unsupported_at_ &&
      std::chrono::steady_clock::now() - *share_unsupported_at_ < kShareRecheck) {
    return {};
  }
  ShareGroupListings listings = share_reader_->List(request_timeout, total_timeout);
  SayShareGroupsUnsupported(listings.unsupported, listings.failure);
  if (listings.unsupported) listings.groups.clear();  // nothing read of them: none reported
  return listings;
}

ShareGroupProgress RdKafkaAdmin::DescribeShareGroupOffsets(const std::vector<std::string>& ids,
                                                           milliseconds request_timeout,
                                                           milliseconds total_timeout) {
  if (!share_reader_) return {};
  ShareGroupProgress progress = share_reader_->Describe(ids, request_timeout, total_timeout);
  SayShareGroupsUnsupported(progress.unsupported, progress.failure);
  spdlog::debug("kafka cluster {}: {} of {} share groups described in {} requests", cluster_name_,
                progress.groups.size(), ids.size(), progress.requests);
  return progress;
}

}  // namespace lagsight::kafka
