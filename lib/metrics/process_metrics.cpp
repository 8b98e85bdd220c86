#include "metrics/process_metrics.h"

namespace lagsight::metrics {
namespace {

using prometheus::MetricType;

constexpr MetricDef kBuildInfo{"lagsight_build_info", "lagsight's version and revision (always 1).",
                               MetricType::Gauge};
constexpr MetricDef kReloadOk{"lagsight_config_last_reload_successful",
                              "1 if the latest configuration (re)load succeeded.",
                              MetricType::Gauge};
constexpr MetricDef kReloadTime{"lagsight_config_last_reload_success_timestamp_seconds",
                                "Unix time of the latest successful configuration load.",
                                MetricType::Gauge};

}  // namespace

void AppendProcessMetrics(const std::string& version, const std::string& revision,
                          bool last_reload_successful, double last_reload_success_unix_seconds,
                          FamilyBuilder& out) {
  out.Add(kBuildInfo, {{"version", version}, {"revision", revision}}, 1);
  out.Add(kReloadOk, {}, last_reload_successful ? 1 : 0);
  out.Add(kReloadTime, {}, last_reload_success_unix_seconds);
}

}  // namespace lagsight::metrics
