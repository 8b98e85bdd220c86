#include "kafka/wire_streams.h"

#include <algorithm>
#include <map>
#include <optional>

#include "kafka/wire_codec.h"

namespace lagsight::kafka::wire {
namespace {

using detail::DecodeBudget;
using detail::DescribeGroupsRequest;
using detail::Header;
using detail::ParseDescribedGroups;
using detail::Reader;
using detail::ReadHeader;
using detail::Truncated;
using detail::Writer;

// The smallest encoding of each repeated element, for the counts' checks: empty strings, empty
// arrays, no tags.
constexpr std::size_t kStreamsGroupBytes = 20;
constexpr std::size_t kSubtopologyBytes = 6;  // id, four arrays, tags
constexpr std::size_t kTopicInfoBytes = 9;    // name, partitions, replication, configs, tags
constexpr std::size_t kKeyValueBytes = 3;     // key, value, tags
constexpr std::size_t kTaskOffsetBytes = 14;  // subtopology, partition, offset, tags
constexpr std::size_t kTaskIdsBytes = 3;      // subtopology, partitions, tags
constexpr std::size_t kStreamsMemberBytes = 28;

// Decodes a StreamsGroupDescribe answer, charging what it keeps against a budget of bytes: the
// first failure sticks.
class StreamsDescribeDecoder {
 public:
  StreamsDescribeDecoder(std::span<const std::uint8_t> payload, std::size_t budget)
      : reader_(payload), budget_("StreamsGroupDescribe", budget) {}

  Reader& reader() { return reader_; }
  const std::optional<Error>& failure() const { return budget_.failure(); }
  bool Fine() const { return reader_.ok() && !budget_.failure(); }

  DescribedConsumerGroup Group() {
    DescribedConsumerGroup group;
    group.error_code = reader_.Int16();
    group.error_message = budget_.Charged(reader_.CompactString());
    group.group = budget_.Charged(reader_.CompactString());
    group.state = budget_.Charged(reader_.CompactString());
    reader_.Int32();  // group_epoch
    reader_.Int32();  // assignment_epoch
    // subtopology id -> the topics its tasks read
    std::map<std::string, std::vector<std::string>, std::less<>> topology = Topology();
    const std::int64_t count = reader_.CompactArrayLength(kStreamsMemberBytes);
    const auto members = static_cast<std::size_t>(std::max<std::int64_t>(count, 0));
    budget_.Charge(members * sizeof(GroupMember));  // before reserving
    if (Fine()) group.members.reserve(members);
    for (std::int64_t m = 0; Fine() && m < count; ++m) group.members.push_back(Member(topology));
    reader_.Int32();  // authorized_operations
    reader_.SkipTaggedFields();
    return group;
  }

 private:
  std::string TopicName(std::string_view name) {
    if (reader_.ok()) budget_.CheckTopicName(name);
    return budget_.Charged(name);
  }

  void SkipStrings() {
    const std::int64_t count = reader_.CompactArrayLength(1);
    for (std::int64_t i = 0; reader_.ok() && i < count; ++i) reader_.CompactString();
  }
  void SkipKeyValues() {
    const std::int64_t count = reader_.CompactArrayLength(kKeyValueBytes);
    for (std::int64_t i = 0; reader_.ok() && i < count; ++i) {
      reader_.CompactString();
      reader_.CompactString();
      reader_.SkipTaggedFields();
    }
  }
  // TopicInfos: their names into `names` (or skipped).
  void TopicInfos(std::vector<std::string>* names) {
    const std::int64_t count = reader_.CompactArrayLength(kTopicInfoBytes);
    for (std::int64_t i = 0; Fine() && i < count; ++i) {
      const std::string_view name = reader_.CompactString();
      if (names != nullptr) names->push_back(TopicName(name));
      reader_.Int32();  // partitions
      reader_.Int16();  // replication_factor
      SkipKeyValues();  // topic_configs
      reader_.SkipTaggedFields();
    }
  }

