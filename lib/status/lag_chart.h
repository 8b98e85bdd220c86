// The per-pair chart of the status page: a pair's lag history as a small inline SVG with its
// caption (the largest lag and the time span shown).
//
// Internal to the status page. Draws the Kafka-side and the Flink-side lag in records on one
// scale; without anything to draw it writes a dash. No script, no external resource. Pure and
// thread-safe: it only appends to `out`.
#pragma once

#include <string>
#include <vector>

#include "analysis/findings.h"

namespace lagsight::status {

// `kafka_side`: false for a job without a group, whose history holds no Kafka-side lag.
void AppendChart(std::string& out, const std::vector<analysis::LagPoint>& history, bool kafka_side);

}  // namespace lagsight::status
