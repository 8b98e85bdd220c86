// How late a consumer will be: when its backlog reaches 0 at its pace over the window, and the
// lateness target configured for it (both shown side by side, for groups and for Flink sources).
//
// Pure: the series, the input rate, `now` and the config are parameters.
#pragma once

#include <optional>
#include <string>

#include "analysis/analysis_time.h"
#include "analysis/diagnosis.h"
#include "analysis/history.h"
#include "analysis/series.h"
#include "config/config.h"

namespace lagsight::analysis {

// When a backlog reaches 0 at its pace over the window (CatchUpSeconds); 0 once it does not
// matter: a consumer that keeps pace holds a few polls' worth of records, and a level backlog
// would read as "never".
template <typename Sample, typename Value>
std::optional<double> CatchUp(const ThinningSeries<Sample>& series, Value value,
                              std::optional<double> input_rate, double now,
                              const config::DiagnosisConfig& config) {
  if (series.empty()) return std::nullopt;
  if (!LagMatters(static_cast<double>(value(series.back())), input_rate, config)) return 0.0;
  return CatchUpSeconds(series, value, now, Seconds(config.window));
}

// The first lateness target of kind `of` whose pattern matches `name`, in seconds.
inline std::optional<double> LatenessTargetOf(const config::DiagnosisConfig& config,
                                              config::LatenessTarget::Of of,
                                              const std::string& name) {
  for (const config::LatenessTarget& target : config.lateness_targets) {
    if (target.of == of && target.pattern.FullMatch(name)) return Seconds(target.target);
  }
  return std::nullopt;
}

}  // namespace lagsight::analysis
