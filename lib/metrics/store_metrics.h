// The lagsight_store_* metrics of one external position store (positions: in the config).
//
// Pure rendering of the store's latest poll and its join with the job and the log
// (analysis/stored_positions.h). As for the other sources, a failed poll leaves only the health
// series: no stored offset is served from an older poll as if fresh.
#pragma once

#include <string>
#include <vector>

#include "analysis/stored_positions.h"
#include "metrics/exposition.h"
#include "metrics/poll_status.h"
#include "stores/snapshot.h"

namespace lagsight::metrics {

// `snapshot` and `joined` are null when the latest poll failed; `now_unix_seconds` dates the
// store's write times.
void AppendStoreMetrics(const std::string& store, const PollStatus& status,
                        const stores::StoreSnapshot* snapshot,
                        const std::vector<analysis::StoredJobPositions>* joined,
                        double now_unix_seconds, FamilyBuilder& out);

}  // namespace lagsight::metrics
