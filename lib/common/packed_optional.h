// PackedOptional64: an optional 64-bit integer in 8 bytes, for values that never reach the
// smallest int64 (Kafka offsets and lags: the broker's sentinels are -1 and -2).
//
// std::optional<std::int64_t> takes 16 bytes, its flag padded to the integer's alignment. A
// partition's lag record holds two (PartitionLag: 40 bytes, a million of them at issue 14's S3,
// two polls' worth at once); packed, they hold 24. It reads like std::optional (has_value,
// operator bool, *, value_or) and converts to and from it, so code written against the
// optional keeps compiling. Storing the smallest int64 itself is a programming error, caught in
// debug builds.
#pragma once

#include <cassert>
#include <cstdint>
#include <limits>
#include <optional>

namespace lagsight {

class PackedOptional64 {
 public:
  constexpr PackedOptional64() = default;
  constexpr PackedOptional64(std::nullopt_t) {}                     // NOLINT: reads as an optional
  constexpr PackedOptional64(std::int64_t value) : value_(value) {  // NOLINT: as above
    assert(value != kEmpty);
  }
  constexpr PackedOptional64(const std::optional<std::int64_t>& value)  // NOLINT: as above
      : value_(value.value_or(kEmpty)) {
    assert(!value || *value != kEmpty);
  }

  constexpr bool has_value() const { return value_ != kEmpty; }
  constexpr explicit operator bool() const { return has_value(); }
  // Like std::optional's: only on a value (asserted in debug builds).
  constexpr std::int64_t operator*() const {
    assert(has_value());
    return value_;
  }
  constexpr std::int64_t value_or(std::int64_t fallback) const {
    return has_value() ? value_ : fallback;
  }
  constexpr operator std::optional<std::int64_t>() const {  // NOLINT: as above
    return has_value() ? std::optional<std::int64_t>(value_) : std::nullopt;
  }
  constexpr void reset() { value_ = kEmpty; }

  friend constexpr bool operator==(PackedOptional64, PackedOptional64) = default;

 private:
  static constexpr std::int64_t kEmpty = std::numeric_limits<std::int64_t>::min();
  std::int64_t value_ = kEmpty;
};

}  // namespace lagsight
