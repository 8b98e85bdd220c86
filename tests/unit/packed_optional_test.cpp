// PackedOptional64 behaves as std::optional<int64_t> does for every value an offset or a lag can
// take, in half the space.
#include "common/packed_optional.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <optional>

using lagsight::PackedOptional64;

TEST_CASE("a packed optional holds nothing until given a value, then exactly that value") {
  PackedOptional64 empty;
  CHECK_FALSE(empty.has_value());
  CHECK_FALSE(static_cast<bool>(empty));
  CHECK(empty.value_or(7) == 7);
  CHECK(static_cast<std::optional<std::int64_t>>(empty) == std::nullopt);

  // The broker's sentinels, zero, and the ends of the range an offset or a lag can reach.
  for (const std::int64_t value :
       {std::int64_t{-2}, std::int64_t{-1}, std::int64_t{0}, std::int64_t{1},
        std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min() + 1}) {
    const PackedOptional64 packed = value;
    CHECK(packed.has_value());
    CHECK(*packed == value);
    CHECK(packed.value_or(7) == value);
    CHECK(static_cast<std::optional<std::int64_t>>(packed) == std::optional(value));
  }
}

TEST_CASE("a packed optional converts from and to std::optional, empty ones included") {
  PackedOptional64 packed = std::optional<std::int64_t>(42);
  CHECK(*packed == 42);
  packed = std::optional<std::int64_t>();
  CHECK_FALSE(packed.has_value());
  packed = 5;
  packed.reset();
  CHECK_FALSE(packed);
  packed = std::nullopt;
  CHECK(packed == PackedOptional64());
  CHECK(PackedOptional64(3) == PackedOptional64(std::optional<std::int64_t>(3)));
  CHECK_FALSE(PackedOptional64(3) == PackedOptional64());
  static_assert(sizeof(PackedOptional64) == sizeof(std::int64_t));
}
