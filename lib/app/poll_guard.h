// PollGuarded: one poll whose C++ exception becomes that poll's error, not the end of the daemon.
//
// Sources report failures as values (common/result.h); an exception is a bug in lagsight or an
// allocation that failed. Out of a thread-pool handler (a Kafka or store poll) or a detached
// coroutine (a Flink poll) it would reach std::terminate and end the process with SIGABRT,
// taking every other source's series with it. Guarded, the source is down for that poll
// (`_up 0`), the log says why at error level, and the next poll runs on its timer.
#pragma once

#include <exception>
#include <string>
#include <string_view>

#include "common/result.h"

namespace lagsight::app {

// Logs `thrown` as `source`'s internal error and returns it as the poll's error.
Error InternalPollError(std::string_view source, const std::exception& thrown);

// Runs `poll` (returning a Result) and returns its result, or the error of what it threw.
template <typename Poll>
auto PollGuarded(std::string_view source, Poll&& poll) -> decltype(poll()) {
  try {
    return poll();
  } catch (const std::exception& thrown) {
    return InternalPollError(source, thrown);
  }
}

}  // namespace lagsight::app
