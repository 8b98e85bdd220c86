// FindKafka: what the renderer shows of one Kafka cluster's groups, from its poll and its
// history (the second stage, reading only KafkaHistory).
//
// Per group: the lag in seconds of each partition (from the record at its committed offset, or
// its log-end history), the last commit, when its offsets expire (groups without members), the
// sawtooth of its commits, its catch-up time and its lateness target. Pure: `now` is a parameter.
#pragma once

#include <vector>

#include "analysis/findings.h"
#include "analysis/kafka_history.h"
#include "analysis/kafka_lag.h"
#include "config/config.h"
#include "kafka/snapshot.h"

namespace lagsight::analysis {

// Findings of the groups in `lags`, in their order, that `history` (already holding this poll)
// knows.
KafkaFindings FindKafka(const KafkaHistory& history, const kafka::KafkaSnapshot& snapshot,
                        const std::vector<GroupLag>& lags, const config::DiagnosisConfig& config,
                        double now);

}  // namespace lagsight::analysis
