// A flink::FlinkSnapshot as trace JSON, both ways, every field of it (the analysis may read any).
// Writing what was read gives the same bytes.
#pragma once

#include <string>

#include "flink/snapshot.h"
#include "trace/json_text.h"

namespace lagsight::trace {

void AppendFlinkSnapshot(std::string& out, const flink::FlinkSnapshot& snapshot);

// Throws json::FormatError naming the field that is missing or wrong.
flink::FlinkSnapshot ReadFlinkSnapshot(json::element e);

}  // namespace lagsight::trace
