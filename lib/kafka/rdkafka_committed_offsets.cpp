// RdKafkaAdmin::ListCommittedOffsets: the committed offsets of many groups, read with batched
// OffsetFetch requests (KIP-709, kafka/offset_fetch_client.h) where the cluster config asks for
// them and the cluster can serve them, else through librdkafka one request per group.
// The rest of RdKafkaAdmin is in rdkafka_admin.cpp.
#include <spdlog/spdlog.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kafka/offset_fetch_client.h"
#include "kafka/rdkafka_admin.h"
#include "kafka/rdkafka_client.h"

namespace lagsight::kafka {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

struct OffsetsRequestDeleter {
  void operator()(rd_kafka_ListConsumerGroupOffsets_t* request) const {
    rd_kafka_ListConsumerGroupOffsets_destroy(request);
  }
};

// Whether librdkafka's answer says the broker it asked no longer coordinates the group.
bool CoordinatorMoved(rd_kafka_event_t* event) {
  if (rd_kafka_event_error(event) == RD_KAFKA_RESP_ERR_NOT_COORDINATOR) return true;
  const auto* result = rd_kafka_event_ListConsumerGroupOffsets_result(event);
  if (result == nullptr) return false;
  std::size_t group_count = 0;
  const rd_kafka_group_result_t** groups =
      rd_kafka_ListConsumerGroupOffsets_result_groups(result, &group_count);
  const rd_kafka_error_t* error =
      groups != nullptr && group_count == 1 ? rd_kafka_group_result_error(groups[0]) : nullptr;
  return error != nullptr && rd_kafka_error_code(error) == RD_KAFKA_RESP_ERR_NOT_COORDINATOR;
}

// One group's committed offsets, from librdkafka's answer to its ListConsumerGroupOffsets call.
Result<CommittedOffsets> CommittedOffsetsOf(rd_kafka_event_t* event) {
  if (rd_kafka_event_error(event) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Error{rd_kafka_event_error_string(event)};
  }
  // NULL for an event of another type, which librdkafka's accessors below would read through.
  const auto* result = rd_kafka_event_ListConsumerGroupOffsets_result(event);
  if (result == nullptr) {
    return Error{std::string("unexpected event: ") + rd_kafka_event_name(event)};
  }
  std::size_t group_count = 0;
  const rd_kafka_group_result_t** groups =
      rd_kafka_ListConsumerGroupOffsets_result_groups(result, &group_count);
  if (groups == nullptr || group_count != 1) {
    return Error{"unexpected answer with " + std::to_string(group_count) + " groups"};
  }
  if (const rd_kafka_error_t* error = rd_kafka_group_result_error(groups[0])) {
    return Error{rd_kafka_error_string(error)};
  }
  CommittedOffsets::sequence_type entries;
  std::string partition_errors;
  const rd_kafka_topic_partition_list_t* partitions = rd_kafka_group_result_partitions(groups[0]);
  if (partitions != nullptr) entries.reserve(static_cast<std::size_t>(partitions->cnt));
  for (int i = 0; partitions != nullptr && i < partitions->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = partitions->elems[i];
    if (p.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      partition_errors += std::string(p.topic) + "/" + std::to_string(p.partition) + ": " +
                          rd_kafka_err2str(p.err) + "; ";
      continue;
    }
    // RD_KAFKA_OFFSET_INVALID (-1): no commit for this partition; leave it out.
    if (p.offset >= 0) entries.emplace_back(TopicPartition{p.topic, p.partition}, p.offset);
  }
  if (!partition_errors.empty()) return Error{"partition errors: " + partition_errors};
  CommittedOffsets offsets;
  offsets.adopt_sequence(std::move(entries));  // sorts; Kafka names each partition once
  return offsets;
}

}  // namespace

std::vector<Result<CommittedOffsets>> RdKafkaAdmin::ListCommittedOffsets(
    const std::vector<std::string>& ids, int max_in_flight, milliseconds request_timeout,
    milliseconds total_timeout) {
  std::vector<Result<CommittedOffsets>> results(ids.size(), Error{"not requested"});
  if (!handle_) {
    for (auto& result : results) result = Error{closed_reason_};
    return results;
  }
  const auto deadline = SteadyClock::now() + total_timeout + milliseconds(500);
  // Groups left to librdkafka's per-group path: all of them, or those the batched fetch could
  // not answer exactly.
  std::vector<std::size_t> per_group;
  if (batched_) {
    per_group = ReadBatched(ids, request_timeout, total_timeout, results);
  } else {
    per_group.resize(ids.size());
    for (std::size_t index = 0; index < ids.size(); ++index) per_group[index] = index;
  }
  const std::vector<std::size_t> moved = ReadPerGroup(
      ids, per_group, max_in_flight, request_timeout, total_timeout, deadline, results);
  // librdkafka 2.0.2 sends a group's requests to the coordinator it cached for as long as the
  // entry is used (every poll), and forgets it only when that broker's connection drops: a
  // coordinator that moved while both brokers stay up (a partition reassignment, a preferred
  // leader election, auto.leader.rebalance.enable) answered NOT_COORDINATOR to every poll, the
  // group without offsets for good. A client opened afresh looks the coordinators up again.
  if (!moved.empty() && ReopenMainClient(moved.size())) {
    ReadPerGroup(ids, moved, max_in_flight, request_timeout, total_timeout, deadline, results);
  }
  return results;
}

