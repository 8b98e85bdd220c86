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

constexpr MetricDef kShardInfo{
    "lagsight_shard_info",
    "The shard this instance is (always 1): it reads only the consumer groups and Flink jobs that "
    "hash to shard of total_shards.",
    MetricType::Gauge};

constexpr MetricDef kShed{
    "lagsight_http_connections_shed_total",
    "Open connections the HTTP server closed to make room for a new one, by whose limit was "
    "reached: the new client's own (client) or the server's (server).",
    MetricType::Counter};
constexpr MetricDef kRefused{
    "lagsight_http_connections_refused_total",
    "New connections turned away (503, or a close on TLS) because every open one was busy "
    "answering.",
    MetricType::Counter};

constexpr MetricDef kRenderDuration{
    "lagsight_exposition_render_duration_seconds",
    "Seconds the render of the previous exposition took on a worker thread (sample lines, text "
    "and gzip of every family; scrapes only send what a render published).",
    MetricType::Gauge};

}  // namespace

void AppendProcessMetrics(const std::string& version, const std::string& revision,
                          bool last_reload_successful, double last_reload_success_unix_seconds,
                          FamilyBuilder& out) {
  out.Add(kBuildInfo, {{"version", version}, {"revision", revision}}, 1);
  out.Add(kReloadOk, {}, last_reload_successful ? 1 : 0);
  out.Add(kReloadTime, {}, last_reload_success_unix_seconds);
}

void AppendShardMetrics(int shard, int total_shards, FamilyBuilder& out) {
  out.Add(kShardInfo,
          {{"shard", std::to_string(shard)}, {"total_shards", std::to_string(total_shards)}}, 1);
}

void AppendHttpConnectionMetrics(std::uint64_t shed_for_same_client,
                                 std::uint64_t shed_for_any_client, std::uint64_t refused,
                                 FamilyBuilder& out) {
  out.Add(kShed, {{"limit", "client"}}, static_cast<double>(shed_for_same_client));
  out.Add(kShed, {{"limit", "server"}}, static_cast<double>(shed_for_any_client));
  out.Add(kRefused, {}, static_cast<double>(refused));
}

void AppendRenderMetrics(double previous_render_seconds, FamilyBuilder& out) {
  out.Add(kRenderDuration, {}, previous_render_seconds);
}

}  // namespace lagsight::metrics
