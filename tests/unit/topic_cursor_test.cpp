// TopicCursor finds a topic's partitions in ascending order, never another topic's, in both the
// tree and the sorted-vector maps the analysis walks.
#include "kafka/topic_cursor.h"

#include <catch2/catch.hpp>
#include <limits>
#include <map>

using lagsight::kafka::CommittedOffsets;
using lagsight::kafka::TopicCursor;
using lagsight::kafka::TopicPartition;

namespace {

// Names that share a prefix, or sort right next to each other, with gaps in the numbers.
template <typename Map>
Map Neighbours() {
  Map map;
  map[TopicPartition{"a", 0}] = 1;
  map[TopicPartition{"a", 2}] = 2;
  map[TopicPartition{"a", std::numeric_limits<std::int32_t>::max()}] = 3;
  map[TopicPartition{"a-b", 1}] = 4;
  map[TopicPartition{"ab", 0}] = 5;
  map[TopicPartition{"b", 0}] = 6;
  return map;
}

template <typename Map>
void CheckNeighbours() {
  const Map map = Neighbours<Map>();
  TopicCursor a(map, "a");
  REQUIRE(a.Find(0) != nullptr);
  CHECK(*a.Find(0) == 1);  // asking again for the same number finds it again
  CHECK(a.Find(1) == nullptr);
  REQUIRE(a.Find(2) != nullptr);
  CHECK(*a.Find(2) == 2);
  CHECK(a.Find(3) == nullptr);  // not a-b/1, the next entry of the map
  REQUIRE(a.Find(std::numeric_limits<std::int32_t>::max()) != nullptr);
  CHECK(*a.Find(std::numeric_limits<std::int32_t>::max()) == 3);

  TopicCursor between(map, "a-b");
  CHECK(between.Find(0) == nullptr);
  REQUIRE(between.Find(1) != nullptr);
  CHECK(*between.Find(1) == 4);
  CHECK(between.Find(2) == nullptr);

  TopicCursor absent(map, "aa");  // sorts between "a-b" and "ab"
  CHECK(absent.Find(0) == nullptr);
  TopicCursor last(map, "b");
  CHECK(*last.Find(0) == 6);
  CHECK(last.Find(1) == nullptr);
  TopicCursor past_the_end(map, "c");
  CHECK(past_the_end.Find(0) == nullptr);
}

}  // namespace

TEST_CASE("topic cursor: a topic's own partitions, in a tree and in a sorted vector",
          "[analysis]") {
  CheckNeighbours<std::map<TopicPartition, std::int64_t>>();
  CheckNeighbours<CommittedOffsets>();
}

TEST_CASE("topic cursor: entries of a mutable map can be changed through it", "[analysis]") {
  std::map<TopicPartition, std::int64_t> map = Neighbours<std::map<TopicPartition, std::int64_t>>();
  TopicCursor cursor(map, "a");
  *cursor.Find(2) = 20;
  CHECK(map.at({"a", 2}) == 20);
}
