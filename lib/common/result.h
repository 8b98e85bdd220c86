// Result<T>: either a value or an Error carrying a human-readable message.
//
// lagsight reports failures as values (not exceptions) across module boundaries, because a
// failing source must turn into `*_up = 0` and a log line, never unwind through the event loop.
// C++20 has no std::expected; this is the small subset the project needs. Not thread-safe
// beyond what its members are.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace lagsight {

struct Error {
  std::string message;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : state_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  const T& value() const& { return std::get<T>(state_); }
  T& value() & { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }

  const Error& error() const { return std::get<Error>(state_); }

 private:
  std::variant<T, Error> state_;
};

}  // namespace lagsight
