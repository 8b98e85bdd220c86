// config::Shard: how instances split a fleet, and how the flags that choose a shard are read.
#include "config/shard.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "config/config.h"

namespace {

using lagsight::config::Fnv1a64;
using lagsight::config::ResolveShard;
using lagsight::config::Shard;

TEST_CASE("FNV-1a 64 matches the published test vectors", "[shard]") {
  // From the FNV reference (draft-eastlake-fnv): "" is the offset basis itself.
  CHECK(Fnv1a64("") == 0xcbf29ce484222325ULL);
  CHECK(Fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(Fnv1a64("foobar") == 0x85944171f73967e8ULL);
}

TEST_CASE("every key belongs to exactly one shard, and the shards share the keys evenly",
          "[shard]") {
  constexpr int kTotal = 3;
  constexpr int kKeys = 30'000;
  std::map<int, int> owned;
  for (int key = 0; key < kKeys; ++key) {
    const std::string group = "flink-orders-" + std::to_string(key);
    int owners = 0;
    for (int index = 0; index < kTotal; ++index) {
      if (Shard{index, kTotal}.Owns(group)) {
        ++owners;
        ++owned[index];
      }
    }
    REQUIRE(owners == 1);
  }
  for (const auto& [index, count] : owned) {
    INFO("shard " << index);
    CHECK(count > kKeys / kTotal * 9 / 10);
    CHECK(count < kKeys / kTotal * 11 / 10);
  }
  CHECK(Shard{}.Owns("anything"));  // unsharded: everything
}

TEST_CASE("--shard and --total-shards", "[shard]") {
  CHECK(*ResolveShard("", 1, "host") == Shard{0, 1});
  CHECK(*ResolveShard("2", 3, "host") == Shard{2, 3});
  CHECK(*ResolveShard("auto", 3, "lagsight-1") == Shard{1, 3});
  CHECK(*ResolveShard("auto", 12, "my-release-lagsight-11") == Shard{11, 12});

  CHECK(ResolveShard("3", 3, "h").error().message ==
        "shard 3 is out of range: --total-shards=3 numbers the shards 0 to 2");
  CHECK(ResolveShard("-1", 3, "h").error().message ==
        "shard -1 is out of range: --total-shards=3 numbers the shards 0 to 2");
  CHECK(ResolveShard("one", 3, "h").error().message ==
        "--shard is \"one\", not a number or \"auto\"");
  CHECK(ResolveShard("0", 0, "h").error().message == "--total-shards is 0, not 1 to 1024");
  CHECK(ResolveShard("auto", 3, "lagsight").error().message ==
        "--shard=auto: the host name \"lagsight\" does not end in a StatefulSet ordinal (name-N)");
  CHECK(ResolveShard("auto", 3, "lagsight-").error().message ==
        "--shard=auto: the host name \"lagsight-\" does not end in a StatefulSet ordinal (name-N)");
  CHECK(!ResolveShard("auto", 3, "lagsight-5").ok());  // ordinal beyond the shards
}

TEST_CASE("a Flink job is owned through the group its configuration maps it to", "[shard]") {
  lagsight::config::FlinkClusterConfig cluster;
  cluster.groups.push_back(
      {*lagsight::config::Pattern::Compile("orders-.*"), "orders-group", "", std::nullopt});
  cluster.groups.push_back(
      {*lagsight::config::Pattern::Compile("orders-enricher"), "second", "", std::nullopt});
  CHECK(lagsight::config::JobOwnerKey(cluster, "orders-enricher") == "orders-group");  // first
  CHECK(lagsight::config::JobOwnerKey(cluster, "payments") == "payments");  // unmapped: its name
}

}  // namespace
