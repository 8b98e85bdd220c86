#include "config/duration.h"

#include <catch.hpp>

using lagsight::config::FormatDuration;
using lagsight::config::ParseDuration;
using std::chrono::milliseconds;

TEST_CASE("durations parse the Prometheus way") {
  CHECK(*ParseDuration("500ms") == milliseconds(500));
  CHECK(*ParseDuration("15s") == milliseconds(15'000));
  CHECK(*ParseDuration("1m30s") == milliseconds(90'000));
  CHECK(*ParseDuration("2h") == milliseconds(7'200'000));
  CHECK(*ParseDuration("1d") == milliseconds(86'400'000));
  CHECK(*ParseDuration("0s") == milliseconds(0));
}

TEST_CASE("ambiguous or malformed durations are rejected") {
  for (const char* text :
       {"", "15", "s", "1.5s", "-1s", "1 s", "10x", "5sm", "99999999999999999h"}) {
    INFO(text);
    CHECK_FALSE(ParseDuration(text).ok());
  }
  CHECK(
      ParseDuration("15").error().message ==
      "invalid duration \"15\" (use a number with a unit: ms, s, m, h, d; e.g. 500ms, 15s, 1m30s)");
}

TEST_CASE("durations format back") {
  CHECK(FormatDuration(milliseconds(90'000)) == "1m30s");
  CHECK(FormatDuration(milliseconds(100)) == "100ms");
  CHECK(FormatDuration(milliseconds(0)) == "0s");
}
