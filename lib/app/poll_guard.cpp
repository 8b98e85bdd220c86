#include "app/poll_guard.h"

#include <spdlog/spdlog.h>

namespace lagsight::app {

Error InternalPollError(std::string_view source, const std::exception& thrown) {
  spdlog::error("{}: the poll failed on an internal error (a bug: please report it): {}", source,
                thrown.what());
  return Error{std::string("internal error: ") + thrown.what()};
}

}  // namespace lagsight::app
