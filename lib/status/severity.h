// How the status page weighs each diagnosed cause: its severity (badge colour and sort order)
// and the one-line explanation in the badge's tooltip.
//
// The policy of the page in one place: which causes are critical, which are warnings, and which
// look alarming in Kafka's tools while the job is fine (neutral). Pure and thread-safe.
#pragma once

#include "analysis/diagnosis.h"

namespace lagsight::status {

// How loudly the page shows a cause; also the sort order, most severe first.
enum class Severity { kCritical, kWarning, kNeutral, kHealthy };
Severity SeverityOf(analysis::Cause cause);

// The row's CSS class and the badge's first word: "critical", "warning", "neutral", "healthy".
const char* SeverityName(Severity severity);

// One line per cause for the badge's tooltip; docs/runbooks.md has the rest.
const char* Explanation(analysis::Cause cause);

}  // namespace lagsight::status
