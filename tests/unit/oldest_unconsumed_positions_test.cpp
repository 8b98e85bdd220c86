// kafka::OldestUnconsumedPositions: the positions lag in seconds dates, each once with the largest
// lag of the groups waiting there, from a poll's committed and log offsets.
#include <catch2/catch.hpp>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "kafka/log_offsets_poll.h"

using lagsight::kafka::ConsumerGroup;
using lagsight::kafka::KafkaSnapshot;
using lagsight::kafka::OldestUnconsumedPositions;
using lagsight::kafka::RecordKey;
using lagsight::kafka::TopicPartition;

namespace {

ConsumerGroup Group(std::string id, std::map<TopicPartition, std::int64_t> committed,
                    bool read_committed = false) {
  ConsumerGroup group;
  group.id = std::move(id);
  group.read_committed = read_committed;
  for (const auto& [tp, offset] : committed) group.committed[tp] = offset;
  return group;
}

}  // namespace

TEST_CASE("oldest unconsumed positions: one per position, with the largest lag there", "[kafka]") {
  const TopicPartition a0{"a", 0}, a1{"a", 1}, ab0{"a-b", 0}, b0{"b", 0}, gone{"c", 0};
  KafkaSnapshot snapshot;
  snapshot.partitions[a0] = {0, 100};
  snapshot.partitions[a1] = {50, 100};                     // retention deleted up to 50
  snapshot.partitions[ab0] = {0, 10};                      // sorts between "a" and "b"
  snapshot.partitions[b0] = {0, 100, /*last_stable=*/80};  // a transaction open at 80
  snapshot.groups = {
      Group("g1", {{a0, 40}, {a1, 20}, {ab0, 10}, {b0, 60}, {gone, 5}}),
      Group("g2", {{a0, 40}, {a1, 70}, {ab0, 3}}),
      Group("g3", {{a0, 40}, {b0, 60}}, /*read_committed=*/true),
      Group("g4", {{a1, 50}}),
  };
  // g1 and g2 wait at a/0@40; g3 reads as read_committed there: a position of its own. g1's
  // commit on a/1 lies before the log start: the log start is its position, with its lag (g4 waits
  // there too, 50 behind: the larger lag is kept). g1 is caught up on a-b/0: nothing to date. g3's
  // lag on b/0 ends at the last stable offset. c/0 has no log offsets in this poll.
  const std::map<RecordKey, std::int64_t> expected{
      {{a0, 40, false}, 60}, {{a0, 40, true}, 60},  {{a1, 50, false}, 80}, {{a1, 70, false}, 30},
      {{ab0, 3, false}, 7},  {{b0, 60, false}, 40}, {{b0, 60, true}, 20},
  };
  CHECK(OldestUnconsumedPositions(snapshot) == expected);
}

TEST_CASE("oldest unconsumed positions: offsets near the largest a broker can answer", "[kafka]") {
  // A broker's answer, however unlikely, must not overflow anything (UBSan in the sanitized lane).
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const TopicPartition t0{"t", 0};
  KafkaSnapshot snapshot;
  snapshot.partitions[t0] = {0, kMax};
  snapshot.groups = {Group("g", {{t0, kMax - 1}}), Group("h", {{t0, kMax - 1}})};
  CHECK(OldestUnconsumedPositions(snapshot) ==
        std::map<RecordKey, std::int64_t>{{{t0, kMax - 1, false}, 1}});
}
