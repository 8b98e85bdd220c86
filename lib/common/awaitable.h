// Include this instead of <boost/asio/awaitable.hpp>: Boost 1.74's header uses std::exchange
// without including <utility>, which breaks depending on include order.
#pragma once

// clang-format off
#include <utility>
#include <boost/asio/awaitable.hpp>
// clang-format on
