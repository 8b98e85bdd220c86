#include "analysis/history.h"

namespace lagsight::analysis {

std::optional<double> LogEndAt(const LogEndHistory& history, double time) {
  const auto& samples = history.samples();
  if (samples.empty()) return std::nullopt;
  if (time <= samples.front().time) return static_cast<double>(samples.front().log_end);
  if (time >= samples.back().time) return static_cast<double>(samples.back().log_end);
  const std::size_t after = history.FirstAtOrAfter(time);
  const LogEndSample& a = samples[after - 1];
  const LogEndSample& b = samples[after];
  const double share = (time - a.time) / (b.time - a.time);
  return static_cast<double>(a.log_end) + share * static_cast<double>(b.log_end - a.log_end);
}

std::optional<double> InputRate(const LogEndHistory& history, double now, double window,
                                double minimum_span) {
  const LogEndSample* baseline = WindowBaseline(history, now, window);
  if (baseline == nullptr) return std::nullopt;
  const double span = history.back().time - baseline->time;
  if (span < minimum_span || span <= 0) return std::nullopt;
  return static_cast<double>(history.back().log_end - baseline->log_end) / span;
}

}  // namespace lagsight::analysis
