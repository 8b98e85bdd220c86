// stores::HashStore: the narrow seam between the store collector and a key-value store that
// keeps hashes (field -> value). stores::RedisHashStore is the real one (hiredis); tests fake it.
//
// Every read ends by the client's own timeout; a hash larger than kMaxHashFields is refused
// before it is transferred, so a store cannot make lagsight read without bound.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "config/config.h"

namespace lagsight::stores {

// Far above any real layout (one field per partition, plus a few).
inline constexpr long long kMaxHashFields = 100'000;

class HashStore {
 public:
  virtual ~HashStore() = default;
  // Whether the store answers (and accepts the credentials): none, or why not.
  virtual std::optional<Error> Ping() = 0;
  // All fields of the hash at `key`; an empty map when the key does not exist.
  virtual Result<std::map<std::string, std::string>> ReadHash(const std::string& key) = 0;
};

// A Redis connection (hiredis, blocking, on the worker pool): connects on first use and again
// after any error, authenticates (AUTH [user] password) and selects the database; every call
// ends by `request_timeout`. Not thread-safe: one poll at a time.
class RedisHashStore final : public HashStore {
 public:
  explicit RedisHashStore(const config::PositionStoreConfig& config);
  ~RedisHashStore() override;
  RedisHashStore(const RedisHashStore&) = delete;
  RedisHashStore& operator=(const RedisHashStore&) = delete;

  std::optional<Error> Ping() override;
  Result<std::map<std::string, std::string>> ReadHash(const std::string& key) override;

 private:
  struct Connection;
  Result<Connection*> Connected();

  config::PositionStoreConfig config_;
  std::unique_ptr<Connection> connection_;
};

}  // namespace lagsight::stores
