#include "kafka/record_timestamp_reader.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <utility>

#include "kafka/client_properties.h"
#include "kafka/rdkafka_client.h"

namespace lagsight::kafka {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

struct MessageDeleter {
  void operator()(rd_kafka_message_t* message) const { rd_kafka_message_destroy(message); }
};

// The positions still to read, per partition, lowest first.
using PendingPositions = std::map<TopicPartition, std::deque<std::int64_t>>;

// The positions of each partition, lowest first, each once.
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

// A position whose record is further than this beyond the record just read waits for the next
// round instead of being read through: reading through costs the records between (a fetch brings
// up to 64 KiB of them), a round one assign and fetch. Positions of many groups on one partition
// lie close together (consumers near the log end, or replaying one range) and are answered by
// the records of one or two fetches. A seek per far position instead of rounds was measured
// slower (tests/bench/record_timestamps.py, positions 2,000 records apart: 0.82 s a poll against
// 0.35 s in rounds). The threshold itself is a judgement, not measured: reading through 1,000
// small records is a few fetches, about what a round costs.
constexpr std::int64_t kReadThroughRecords = 1000;

// Most records one read keeps in its runs (24 bytes each, 6 MiB): past it, records still answer
// the positions they reach but are not kept for later polls.
constexpr std::size_t kMostRunRecords = 1u << 18;

// How often the wait of each partition is checked against the request timeout.
constexpr milliseconds kTimeoutCheckEvery{50};

// Reads the positions of every partition in rounds. A round assigns every partition with
// positions left at its lowest; from there each record read answers every pending position at
// or below its offset (the first record at or after a position is the first one read from below
// it: the reader reads every record in order), and the partition reads on through positions
// close ahead. A partition whose next position lies far ahead, or that has none left, stops
// until the next round, which starts when no partition is reading. So positions close together
// cost one pass, and far ones a round each, for all partitions at once. Before, every position
// cost a round: 0.72 s a poll for 500 positions 20 records apart on 50 partitions, now 0.10 s.
class PositionStream {
 public:
  PositionStream(rd_kafka_t* reader, bool read_committed, milliseconds request_timeout,
                 FetchedTimestamps& answer)
      : reader_(reader),
        read_committed_(read_committed),
        request_timeout_(request_timeout),
        answer_(answer) {}

  // Fails only when the reader cannot be assigned partitions.
  std::optional<Error> Read(PendingPositions pending, SteadyClock::time_point total_deadline) {
    for (auto& [tp, offsets] : pending) cursors_.emplace(tp, Cursor{std::move(offsets)});
    auto next_check = SteadyClock::now() + kTimeoutCheckEvery;
    while (!cursors_.empty()) {
      const auto left =
          std::chrono::duration_cast<milliseconds>(total_deadline - SteadyClock::now());
      if (left.count() <= 0) break;
      if (reading_ == 0) {
        if (auto failed = StartRound()) return failed;
      }
      std::unique_ptr<rd_kafka_message_t, MessageDeleter> message(
          rd_kafka_consumer_poll(reader_, ClampMillis(std::min(left, kTimeoutCheckEvery))));
      if (message) Take(*message);
      if (SteadyClock::now() >= next_check) {
        GiveUpOnSilentPartitions();
        next_check = SteadyClock::now() + kTimeoutCheckEvery;
      }
    }
    rd_kafka_assign(reader_, nullptr);  // stop fetching until the next poll
    for (const auto& [tp, cursor] : cursors_) {
      for (const std::int64_t offset : cursor.offsets) {
        answer_.errors.push_back(Describe(tp, offset, read_committed_) +
                                 ": not read, the poll ran out of time");
      }
    }
    return std::nullopt;
  }

 private:
  struct Cursor {
    std::deque<std::int64_t> offsets;  // pending, ascending
    bool reading = false;              // in this round; else waiting for the next
    SteadyClock::time_point waiting_since{};
  };

