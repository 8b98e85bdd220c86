#include "analysis/checkpoint_age.h"

#include <algorithm>

namespace lagsight::analysis {

namespace {

// Flink reports Long.MAX_VALUE for "no periodic checkpoints"; anything a year or longer is that.
constexpr double kNoIntervalMs = 365.0 * 24 * 3600 * 1000;

}  // namespace

std::optional<double> PeriodicIntervalSeconds(const flink::FlinkJob& job) {
  const auto& interval_ms = job.checkpoint_config.interval_ms;
  if (!job.checkpoint_config.enabled || !job.checkpoints.enabled || !interval_ms ||
      *interval_ms <= 0 || *interval_ms >= kNoIntervalMs) {
    return std::nullopt;
  }
  return *interval_ms / 1000;
}

std::optional<CheckpointAge> CheckpointAgeOf(const flink::FlinkJob& job, double as_of) {
  const auto& latest_ms = job.checkpoints.latest_completed_timestamp_ms;
  if (!job.checkpoint_stats_reported || !job.checkpoints.enabled || !latest_ms) return std::nullopt;
  CheckpointAge age;
  age.age_seconds = std::max(0.0, as_of - static_cast<double>(*latest_ms) / 1000);
  age.interval_seconds = PeriodicIntervalSeconds(job);
  if (age.interval_seconds) age.ratio = age.age_seconds / *age.interval_seconds;
  return age;
}

std::map<std::string, CheckpointAge> CheckpointAges(const flink::FlinkSnapshot& snapshot,
                                                    double as_of) {
  std::map<std::string, CheckpointAge> ages;
  for (const flink::FlinkJob& job : snapshot.jobs) {
    if (auto age = CheckpointAgeOf(job, as_of)) ages[job.overview.id] = *age;
  }
  return ages;
}

}  // namespace lagsight::analysis