  // The nullable Topology struct (an int8 -1 when null) and its nullable subtopologies.
  std::map<std::string, std::vector<std::string>, std::less<>> Topology() {
    std::map<std::string, std::vector<std::string>, std::less<>> topology;
    if (reader_.Int8() < 0) return topology;
    reader_.Int32();  // epoch
    const std::int64_t count = reader_.CompactArrayLength(kSubtopologyBytes);
    for (std::int64_t s = 0; Fine() && s < count; ++s) {
      std::vector<std::string>& topics = topology[budget_.Charged(reader_.CompactString())];
      const std::int64_t sources = reader_.CompactArrayLength(1);
      for (std::int64_t t = 0; Fine() && t < sources; ++t) {
        topics.push_back(TopicName(reader_.CompactString()));
      }
      SkipStrings();        // repartition_sink_topics: written, not read
      TopicInfos(nullptr);  // state_changelog_topics: restored, not read with offsets
      TopicInfos(&topics);  // repartition_source_topics
      reader_.SkipTaggedFields();
    }
    reader_.SkipTaggedFields();
    return topology;
  }

  GroupMember Member(const std::map<std::string, std::vector<std::string>, std::less<>>& topology) {
    GroupMember member;
    member.member_id = budget_.Charged(reader_.CompactString());
    reader_.Int32();                                                      // member_epoch
    member.group_instance_id = budget_.Charged(reader_.CompactString());  // null: ""
    reader_.CompactString();                                              // rack_id
    member.client_id = budget_.Charged(reader_.CompactString());
    member.host = budget_.Charged(reader_.CompactString());
    reader_.Int32();            // topology_epoch
    reader_.CompactString();    // process_id
    if (reader_.Int8() >= 0) {  // user_endpoint, nullable
      reader_.CompactString();  // host
      reader_.Int16();          // port
      reader_.SkipTaggedFields();
    }
    SkipKeyValues();               // client_tags
    for (int i = 0; i < 2; ++i) {  // task_offsets, task_end_offsets
      const std::int64_t count = reader_.CompactArrayLength(kTaskOffsetBytes);
      for (std::int64_t o = 0; reader_.ok() && o < count; ++o) {
        reader_.CompactString();
        reader_.Int32();
        reader_.Int64();
        reader_.SkipTaggedFields();
      }
    }
    Assignment(topology, &member.assignment);
    Assignment(topology, nullptr);  // target_assignment: where it is going, not what it holds
    reader_.Int8();                 // is_classic
    reader_.SkipTaggedFields();
    return member;
  }

  // An Assignment: the partitions of its active tasks into `out` (or skipped).
  void Assignment(const std::map<std::string, std::vector<std::string>, std::less<>>& topology,
                  std::vector<TopicPartition>* out) {
    for (int kind = 0; kind < 3; ++kind) {  // active, standby, warm-up tasks
      const std::int64_t count = reader_.CompactArrayLength(kTaskIdsBytes);
      for (std::int64_t t = 0; Fine() && t < count; ++t) {
        const std::string_view subtopology = reader_.CompactString();
        const auto found = topology.find(subtopology);
        const std::int64_t partitions = reader_.CompactArrayLength(4);
        for (std::int64_t p = 0; Fine() && p < partitions; ++p) {
          const std::int32_t partition = reader_.Int32();
          if (kind != 0 || out == nullptr || found == topology.end()) continue;
          for (const std::string& topic : found->second) {
            budget_.Charge(sizeof(TopicPartition) + topic.size());
            if (Fine()) out->push_back(TopicPartition{topic, partition});
          }
        }
        reader_.SkipTaggedFields();
      }
    }
    reader_.SkipTaggedFields();
  }

  Reader reader_;
  DecodeBudget budget_;
};

}  // namespace

Bytes StreamsGroupDescribeRequest(std::int32_t correlation_id, std::string_view client_id,
                                  std::int16_t version,
                                  const std::vector<std::string_view>& groups) {
  return DescribeGroupsRequest(kStreamsGroupDescribe, version, correlation_id, client_id, groups);
}

Result<std::vector<DescribedConsumerGroup>> ParseStreamsGroupDescribeResponse(
    std::span<const std::uint8_t> payload, std::int32_t correlation_id, std::int16_t /*version*/,
    std::size_t max_groups, std::size_t max_decoded_bytes) {
  StreamsDescribeDecoder decoder(payload, max_decoded_bytes);
  return ParseDescribedGroups(decoder, "StreamsGroupDescribe", correlation_id, kStreamsGroupBytes,
                              max_groups);
}

}  // namespace lagsight::kafka::wire
