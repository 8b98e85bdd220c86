// libFuzzer target: Prometheus-style durations, config::ParseDuration and FormatDuration.
//
// Checked beyond "no crash": every accepted duration is non-negative and survives the round
// trip through FormatDuration (the text the example config and error messages show).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "config/duration.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace config = lagsight::config;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto parsed = config::ParseDuration(text);
  if (!parsed.ok()) return 0;
  if (parsed->count() < 0) std::abort();
  const auto again = config::ParseDuration(config::FormatDuration(*parsed));
  if (!again.ok() || *again != *parsed) std::abort();
  return 0;
}
