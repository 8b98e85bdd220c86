// Metrics of what the analyzer derived: lag in seconds, the sawtooth, offset expiry, commit
// failure ratios and the diagnosis (docs/metrics.md#derived-signals-and-the-diagnosis).
//
// Pure rendering of an analysis::Findings into families; a cluster that is down has no findings
// and therefore no series here (its *_up says why).
#pragma once

#include "analysis/findings.h"
#include "metrics/exposition.h"

namespace lagsight::metrics {

void AppendFindingsMetrics(const analysis::Findings& findings, FamilyBuilder& builder);

}  // namespace lagsight::metrics
