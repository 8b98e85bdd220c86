// libFuzzer target: every Flink REST response parser (lib/flink/rest_parsers.h) on the same bytes.
//
// Each input goes through all parsers rather than one picked by a selector byte, so the recorded
// responses in tests/fixtures/flink-*/ serve as seeds unchanged, and a mutation that turns a
// checkpoints body into something the metrics parser chokes on is found too. The only promise
// checked is the one the daemon relies on: hostile bytes give a value or an Error, never a
// crash, a leak, or undefined behaviour (the sanitizers abort on those).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "flink/job_graph_parsers.h"
#include "flink/rest_parsers.h"

namespace {

void ClassifyAll(const std::map<std::string, std::optional<double>>& values) {
  for (const auto& [id, value] : values) {
    (void)lagsight::flink::ClassifySourceMetricId(id);
  }
  (void)lagsight::flink::CombineSourceMetrics("vertex", "Source: fuzz", values);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace flink = lagsight::flink;
  const std::string_view body(reinterpret_cast<const char*>(data), size);

  (void)flink::ParseJobsOverview(body);
  (void)flink::ParseJobVertices(body);
  (void)flink::ParseVertexLoad(body);
  (void)flink::ParseBusiestSubtask(body);
  // 404 is the "checkpointing not enabled" path; 500 must be an error whatever the body.
  for (const unsigned status : {200U, 404U, 500U}) {
    (void)flink::ParseCheckpoints(status, body);
    (void)flink::ParseCheckpointConfig(status, body);
  }
  if (const auto ids = flink::ParseMetricIds(body); ids.ok()) {
    for (const std::string& id : *ids) (void)flink::ClassifySourceMetricId(id);
  }
  if (const auto values = flink::ParseMetricValues(body); values.ok()) ClassifyAll(*values);
  // The raw bytes as one metric id too: ids come from Flink and are split on '.' by hand.
  (void)flink::ClassifySourceMetricId(body);
  return 0;
}
