// Metrics about lagsight itself: build information and the state of its configuration.
#pragma once

#include <string>

#include "metrics/exposition.h"

namespace lagsight::metrics {

void AppendProcessMetrics(const std::string& version, const std::string& revision,
                          bool last_reload_successful, double last_reload_success_unix_seconds,
                          FamilyBuilder& out);

}  // namespace lagsight::metrics
