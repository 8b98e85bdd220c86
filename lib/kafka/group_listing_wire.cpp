#include "kafka/group_listing_wire.h"

#include <algorithm>

#include "kafka/wire_codec.h"

namespace lagsight::kafka::wire {
namespace {

using detail::Header;
using detail::Reader;
using detail::ReadHeader;
using detail::Truncated;
using detail::Writer;

// The smallest encoding of each repeated element, for the counts' checks.
constexpr std::size_t kBrokerBytes = 11;      // id, empty host, port, null rack, no tags
constexpr std::size_t kListedGroupBytes = 5;  // four empty strings, no tags

}  // namespace

Bytes DescribeClusterRequest(std::int32_t correlation_id, std::string_view client_id) {
  Writer writer =
      Header(kDescribeCluster, kDescribeClusterVersion, correlation_id, client_id, true);
  writer.Bool(false);  // include_cluster_authorized_operations
  writer.NoTaggedFields();
  return std::move(writer).Frame();
}

Bytes ListGroupsRequest(std::int32_t correlation_id, std::string_view client_id,
                        const std::vector<std::string_view>& types) {
  Writer writer = Header(kListGroups, kListGroupsTypesVersion, correlation_id, client_id, true);
  writer.CompactArrayLength(0);  // states_filter: every state
  writer.CompactArrayLength(types.size());
  for (std::string_view type : types) writer.CompactString(type);
  writer.NoTaggedFields();
  return std::move(writer).Frame();
}

Result<std::vector<Broker>> ParseDescribeClusterResponse(std::span<const std::uint8_t> payload,
                                                         std::int32_t correlation_id,
                                                         std::size_t max_brokers) {
  Reader reader(payload);
  if (auto error = ReadHeader(reader, correlation_id, true, "DescribeCluster")) return *error;
  reader.Int32();  // throttle_time_ms
  const std::int16_t error_code = reader.Int16();
  const std::string error_message(reader.CompactString());
  reader.CompactString();  // cluster_id
  reader.Int32();          // controller_id
  const std::int64_t count = reader.CompactArrayLength(kBrokerBytes);
  if (count > static_cast<std::int64_t>(max_brokers)) {
    return Error{"DescribeCluster response: " + std::to_string(count) + " brokers, more than " +
                 std::to_string(max_brokers)};
  }
  std::vector<Broker> brokers;
  brokers.reserve(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)));
  for (std::int64_t i = 0; reader.ok() && i < count; ++i) {
    Broker broker;
    broker.node_id = reader.Int32();
    broker.host = reader.CompactString();
    broker.port = reader.Int32();
    reader.CompactString();  // rack
    reader.SkipTaggedFields();
    brokers.push_back(std::move(broker));
  }
  reader.Int32();  // cluster_authorized_operations
  reader.SkipTaggedFields();
  if (!reader.ok()) return Truncated("DescribeCluster");
  if (error_code != 0) {
    return Error{"DescribeCluster answered error code " + std::to_string(error_code) +
                 (error_message.empty() ? "" : ": " + error_message)};
  }
  return brokers;
}

Result<ListedGroups> ParseListGroupsResponse(std::span<const std::uint8_t> payload,
                                             std::int32_t correlation_id, std::size_t max_groups) {
  Reader reader(payload);
  if (auto error = ReadHeader(reader, correlation_id, true, "ListGroups")) return *error;
  reader.Int32();  // throttle_time_ms
  ListedGroups listed;
  listed.error_code = reader.Int16();
  const std::int64_t count = reader.CompactArrayLength(kListedGroupBytes);
  if (count > static_cast<std::int64_t>(max_groups)) {
    return Error{"ListGroups response: " + std::to_string(count) + " groups, more than " +
                 std::to_string(max_groups)};
  }
  listed.groups.reserve(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)));
  for (std::int64_t i = 0; reader.ok() && i < count; ++i) {
    ListedGroup group;
    group.group = reader.CompactString();
    group.protocol_type = reader.CompactString();
    group.state = reader.CompactString();
    group.type = reader.CompactString();
    reader.SkipTaggedFields();
    listed.groups.push_back(std::move(group));
  }
  reader.SkipTaggedFields();
  if (!reader.ok()) return Truncated("ListGroups");
  return listed;
}

}  // namespace lagsight::kafka::wire
