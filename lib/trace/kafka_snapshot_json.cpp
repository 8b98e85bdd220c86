#include "trace/kafka_snapshot_json.h"

#include <utility>
#include <vector>

namespace lagsight::trace {

namespace {

using json::AppendInt;
using json::AppendString;
using json::AppendStrings;
using json::At;
using json::Field;
using json::ReadArray;
using json::ReadInt;
using json::ReadString;
using json::ReadStrings;
using json::ReadTuple;

void AppendOptionalInt(std::string& out, const std::optional<std::int64_t>& value) {
  json::AppendOptional(out, value, AppendInt);
}

std::optional<std::int64_t> ReadOptionalInt(json::element e, std::string_view what) {
  return json::ReadOptional(e, what, ReadInt);
}

// Partition counts by topic, as [[topic, count], ...].
void AppendCounts(std::string& out, const std::map<std::string, std::int32_t>& counts) {
  out += '[';
  bool first = true;
  for (const auto& [topic, count] : counts) {
    out += first ? "[" : ",[";
    first = false;
    AppendString(out, topic);
    out += ',';
    AppendInt(out, count);
    out += ']';
  }
  out += ']';
}

// The analysis walks every partition of a topic by its count: a count from a corrupt trace must
// not make it walk (and reserve) billions. No real topic comes near this.
constexpr std::int32_t kMaxPartitionsPerTopic = 1'000'000;

std::map<std::string, std::int32_t> ReadCounts(json::element e, std::string_view what) {
  std::map<std::string, std::int32_t> counts;
  for (const json::element row : ReadArray(e, what)) {
    const json::array pair = ReadTuple(row, 2, what);
    const std::int32_t count = json::ReadInt32(At(pair, 1), what);
    if (count < 0 || count > kMaxPartitionsPerTopic) {
      throw json::FormatError(std::string(what) + ": partition count " + std::to_string(count) +
                              " is outside 0.." + std::to_string(kMaxPartitionsPerTopic));
    }
    counts[ReadString(At(pair, 0), what)] = count;
  }
  return counts;
}

// A topic-partition opens every row of the compact tables.
void AppendPartitionKey(std::string& out, const kafka::TopicPartition& tp) {
  out += '[';
  AppendString(out, tp.topic);
  out += ',';
  AppendInt(out, tp.partition);
}

kafka::TopicPartition ReadPartitionKey(json::array row, std::string_view what) {
  return {ReadString(At(row, 0), what), json::ReadInt32(At(row, 1), what)};
}

// Members as rows: [member_id, client_id, host, group_instance_id, [[topic, partition], ...]].
void AppendMembers(std::string& out, const std::vector<kafka::GroupMember>& members) {
  bool first = true;
  for (const kafka::GroupMember& member : members) {
    if (!first) out += ',';
    first = false;
    out += '[';
    for (const std::string* text :
         {&member.member_id, &member.client_id, &member.host, &member.group_instance_id}) {
      AppendString(out, *text);
      out += ',';
    }
    out += '[';
    for (std::size_t i = 0; i < member.assignment.size(); ++i) {
      if (i > 0) out += ',';
      AppendPartitionKey(out, member.assignment[i]);
      out += ']';
    }
    out += "]]";
  }
}

// Traces recorded before members were kept have none: their groups read with no member list.
std::vector<kafka::GroupMember> ReadMembers(json::object group) {
  std::vector<kafka::GroupMember> members;
  json::element rows;
  if (group["member_list"].get(rows)) return members;
  for (const json::element row : ReadArray(rows, "member_list")) {
    const json::array fields = ReadTuple(row, 5, "member_list[]");
    kafka::GroupMember& member = members.emplace_back();
    member.member_id = ReadString(At(fields, 0), "member_list[].member_id");
    member.client_id = ReadString(At(fields, 1), "member_list[].client_id");
    member.host = ReadString(At(fields, 2), "member_list[].host");
    member.group_instance_id = ReadString(At(fields, 3), "member_list[].group_instance_id");
    for (const json::element tp : ReadArray(At(fields, 4), "member_list[].assignment")) {
      member.assignment.push_back(
          ReadPartitionKey(ReadTuple(tp, 2, "member_list[].assignment[]"), "assignment[]"));
    }
  }
  return members;
}

void AppendGroup(std::string& out, const kafka::ConsumerGroup& group) {
  out += "{\"id\":";
  AppendString(out, group.id);
  out += ",\"state\":";
  AppendString(out, group.state);
  out += ",\"kind\":\"";
  out += kafka::GroupKindName(group.kind);
  out += "\",\"members\":";
  json::AppendOptional(out, group.members, [](std::string& o, int n) { AppendInt(o, n); });
  out += ",\"committed\":[";
  bool first = true;
  for (const auto& [tp, offset] : group.committed) {
    if (!first) out += ',';
    first = false;
    AppendPartitionKey(out, tp);
    out += ',';
    AppendInt(out, offset);
    out += ']';
  }
  out += "],\"member_list\":[";
  AppendMembers(out, group.member_list);
  out += "],\"offsets_known\":";
  json::AppendBool(out, group.offsets_known);
  out += ",\"read_committed\":";
  json::AppendBool(out, group.read_committed);
  out += '}';
}

kafka::GroupKind ReadGroupKind(json::element e) {
  const std::string kind = ReadString(e, "kind");
  if (kind == "classic") return kafka::GroupKind::kClassic;
  if (kind == "simple") return kafka::GroupKind::kSimple;
  if (kind == "consumer") return kafka::GroupKind::kConsumer;
  if (kind == "streams") return kafka::GroupKind::kStreams;
  throw json::FormatError("kind: expected classic, simple or consumer, not \"" + kind + "\"");
}

kafka::ConsumerGroup ReadGroup(json::element e) {
  const json::object o = json::ReadObject(e, "groups[]");
  kafka::ConsumerGroup group;
  group.id = ReadString(Field(o, "id"), "id");
  group.state = ReadString(Field(o, "state"), "state");
  group.kind = ReadGroupKind(Field(o, "kind"));
  group.members = json::ReadOptional(Field(o, "members"), "members", json::ReadInt32);
  kafka::CommittedOffsets::sequence_type committed;
  for (const json::element row : ReadArray(Field(o, "committed"), "committed")) {
    const json::array entry = ReadTuple(row, 3, "committed[]");
    committed.emplace_back(ReadPartitionKey(entry, "committed[]"),
                           ReadInt(At(entry, 2), "committed[]"));
  }
  group.committed.adopt_sequence(std::move(committed));
  group.member_list = ReadMembers(o);
  group.offsets_known = json::ReadBool(Field(o, "offsets_known"), "offsets_known");
  group.read_committed = json::ReadBool(Field(o, "read_committed"), "read_committed");
  return group;
}

// A share group: its partitions as rows [topic, partition, start_offset, lag or null].
void AppendShareGroup(std::string& out, const kafka::ShareGroup& group) {
  out += "{\"id\":";
  AppendString(out, group.id);
  out += ",\"state\":";
  AppendString(out, group.state);
  out += ",\"members\":";
  json::AppendOptional(out, group.members, [](std::string& o, int n) { AppendInt(o, n); });
  out += ",\"partitions\":[";
  for (std::size_t i = 0; i < group.partitions.size(); ++i) {
    if (i > 0) out += ',';
    AppendPartitionKey(out, group.partitions[i].partition);
    out += ',';
    AppendInt(out, group.partitions[i].start_offset);
    out += ',';
    AppendOptionalInt(out, group.partitions[i].lag);
    out += ']';
  }
  out += "],\"member_list\":[";
  AppendMembers(out, group.member_list);
  out += "],\"offsets_known\":";
  json::AppendBool(out, group.offsets_known);
  out += '}';
}

kafka::ShareGroup ReadShareGroup(json::element e) {
  const json::object o = json::ReadObject(e, "share_groups[]");
  kafka::ShareGroup group;
  group.id = ReadString(Field(o, "id"), "id");
  group.state = ReadString(Field(o, "state"), "state");
  group.members = json::ReadOptional(Field(o, "members"), "members", json::ReadInt32);
  for (const json::element row : ReadArray(Field(o, "partitions"), "partitions")) {
    const json::array entry = ReadTuple(row, 4, "share_groups[].partitions[]");
    group.partitions.push_back({ReadPartitionKey(entry, "share_groups[].partitions[]"),
                                ReadInt(At(entry, 2), "share_groups[].partitions[]"),
                                ReadOptionalInt(At(entry, 3), "share_groups[].partitions[]")});
  }
  group.member_list = ReadMembers(o);
  group.offsets_known = json::ReadBool(Field(o, "offsets_known"), "offsets_known");
  return group;
}

void AppendBootstrap(std::string& out, const kafka::BootstrapIdentity& bootstrap) {
  out += "{\"address\":";
  AppendString(out, bootstrap.address);
  out += ",\"cluster_id\":";
  json::AppendOptional(out, bootstrap.cluster_id, AppendString);
  out += ",\"error\":";
  AppendString(out, bootstrap.error);
  out += ",\"topic_partitions\":";
  AppendCounts(out, bootstrap.topic_partitions);
  out += '}';
}

kafka::BootstrapIdentity ReadBootstrap(json::element e) {
  const json::object o = json::ReadObject(e, "bootstraps[]");
  kafka::BootstrapIdentity bootstrap;
  bootstrap.address = ReadString(Field(o, "address"), "address");
  bootstrap.cluster_id = json::ReadOptional(Field(o, "cluster_id"), "cluster_id", ReadString);
  bootstrap.error = ReadString(Field(o, "error"), "error");
  bootstrap.topic_partitions = ReadCounts(Field(o, "topic_partitions"), "topic_partitions");
  return bootstrap;
}

void AppendRecordKey(std::string& out, const kafka::RecordKey& key) {
  AppendPartitionKey(out, key.partition);
  out += ',';
  AppendInt(out, key.offset);
  out += ',';
  json::AppendBool(out, key.read_committed);
}

// Rows [topic, partition, offset, read_committed, ...`extra` more].
kafka::RecordKey ReadRecordKey(json::array row, std::string_view what) {
  return {ReadPartitionKey(row, what), ReadInt(At(row, 2), what), json::ReadBool(At(row, 3), what)};
}

void AppendPartitions(std::string& out, const kafka::KafkaSnapshot& snapshot) {
  out += ",\"partitions\":[";
  bool first = true;
  for (const auto& [tp, offsets] : snapshot.partitions) {
    if (!first) out += ',';
    first = false;
    AppendPartitionKey(out, tp);
    for (const auto* offset : {&offsets.log_start, &offsets.log_end, &offsets.last_stable}) {
      out += ',';
      AppendOptionalInt(out, *offset);
    }
    out += ']';
  }
  out += ']';
}

void ReadPartitions(json::element e, kafka::KafkaSnapshot& snapshot) {
  for (const json::element row : ReadArray(e, "partitions")) {
    const json::array entry = ReadTuple(row, 5, "partitions[]");
    snapshot.partitions[ReadPartitionKey(entry, "partitions[]")] = {
        ReadOptionalInt(At(entry, 2), "partitions[]"),
        ReadOptionalInt(At(entry, 3), "partitions[]"),
        ReadOptionalInt(At(entry, 4), "partitions[]")};
  }
}

void AppendRecordPositions(std::string& out, const kafka::KafkaSnapshot& snapshot) {
  out += ",\"record_timestamps\":[";
  bool first = true;
  for (const auto& [key, timestamp] : snapshot.record_timestamps) {
    if (!first) out += ',';
    first = false;
    AppendRecordKey(out, key);
    out += ',';
    AppendInt(out, timestamp.ms);
    out += ',';
    json::AppendBool(out, timestamp.log_append_time);
    out += ']';
  }
  out += "],\"markers_only\":[";
  first = true;
  for (const auto& [key, reached] : snapshot.markers_only) {
    if (!first) out += ',';
    first = false;
    AppendRecordKey(out, key);
    out += ',';
    AppendInt(out, reached);
    out += ']';
  }
  out += ']';
}

void ReadRecordPositions(json::object o, kafka::KafkaSnapshot& snapshot) {
  for (const json::element row : ReadArray(Field(o, "record_timestamps"), "record_timestamps")) {
    const json::array entry = ReadTuple(row, 6, "record_timestamps[]");
    snapshot.record_timestamps[ReadRecordKey(entry, "record_timestamps[]")] = {
        ReadInt(At(entry, 4), "record_timestamps[]"),
        json::ReadBool(At(entry, 5), "record_timestamps[]")};
  }
  for (const json::element row : ReadArray(Field(o, "markers_only"), "markers_only")) {
    const json::array entry = ReadTuple(row, 5, "markers_only[]");
    snapshot.markers_only[ReadRecordKey(entry, "markers_only[]")] =
        ReadInt(At(entry, 4), "markers_only[]");
  }
}

}  // namespace

void AppendKafkaSnapshot(std::string& out, const kafka::KafkaSnapshot& snapshot) {
  out += "{\"requested_at\":";
  json::AppendDouble(out, snapshot.requested_at);
  out += ",\"cluster_id\":";
  json::AppendOptional(out, snapshot.cluster_id, AppendString);
  out += ",\"offsets_retention_seconds\":";
  json::AppendOptional(out, snapshot.offsets_retention_seconds, json::AppendDouble);
  out += ",\"record_timestamp_fetches_total\":";
  json::AppendUint(out, snapshot.record_timestamp_fetches_total);
  out += ",\"record_timestamp_cache_entries\":";
  json::AppendUint(out, snapshot.record_timestamp_cache_entries);
  out += ",\"partial_errors\":";
  AppendStrings(out, snapshot.partial_errors);
  out += ",\"bootstraps\":[";
  for (std::size_t i = 0; i < snapshot.bootstraps.size(); ++i) {
    if (i > 0) out += ',';
    AppendBootstrap(out, snapshot.bootstraps[i]);
  }
  out += "],\"all_topics\":";
  AppendStrings(out, snapshot.all_topics);
  out += ",\"topic_partitions\":";
  AppendCounts(out, snapshot.topic_partitions);
  AppendPartitions(out, snapshot);
  AppendRecordPositions(out, snapshot);
  out += ",\"groups\":[";
  for (std::size_t i = 0; i < snapshot.groups.size(); ++i) {
    if (i > 0) out += ',';
    AppendGroup(out, snapshot.groups[i]);
  }
  out += ']';
  // Only where there are any: traces of clusters without share groups stay as they were.
  if (!snapshot.share_groups.empty()) {
    out += ",\"share_groups\":[";
    for (std::size_t i = 0; i < snapshot.share_groups.size(); ++i) {
      if (i > 0) out += ',';
      AppendShareGroup(out, snapshot.share_groups[i]);
    }
    out += ']';
  }
  out += '}';
}

kafka::KafkaSnapshot ReadKafkaSnapshot(json::element e) {
  const json::object o = json::ReadObject(e, "snapshot");
  kafka::KafkaSnapshot snapshot;
  snapshot.requested_at = json::ReadDouble(Field(o, "requested_at"), "requested_at");
  snapshot.cluster_id = json::ReadOptional(Field(o, "cluster_id"), "cluster_id", ReadString);
  snapshot.offsets_retention_seconds = json::ReadOptional(
      Field(o, "offsets_retention_seconds"), "offsets_retention_seconds", json::ReadDouble);
  snapshot.record_timestamp_fetches_total =
      json::ReadUint(Field(o, "record_timestamp_fetches_total"), "record_timestamp_fetches_total");
  snapshot.record_timestamp_cache_entries =
      json::ReadUint(Field(o, "record_timestamp_cache_entries"), "record_timestamp_cache_entries");
  snapshot.partial_errors = ReadStrings(Field(o, "partial_errors"), "partial_errors");
  for (const json::element item : ReadArray(Field(o, "bootstraps"), "bootstraps")) {
    snapshot.bootstraps.push_back(ReadBootstrap(item));
  }
  snapshot.all_topics = ReadStrings(Field(o, "all_topics"), "all_topics");
  snapshot.topic_partitions = ReadCounts(Field(o, "topic_partitions"), "topic_partitions");
  ReadPartitions(Field(o, "partitions"), snapshot);
  ReadRecordPositions(o, snapshot);
  for (const json::element item : ReadArray(Field(o, "groups"), "groups")) {
    snapshot.groups.push_back(ReadGroup(item));
  }
  json::element share_groups;
  if (!o["share_groups"].get(share_groups)) {
    for (const json::element item : ReadArray(share_groups, "share_groups")) {
      snapshot.share_groups.push_back(ReadShareGroup(item));
    }
  }
  return snapshot;
}

}  // namespace lagsight::trace
