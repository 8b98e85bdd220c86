#include "config/shard.h"

#include <charconv>
#include <optional>
#include <string>

namespace lagsight::config {

std::uint64_t Fnv1a64(std::string_view bytes) {
  std::uint64_t hash = 14695981039346656037ULL;  // offset basis
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;  // FNV prime
  }
  return hash;
}

bool Shard::Owns(std::string_view key) const {
  if (total <= 1) return true;
  return Fnv1a64(key) % static_cast<std::uint64_t>(total) == static_cast<std::uint64_t>(index);
}

namespace {

std::optional<int> ParseIndex(std::string_view text) {
  int value = 0;
  const char* end = text.data() + text.size();
  const auto parsed = std::from_chars(text.data(), end, value);
  if (text.empty() || parsed.ec != std::errc() || parsed.ptr != end) return std::nullopt;
  return value;
}

}  // namespace

Result<Shard> ResolveShard(std::string_view shard, int total_shards, std::string_view host_name) {
  if (total_shards < 1 || total_shards > kMaxShards) {
    return Error{"--total-shards is " + std::to_string(total_shards) + ", not 1 to " +
                 std::to_string(kMaxShards)};
  }
  Shard resolved{0, total_shards};
  if (shard == "auto") {
    const std::size_t dash = host_name.rfind('-');
    const auto ordinal =
        dash == std::string_view::npos ? std::nullopt : ParseIndex(host_name.substr(dash + 1));
    if (!ordinal) {
      return Error{"--shard=auto: the host name \"" + std::string(host_name.substr(0, 253)) +
                   "\" does not end in a StatefulSet ordinal (name-N)"};
    }
    resolved.index = *ordinal;
  } else if (!shard.empty()) {
    const auto index = ParseIndex(shard);
    if (!index) {
      return Error{"--shard is \"" + std::string(shard.substr(0, 64)) +
                   "\", not a number or \"auto\""};
    }
    resolved.index = *index;
  }
  if (resolved.index < 0 || resolved.index >= total_shards) {
    return Error{"shard " + std::to_string(resolved.index) +
                 " is out of range: --total-shards=" + std::to_string(total_shards) +
                 " numbers the shards 0 to " + std::to_string(total_shards - 1)};
  }
  return resolved;
}

}  // namespace lagsight::config