bool RdKafkaAdmin::ReopenMainClient(std::size_t moved_groups) {
  auto handle = NewClient<RdKafkaDeleter>(properties_, cluster_name_, client_errors_.get());
  if (!handle) {
    spdlog::warn("kafka cluster {}: reopening the client after a coordinator moved: {}",
                 cluster_name_, handle.error().message);
    return false;
  }
  queue_.reset();  // before the client it belongs to
  handle_ = std::move(handle).value();
  queue_.reset(rd_kafka_queue_new(handle_.get()));
  spdlog::info(
      "kafka cluster {}: {} group(s) answered that their coordinator moved to another broker; "
      "librdkafka's client was reopened to look the coordinators up again",
      cluster_name_, moved_groups);
  return true;
}

std::vector<std::size_t> RdKafkaAdmin::ReadBatched(const std::vector<std::string>& ids,
                                                   milliseconds request_timeout,
                                                   milliseconds total_timeout,
                                                   std::vector<Result<CommittedOffsets>>& results) {
  std::vector<std::size_t> per_group;
  // At most half the time: what it leaves on a cluster it cannot serve still gets its turn.
  BatchedOffsets batched = batched_->Fetch(ids, request_timeout, total_timeout / 2);
  std::size_t answered = 0;
  for (std::size_t index = 0; index < ids.size(); ++index) {
    if (batched.offsets[index]) {
      results[index] = std::move(*batched.offsets[index]);
      ++answered;
    } else if (batched.unsupported) {
      per_group.push_back(index);
    } else {
      // Not asked again through librdkafka: what the batched fetch could not read now (a
      // coordinator moving, loading or down, a broker stopping) is what librdkafka 2.0.2's
      // coordinator requests crash on (client_properties.cpp; and an assertion in its admin
      // worker, librdkafka PR #5397, when a coordinator's connection drops). The next poll reads
      // the group again.
      results[index] =
          !batched.errors[index].empty()
              ? Error{batched.errors[index]}
              : Error{"not read this poll: " + (batched.failure.empty()
                                                    ? "its coordinator did not answer in time"
                                                    : batched.failure)};
    }
  }
  LogBatchedState(batched.failure, batched.unsupported, answered, ids.size());
  spdlog::debug("kafka cluster {}: {} of {} groups' committed offsets in {} batched requests",
                cluster_name_, answered, ids.size(), batched.requests);
  return per_group;
}

void RdKafkaAdmin::LogBatchedState(const std::string& failure, bool unsupported,
                                   std::size_t answered, std::size_t asked) {
  // Logged when it changes, not every poll. A group the broker answered with an error is no
  // failure of the fetch: its partial error carries the error.
  std::string state;
  if (unsupported) {
    state = "read one request per group: " + failure;
  } else if (answered == 0 && asked != 0) {
    state = "not read this poll: the batched fetch answered none: " +
            (failure.empty() ? "each group with an error" : failure);
  } else if (!failure.empty()) {
    state = "read with batched OffsetFetch requests (KIP-709), some not this poll: " + failure;
  } else if (asked != 0) {
    state = "read with batched OffsetFetch requests (KIP-709)";
  }
  if (!state.empty() && state != batched_state_) {
    if (failure.empty()) {
      spdlog::info("kafka cluster {}: committed offsets {}", cluster_name_, state);
    } else {
      spdlog::warn("kafka cluster {}: committed offsets {}", cluster_name_, state);
    }
    batched_state_ = std::move(state);
  }
}

std::vector<std::size_t> RdKafkaAdmin::ReadPerGroup(
    const std::vector<std::string>& ids, const std::vector<std::size_t>& per_group,
    int max_in_flight, milliseconds request_timeout, milliseconds total_timeout,
    SteadyClock::time_point deadline, std::vector<Result<CommittedOffsets>>& results) {
  // librdkafka 2.0.2 takes one group per ListConsumerGroupOffsets call; keeping a window of
  // calls in flight avoids both serializing thousands of groups and flooding the coordinators.
  std::map<void*, std::size_t> in_flight;  // token -> index into ids
  std::size_t next = 0;                    // into per_group
  std::vector<std::size_t> moved;          // indexes into ids whose coordinator moved

  const auto send_next = [&] {
    const std::size_t index = per_group[next++];
    void* token = NextToken();
    auto options = MakeOptions(handle_.get(), RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS,
                               request_timeout, token);
    if (!options) {
      results[index] = options.error();
      return;
    }
    std::unique_ptr<rd_kafka_ListConsumerGroupOffsets_t, OffsetsRequestDeleter> request(
        rd_kafka_ListConsumerGroupOffsets_new(ids[index].c_str(),
                                              nullptr));  // nullptr: all partitions
    rd_kafka_ListConsumerGroupOffsets_t* requests[] = {request.get()};
    rd_kafka_ListConsumerGroupOffsets(handle_.get(), requests, 1, options->get(), queue_.get());
    in_flight.emplace(token, index);
  };

  while (next < per_group.size() || !in_flight.empty()) {
    while (next < per_group.size() && in_flight.size() < static_cast<std::size_t>(max_in_flight)) {
      send_next();
    }
    if (in_flight.empty()) continue;
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) break;
    Event event(rd_kafka_queue_poll(queue_.get(), ClampMillis(left)));
    if (!event) continue;
    const auto found = in_flight.find(rd_kafka_event_opaque(event.get()));
    if (found == in_flight.end()) continue;  // a stale answer to an earlier poll
    results[found->second] = CommittedOffsetsOf(event.get());
    if (CoordinatorMoved(event.get())) moved.push_back(found->second);
    in_flight.erase(found);
  }
  for (const auto& [token, index] : in_flight) {
    results[index] = Error{"no answer within " + std::to_string(total_timeout.count()) + "ms"};
  }
  for (std::size_t left = next; left < per_group.size(); ++left) {
    results[per_group[left]] = Error{"not requested: the poll ran out of time"};
  }
  return moved;
}

}  // namespace lagsight::kafka
