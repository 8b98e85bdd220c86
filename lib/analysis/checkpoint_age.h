// How old each job's newest completed checkpoint is: the one rule, computed once per Flink poll.
//
// Pure. A job has an age only with checkpointing on and a completed checkpoint (or savepoint)
// Flink reports; it has a ratio only with a periodic interval (Flink reports Long.MAX_VALUE when
// periodic checkpoints are off, against which any age is 0 intervals). The age is taken as of
// `as_of`, the moment the Flink poll that reported it began: every answer in that poll came
// later, so the age is never inflated by how long the poll, or lagsight, took.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "flink/snapshot.h"

namespace lagsight::analysis {

struct CheckpointAge {
  double age_seconds = 0;
  std::optional<double> interval_seconds;  // the periodic interval, when there is one
  std::optional<double> ratio;             // age / interval
};

// A periodic checkpoint interval, or none (off, or Flink's "never": a year or more).
std::optional<double> PeriodicIntervalSeconds(const flink::FlinkJob& job);

std::optional<CheckpointAge> CheckpointAgeOf(const flink::FlinkJob& job, double as_of);

// By job id, for every job of the snapshot that has an age.
std::map<std::string, CheckpointAge> CheckpointAges(const flink::FlinkSnapshot& snapshot,
                                                    double as_of);

}  // namespace lagsight::analysis