  std::optional<Error> StartRound() {
    open_runs_.clear();  // the last round's passes end: unassigned below
    PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(cursors_.size())));
    const auto now = SteadyClock::now();
    for (auto& [tp, cursor] : cursors_) {
      rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition)->offset =
          cursor.offsets.front();
      cursor.reading = true;
      cursor.waiting_since = now;
      open_runs_[tp] = answer_.runs.size();
      answer_.runs.push_back({tp, read_committed_, cursor.offsets.front(), {}});
    }
    // From no assignment: assigning partitions that are assigned already, at new offsets, left
    // some of them silent until their timeout (measured: 11 s for a round).
    rd_kafka_assign(reader_, nullptr);
    if (const rd_kafka_resp_err_t error = rd_kafka_assign(reader_, list.get())) {
      return Error{std::string("assigning partitions to the record reader: ") +
                   rd_kafka_err2str(error)};
    }
    reading_ = cursors_.size();
    return std::nullopt;
  }

  void Take(const rd_kafka_message_t& message) {
    if (message.rkt == nullptr) {
      if (message.err) client_error_ = rd_kafka_message_errstr(&message);
      return;
    }
    const TopicPartition tp{rd_kafka_topic_name(message.rkt), message.partition};
    KeepInRun(tp, message);
    const auto found = cursors_.find(tp);
    if (found == cursors_.end() || !found->second.reading) return;  // done, or waiting
    std::deque<std::int64_t>& offsets = found->second.offsets;
    const std::size_t before = offsets.size();
    bool next_round = false;
    if (message.err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      // Only transaction markers between the positions below it and the log end: no record to
      // date them. The EOF carries the offset the reader stopped at, the log end as it fetched.
      // Positions beyond it wait for records, or their timeout.
      while (!offsets.empty() && offsets.front() <= message.offset) {
        answer_.markers_only[{tp, offsets.front(), read_committed_}] = message.offset;
        offsets.pop_front();
      }
    } else if (message.err) {
      answer_.errors.push_back(Describe(tp, offsets.front(), read_committed_) + ": " +
                               rd_kafka_message_errstr(&message));
      offsets.pop_front();
      next_round = true;
    } else if (message.offset >= offsets.front()) {
      rd_kafka_timestamp_type_t type;
      const std::int64_t timestamp = rd_kafka_message_timestamp(&message, &type);
      while (!offsets.empty() && offsets.front() <= message.offset) {
        if (timestamp < 0) {
          answer_.errors.push_back(Describe(tp, offsets.front(), read_committed_) +
                                   ": the record has no timestamp");
        } else {
          answer_.timestamps[{tp, offsets.front(), read_committed_}] = {
              timestamp, type == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME};
        }
        offsets.pop_front();
      }
      next_round = !offsets.empty() && offsets.front() > message.offset + kReadThroughRecords;
    }
    // Else a record below the position: left from an earlier round, or read through.
    if (offsets.size() != before) MoveOn(found, next_round);
  }

  // A record read in order from the round's start joins its pass, also after the partition's
  // positions are answered: what was fetched anyway dates later positions for free. An error, the
  // end of the log or a record without a timestamp ends the pass (what follows is not known to
  // be contiguous).
  void KeepInRun(const TopicPartition& tp, const rd_kafka_message_t& message) {
    const auto open = open_runs_.find(tp);
    if (open == open_runs_.end()) return;
    RecordRun& run = answer_.runs[open->second];
    if (message.err || run_records_ >= kMostRunRecords) {
      open_runs_.erase(open);
      return;
    }
    if (message.offset < run.from ||
        (!run.records.empty() && message.offset <= run.records.back().first)) {
      return;  // below the round's start, or met already: not this pass's next record
    }
    rd_kafka_timestamp_type_t type;
    const std::int64_t timestamp = rd_kafka_message_timestamp(&message, &type);
    if (timestamp < 0) {
      open_runs_.erase(open);
      return;
    }
    run.records.emplace_back(
        message.offset, RecordTimestamp{timestamp, type == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME});
    ++run_records_;
  }

  // After an answer: a partition with nothing left, or whose next position waits for the next
  // round, stops reading (what it still fetches is ignored; the next round's assign drops it);
  // one that reads on starts its wait again. Not paused: a paused partition stays paused
  // through unassign and assign, and then neither fetched nor reported the end of the log at
  // the next poll (measured: every other poll of a caught-up group waited out the poll's time).
  void MoveOn(std::map<TopicPartition, Cursor>::iterator at, bool next_round) {
    Cursor& cursor = at->second;
    cursor.waiting_since = SteadyClock::now();
    if (!cursor.offsets.empty() && !next_round) return;
    cursor.reading = false;
    --reading_;
    if (cursor.offsets.empty()) cursors_.erase(at);
  }

  // A partition that answered nothing for the request timeout: its lowest position is reported
  // and the partition goes on in the next round, as if that position had answered an error.
  void GiveUpOnSilentPartitions() {
    const auto now = SteadyClock::now();
    for (auto at = cursors_.begin(); at != cursors_.end();) {
      const auto next = std::next(at);
      if (at->second.reading && now - at->second.waiting_since >= request_timeout_) {
        answer_.errors.push_back(Describe(at->first, at->second.offsets.front(), read_committed_) +
                                 ": no record within " + std::to_string(request_timeout_.count()) +
                                 "ms" + (client_error_.empty() ? "" : " (" + client_error_ + ")"));
        at->second.offsets.pop_front();
        MoveOn(at, /*next_round=*/true);
      }
      at = next;
    }
  }

  rd_kafka_t* reader_;
  bool read_committed_;
  milliseconds request_timeout_;
  FetchedTimestamps& answer_;
  std::map<TopicPartition, Cursor> cursors_;
  std::size_t reading_ = 0;      // cursors reading in this round
  std::size_t run_records_ = 0;  // records kept in the answer's runs
  // Partitions of this round whose pass is unbroken, and their run in the answer.
  std::map<TopicPartition, std::size_t> open_runs_;
  std::string client_error_;  // not tied to a partition, e.g. the brokers are unreachable
};

// Reads the records at `positions` (all of the reader's isolation) into `answer`, until all are
// read or `total_deadline`; fails only when the reader cannot be assigned partitions.
std::optional<Error> ReadRecords(rd_kafka_t* reader, bool read_committed,
                                 const std::vector<RecordKey>& positions,
                                 milliseconds request_timeout,
                                 SteadyClock::time_point total_deadline,
                                 FetchedTimestamps& answer) {
  return PositionStream(reader, read_committed, request_timeout, answer)
      .Read(ByPartition(positions), total_deadline);
}

}  // namespace

RecordTimestampReader::RecordTimestampReader(std::string cluster_name,
                                             std::map<std::string, std::string> properties)
    : cluster_name_(std::move(cluster_name)), properties_(std::move(properties)) {}

Result<rd_kafka_t*> RecordTimestampReader::Consumer(bool read_committed) {
  auto& reader = read_committed ? committed_reader_ : record_reader_;
  if (!reader) {
    std::map<std::string, std::string> properties = properties_;
    properties["group.id"] = kClientGroupId;  // librdkafka 2.0.2's assign() demands one
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
