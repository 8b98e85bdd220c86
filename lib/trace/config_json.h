// The configuration the analysis reads, as trace JSON, both ways: the whole DiagnosisConfig and
// the part of a FlinkClusterConfig that joins jobs with groups.
//
// Patterns are written as their source text and compiled again when read. Of a Flink cluster
// the trace keeps its name, kafka_cluster, groups mappings and read_committed_jobs; never the
// REST URL (it may carry user:password), the credentials, the TLS files or any other setting.
// Writing what was read gives the same bytes.
#pragma once

#include <string>

#include "config/config.h"
#include "trace/json_text.h"

namespace lagsight::trace {

void AppendDiagnosisConfig(std::string& out, const config::DiagnosisConfig& config);
void AppendFlinkClusterConfig(std::string& out, const config::FlinkClusterConfig& config);

// Throw json::FormatError naming the field that is missing or wrong, or the pattern that does
// not compile.
config::DiagnosisConfig ReadDiagnosisConfig(json::element e);
config::FlinkClusterConfig ReadFlinkClusterConfig(json::element e);

}  // namespace lagsight::trace
