// libFuzzer target: one line of an analysis trace (--trace.record, lagsight replay), the one
// parser lagsight runs on a file a user hands it from elsewhere (a bug report's trace).
//
// Checked beyond "no crash": an accepted line is written back as a line that parses again to
// the same text (what replay reads is what the recorder would have written).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "trace/trace_format.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace trace = lagsight::trace;
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const auto event = trace::ParseTraceEvent(line);
  if (!event.ok()) return 0;
  const std::string written = trace::FormatTraceEvent(*event);
  const auto again = trace::ParseTraceEvent(written);
  if (!again.ok() || trace::FormatTraceEvent(*again) != written) std::abort();
  return 0;
}
