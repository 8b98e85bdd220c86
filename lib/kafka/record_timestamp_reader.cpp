#include "kafka/record_timestamp_reader.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <utility>

#include "kafka/rdkafka_client.h"

namespace lagsight::kafka {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

struct MessageDeleter {
  void operator()(rd_kafka_message_t* message) const { rd_kafka_message_destroy(message); }
};

// The record reader's group.id. It only exists because librdkafka 2.0.2's assign() demands one;
// the reader never subscribes or commits, so no such group is ever created on the broker.
constexpr const char* kRecordReaderGroup = "lagsight-record-timestamps-never-commits";

// The positions still to read, per partition, lowest first.
using PendingPositions = std::map<TopicPartition, std::deque<std::int64_t>>;

// assign() takes one start offset per partition: several positions on one partition are read
// in successive rounds, lowest first.
PendingPositions ByPartition(const std::vector<RecordKey>& positions) {
  PendingPositions pending;
  for (const RecordKey& key : positions) pending[key.partition].push_back(key.offset);
  for (auto& [tp, offsets] : pending) {
    std::sort(offsets.begin(), offsets.end());
    offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
  }
  return pending;
}

// A position as the answer's errors name it.
std::string Describe(const TopicPartition& tp, std::int64_t offset, bool read_committed) {
  return tp.topic + "/" + std::to_string(tp.partition) + "@" + std::to_string(offset) +
         (read_committed ? " (read_committed)" : "");
}

// What `message`, fetched on `tp`, says about the position `offset` there, into `answer`. False
// when it says nothing: a record left from an earlier assignment.
bool TakeMessage(const rd_kafka_message_t& message, const TopicPartition& tp, std::int64_t offset,
                 bool read_committed, FetchedTimestamps& answer) {
  if (message.err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
    // Only transaction markers between the position and the log end: no record to date.
    // The EOF carries the offset the reader stopped at, the log end as it fetched.
    if (message.offset >= offset)
      answer.markers_only[{tp, offset, read_committed}] = message.offset;
  } else if (message.err) {
    answer.errors.push_back(Describe(tp, offset, read_committed) + ": " +
                            rd_kafka_message_errstr(&message));
  } else if (message.offset < offset) {
    return false;  // left from an earlier assignment
  } else {
    rd_kafka_timestamp_type_t type;
    const std::int64_t timestamp = rd_kafka_message_timestamp(&message, &type);
    if (timestamp < 0) {
      answer.errors.push_back(Describe(tp, offset, read_committed) +
                              ": the record has no timestamp");
    } else {
      answer.timestamps[{tp, offset, read_committed}] = {
          timestamp, type == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME};
    }
  }
  return true;
}

// One fetch round: the lowest pending position of every partition, assigned at once and read
// until each has its answer or the round's time is up; every position of the round leaves
// `pending`, answered or reported. Fails only when the reader cannot be assigned partitions.
std::optional<Error> ReadRound(rd_kafka_t* reader, bool read_committed, PendingPositions& pending,
                               milliseconds request_timeout, SteadyClock::time_point total_deadline,
                               FetchedTimestamps& answer) {
  std::map<TopicPartition, std::int64_t> round;
  PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(pending.size())));
  for (const auto& [tp, offsets] : pending) {
    round.emplace(tp, offsets.front());
    rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition)->offset =
        offsets.front();
  }
  const auto finish = [&](const TopicPartition& tp) {
    std::deque<std::int64_t>& offsets = pending.at(tp);
    offsets.pop_front();
    if (offsets.empty()) pending.erase(tp);
    round.erase(tp);
  };
  if (const rd_kafka_resp_err_t error = rd_kafka_assign(reader, list.get())) {
    return Error{std::string("assigning partitions to the record reader: ") +
                 rd_kafka_err2str(error)};
  }
  const auto round_deadline = std::min(total_deadline, SteadyClock::now() + request_timeout);
  std::string client_error;  // not tied to a partition, e.g. the brokers are unreachable
  while (!round.empty()) {
    const auto left = std::chrono::duration_cast<milliseconds>(round_deadline - SteadyClock::now());
    if (left.count() <= 0) break;
    std::unique_ptr<rd_kafka_message_t, MessageDeleter> message(
        rd_kafka_consumer_poll(reader, ClampMillis(left)));
    if (!message) continue;
    if (message->rkt == nullptr) {
      if (message->err) client_error = rd_kafka_message_errstr(message.get());
      continue;
    }
    const TopicPartition tp{rd_kafka_topic_name(message->rkt), message->partition};
    const auto wanted = round.find(tp);
    if (wanted == round.end()) continue;
    if (TakeMessage(*message, tp, wanted->second, read_committed, answer)) finish(tp);
  }
  for (const auto& [tp, offset] : std::map(round)) {
    answer.errors.push_back(Describe(tp, offset, read_committed) + ": no record within " +
                            std::to_string(request_timeout.count()) + "ms" +
                            (client_error.empty() ? "" : " (" + client_error + ")"));
    finish(tp);
  }
  return std::nullopt;
}

