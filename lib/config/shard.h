// config::Shard: the part of a fleet one lagsight instance owns when several instances split it
// (--shard=i --total-shards=n, as kube-state-metrics shards its objects).
//
// A consumer group belongs to the shard its id hashes to, and a Flink job to the shard of the
// first group its configuration maps it to (else of its name), so a job and the group it commits
// to land on the same instance and are joined there. Owns() is a pure function of the key and
// the two numbers: every replica computes the same split without talking to the others, and the
// split only changes when total_shards does. Plain data: copyable, comparable.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/result.h"

namespace lagsight::config {

struct Shard {
  int index = 0;  // 0 .. total - 1
  int total = 1;

  bool sharded() const { return total > 1; }
  // Whether `key` (a group id, or a job's owner key) is this shard's: FNV-1a (64 bit) of its
  // bytes, modulo total. FNV is fixed by its specification, so the split is the same on every
  // platform and in every version of lagsight.
  bool Owns(std::string_view key) const;

  friend bool operator==(const Shard&, const Shard&) = default;
};

// FNV-1a, 64 bit, of `bytes`.
std::uint64_t Fnv1a64(std::string_view bytes);

// The largest --total-shards accepted: more replicas than this is a misconfiguration, not a fleet.
inline constexpr int kMaxShards = 1024;

// Resolves --shard and --total-shards. `shard` is a number, or "auto": the ordinal a StatefulSet
// ends each pod's name with ("lagsight-2" is shard 2), read from `host_name`. An empty `shard`
// means 0. The error says which flag is wrong and why.
Result<Shard> ResolveShard(std::string_view shard, int total_shards, std::string_view host_name);

}  // namespace lagsight::config
