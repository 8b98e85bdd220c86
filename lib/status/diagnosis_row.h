// One row of the status page's diagnosis table: a job <-> group pair with its cause, how long it
// holds, who the pair is, its lags, its checkpoint and its chart.
//
// Internal to the status page; the table's header (status_page.cpp) names the same columns in
// the same order. The row's class is the cause's severity and its data-* attributes name the
// pair, so tools can pick rows out of the page. Every name from Kafka, Flink or the config is
// escaped. Pure and thread-safe: it only appends to `out`.
#pragma once

#include <string>

#include "analysis/findings.h"

namespace lagsight::status {

// The row as a `<tr>` line; `now` (unix seconds) is what "for" counts the cause's time up to.
void AppendDiagnosisRow(std::string& out, const analysis::DiagnosisFinding& finding, double now);

}  // namespace lagsight::status
