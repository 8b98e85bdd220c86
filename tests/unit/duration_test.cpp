#include "config/duration.h"

#include <catch2/catch.hpp>

using lagsight::config::FormatDuration;
using lagsight::config::ParseDuration;
using std::chrono::milliseconds;

TEST_CASE("durations parse the Prometheus way", "[config]") {
  CHECK(*ParseDuration("500ms") == milliseconds(500));
  CHECK(*ParseDuration("15s") == milliseconds(15'000));
  CHECK(*ParseDuration("1m30s") == milliseconds(90'000));
  CHECK(*ParseDuration("2h") == milliseconds(7'200'000));
  CHECK(*ParseDuration("1d") == milliseconds(86'400'000));
  CHECK(*ParseDuration("0s") == milliseconds(0));
}

TEST_CASE("ambiguous or malformed durations are rejected", "[config]") {
  for (const char* text :
       {"", "15", "s", "1.5s", "-1s", "1 s", "10x", "5sm", "99999999999999999h"}) {
    INFO(text);
    CHECK_FALSE(ParseDuration(text).ok());
  }
  CHECK(
      ParseDuration("15").error().message ==
      "invalid duration \"15\" (use a number with a unit: ms, s, m, h, d; e.g. 500ms, 15s, 1m30s)");
}

TEST_CASE("durations format back", "[config]") {
  CHECK(FormatDuration(milliseconds(90'000)) == "1m30s");
  CHECK(FormatDuration(milliseconds(100)) == "100ms");
  CHECK(FormatDuration(milliseconds(0)) == "0s");
}

// The parser multiplied and added in int64 without checks: a long value was undefined behaviour
// and in practice wrapped round to a short or negative interval.
TEST_CASE("durations that do not fit in 64-bit milliseconds are rejected, not wrapped",
          "[config]") {
  CHECK(*ParseDuration("106751991167d") == milliseconds(106'751'991'167LL * 86'400'000));
  for (const char* text : {"106751991168d", "9223372036854775808ms", "99999999999999999999999s",
                           "106751991167d106751991167d", "9223372036854775807ms1ms"}) {
    INFO(text);
    const auto parsed = ParseDuration(text);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error().message ==
          "duration \"" + std::string(text) +
              "\" is too long (it does not fit in 64-bit milliseconds, ~292 million years)");
  }
  CHECK(*ParseDuration("9223372036854775807ms") == milliseconds::max());
}