// Reads the records at `positions` (all of the reader's isolation) into `answer`, in rounds until
// all are read or `total_deadline`; fails only when the reader cannot be assigned partitions.
std::optional<Error> ReadRecords(rd_kafka_t* reader, bool read_committed,
                                 const std::vector<RecordKey>& positions,
                                 milliseconds request_timeout,
                                 SteadyClock::time_point total_deadline,
                                 FetchedTimestamps& answer) {
  PendingPositions pending = ByPartition(positions);
  while (!pending.empty() && SteadyClock::now() < total_deadline) {
    if (auto failed =
            ReadRound(reader, read_committed, pending, request_timeout, total_deadline, answer)) {
      return failed;
    }
  }
  rd_kafka_assign(reader, nullptr);  // stop fetching until the next poll
  for (const auto& [tp, offsets] : pending) {
    for (const std::int64_t offset : offsets) {
      answer.errors.push_back(Describe(tp, offset, read_committed) +
                              ": not read, the poll ran out of time");
    }
  }
  return std::nullopt;
}

}  // namespace

RecordTimestampReader::RecordTimestampReader(std::string cluster_name,
                                             std::map<std::string, std::string> properties)
    : cluster_name_(std::move(cluster_name)), properties_(std::move(properties)) {}

Result<rd_kafka_t*> RecordTimestampReader::Consumer(bool read_committed) {
  auto& reader = read_committed ? committed_reader_ : record_reader_;
  if (!reader) {
    std::map<std::string, std::string> properties = properties_;
    properties["group.id"] = kRecordReaderGroup;
    // A read_committed reader reads as a read_committed consumer does: up to the last stable
    // offset, skipping aborted records; its ListOffsets answer the last stable offset as the log
    // end (librdkafka sends the handle's isolation level).
    properties["isolation.level"] = read_committed ? "read_committed" : "read_uncommitted";
    // Report "no record up to the log end" and a position deleted meanwhile, instead of
    // waiting, or silently jumping to another offset.
    properties["enable.partition.eof"] = "true";
    properties["auto.offset.reset"] = "error";
    // One record per partition is wanted: keep what is fetched and buffered ahead small.
    properties["max.partition.fetch.bytes"] = "65536";
    properties["queued.max.messages.kbytes"] = "4096";
    properties["fetch.wait.max.ms"] = "100";
    auto created = NewClient<RecordReaderDeleter>(properties, cluster_name_);
    if (!created) return created.error();
    reader = std::move(created).value();
    rd_kafka_poll_set_consumer(reader.get());
  }
  return reader.get();
}

Result<FetchedTimestamps> RecordTimestampReader::Read(const std::vector<RecordKey>& positions,
                                                      milliseconds request_timeout,
                                                      milliseconds total_timeout) {
  FetchedTimestamps answer;
  const auto total_deadline = SteadyClock::now() + total_timeout;
  for (const bool read_committed : {false, true}) {
    std::vector<RecordKey> wanted;
    for (const RecordKey& key : positions) {
      if (key.read_committed == read_committed) wanted.push_back(key);
    }
    if (wanted.empty()) continue;
    auto reader = Consumer(read_committed);
    if (!reader) return reader.error();
    if (auto failed =
            ReadRecords(*reader, read_committed, wanted, request_timeout, total_deadline, answer)) {
      return *failed;
    }
  }
  return answer;
}

}  // namespace lagsight::kafka
