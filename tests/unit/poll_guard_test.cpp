// app::PollGuarded: an exception in a poll becomes that poll's error, the process goes on.
#include "app/poll_guard.h"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

using namespace lagsight;

TEST_CASE("a poll that throws fails with the exception's text, one that does not is untouched") {
  const auto thrown = app::PollGuarded("kafka cluster \"local\"", []() -> Result<int> {
    throw std::runtime_error(
        "vector::_M_range_check: __n (which is 3) >= this->size() (which is 3)");
  });
  REQUIRE_FALSE(thrown);
  CHECK(thrown.error().message ==
        "internal error: vector::_M_range_check: __n (which is 3) >= this->size() (which is 3)");

  const auto allocation = app::PollGuarded(
      "store \"redis\"", []() -> Result<std::vector<int>> { throw std::bad_alloc(); });
  REQUIRE_FALSE(allocation);
  CHECK(allocation.error().message == "internal error: std::bad_alloc");

  const auto polled = app::PollGuarded("kafka cluster \"local\"", [] { return Result<int>(7); });
  REQUIRE(polled);
  CHECK(*polled == 7);
  const auto failed =
      app::PollGuarded("kafka cluster \"local\"", [] { return Result<int>(Error{"refused"}); });
  REQUIRE_FALSE(failed);
  CHECK(failed.error().message == "refused");
}
