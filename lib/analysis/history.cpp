#include "analysis/history.h"

namespace lagsight::analysis {

std::optional<double> LogEndAt(const LogEndHistory& history, double time, bool read_committed) {
  const auto end = [read_committed](const LogEndSample& sample) {
    return static_cast<double>(read_committed ? sample.last_stable : sample.log_end);
  };
  const auto& samples = history.samples();
  if (samples.empty()) return std::nullopt;
  if (time <= samples.front().time) return end(samples.front());
  if (time >= samples.back().time) return end(samples.back());
  const std::size_t after = history.FirstAtOrAfter(time);
  const LogEndSample& a = samples[after - 1];
  const LogEndSample& b = samples[after];
  const double share = (time - a.time) / (b.time - a.time);
  return end(a) + share * (end(b) - end(a));
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
